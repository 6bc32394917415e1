"""Emulator performance (issue "thinwire emulate"): lateness of written packets at
link rates up to 10 Mbit/s, and the highest rate a `raw` link sustains with a
delivery trace of many opportunities per millisecond, with the emulator's CPU use.

Run as root: .venv/bin/python bench/emulate.py [--seconds 10] [--only trace-100]
    [--exe A --exe B] [--rounds 3]   (builds compared, runs alternated)
Each case runs iperf3 (TCP, one stream, server → mobile) through
`thinwire emulate` and reads the emulator's summary; CPU is the emulator process's
user + system time (getrusage of children) over the run's length.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

EXE = Path(sys.executable).parent / "thinwire"

SCENARIO = """
seed = 1
[wired]
rate = "{wired}"
delay = "1ms"
[wireless]
rate = "{rate}"
delay = "10ms"
frame = "1500B"
header = "0B"
queue = {{ limit = "{queue}pkt" }}
{extra}
"""


def run(tmp: Path, name: str, scenario: str, seconds: float, exe: Path = EXE) -> dict:
    sc = tmp / f"{name}.toml"
    sc.write_text(scenario)
    mobile = f"sleep 0.3; iperf3 -c $THINWIRE_PEER -R -t {seconds} -J --connect-timeout 3000 > {tmp}/{name}.iperf.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(
        [str(exe), "emulate", str(sc), "--json", "--mobile", mobile, "--server", "exec iperf3 -s -1 -B $THINWIRE_ADDR"],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{name}: emulate failed: {p.stderr.strip()[-500:]}")
    s = json.loads(p.stdout)
    # The children's CPU includes iperf3's (both ends run under the emulator's
    # process tree): subtract what iperf3 reports for itself.
    ip = json.loads((tmp / f"{name}.iperf.json").read_text())
    end = ip["end"]
    bps = end["sum_received"]["bits_per_second"]
    iperf_cpu = (
        (end["cpu_utilization_percent"]["host_total"] + end["cpu_utilization_percent"]["remote_total"]) / 100 * seconds
    )
    total_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    emu_cpu = max(total_cpu - iperf_cpu, 0.0)
    lat = s["lateness"]
    return {
        "case": name,
        "goodput_mbps": bps / 1e6,
        "lateness_p50_ms": lat["p50_ms"],
        "lateness_p99_ms": lat["p99_ms"],
        "lateness_max_ms": lat["max_ms"],
        "packets": lat["packets"],
        "emulator_cpu_s": emu_cpu,
        "emulator_cpu_pct": 100 * emu_cpu / s["duration_s"],
        "cpu_pct_per_100mbps": 100 * emu_cpu / s["duration_s"] / max(bps / 1e8, 1e-9),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--only", help="run the cases whose name starts with this")
    ap.add_argument("--exe", action="append", default=[], help="thinwire executables to compare (alternated)")
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespaces)")
    exes = [Path(e) for e in a.exe] or [EXE]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cases = []
        for rate in ("1Mbps", "10Mbps"):
            cases.append((f"rate-{rate}", SCENARIO.format(wired="100Mbps", rate=rate, queue=100, extra="")))
        # 1504 bytes per opportunity; K opportunities per ms = K * 12.032 Mbit/s.
        for k in (50, 100):
            (tmp / f"k{k}.trace").write_text("1\n" * k)
            extra = f'[wireless.down]\ndelivery_trace = "k{k}.trace"'
            sc = SCENARIO.format(wired="10000Mbps", rate="10000Mbps", queue=1000, extra=extra)
            cases.append((f"trace-{k}-per-ms-{k * 12.032:.0f}Mbps", sc))
        for name, sc in cases:
            if a.only and not name.startswith(a.only):
                continue
            for r in range(a.rounds):
                for exe in exes:
                    row = run(tmp, name, sc, a.seconds, exe)
                    if len(exes) > 1:
                        row = {"build": exe.parents[2].name, "round": r, **row}
                    rows.append(row)
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
