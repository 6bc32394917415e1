import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

SMALL = """
seed = 1
stop = "end"
[wired]
rate = "10Mbps"
delay = "1ms"
[wireless]
rate = "64kbps"
delay = "50ms"
frame = "250B"
header = "4B"
[wireless.channel]
model = "uniform"
p = 0.02
[wireless.arq]
protocol = "sr"
[[flow]]
app = "bulk"
bytes = "100KB"
direction = "down"
tcp = { variant = "reno", mss = 210 }
"""


@pytest.fixture
def small_scenario(tmp_path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


def thinwire_cli(*args, cwd=None):
    """Runs the installed `thinwire` command; returns CompletedProcess."""
    exe = Path(sys.executable).parent / "thinwire"
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def shared_dir() -> Path | None:
    """The shared material (seeds, testdata): $THINWIRE_SHARED, ../shared from the
    project root, or /work/shared."""
    for c in (os.environ.get("THINWIRE_SHARED"), ROOT.parent / "shared", Path("/work/shared")):
        if c and (Path(c) / "testdata").is_dir():
            return Path(c)
    return None


def shared_pcap(name: str) -> Path:
    d = shared_dir()
    if d is None or not (d / "testdata" / "pcaps" / name).is_file():
        pytest.skip(f"shared test capture {name} not found (set THINWIRE_SHARED)")
    return d / "testdata" / "pcaps" / name
