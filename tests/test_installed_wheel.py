"""The path of a user who installs the wheel: build it, install it into a fresh
virtual environment, and work from a folder outside the repository (no checkout
paths, no editable install): the shipped examples, a run with outputs and a plot,
the Python API on an example, one quick study."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import ROOT

MATURIN = Path(sys.executable).parent / "maturin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not MATURIN.exists():
        pytest.skip("maturin is not installed next to this Python (make venv installs it)")
    base = tmp_path_factory.mktemp("wheel")
    # The wheel is built from the working tree as `pip install .` would (release
    # profile; cargo reuses the artifacts of `make build`).
    b = subprocess.run(
        [str(MATURIN), "build", "--release", "-q", "-o", str(base / "dist")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert b.returncode == 0, b.stderr[-2000:]
    (wheel,) = (base / "dist").glob("thinwire-*.whl")
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    i = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert i.returncode == 0, i.stderr[-2000:]
    work = base / "user"
    work.mkdir()
    return env_dir / "bin", work


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["MPLBACKEND"] = "Agg"
    return env


def _run(bin_dir, work, *args, timeout=600):
    return subprocess.run(
        [str(bin_dir / args[0]), *map(str, args[1:])],
        cwd=work,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )


def test_the_wheel_carries_its_examples_and_nothing_of_the_checkout(installed):
    bin_dir, work = installed
    p = _run(
        bin_dir,
        work,
        "python",
        "-c",
        "import thinwire, thinwire.examples as e; print(thinwire.__file__); print(e.path('shared-link-sr'))",
    )
    assert p.returncode == 0, p.stderr
    pkg, example = p.stdout.split()
    assert str(bin_dir.parent) in pkg and str(ROOT) not in pkg, "the venv imported the checkout's package"
    assert Path(example).is_file() and str(bin_dir.parent) in example

    p = _run(bin_dir, work, "thinwire", "examples")
    assert p.returncode == 0, p.stderr
    listed = p.stdout.split()
    shipped = sorted(x.stem for x in (ROOT / "python/thinwire/examples/scenarios").glob("*.toml"))
    assert shipped and all(name in listed for name in shipped)
    assert "sr-timeout" in listed

    p = _run(bin_dir, work, "thinwire", "run", "scenarios/gprs-download.toml")
    assert p.returncode == 2 and "thinwire examples --copy" in p.stderr and "Traceback" not in p.stderr


def test_copied_examples_run_and_plot_from_another_folder(installed):
    bin_dir, work = installed
    p = _run(bin_dir, work, "thinwire", "examples", "--copy", "ex")
    assert p.returncode == 0, p.stderr
    assert (work / "ex/scenarios/shared-link-sr.toml").is_file() and (work / "ex/sweeps/sr-timeout.toml").is_file()
    p = _run(bin_dir, work, "thinwire", "examples", "--copy", "ex")
    assert p.returncode == 2 and "exists" in p.stderr  # nothing replaced unasked

    p = _run(
        bin_dir,
        work,
        "thinwire",
        "run",
        "ex/scenarios/shared-link-sr.toml",
        "--set",
        "flow.0.bytes=60KB",
        "--out",
        "out",
        "--plot",
        "--pcap",
    )
    assert p.returncode == 0, p.stderr
    for f in ("summary.json", "flows.parquet", "trace.parquet", "tsq.png", "tsq.html", "server.pcap"):
        assert (work / "out" / f).stat().st_size > 0, f
    p = _run(bin_dir, work, "thinwire", "plot", "out", "--kind", "rtt")
    assert p.returncode == 0 and (work / "out/rtt.png").is_file(), p.stderr


def test_python_api_on_a_shipped_example(installed):
    bin_dir, work = installed
    script = (
        "import thinwire\n"
        "from thinwire import examples\n"
        "r = thinwire.run(examples.path('gprs-download'), seed=2, set={'flow.0.bytes': '40KB'})\n"
        "print(r.flows.height, r.flows['bytes_delivered'][0])\n"
    )
    p = _run(bin_dir, work, "python", "-c", script)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", str(40 * 1000)]


def test_a_quick_study_from_the_install(installed):
    bin_dir, work = installed
    p = _run(bin_dir, work, "thinwire", "reproduce", "gprs-tcp", "--quick", "--json", "--out", "st", timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (work / "st/claims.json").is_file()
    assert any(x.suffix == ".png" for x in (work / "st").iterdir())
    shutil.rmtree(work / "st")


def test_the_shipped_script_runs_from_the_install(installed):
    """scripts/loss-sweep.py: a run and a sweep on a local cluster, from a plain
    script, plotted."""
    bin_dir, work = installed
    d = work / "script"
    p = _run(bin_dir, work, "thinwire", "examples", "loss-sweep", "--copy", d)
    assert p.returncode == 0, p.stderr
    p = _run(bin_dir, d, "python", "scripts/loss-sweep.py", timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (d / "loss-sweep.png").stat().st_size > 10_000 and "Traceback" not in p.stderr
    # The sweep's table in kbit/s under a name that says so (it once printed
    # kbit/s values under `throughput_bps`).
    assert "throughput_kbps" in p.stdout and "throughput_bps:mean" not in p.stdout
