"""Benchmarks for bench/RESULTS.md: events per second and wall time.

    .venv/bin/python bench/run.py [--repeat N]

(a) scenarios/shared-link-sr.toml (10 MB over 64 kbit/s SR, two-state errors);
(b) scenarios/bulk-10mbps-raw.toml (60 s NewReno, 10 Mbit/s, 50 ms, 1 % loss).
Wall time is measured inside the Rust core around the simulation (no parsing, no
result conversion); each is run --repeat times and the median and best reported.
Traces are off, as in a sweep; a third line runs (a) with every trace layer on.
"""

import argparse
import platform
import statistics
import subprocess
from pathlib import Path

import thinwire

ROOT = Path(__file__).resolve().parent.parent


def cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def bench(name, path, repeat, **kw):
    rs = [thinwire.run(path, **kw).summary for _ in range(repeat)]
    walls = [r["wall_s"] for r in rs]
    eps = [r["events"] / r["wall_s"] for r in rs]
    r = rs[0]
    print(
        f"{name:<34} events {r['events']:>10,}  sim {r['sim_time_s']:>8.1f} s  wall median {statistics.median(walls) * 1e3:7.1f} ms "
        f"(best {min(walls) * 1e3:6.1f})  {statistics.median(eps) / 1e6:5.2f} M events/s (best {max(eps) / 1e6:5.2f})  "
        f"throughput {r['flows'][0]['throughput_bps'] / 1e3:.1f} kbit/s"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    print(f"machine: {cpu()}, {platform.system()} {platform.release()}, python {platform.python_version()}")
    bench("(a) shared-link-sr (10 MB, SR)", ROOT / "scenarios/shared-link-sr.toml", a.repeat)
    bench("(b) bulk-10mbps-raw (60 s NewReno)", ROOT / "scenarios/bulk-10mbps-raw.toml", a.repeat)
    bench(
        "(a) with all trace layers",
        ROOT / "scenarios/shared-link-sr.toml",
        a.repeat,
        trace=["tcp", "link", "queue", "channel"],
    )


if __name__ == "__main__":
    main()
