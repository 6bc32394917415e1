"""Capture-analysis benchmark for bench/RESULTS.md: thinwire against tcptrace.

    .venv/bin/python bench/analysis.py [--copies 64] [--repeat 5]

Builds a capture of about a million packets in a temporary directory by repeating
the shared real capture tcptrace_dsack.pcap (15,712 packets, one 16 MiB transfer)
`--copies` times, each copy a new connection (its client port changed) later in
time, then times `tcptrace -l -r -n FILE` and `thinwire analyze FILE --json` (the
whole command, from process start) and the analysis alone inside the Rust core.
"""

import argparse
import json
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def build_capture(src: Path, out: Path, copies: int) -> int:
    data = src.read_bytes()
    assert struct.unpack("<I", data[:4])[0] == 0xA1B2C3D4, "little-endian microsecond pcap expected"
    head, body = data[:24], data[24:]
    recs = []
    o = 0
    while o + 16 <= len(body):
        sec, usec, incl, orig = struct.unpack("<IIII", body[o : o + 16])
        recs.append((sec, usec, bytearray(body[o + 16 : o + 16 + incl]), orig))
        o += 16 + incl
    t_span = recs[-1][0] - recs[0][0] + 2
    n = 0
    with out.open("wb") as f:
        f.write(head)
        for k in range(copies):
            for sec, usec, pkt, orig in recs:
                p = bytearray(pkt)
                # Ethernet + IPv4 (IHL from the header); rewrite the client port 1024 -> 1024 + k.
                ip = 14
                ihl = (p[ip] & 0x0F) * 4
                tcp = ip + ihl
                sp, dp = struct.unpack(">HH", p[tcp : tcp + 4])
                if sp == 1024:
                    p[tcp : tcp + 2] = struct.pack(">H", 1024 + k)
                if dp == 1024:
                    p[tcp + 2 : tcp + 4] = struct.pack(">H", 1024 + k)
                f.write(struct.pack("<IIII", sec + k * t_span, usec, len(p), orig))
                f.write(p)
                n += 1
    return n


def timed(cmd, repeat):
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        ts.append(time.perf_counter() - t0)
        if out.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed: {out.stderr[-500:]}")
    return ts, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    from conftest import shared_pcap  # noqa: E402

    src = shared_pcap("tcptrace_dsack.pcap")
    with tempfile.TemporaryDirectory() as d:
        cap = Path(d) / "million.pcap"
        n = build_capture(src, cap, a.copies)
        print(f"capture: {n:,} packets, {cap.stat().st_size / 1e6:.0f} MB ({a.copies} copies of {src.name})")
        exe = Path(sys.executable).parent / "thinwire"
        tw, out = timed([str(exe), "analyze", str(cap), "--json"], a.repeat)
        j = json.loads(out)
        assert len(j["connections"]) == a.copies
        import thinwire._core as core

        inner = [core.analyze_capture(str(cap), False)["wall_s"] for _ in range(a.repeat)]
        print(
            f"thinwire analyze --json: median {statistics.median(tw):.3f} s (best {min(tw):.3f}) = {n / statistics.median(tw) / 1e6:.2f} M packets/s"
        )
        print(
            f"  inside the Rust core (reading and analysis, no interpreter start): median {statistics.median(inner):.3f} s = {n / statistics.median(inner) / 1e6:.2f} M packets/s"
        )
        if shutil.which("tcptrace"):
            tt, _ = timed(["tcptrace", "-l", "-r", "-n", str(cap)], a.repeat)
            print(
                f"tcptrace -l -r -n: median {statistics.median(tt):.3f} s (best {min(tt):.3f}) = {n / statistics.median(tt) / 1e6:.2f} M packets/s"
            )
            print(
                f"speed ratio (tcptrace time / thinwire time, medians of the same run): {statistics.median(tt) / statistics.median(tw):.2f}x"
            )
        else:
            print("tcptrace not installed: no comparison")


if __name__ == "__main__":
    main()
