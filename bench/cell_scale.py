"""Per-event cost of a shared cell as its mobiles grow (flow key `mobile`).

    .venv/bin/python bench/cell_scale.py [--mobiles 1,10,50,200] [--rounds 3]

N unlimited bulk flows (`profile = "linux"`) over a 10 Mbit/s SR link with 2 %
frame loss for 60 simulated seconds, run through `thinwire.run` (best of
`--rounds`): once with every flow on mobile 0 (one link-layer session for all), once
with flow k on mobile k (a session each). Prints events, wall time, ns per event and
the flows' summed goodput. Not a test: timings are recorded in bench/RESULTS.md.
"""

import argparse

import thinwire

BASE = """seed = 1
stop = "60s"
[wired]
rate = "100Mbps"
delay = "10ms"
[wireless]
rate = "10Mbps"
delay = "20ms"
frame = "250B"
queue = { limit = "50pkt" }
[wireless.channel]
model = "uniform"
p = 0.02
[wireless.arq]
protocol = "sr"
window = 127
ack_delay = "50ms"
timeout = "300ms"
"""


def scenario(n: int, own: bool) -> str:
    flow = '[[flow]]\napp = "bulk"\nbytes = "unlimited"\nmobile = {k}\ntcp = {{ profile = "linux" }}\n'
    return BASE + "".join(flow.format(k=k if own else 0) for k in range(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mobiles", default="1,10,50,200")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    for n in [int(x) for x in a.mobiles.split(",")]:
        for own in (False, True):
            text = scenario(n, own)
            runs = [thinwire.run(text) for _ in range(a.rounds)]
            wall = min(r.summary["wall_s"] for r in runs)
            ev = runs[0].summary["events"]
            good = runs[0].flows["throughput_bps"].sum() / 1e6
            label = "own sessions" if own else "one session "
            print(
                f"{n:4} {label} events {ev:9,} wall {wall:6.3f} s {wall / ev * 1e9:7.1f} ns/event goodput {good:.2f} Mbit/s"
            )


if __name__ == "__main__":
    main()
