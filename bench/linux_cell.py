"""One sim-against-kernel cell, replicated (issue "Today's TCP", part 5's first cell).

The raw 1.5 Mbit/s, 50 ms link with 1.5 % uniform loss both ways and a 100-packet
queue (scenarios/bulk-10mbps-raw.toml with overrides), a 1 MB download:

    sudo .venv/bin/python bench/linux_cell.py --real 8     # real Linux over the emulator, link seeds 1..8
    .venv/bin/python bench/linux_cell.py --sim 30          # the simulator's profiles, seeds 1..30

Real hosts run the machine's kernel with its default sysctls, CUBIC set on the
route (`ip route … congctl cubic`: a namespace may only default to an allowed
algorithm); completion is the time from the SYN to the last data byte at the mobile
(the emulator's trace). Prints per seed and the medians. Not a test: the figures go
to bench/RESULTS.md.
"""

import argparse
import statistics
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = ['wireless.rate="1500kbps"', 'wireless.channel={model="uniform", p=0.015}']
SIZE = 1_000_000
PROFILES = ['{profile="linux-2.4"}', '{profile="linux", recovery="prr"}', '{profile="linux"}']


def real(n: int) -> None:
    from thinwire.emulate import emulate
    from thinwire.studies.sim_vs_real import download_time

    tune = "ip route change $THINWIRE_PEER dev $THINWIRE_DEV congctl cubic"
    curl = (
        "for i in $(seq 100); do curl -sf -o /dev/null http://$THINWIRE_PEER:8000/f.bin && exit 0; "
        "sleep 0.1; done; exit 1"
    )
    work = Path(tempfile.mkdtemp(prefix="linux-cell-"))
    www = work / "www"
    www.mkdir()
    (www / "f.bin").write_bytes(bytes(range(256)) * (SIZE // 256) + bytes(SIZE % 256))
    base = (ROOT / "scenarios" / "bulk-10mbps-raw.toml").read_text()
    rows = []
    for seed in range(1, n + 1):
        out = work / f"r{seed}"
        s = emulate(
            base,
            seed=seed,
            set=OVERRIDES,
            mobile=f"{tune} && {curl}",
            server=f"{tune} && exec python3 -m http.server 8000 --bind $THINWIRE_ADDR --directory {www} 2>/dev/null",
            out=out,
            commands_to_stderr=True,
        )
        f, done = download_time(s, out)
        rows.append((done, f["tcp_retransmits"]))
        print(f"real seed {seed}: {done:.2f} s, {f['tcp_retransmits']} retransmissions", flush=True)
    print(
        f"real: median {statistics.median(r[0] for r in rows):.2f} s, retransmissions {statistics.median(r[1] for r in rows)}"
    )


def sim(n: int) -> None:
    import thinwire

    base = (ROOT / "scenarios" / "bulk-10mbps-raw.toml").read_text()
    for tcp in PROFILES:
        rows = []
        for seed in range(1, n + 1):
            over = OVERRIDES + [f'flow.0.bytes="{SIZE}B"', 'stop="end"', f"flow.0.tcp={tcp}"]
            f = thinwire.run(base, seed=seed, set=over).flows.row(0, named=True)
            rows.append((f["completion_s"], f["tcp_retransmits"], f["tcp_timeouts"]))
        t = sorted(r[0] for r in rows)
        p10, p90 = t[int(0.1 * (n - 1))], t[int(0.9 * (n - 1))]
        print(
            f"sim {tcp}: median {statistics.median(t):.2f} s (p10 {p10:.2f}, p90 {p90:.2f}), "
            f"retransmissions {statistics.median(r[1] for r in rows)}, timeouts mean {sum(r[2] for r in rows) / n:.2f}"
        )
        print("   seeds 1-8:", [(round(r[0], 2), r[1]) for r in rows[:8]])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", type=int, default=0, help="real runs (link seeds 1..N; needs root)")
    ap.add_argument("--sim", type=int, default=0, help="simulated seeds 1..N per profile")
    a = ap.parse_args()
    if a.real:
        real(a.real)
    if a.sim:
        sim(a.sim)
