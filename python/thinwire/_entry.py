"""The `thinwire` command's entry point: a Ctrl-C pressed while the command starts
(loading the core and the command modules takes tens of milliseconds) ends it
with one line, not a traceback.

While the modules load, SIGINT is only noted (`_signal`, built in, is all this
imports): a KeyboardInterrupt raised inside the import machinery can come out as
another exception (one raised in a class body's `__set_name__` becomes a
RuntimeError, seen in CI while `ipaddress` loaded), which no `except
KeyboardInterrupt` catches. The command line's dispatcher calls
`resume_interrupts()` when its own handling is in place; a Ctrl-C noted before
then is raised there as the KeyboardInterrupt it answers with one line."""

import _signal
import sys

_noted: list[int] = []
_deferring = False


def _note(signum, frame) -> None:
    _noted.append(signum)


def resume_interrupts() -> None:
    """Give SIGINT back to Python's default handler; raise the KeyboardInterrupt
    of a Ctrl-C pressed while the command loaded. Does nothing when the command
    was not started through `main` (the Python API, `python -m thinwire.cli`)."""
    global _deferring
    if not _deferring:
        return
    _deferring = False
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    if _noted:
        raise KeyboardInterrupt


def main() -> int:
    global _deferring
    try:
        if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
            # Not when SIGINT is ignored (a shell's background job): that stays.
            _signal.signal(_signal.SIGINT, _note)
            _deferring = True
        from .cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        # Before the handler above was in place; after `resume_interrupts` the
        # command answers Ctrl-C itself.
        sys.stderr.write("thinwire: interrupted\n")
        return 130
    finally:
        if _deferring:  # the command ended before resuming (--help, a usage error)
            _deferring = False
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
