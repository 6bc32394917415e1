"""What each queue discipline costs per event (issue "Queue disciplines", its
constraint: record each discipline's cost).

    .venv/bin/python bench/qdisc_cost.py [--rounds 7] [--runs 5]

The scenario is benchmark (b) (`scenarios/bulk-10mbps-raw.toml`: 60 s of bulk
TCP over a 10 Mbit/s link with 1 % loss) without losses, so the 100-packet
wireless queue is the bottleneck and every packet meets the discipline; each
discipline runs there (ECN off), with drop-tail as the reference. Per round each
discipline runs `--runs` times (best kept), the order rotated round by round;
printed: events, the core's `wall_s` per event (median of the rounds), its ratio
to drop-tail's, and the drops. Timings are never asserted anywhere."""

import argparse
import statistics
from pathlib import Path

import thinwire

ROOT = Path(__file__).resolve().parent.parent
DISCIPLINES = ("droptail", "red", "codel", "fq_codel", "pie")


def scenario(disc: str) -> str:
    text = (ROOT / "scenarios" / "bulk-10mbps-raw.toml").read_text()
    text = text.replace("p = 0.01", "p = 0.0")
    q = f'{{ discipline = "{disc}", limit = "100pkt" }}'
    return text.replace('queue = { limit = "100pkt" }', f"queue = {q}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    texts = {d: scenario(d) for d in DISCIPLINES}
    per_event: dict[str, list[float]] = {d: [] for d in DISCIPLINES}
    info: dict[str, dict] = {}
    for r in range(a.rounds):
        order = DISCIPLINES[r % len(DISCIPLINES) :] + DISCIPLINES[: r % len(DISCIPLINES)]
        for d in order:
            best = None
            for _ in range(a.runs):
                s = thinwire.run(texts[d]).summary
                t = s["wall_s"] / s["events"]
                best = t if best is None else min(best, t)
                info[d] = s
            per_event[d].append(best)
    base = statistics.median(per_event["droptail"])
    print(
        f"{'discipline':<10} {'events':>9} {'ns/event':>9} {'ratio':>6} {'q drops':>8} {'aqm':>6} {'goodput Mbit/s':>15} {'rtt ms':>7}"
    )
    for d in DISCIPLINES:
        s = info[d]
        m = statistics.median(per_event[d])
        link = s["link"]["down"]
        f = s["flows"][0]
        print(
            f"{d:<10} {s['events']:>9,} {m * 1e9:>9.1f} {m / base:>6.2f} {link['queue_drops']:>8} "
            f"{link['queue_aqm_drops']:>6} {f['throughput_bps'] / 1e6:>15.2f} {f['rtt_avg_s'] * 1e3:>7.1f}"
        )


if __name__ == "__main__":
    main()
