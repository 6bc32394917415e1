"""Scale (issue "Performance at scale", part 4): 1 to 10,000 unlimited bulk flows
sharing one raw link at 1 and 10 Gbit/s for 60 simulated seconds; each run in its
own process (`examples/scale`), so its peak resident memory is its own. Prints a
Markdown table: events/s, cost per event relative to one flow at the same rate, peak
memory, and memory per flow ((peak − peak with one flow) / flows).
    .venv/bin/python bench/scale.py [--seconds 60] [--flows 1,10,100,1000,10000] [--rates 1Gbps,10Gbps]"""

import argparse
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(flows: int, rate: str, seconds: float) -> dict:
    exe = ROOT / "target/release/examples/scale"
    out = subprocess.run([exe, str(flows), rate, str(seconds)], check=True, capture_output=True, text=True).stdout
    f = out.split()
    d = dict(zip(f[0::2], f[1::2]))
    return {
        "flows": flows,
        "rate": rate,
        "events": int(d["events"]),
        "wall": float(d["wall"]),
        "eps": float(d["events_per_s"]),
        "goodput": float(d["goodput_bps"]),
        "hwm": int(d["hwm"]) * 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--flows", default="1,10,100,1000,10000")
    ap.add_argument("--rates", default="1Gbps,10Gbps")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "--release", "--example", "scale"], cwd=ROOT, check=True)
    print(
        "| rate | flows | events | wall (s) | M events/s | ns/event vs 1 flow | goodput (Gbit/s) | peak RSS (MB) | bytes/flow |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in a.rates.split(","):
        base = None
        for n in (int(x) for x in a.flows.split(",")):
            r = run(n, rate, a.seconds)
            base = base or r
            per_flow = (r["hwm"] - base["hwm"]) / n if n > base["flows"] else float("nan")
            print(
                f"| {rate} | {n:,} | {r['events']:,} | {r['wall']:.2f} | {r['eps'] / 1e6:.2f} | "
                f"{base['eps'] / r['eps']:.2f}× | {r['goodput'] / 1e9:.3f} | {r['hwm'] / 1e6:.1f} | "
                f"{'—' if per_flow != per_flow else f'{per_flow:,.0f}'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
