"""Peak memory of `thinwire emulate --out` as the offered packets grow (issue "The
real-world half under attack and at scale", item 3): a UDP flood from the mobile
through a 100 Mbit/s raw link, N packets, the emulator's peak RSS (its own
getrusage after it exits, so the end of the run is included) and its wall time.

Run as root: .venv/bin/python bench/emulate_memory.py [--packets 40000,160000,640000]
    [--exe A --exe B ...]   (thinwire executables to compare, runs alternated)
    [--tcp-mb 50,200]       (instead of the flood: one TCP download of that many
                             MB, curl from python's http.server, whose segments
                             fill the trace's tcp layer and the flows table)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = """
seed = 1
[wired]
rate = "1Gbps"
delay = "1ms"
[wireless]
rate = "100Mbps"
delay = "1ms"
frame = "1500B"
header = "0B"
queue = { limit = "10000pkt" }
"""

FLOOD = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    s.sendto(b"x" * 100, ("10.0.0.1", 9))
    if i % 200 == 199:
        time.sleep(0.002)
"""


def one(exe: str, n: int, tmp: Path, out: bool, tcp: bool = False) -> dict:
    sc = tmp / "s.toml"
    sc.write_text(SCENARIO)
    flood = tmp / "flood.py"
    flood.write_text(FLOOD)
    mobile = f"{sys.executable} {flood} {n}"
    extra = []
    if tcp:
        www = tmp / f"www-{n}"
        if not www.is_dir():
            www.mkdir()
            with open(www / "f.bin", "wb") as f:
                f.truncate(n * 1_000_000)
        mobile = "curl -s -o /dev/null http://10.0.0.1:8000/f.bin"
        extra = ["--server", f"exec python3 -m http.server 8000 --bind 10.0.0.1 --directory {www} 2>/dev/null"]
        extra += ["--server-ready", "8000"]
    cmd = ["/usr/bin/time", "-f", "%M", exe, "emulate", str(sc), "--json", "--mobile", mobile, *extra]
    if out:
        cmd += ["--out", str(tmp / f"out-{n}")]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    s = json.loads(p.stdout)
    return {
        "peak_mb": int(p.stderr.strip().splitlines()[-1]) / 1024,
        "wall_s": wall,
        "read": s["packets"]["from_mobile"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", default="40000,160000,640000")
    ap.add_argument("--exe", action="append", default=[])
    ap.add_argument("--tcp-mb", help="TCP downloads of these sizes (MB) instead of the UDP flood")
    a = ap.parse_args()
    exes = a.exe or [str(Path(sys.executable).parent / "thinwire")]
    tcp = a.tcp_mb is not None
    ns = [int(x) for x in (a.tcp_mb or a.packets).split(",")]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(
            ("| MB downloaded | " if tcp else "| packets offered | ")
            + " | ".join(f"{Path(e).parents[2].name} --out peak MB (s)" for e in exes)
            + " | no --out peak MB |"
        )
        print("|---" * (len(exes) + 2) + "|")
        for n in ns:
            cells = []
            for e in exes:  # alternated per size
                r = one(e, n, tmp, True, tcp)
                cells.append(f"{r['peak_mb']:.1f} ({r['wall_s']:.1f})")
            base = one(exes[0], n, tmp, False, tcp)
            print(f"| {n:,} | " + " | ".join(cells) + f" | {base['peak_mb']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
