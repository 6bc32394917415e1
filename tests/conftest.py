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


GOLDEN = ROOT / "tests" / "data" / "golden"


def assert_golden_claims(study: str, claims: list) -> None:
    """The quick study's claims equal the recorded ones (tests/data/golden/claims/):
    a restructuring must not change a study's results. A deliberate change rewrites
    the file (`thinwire reproduce STUDY --quick --json > that file`) and says why."""
    import json

    want = json.loads((GOLDEN / "claims" / f"{study}.json").read_text())
    diff = [(w["claim"], w["measured"], g["measured"]) for w, g in zip(want, claims) if w != g]
    assert len(want) == len(claims) and not diff, f"{study}: claims changed (claim, recorded, now): {diff}"
