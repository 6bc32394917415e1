"""The Rust core's type stubs (python/thinwire/_core.pyi) match the module."""

import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed (pip install mypy)")
def test_core_stubs_match_the_module():
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "thinwire._core"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_result_fields_describe_every_reported_key():
    import thinwire
    from thinwire.fields import fields, metrics

    r = thinwire.run(
        '[wireless]\nrate = "64kbps"\ndelay = "50ms"\n[[flow]]\napp = "bulk"\nbytes = "10KB"\n'
        '[[flow]]\napp = "media"\n[proxy]\n',
        set={"stop": "20s"},
    ).raw
    for section, got in (("flow", r["flows"][0]), ("link", r["link"]["down"]), ("proxy", r["proxy"])):
        shown = {f["name"] for f in fields(section) if f["kind"] != "hidden"}
        assert set(got) == shown, section
    assert "throughput_bps" in metrics("flow") and "flr" in metrics("link")


needs_mypy = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy not installed (pip install mypy)"
)


def _mypy_strict(tmp_path, source: str) -> subprocess.CompletedProcess:
    f = tmp_path / "user_script.py"
    f.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(f)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


@needs_mypy
def test_shipped_scripts_pass_mypy_strict(tmp_path):
    from thinwire import examples

    scripts = [e for e in examples.all_examples() if e.kind == "script"]
    assert scripts
    for e in scripts:
        p = _mypy_strict(tmp_path, e.path.read_text())
        assert p.returncode == 0, f"{e.name}: {p.stdout}{p.stderr}"


@needs_mypy
def test_mypy_sees_the_api_types(tmp_path):
    """The package's names are typed for a checker (not Any through the lazy
    __getattr__): wrong arguments and wrong uses of results are caught."""
    p = _mypy_strict(
        tmp_path,
        "import thinwire\n"
        "r = thinwire.run('x.toml', seed='3')\n"
        "t: int = r.summary['sim_time_s']\n"
        "n: str = r.flows.height\n"
        "runs, summary = thinwire.sweep('x.toml', axes={'wireless.channel.p': [0.1]}, replications='2')\n"
        "thinwire.examples.path(3)\n",
    )
    out = p.stdout
    assert p.returncode == 1, out
    for line in (2, 3, 4, 5, 6):
        assert f"user_script.py:{line}: error" in out, (line, out)


def test_namespace_lists_the_api_and_results_print_short():
    import thinwire

    names = dir(thinwire)
    for n in ("run", "sweep", "check", "RunResult", "Summary", "SweepResult", "examples", "fields", "ScenarioError"):
        assert n in names
    r = thinwire.run(thinwire.examples.path("gprs-download"), set={"flow.0.bytes": "5KB"})
    text = repr(r)
    assert text.startswith("<RunResult 'gprs-download'") and "1 flow (1 completed)" in text and len(text) < 200
    html = r._repr_html_()
    assert "<table" in html and len(html) < 20_000
