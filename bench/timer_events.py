"""Timer-driven transmissions and RTT samples of a download's server, read from
server-side captures — one classifier for real runs (the emulator's
`server.pcap`) and simulated ones (`thinwire.run(..., pcap=True)`), so the two
sides are counted alike (docs/studies/sim-vs-real.md, "Timeouts read from the
captures").

    .venv/bin/python bench/timer_events.py --real 'DIR/rlc-uniform-cubic-*/out/server.pcap' \\
        [--sim-cell rlc-uniform --sim-tcp cubic --sim-seeds 1-30] [--sim 'GLOB']

A server transmission more than QUIET (2 ms) after the last packet from the
mobile is timer-driven: an RTO when it resends the cumulative ACK point at least
200 ms after that packet (split by whether the head had been resent before), the
RACK reordering timer when sooner, a TLP when it sends the highest segment or new
data. Also: the RTT of segments sent once (Karn, per cumulative ACK), and, with
tshark, the ACKs that advance `snd_una` while echoing a timestamp more than 1 s
old that belongs to a segment resent later (the kernel's RTT sample for such an
ACK is the timestamp's: `tcp_ack_update_rtt`).
"""

from __future__ import annotations

import argparse
import collections
import glob
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUIET = 0.002
MSS = 1448


def _download(rows: list[dict]) -> list[dict]:
    by = collections.Counter(r["conn"] for r in rows if r["dir"] == 1 and r["len"] > 0)
    conn = by.most_common(1)[0][0]
    return [r for r in rows if r["conn"] == conn]


def timer_events(pcap: str) -> list[dict]:
    from thinwire.analysis.capture import analyze_capture

    rows = _download(analyze_capture(pcap).packets.to_dicts())
    last_in = None
    una = nxt = 0
    sent: collections.Counter = collections.Counter()
    events, last_quiet = [], -1.0
    for r in rows:
        if r["dir"] == 0:
            last_in = r["time_s"]
            una = max(una, r["ack"])
            continue
        if r["len"] <= 0:
            continue
        t = r["time_s"]
        quiet = last_in is not None and t - last_in > QUIET
        if quiet and t - last_quiet > 0.001:
            idle = t - last_in
            if r["seq"] == una and r["seq"] < nxt:
                kind = "rto-resent" if sent[r["seq"]] > 1 else "rto-first"
                kind = kind if idle >= 0.2 else "rack-timer"
            elif r["seq"] + r["len"] >= nxt:
                kind = "tlp"
            else:
                kind = "other"
            events.append({"t": t, "kind": kind, "idle": idle, "flight": (nxt - una) / MSS})
        if quiet:
            last_quiet = t
        sent[r["seq"]] += 1
        nxt = max(nxt, r["seq"] + r["len"])
    return events


def karn_rtts(pcap: str) -> list[float]:
    from thinwire.analysis.capture import analyze_capture

    rows = _download(analyze_capture(pcap).packets.to_dicts())
    sent: dict[int, float | None] = {}
    out, una = [], 0
    for r in rows:
        if r["dir"] == 1 and r["len"] > 0:
            sent[r["seq"]] = None if r["seq"] in sent else r["time_s"]
        elif r["dir"] == 0 and r["ack"] > una:
            new = [s for s in sent if una <= s < r["ack"]]
            if new and all(sent[s] is not None for s in new):
                out.append(r["time_s"] - min(sent[s] for s in new))
            una = r["ack"]
    return out


def old_echoes(pcap: str, older_s: float = 1.0) -> int:
    """ACKs advancing snd_una that echo a timestamp over `older_s` old whose
    segment was resent later (tshark)."""
    f = "frame.time_relative tcp.srcport tcp.len tcp.seq tcp.ack tcp.options.timestamp.tsval tcp.options.timestamp.tsecr tcp.stream"
    cmd = ["tshark", "-r", pcap, "-T", "fields"] + [x for k in f.split() for x in ("-e", k)]
    rows = [ln.split("\t") for ln in subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()]
    size: collections.Counter = collections.Counter()
    for r in rows:
        if r[2] and int(r[2]) > 0:
            size[(r[7], r[1])] += int(r[2])
    stream, port = size.most_common(1)[0][0]
    tsv: dict[int, tuple[float, int]] = {}
    copies: collections.Counter = collections.Counter()
    una = n = 0
    for t, sp, ln, seq, ack, tsval, tsecr, st in rows:
        if st != stream:
            continue
        if sp == port:
            if tsval:
                tsv.setdefault(int(tsval), (float(t), int(seq)))
            if int(ln or 0) > 0:
                copies[int(seq)] += 1
        elif tsecr and int(tsecr) in tsv:
            t0, s0 = tsv[int(tsecr)]
            if int(ack) > una and float(t) - t0 > older_s and copies[s0] > 1:
                n += 1
            una = max(una, int(ack))
    return n


def summary(pcaps: list[str]) -> dict:
    n = len(pcaps)
    kinds: collections.Counter = collections.Counter()
    idle = collections.defaultdict(list)
    rtts: list[float] = []
    echoes = 0
    for p in pcaps:
        for e in timer_events(p):
            kinds[e["kind"]] += 1
            idle[e["kind"]].append(e["idle"])
        rtts += karn_rtts(p)
        echoes += old_echoes(p) if shutil.which("tshark") else 0
    med = lambda v: round(statistics.median(v), 3) if v else None  # noqa: E731
    return {
        "runs": n,
        "per_run": {k: round(v / n, 1) for k, v in sorted(kinds.items())},
        "idle_median_s": {k: med(v) for k, v in sorted(idle.items()) if k.startswith("rto")},
        "karn_rtt_median_s": med(rtts),
        "old_echoes_per_run": round(echoes / n, 2) if shutil.which("tshark") else None,
    }


def _seeds(s: str) -> list[int]:
    a, _, b = s.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", help="glob of real runs' server.pcap")
    ap.add_argument("--sim", help="glob of simulated runs' server.pcap")
    ap.add_argument("--sim-cell", help="run the simulated side here: a sim-vs-real cell")
    ap.add_argument("--sim-tcp", default="cubic")
    ap.add_argument("--sim-seeds", default="1-30")
    a = ap.parse_args()
    if a.real:
        print("real", summary(sorted(glob.glob(a.real))))
    if a.sim:
        print("sim", summary(sorted(glob.glob(a.sim))))
    if a.sim_cell:
        import warnings

        import thinwire
        from thinwire.studies import sim_vs_real as svr

        warnings.simplefilter("ignore")
        d = Path(tempfile.mkdtemp(prefix="timer-events-"))
        pcaps = []
        for seed in _seeds(a.sim_seeds):
            text, over, _ = svr.cell_text(a.sim_cell)
            out = d / str(seed)
            thinwire.run(text, seed=seed, set=over + [f"flow.0.tcp={svr.TCPS[a.sim_tcp][1]}"], pcap=True, out=str(out))
            pcaps.append(str(out / "server.pcap"))
        print("sim", summary(pcaps))
        shutil.rmtree(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
