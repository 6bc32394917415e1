"""`thinwire run`: one scenario, its summary, its output folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._core import ScenarioError
from ..fields import plural as _n
from .common import DEFAULT_LAYERS, LAYERS, die, warn_unfinished, with_path


def add(sub) -> None:
    r = sub.add_parser("run", help="run a scenario and print a summary")
    r.add_argument("scenario", type=Path, help="scenario TOML file")
    r.add_argument("--seed", type=int, help="root seed (overrides the scenario's)")
    r.add_argument("--run", type=int, help="run index (replication) within the seed")
    r.add_argument("--out", help="directory for summary.json, flows.parquet, trace.parquet and pcaps")
    r.add_argument(
        "--pcap", action="store_true", help="write server.pcap and mobile.pcap (IP packets seen at each host)"
    )
    r.add_argument(
        "--mm-log",
        action="store_true",
        help="write mm-down.log and mm-up.log: the wireless link in mm-link's log format (Mahimahi's graph scripts read them)",
    )
    r.add_argument(
        "--trace",
        help=f"layers to trace: comma list of {','.join(LAYERS)}, or 'none' (default: all but sojourn when --out is given)",
    )
    r.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    r.add_argument(
        "--plot",
        action="store_true",
        help="also write the multi-layer time/sequence plot (tsq.png and tsq.html) into the output directory",
    )
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. flow.0.bytes=1MB (repeatable)",
    )
    r.set_defaults(fn=cmd)


def print_summary(s: dict, out=sys.stdout) -> None:
    from ..fields import columns, table

    w = out.write
    w(
        f"scenario {s['scenario']}: simulated {s['sim_time_s']:.3f} s in {s['wall_s'] * 1e3:.1f} ms wall "
        f"({s['events']:,} events, {s['events_per_s'] / 1e6:.2f} M events/s)\n\n"
    )
    # Columns come from the result descriptions (label and group of each field).
    tcp_flows = [f for f in s["flows"] if f["app"] not in ("media", "probe")]
    if tcp_flows:
        w("\n".join(table(tcp_flows, columns("flow", "tcp"))) + "\n")
    # Media packets and interactive messages: delivery and one-way latency.
    media = [f for f in s["flows"] if f["packets_sent"] is not None]
    if media:
        w("\n" + "\n".join(table(media, columns("flow", "media"))) + "\n")
    px = s.get("proxy")
    if px:
        w(
            f"\nproxy: {_n(px['connections'], 'connection')}, {_n(px['segments_sent'], 'segment')} sent to the mobile, {px['retransmits']:,} retransmitted, "
            f"{_n(px['timeouts'], 'timeout')} in {_n(px['stalls'], 'stall')}, at most {px['max_buffered']:,} B held; window {px['clamp']:,} B, "
            "wireless-leg RTT "
            + (f"{px['rtt_avg_s'] * 1e3:.0f} ms" if px["rtt_avg_s"] is not None else "-")
            + " (the flows' RTT column is the wired leg's)\n"
        )
    links = [dict(s["link"][d], link=d) for d in ("down", "up")]
    w("\n" + "\n".join(table(links, columns("link"), first=("link", "link"))) + "\n")


def cmd(a) -> int:
    layers = None
    if a.trace is not None:
        from ..api import layer_list

        layers = layer_list(a.trace)
        bad = [x for x in layers if x not in LAYERS]
        if bad:
            die(f"--trace: {bad[0]!r} is not a layer; use a comma-separated list of {', '.join(LAYERS)}, or 'none'")
    elif a.out or a.plot:
        layers = list(DEFAULT_LAYERS)
    out = Path(a.out) if a.out else None
    if (a.pcap or a.plot or a.mm_log) and out is None:
        out = Path("thinwire-out") / Path(a.scenario).stem
    try:
        from ..api import run

        # With --out the core streams traces and captures into the folder as the run
        # goes (bounded memory whatever the run's length).
        res = run(
            a.scenario, seed=a.seed, run_index=a.run, set=a.set, trace=layers, pcap=a.pcap, mm_log=a.mm_log, out=out
        )
    except ScenarioError as e:
        die(with_path(a.scenario, e))
    except OSError as e:
        die(f"--out {out}: cannot write there ({e.strerror or e})")
    written = list(res.written)
    if a.plot:
        from ..analysis import SimRun
        from ..analysis.plots import plot

        run_ = SimRun.from_result(res)
        try:
            written += [plot(run_, "tsq", out / "tsq.png"), plot(run_, "tsq", out / "tsq.html")]
        except ValueError as e:
            die(f"--plot: {e}")
    warn_unfinished(res.summary)
    if a.json:
        s = res.summary
        if written:
            s = dict(s, written=[str(p) for p in written])
        json.dump(s, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_summary(res.summary)
        if written:
            print("\nwrote " + ", ".join(str(p) for p in written))
    return 0
