"""`thinwire channel-trace`: a run's channel decisions as a frame-error trace."""

from __future__ import annotations

import sys

from .common import die


def add(sub) -> None:
    ct = sub.add_parser(
        "channel-trace", help='a run\'s channel decisions as a frame-error trace (replay: model = "trace")'
    )
    ct.add_argument("dir", help="run directory (thinwire run --out, thinwire emulate --out)")
    ct.add_argument("-o", metavar="FILE", help="write the trace here (default: standard output)")
    ct.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..channel_trace import TraceError, export

    try:
        text = export(a.dir)
    except TraceError as e:
        die(str(e))
    if a.o:
        from ..outputs import write_text

        write_text(a.o, text)
        print(f'{a.o}: {text.count(chr(10))} lines (replay: model = "trace", file = "{a.o}")')
    else:
        sys.stdout.write(text)
    return 0
