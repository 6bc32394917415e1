"""The `thinwire` command's entry point: nothing but `sys` is imported before a
Ctrl-C can be answered, so one pressed while the command starts (loading the
core and the command modules takes tens of milliseconds) ends it with one line,
not a traceback."""

import sys


def main() -> int:
    try:
        from .cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        # Before the command's own handling is in place (its modules loading, the
        # command line being parsed); after that it answers Ctrl-C itself.
        sys.stderr.write("thinwire: interrupted\n")
        return 130
