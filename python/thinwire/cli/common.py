"""What every command shares: one-line errors (exit 2), warnings on stderr, the
trace layers, signal and write-failure handling."""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from pathlib import Path

from .._core import TRACE_LAYERS

# Every trace layer (the core's list); an output folder records all of them but
# `sojourn` (a row per packet per queue: asked for by name).
LAYERS = tuple(TRACE_LAYERS)

DEFAULT_LAYERS = tuple(layer for layer in LAYERS if layer != "sojourn")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        message = one_line(message)
        self.exit(
            2,
            f"thinwire: error: {message} (see 'thinwire {self.prog.split()[-1]} --help')\n"
            if " " in self.prog
            else f"thinwire: error: {message} (see 'thinwire --help')\n",
        )


# Longest error line printed; the rest is cut and counted.
MAX_MESSAGE = 400


def one_line(msg: str) -> str:
    """A message as one line of at most MAX_MESSAGE characters: line breaks (a key
    or file name may hold one) shown as \\n, the rest of a long message cut with a
    count of what was cut."""
    msg = msg.replace("\r", "\\r").replace("\n", "\\n")
    if len(msg) > MAX_MESSAGE:
        msg = f"{msg[:MAX_MESSAGE]}... ({len(msg) - MAX_MESSAGE:,} more characters cut)"
    return msg


def die(msg: str) -> "NoReturn":  # noqa: F821
    print(f"thinwire: error: {one_line(msg)}", file=sys.stderr)
    sys.exit(2)


def with_path(path: str, e: Exception) -> str:
    """The error prefixed with the scenario's path, unless it already names it."""
    msg = str(e)
    return msg if msg.startswith(str(path)) else f"{path}: {msg}"


END_REASONS = {
    "max_time": "max_time was reached first",
    "idle": "nothing more could happen (they wait for ever: a window that never opens, a start after max_time?)",
    "stop": "the stop time came first",
}


def one_line_warnings() -> None:
    """A scenario's warnings (ScenarioWarning, from the API) as one line each on
    stderr, each message once; other warnings as Python shows them."""
    import warnings

    from ..api import ScenarioWarning

    warnings.simplefilter("once", ScenarioWarning)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ScenarioWarning):
            print(f"thinwire: warning: {one_line(str(message))}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def print_warnings(ws) -> None:
    """The scenario's warnings (settings that may not do what was meant), one line each on stderr."""
    for w in dict.fromkeys(ws):
        print(f"thinwire: warning: {one_line(w)}", file=sys.stderr)


def warn_unfinished(s: dict) -> None:
    """One line on stderr when flows that end by themselves did not finish."""
    left = s.get("unfinished_flows") or []
    if left:
        which = ", ".join(str(i) for i in left)
        why = END_REASONS.get(s.get("end"), s.get("end"))
        print(
            f"thinwire: warning: flow{'s' if len(left) > 1 else ''} {which} did not finish at {s['sim_time_s']:.3f} s: {why}",
            file=sys.stderr,
        )


def parse_seconds(text: str, what: str) -> float:
    """A duration such as "30s", "500ms", "2min" or plain seconds."""

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|ms|s|min|h)?\s*", text)
    if not m:
        die(f"{what} {text!r}: not a duration; use e.g. 30s, 500ms or 2min")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}[m.group(2) or "s"]
    v = float(m.group(1)) * scale
    if not (0 < v < 1e9):
        die(f"{what} {text!r}: must be a positive duration")
    return v


def check_command(cmd: str, what: str) -> None:
    """The command's first word must be something the shell can run."""
    import shlex
    import shutil

    builtins = {
        "exec",
        "sleep",
        "cd",
        "true",
        "false",
        "echo",
        "for",
        "while",
        "if",
        "test",
        "[",
        "{",
        "(",
        "read",
        "export",
        "set",
        "env",
        "time",
        "exit",
        "kill",
        "trap",
        "wait",
        "ulimit",
        "umask",
        "until",
        "case",
        ".",
        ":",
    }
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        die(f"{what} {cmd!r}: cannot parse it as a shell command ({e})")
    if not words:
        die(f"{what}: empty command")
    first = words[0]
    if "=" in first and not first.startswith("="):
        return  # VAR=value cmd ...
    if first not in builtins and shutil.which(first) is None and not Path(first).is_file():
        die(f"{what} {cmd!r}: {first!r} is not a command found on PATH")


IFACE_HELP = (
    "pcapng captures: the interface to analyse (default: the first with packets); an emulation's capture.pcapng "
    "has 0 mobile, 1 server (with --gateway: 1 gateway) and 2 gateway, each packet once per capture point"
)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so cleanup runs as for Ctrl-C."""


def on_sigterm(signum, frame):
    raise Terminated()


WRITE_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG)


def quiet_stdout() -> None:
    """Standard output may be what failed: drop what is buffered, so that exiting
    does not fail again with a traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


def stopped(code: int, what: str, e: BaseException) -> int:
    """Ctrl-C or SIGTERM: one line; what is complete was kept (sweeps save finished
    runs and say so in a note; a single run writes nothing partial)."""
    quiet_stdout()
    notes = "; ".join(getattr(e, "__notes__", []))
    print(f"thinwire: {what}" + (f" ({notes})" if notes else ""), file=sys.stderr)
    return code
