"""Cost of the split-TCP proxy in the simulator, measured as a ratio in one run.

    .venv/bin/python bench/proxy_overhead.py [--repeat N]

scenarios/gprs-download.toml (600 KB over GPRS) without and with `[proxy]`, and the
same with two downloads and an interactive flow; wall time inside the Rust core,
median of --repeat runs, interleaved so that machine noise hits both alike.
"""

import argparse
import statistics
from pathlib import Path

import thinwire

ROOT = Path(__file__).resolve().parent.parent
BASE = (ROOT / "scenarios/gprs-download.toml").read_text()
MORE = (
    '[[flow]]\napp = "bulk"\nbytes = "600KB"\nstart = "20s"\ntcp = { profile = "linux-2.4" }\n'
    '[[flow]]\napp = "interactive"\nmessages = 100\nstart = "5s"\ntcp = { profile = "linux-2.4" }\n'
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=21)
    a = ap.parse_args()
    for name, text in (("one download", BASE), ("two downloads + interactive", BASE + MORE)):
        with_proxy = text.replace("[[flow]]", "[proxy]\n\n[[flow]]", 1)
        walls = {False: [], True: []}
        events = {}
        for _ in range(a.repeat):
            for p, t in ((False, text), (True, with_proxy)):
                s = thinwire.run(t).summary
                walls[p].append(s["wall_s"])
                events[p] = s["events"]
        m = {p: statistics.median(w) for p, w in walls.items()}
        print(
            f"{name:<30} no proxy {m[False] * 1e3:6.2f} ms ({events[False]:,} events)  proxy {m[True] * 1e3:6.2f} ms ({events[True]:,} events)  "
            f"ratio {m[True] / m[False]:.2f}"
        )


if __name__ == "__main__":
    main()
