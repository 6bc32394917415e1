"""thinwire's queue disciplines against ns-3's on the same arrival sequences
(issue "Queue disciplines", part 4: another implementation). Not run in CI.

    .venv/bin/python bench/aqm_ns3.py --ns3-python /tmp/ns3venv/bin/python

Needs a Python with PyPI's `ns3` (3.44 was used: `python3 -m venv /tmp/ns3venv &&
/tmp/ns3venv/bin/pip install ns3`). For each workload an arrival file is written
(`time_ns,size,flow,ect`); thinwire replays it through `examples/qdisc_replay`
and ns-3 through `bench/_ns3_qdisc.py` — the same driver: a 10 Mbit/s
transmitter that dequeues when free. Parameters are set alike on both sides
(below); printed side by side: packets sent, drops (limit / AQM), marks, sojourn
p50/p90/p99 (ms).

Workloads (fixed seeds): `poisson` — 20,000 packets at 1.3 times the link rate,
three flows, one ECN-capable; `onoff` — 1 s at twice the rate, 1 s at half,
40,000 packets, the same flows."""

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATE = 10_000_000
SIZES = (1500, 1500, 576, 40)


def tc_weight(qmin_pkts: float, burst: int) -> float:
    """tc_red_eval_ewma, as thinwire's red.rs computes it."""
    a = burst + 1 - qmin_pkts
    w = 0.5
    for _ in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return w
        w /= 2
    return w


# (name, thinwire queue table, ns-3 type, ns-3 attributes)
RED_W = tc_weight(30, 50)
CASES = [
    ("codel", '{ discipline = "codel", limit = "1000pkt" }', "ns3::CoDelQueueDisc", "MaxSize=1000p"),
    (
        "codel+ecn",
        '{ discipline = "codel", limit = "1000pkt", ecn = true }',
        "ns3::CoDelQueueDisc",
        "MaxSize=1000p;UseEcn=true",
    ),
    (
        "fq_codel",
        '{ discipline = "fq_codel", limit = "1000pkt", ecn = false }',
        "ns3::FqCoDelQueueDisc",
        "MaxSize=1000p;UseEcn=false;Quantum=1514;Flows=1024;DropBatchSize=64",
    ),
    (
        "fq_codel+ecn",
        '{ discipline = "fq_codel", limit = "1000pkt", ecn = true }',
        "ns3::FqCoDelQueueDisc",
        "MaxSize=1000p;UseEcn=true;Quantum=1514;Flows=1024;DropBatchSize=64",
    ),
    ("pie", '{ discipline = "pie", limit = "1000pkt" }', "ns3::PieQueueDisc", "MaxSize=1000p;MeanPktSize=1500"),
    (
        "pie+ecn",
        '{ discipline = "pie", limit = "1000pkt", ecn = true }',
        "ns3::PieQueueDisc",
        "MaxSize=1000p;MeanPktSize=1500;UseEcn=true",
    ),
    (
        "red",
        '{ discipline = "red", limit = "1000pkt", min = "30pkt", max = "90pkt", probability = 0.1, burst = 50 }',
        "ns3::RedQueueDisc",
        f"MaxSize=1000p;MinTh=30;MaxTh=90;LInterm=10;QW={RED_W};Wait=false;Gentle=true;UseHardDrop=true;"
        f"MeanPktSize=1000;LinkBandwidth={RATE}bps",
    ),
    (
        "red+ecn",
        '{ discipline = "red", limit = "1000pkt", min = "30pkt", max = "90pkt", probability = 0.1, burst = 50, ecn = true }',
        "ns3::RedQueueDisc",
        f"MaxSize=1000p;MinTh=30;MaxTh=90;LInterm=10;QW={RED_W};Wait=false;Gentle=true;UseHardDrop=true;"
        f"MeanPktSize=1000;LinkBandwidth={RATE}bps;UseEcn=true",
    ),
]


def workload(name: str, path: Path) -> None:
    rnd = random.Random(7)
    mean_size = sum(SIZES) / len(SIZES)
    gap = mean_size * 8e9 / RATE  # ns at the link rate
    t, lines = 0, []
    n = 20_000 if name == "poisson" else 40_000
    for i in range(n):
        load = 1.3 if name == "poisson" else (2.0 if (t // 1_000_000_000) % 2 == 0 else 0.5)
        t += int(rnd.expovariate(load / gap)) | 1  # odd: no tie with a departure
        lines.append(f"{t},{rnd.choice(SIZES)},{i % 3},{int(i % 3 == 0)}")
    path.write_text("\n".join(lines) + "\n")


def thinwire_side(arr: Path, queue: str) -> dict:
    exe = ROOT / "target" / "release" / "examples" / "qdisc_replay"
    out = subprocess.run([str(exe), str(arr), str(RATE), queue], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def ns3_side(py: str, arr: Path, typ: str, attrs: str) -> dict:
    out = subprocess.run(
        [py, str(ROOT / "bench" / "_ns3_qdisc.py"), str(arr), str(RATE), typ, attrs],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def ns3_split(r: dict, typ: str) -> tuple[int, int]:
    """ns-3's drop reasons as (limit, AQM): CoDel's and FQ-CoDel's "Overlimit
    drop", the internal queue's drops, and PIE's "Forced drop" (its limit) are
    the limit's; RED's "Forced drop" is its region above the thresholds (AQM)."""

    def at_limit(k: str) -> bool:
        return "Overlimit" in k or "internal queue" in k or ("Forced" in k and "Pie" in typ)

    limit = sum(v for k, v in r["drops"].items() if at_limit(k))
    return limit, sum(r["drops"].values()) - limit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns3-python", required=True)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "--release", "--example", "qdisc_replay"], cwd=ROOT, check=True)
    tmp = Path(tempfile.mkdtemp())
    print(
        f"{'workload':<8} {'case':<13} {'side':<8} {'sent':>6} {'limit':>6} {'aqm':>6} {'marks':>6}  sojourn p50/p90/p99 ms"
    )
    for w in ("poisson", "onoff"):
        arr = tmp / f"{w}.csv"
        workload(w, arr)
        for name, queue, typ, attrs in CASES:
            t = thinwire_side(arr, queue)
            n = ns3_side(a.ns3_python, arr, typ, attrs)
            nl, na = ns3_split(n, typ)
            for side, sent, lim, aqm, marks, soj in (
                ("thinwire", t["sent"], t["overflow"], t["aqm_drops"], t["marks"], t["sojourn_ms"]),
                ("ns-3", n["sent"], nl, na, n["marks"], n["sojourn_ms"]),
            ):
                print(
                    f"{w:<8} {name:<13} {side:<8} {sent:>6} {lim:>6} {aqm:>6} {marks:>6}  "
                    f"{soj['p50']:.2f} / {soj['p90']:.2f} / {soj['p99']:.2f}"
                )
            if n["drops"]:
                print(f"{'':<31}ns-3 drop reasons: {n['drops']}", file=sys.stderr)


if __name__ == "__main__":
    main()
