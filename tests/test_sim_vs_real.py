"""The sim-vs-real study's simulated side and its refusal without privileges (the
real side is exercised by tests/test_emulate.py's GPRS comparison and by running
`thinwire reproduce sim-vs-real` as root)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from thinwire.studies import sim_vs_real


@pytest.mark.parametrize("link", list(sim_vs_real.LINKS))
def test_simulated_downloads_of_each_link_complete(link):
    for sack in (True, False):
        r = sim_vs_real.sim_run(link, sack)
        size = sim_vs_real.LINKS[link][2]
        assert r["completion_s"] > 0 and r["rtt_avg_s"] > 0
        # the goodput never exceeds the link's rate
        assert r["goodput_bps"] < 400_000
        assert r["goodput_bps"] == pytest.approx(8 * size / r["completion_s"])


def test_first_flow_only_keeps_one_flow():
    import tomllib

    text = 'seed = 1\n[[flow]]\napp = "bulk"\nbytes = "1KB"\n[[flow]]\napp = "media"\n'
    assert len(tomllib.loads(sim_vs_real._first_flow_only(text))["flow"]) == 1


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to drop capabilities")
@pytest.mark.skipif(os.geteuid() != 0, reason="dropping capabilities with setpriv needs root (CI runs as root)")
def test_without_privileges_the_study_exits_2_with_one_line(tmp_path):
    exe = Path(sys.executable).parent / "thinwire"
    drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-net_admin,-sys_admin", "--"]
    p = subprocess.run(
        [*drop, str(exe), "reproduce", "sim-vs-real", "--quick", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "sim-vs-real" in p.stderr, p.stderr
