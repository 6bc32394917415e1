"""HTML viewer benchmark: a time/sequence page with a million points, loaded in
headless chromium; reports the file size, the page's own draw time (the viewer
writes it into #tw-status data-draw-ms) and the wall time to load and draw.

    .venv/bin/python bench/html_viewer.py [--points 1000000]
"""

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from thinwire.analysis.html import write_html
from thinwire.analysis.series import Series


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    a = ap.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise SystemExit("chromium not installed")
    n = a.points
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 3600, n))
    seq = np.cumsum(rng.integers(500, 1500, n)).astype(float)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "big.html"
        write_html(
            [Series("TcpSnd_data", t, seq, "points"), Series("TcpSnd_ack", t, seq - 20_000, "step")],
            {"title": f"{n:,} points", "xlabel": "time (s)", "ylabel": "bytes"},
            out,
            "tsq",
        )
        t0 = time.perf_counter()
        r = subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=20000",
                "--window-size=1400,900",
                "--dump-dom",
                out.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        wall = time.perf_counter() - t0
        m = re.search(r'id="tw-status" data-draw-ms="([0-9.]+)">drawn (\d+) points', r.stdout)
        print(
            f"page {out.stat().st_size / 1e6:.1f} MB with {2 * n:,} points; chromium load+draw {wall:.2f} s; "
            f"one full redraw {m.group(1) if m else '?'} ms ({m.group(2) if m else '?'} points drawn)"
        )


if __name__ == "__main__":
    main()
