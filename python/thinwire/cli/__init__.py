"""`thinwire` command line: run | sweep | reproduce | analyze | plot | emulate | proxy |
examples | check | version (and the trace tools), one module per command.

Each command module has `add(sub)`, which declares its subcommand and arguments,
and `cmd(args) -> int`, which runs it; this dispatcher builds the parser from them
in the order of `COMMANDS` and answers what every command shares: `--set` checked,
warnings as one line, SIGTERM, a closed pipe, a failed write, Ctrl-C. Bad input
(scenario, command line) exits with status 2 and one line naming what is wrong and
what is accepted.
"""

from __future__ import annotations

import importlib
import signal
import sys

from .. import __version__
from .._entry import resume_interrupts
from .common import (
    WRITE_ERRNOS,
    Parser,
    Terminated,
    die,
    on_sigterm,
    one_line,
    one_line_warnings,
    quiet_stdout,
    stopped,
)

# The commands in the order `thinwire --help` lists them (module names).
COMMANDS = (
    "run",
    "sweep",
    "reproduce",
    "analyze",
    "plot",
    "emulate",
    "proxy",
    "simulate_log",
    "channel_trace",
    "fit_channel",
    "examples",
    "check",
)


def version_line() -> str:
    """`thinwire 0.1.0`, with the kind of build when it is not the plain one
    (`make pgo`'s profile-guided build: its timings are not the plain build's)."""
    from .._core import BUILD

    return f"thinwire {__version__}" + ("" if BUILD == "plain" else f" ({BUILD} build)")


def _version(a) -> int:
    print(version_line())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = Parser(
        prog="thinwire",
        description="TCP over slow, lossy wireless links with link-layer ARQ.",
        epilog="Start with the shipped examples: 'thinwire examples' lists them, "
        "'thinwire examples --copy DIR' writes them into DIR to run and edit.",
    )
    p.add_argument("--version", action="version", version=version_line())
    sub = p.add_subparsers(dest="cmd", parser_class=Parser, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add(sub)
    sub.add_parser("version", help="print the version").set_defaults(fn=_version)
    a = p.parse_args(argv)
    if not a.cmd:
        p.print_help()
        return 2
    for kv in getattr(a, "set", []) or []:
        if "=" not in kv:
            die(f"--set {kv!r}: expected KEY=VALUE, e.g. --set flow.0.bytes=1MB")
    one_line_warnings()
    if a.cmd not in ("emulate", "proxy"):  # those two handle SIGTERM themselves
        signal.signal(signal.SIGTERM, on_sigterm)
    try:
        resume_interrupts()  # a Ctrl-C while the modules loaded is answered here
        rc = a.fn(a)
        sys.stdout.flush()  # a full disk or /dev/full shows here, not at exit
        return rc
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours.
        quiet_stdout()
        return 0
    except KeyboardInterrupt as e:
        return stopped(130, "interrupted", e)
    except Terminated as e:
        return stopped(143, "terminated", e)
    except OSError as e:
        # Writing (an output file, standard output) failed: one line, nothing half-written
        # (outputs are written to temporary names and renamed when complete).
        where = f"{e.filename}: " if e.filename else "standard output: " if e.errno in WRITE_ERRNOS else ""
        quiet_stdout()
        print(f"thinwire: error: {one_line(f'{where}{e.strerror or e}')}", file=sys.stderr)
        return 2
    except MemoryError:
        quiet_stdout()
        print("thinwire: error: out of memory (a smaller run, sweep or window count?)", file=sys.stderr)
        return 2
