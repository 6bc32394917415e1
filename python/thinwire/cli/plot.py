"""`thinwire plot`: multi-layer plots of a capture or a run directory."""

from __future__ import annotations

from pathlib import Path

from .analyze import open_analysis
from .common import IFACE_HELP, die


def add(sub) -> None:
    pl_ = sub.add_parser("plot", help="multi-layer plots of a capture or a run directory")
    pl_.add_argument("path", help="a .pcap/.pcapng capture, or a run directory")
    pl_.add_argument(
        "--kind",
        choices=("tsq", "rtt", "cwnd", "goodput"),
        default="tsq",
        help="time/sequence, RTT/SRTT/RTO, congestion window, or goodput histograms",
    )
    pl_.add_argument(
        "--layers", help="comma list of series to draw, e.g. TcpSnd_data,TcpSnd_ack,RlpSnd_data (default: all)"
    )
    pl_.add_argument(
        "--out", help="output file: .png, .pdf, .svg, or .html for the interactive viewer (default: next to PATH)"
    )
    pl_.add_argument(
        "--flow",
        type=int,
        help="flow id (run directories; default: the first TCP flow; emulations: the connection that carried the most data)",
    )
    pl_.add_argument("--conn", type=int, help="connection number (captures; default 0)")
    pl_.add_argument("--interface", type=int, metavar="N", help=IFACE_HELP)
    pl_.add_argument(
        "--dir",
        choices=("a2b", "b2a"),
        help="data direction of the connection (captures; default: the one with more data)",
    )
    pl_.add_argument("--windows", type=float, nargs="+", help="goodput window lengths in seconds (default 10 100 1000)")
    pl_.add_argument("--max-rate", type=float, help="normalise goodput to this rate in bytes/s")
    pl_.add_argument(
        "--sender-state",
        metavar="FILE",
        help="captures: TCP sender state from the sending host, either 'ss -tin' samples "
        "each preceded by a Unix-time line (date +%%s.%%N), or tcp_probe tracepoint output (aligned to the capture by matching ACKs)",
    )
    pl_.set_defaults(fn=cmd)


def _plot_out(a, path: Path, kind: str) -> Path:
    if a.out:
        return Path(a.out)
    base = path if path.is_dir() else path.with_suffix("")
    return (base / f"{kind}.png") if path.is_dir() else Path(f"{base}-{kind}.png")


def cmd(a) -> int:
    from ..analysis.plots import FORMATS, plot

    out = _plot_out(a, Path(a.path), a.kind)
    if out.suffix.lower() not in FORMATS:
        die(f"--out {out}: unknown format {out.suffix or '(none)'!r}; use one of {', '.join(FORMATS)}")
    src = open_analysis(a.path, interface=a.interface)
    layers = [x.strip() for x in a.layers.split(",")] if a.layers else None
    windows = tuple(a.windows) if a.windows else (10.0, 100.0, 1000.0)
    kw = {"windows": windows, "max_rate_Bps": a.max_rate}
    if a.flow is not None:
        kw["flow"] = a.flow
    if a.conn is not None:
        kw["conn"] = a.conn
    if a.dir is not None:
        kw["direction"] = {"a2b": 0, "b2a": 1}[a.dir]
    if a.sender_state:
        if not Path(a.sender_state).is_file():
            die(f"--sender-state {a.sender_state}: no such file (give an 'ss -tin' log or tcp_probe trace output)")
        kw["sender_state"] = a.sender_state
    from ..analysis.sender_state import SenderStateError

    try:
        written = plot(src, a.kind, out, layers=layers, **kw)
    except SenderStateError as e:
        die(f"--sender-state: {e}")
    except ValueError as e:
        die(f"{a.path}: {e}")
    except OSError as e:
        die(f"--out {out}: cannot write there ({e.strerror or e})")
    print(f"wrote {written}")
    return 0
