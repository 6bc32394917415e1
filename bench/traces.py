"""Streamed traces (issue "Performance at scale", part 1): `thinwire run` of
scenarios/shared-link-sr.toml with a long transfer, untraced, with every trace
layer, and with every layer and both pcaps, each as its own process (wall time and
peak resident memory from wait4), rounds interleaved so that machine noise hits
every configuration alike. Prints a Markdown table with medians and the ratio to the
untraced run of the same round.
    .venv/bin/python bench/traces.py [--bytes 100MB,1GB] [--rounds 3] [--keep DIR]"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {
    "untraced": [],
    "all layers": ["--out", "{out}"],
    "all layers + both pcaps": ["--out", "{out}", "--pcap"],
}


def once(size: str, args: list[str], out: Path) -> tuple[float, int, int]:
    """(wall s, peak RSS bytes, bytes written)"""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(ROOT / ".venv/bin/thinwire"), "run", str(ROOT / "scenarios/shared-link-sr.toml")]
    cmd += ["--set", f"flow.0.bytes={size}", "--set", "max_time=1000000s"] + [a.format(out=out) for a in args]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {status}")
    written = sum(f.stat().st_size for f in out.iterdir()) if out.is_dir() else 0
    return wall, ru.ru_maxrss * 1024, written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bytes", default="100MB,1GB")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="thinwire-bench-traces-"))
    try:
        print(
            "| transfer | outputs | wall (s, median) | × untraced (median of rounds) | peak RSS (MB, max) | written (MB) |"
        )
        print("|---|---|---|---|---|---|")
        for size in a.bytes.split(","):
            res = {k: [] for k in CONFIGS}
            for _ in range(a.rounds):
                for name, args in CONFIGS.items():
                    res[name].append(once(size, args, tmp / "out"))
            base = [r[0] for r in res["untraced"]]
            for name, rs in res.items():
                ratio = statistics.median(r[0] / b for r, b in zip(rs, base))
                print(
                    f"| {size} | {name} | {statistics.median(r[0] for r in rs):.2f} | {ratio:.2f} |"
                    f" {max(r[1] for r in rs) / 1e6:.0f} | {rs[0][2] / 1e6:.0f} |",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
