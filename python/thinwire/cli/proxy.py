"""`thinwire proxy`: the split-TCP proxy as a daemon."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..fields import plural as _n
from .common import die, parse_seconds


def add(sub) -> None:
    px = sub.add_parser(
        "proxy", help="the split-TCP proxy as a daemon: mobiles' TCP split at this router (Linux, root)"
    )
    px.add_argument("--config", required=True, metavar="FILE", help="TOML file with [proxy] and [daemon] tables")
    px.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key, e.g. daemon.mobile_interface=eth1",
    )
    px.add_argument("--duration", help="stop after this long (default: until SIGTERM/SIGINT)")
    px.add_argument(
        "--out",
        metavar="DIR",
        help="write capture.pcapng (wireless and wired legs), trace.parquet (proxy and tcp layers), flows.parquet, summary.json and daemon.log there, for 'thinwire plot DIR'",
    )
    px.set_defaults(fn=cmd)


def cmd(a) -> int:
    from .. import _core

    if not hasattr(_core, "proxy_daemon"):
        die("thinwire proxy runs on Linux only")
    duration = parse_seconds(a.duration, "--duration") if a.duration else None
    if not os.path.isfile(a.config):
        die(f"--config {a.config}: no such file (a TOML file with [proxy] and [daemon] tables; see docs/proxy.md)")
    if a.out:
        out = Path(a.out)
        if out.exists() and not out.is_dir():
            die(f"--out {a.out}: exists and is not a directory")
        from ..outputs import PROXY_OUTPUTS, clear_outputs

        try:
            clear_outputs(out, PROXY_OUTPUTS)  # an earlier run's files are replaced, never mixed
        except OSError as e:
            die(f"--out {a.out}: cannot create it ({e.strerror or e})")
    try:
        _core.proxy_daemon(a.config, a.set or [], duration, a.out)
        if a.out:
            from ..proxyd import finish

            s = finish(a.out)
            print(
                f"wrote {a.out}/ (capture.pcapng, trace.parquet, flows.parquet, summary.json, daemon.log): "
                f"{_n(len(s['flows']), 'connection')}",
                file=sys.stderr,
            )
    except _core.EmulateError as e:
        die(str(e))
    except RuntimeError as e:
        print(f"thinwire: {e}", file=sys.stderr)
        return 1
    return 0
