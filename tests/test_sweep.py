import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import SMALL, thinwire_cli
from thinwire.stats import t975
from thinwire.sweeping import run_sweep


def write_sweep(tmp_path: Path, reps=3, extra="") -> Path:
    (tmp_path / "base.toml").write_text(SMALL)
    p = tmp_path / "sw.toml"
    p.write_text(f"""scenario = "base.toml"
replications = {reps}
{extra}
[set]
"flow.0.bytes" = "30KB"
[axes]
"wireless.arq.protocol" = ["raw", "sr"]
"wireless.channel.p" = [0.0, 0.05]
""")
    return p


def test_local_sweep_table_summary_and_resume(tmp_path):
    sw = write_sweep(tmp_path)
    out = tmp_path / "out"
    runs, summary = run_sweep(sw, out=out, workers=2, progress=False)
    assert runs.height == 12 and summary.height == 4
    assert {
        "axis:wireless.arq.protocol",
        "axis:wireless.channel.p",
        "replication",
        "run",
        "key",
        "flow0.throughput_bps",
        "down.flr",
    } <= set(runs.columns)
    assert runs["key"].n_unique() == 12
    # Common random numbers: replication r uses run index r at every point.
    assert runs.filter(pl.col("replication") == 2)["run"].unique().to_list() == [2]
    # The summary's mean and CI agree with the runs.
    g = runs.filter((pl.col("axis:wireless.arq.protocol") == "raw") & (pl.col("axis:wireless.channel.p") == 0.05))[
        "flow0.throughput_bps"
    ]
    row = summary.filter(
        (pl.col("axis:wireless.arq.protocol") == "raw") & (pl.col("axis:wireless.channel.p") == 0.05)
    ).to_dicts()[0]
    assert row["flow0.throughput_bps:mean"] == pytest.approx(g.mean())
    assert row["flow0.throughput_bps:ci95"] == pytest.approx(t975(2) * g.std() / math.sqrt(3))
    # Loss costs raw more than SR.
    thr = {
        (r["axis:wireless.arq.protocol"], r["axis:wireless.channel.p"]): r["flow0.throughput_bps:mean"]
        for r in summary.to_dicts()
    }
    assert thr[("sr", 0.05)] > thr[("raw", 0.05)]
    # Resume: nothing new to run; a deleted run is run again and gives the same numbers.
    before = runs.sort("key")
    pl.read_parquet(out / "runs.parquet").filter(pl.col("replication") != 1).write_parquet(out / "runs.parquet")
    runs2, _ = run_sweep(sw, out=out, workers=1, progress=False)
    assert json.loads((out / "sweep.json").read_text())["new_runs"] == 4
    cols = [c for c in before.columns if c != "wall_s"]
    assert runs2.sort("key").select(cols).equals(before.select(cols))
    run_sweep(sw, out=out, workers=1, progress=False)
    assert json.loads((out / "sweep.json").read_text())["new_runs"] == 0


def test_sweep_against_a_separate_dask_scheduler(tmp_path):
    bindir = Path(sys.executable).parent
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    addr = f"tcp://127.0.0.1:{port}"
    sched = subprocess.Popen(
        [str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = None
    try:
        worker = subprocess.Popen(
            [str(bindir / "dask"), "worker", addr, "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        sw = write_sweep(tmp_path, reps=2)
        p = thinwire_cli("sweep", sw, "--out", tmp_path / "o", "--scheduler", addr, "--quiet")
        assert p.returncode == 0, p.stderr
        assert pl.read_parquet(tmp_path / "o" / "runs.parquet").height == 8
    finally:
        for proc in (worker, sched):
            if proc:
                proc.terminate()
                proc.wait(timeout=30)


def test_bad_sweeps_exit_2(tmp_path):
    sw = write_sweep(tmp_path)
    cases = {
        "unknown axis field": sw.read_text().replace('"wireless.channel.p"', '"wireless.channel.q"'),
        "bad axis value": sw.read_text().replace('["raw", "sr"]', '["raw", "hdlc"]'),
        "replications": sw.read_text().replace("replications = 3", "replications = 0"),
        "missing base": sw.read_text().replace("base.toml", "nope.toml"),
        "unknown key": sw.read_text() + "\nbogus = 1\n",
        "malformed": "scenario = ",
        # Each of these once gave a traceback, ran out of memory or was misread.
        "crn as a string": sw.read_text().replace(
            "replications = 3", 'replications = 3\ncommon_random_numbers = "false"'
        ),
        "a billion replications": sw.read_text().replace("replications = 3", "replications = 1000000000"),
        "three axes of 1,000 values": sw.read_text().split("[axes]")[0]
        + "[axes]\n"
        + "".join(
            f'"flow.0.tcp.{k}" = [{", ".join(str(64 + i) for i in range(1000))}]\n' for k in ("mss", "initial_window")
        )
        + f'"seed" = [{", ".join(str(i) for i in range(1000))}]\n',
        "2,000-deep nesting": "a = " + "[" * 2000 + "]" * 2000,
        # Found by the fuzzer: a ValueError traceback from pathlib.
        "a NUL in the scenario path": sw.read_text().replace("base.toml", "base\\u0000.toml"),
        "a very long scenario path": sw.read_text().replace("base.toml", "x" * 5000),
        # Found by the fuzzer: a dotted key hundreds of tables deep (RecursionError).
        "a [set] key 1,500 tables deep": sw.read_text().replace(
            '"flow.0.bytes" = "30KB"', '"s" ' + ".a" * 1500 + ' = "30KB"'
        ),
        "an axis value 1,500 tables deep": sw.read_text().replace('["raw", "sr"]', "[{ b" + ".a" * 1500 + " = 1 }]"),
    }
    for what, text in cases.items():
        p = tmp_path / "bad.toml"
        p.write_text(text)
        r = thinwire_cli("sweep", p, "--out", tmp_path / "x", "--quiet")
        assert r.returncode == 2, (what, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, (what, r.stderr)
    (tmp_path / "bin.toml").write_bytes(bytes(range(256)))
    p.write_text(sw.read_text().replace("base.toml", "bin.toml"))
    r = thinwire_cli("sweep", p, "--out", tmp_path / "x", "--quiet")
    assert r.returncode == 2 and "UTF-8" in r.stderr and "Traceback" not in r.stderr, r.stderr
    for bad in ("tcp://127.0.0.1:1", "bogus"):
        r = thinwire_cli("sweep", sw, "--scheduler", bad, "--quiet", "--out", tmp_path / "y")
        assert r.returncode == 2 and "cannot connect" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_sweep_errors_are_one_line_even_for_keys_with_line_breaks(tmp_path):
    # Found by the fuzzer: a TOML key with an escaped newline made a two-line SweepError.
    from thinwire.sweeping import SweepError, load_sweep

    sw = write_sweep(tmp_path)
    sw.write_text(sw.read_text().replace('"wireless.channel.p"', '"wireless\\nchannel.p"'))
    with pytest.raises(SweepError) as e:
        load_sweep(sw)
    assert "\n" not in str(e.value) and "wireless\\nchannel" in str(e.value), str(e.value)


def test_a_different_sweep_into_the_same_folder_never_deletes_the_earlier_runs(tmp_path):
    sw = write_sweep(tmp_path, reps=1)
    out = tmp_path / "out"
    runs, _ = run_sweep(sw, out=out, workers=1, progress=False)
    before = (out / "runs.parquet").read_bytes()
    other = tmp_path / "other.toml"
    other.write_text(sw.read_text().replace("[0.0, 0.05]", "[0.1]"))
    r = thinwire_cli("sweep", other, "--out", out, "--quiet")
    assert r.returncode == 2 and "another sweep" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (out / "runs.parquet").read_bytes() == before
    # The same sweep resumes (nothing to do) and keeps every run.
    again, _ = run_sweep(sw, out=out, workers=1, progress=False)
    assert again.height == runs.height


def test_t_quantiles():
    assert t975(1) == pytest.approx(12.706)
    assert t975(29) == pytest.approx(2.045)
    assert 2.000 < t975(50) < 2.021
    assert t975(10_000) == pytest.approx(1.960, abs=0.001)


def test_sweep_api_in_memory_matches_the_sweep_file(tmp_path, monkeypatch):
    """thinwire.sweep(...) runs the same runs as the file-based sweep (same keys,
    same numbers) and writes nothing without `out`."""
    import thinwire

    sw = write_sweep(tmp_path, reps=2)
    file_runs, file_summary = run_sweep(sw, out=tmp_path / "file", workers=2, progress=False)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    res = thinwire.sweep(
        tmp_path / "base.toml",
        axes={"wireless.arq.protocol": ["raw", "sr"], "wireless.channel.p": [0.0, 0.05]},
        set={"flow.0.bytes": "30KB"},
        replications=2,
        workers=2,
        progress=False,
    )
    runs, summary = res
    assert res.runs is runs and isinstance(res, thinwire.SweepResult)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    drop = [c for c in runs.columns if c.startswith("wall_s")]
    assert runs.drop(drop).equals(file_runs.drop(drop))
    keep = [c for c in summary.columns if not c.startswith("wall_s")]
    assert summary.select(keep).equals(file_summary.select(keep))


def test_sweep_api_with_out_resumes(tmp_path):
    import thinwire

    args = dict(axes={"wireless.channel.p": [0.0, 0.05]}, set={"flow.0.bytes": "20KB"}, replications=2, workers=1)
    a = thinwire.sweep(SMALL, out=tmp_path / "o", progress=False, **args)
    assert (tmp_path / "o/runs.parquet").is_file() and (tmp_path / "o/summary.parquet").is_file()
    b = thinwire.sweep(SMALL, out=tmp_path / "o", progress=False, **args)
    assert json.loads((tmp_path / "o/sweep.json").read_text())["new_runs"] == 0
    assert a.runs["wall_s"].equals(b.runs["wall_s"])  # read back, not run again


def test_sweep_api_from_a_plain_script_without_a_main_guard(tmp_path):
    """A user's script that calls thinwire.sweep at top level (no `if __name__ ==
    "__main__":`) runs once, on a local cluster of worker processes."""
    (tmp_path / "base.toml").write_text(SMALL)
    script = tmp_path / "user.py"
    script.write_text(
        "import thinwire\n"
        "print('script body ran')\n"
        "runs, summary = thinwire.sweep('base.toml', axes={'wireless.channel.p': [0.0, 0.05]},\n"
        "    set={'flow.0.bytes': '20KB'}, replications=2, workers=2, progress=False)\n"
        "print('points', summary.height, 'runs', runs.height)\n"
    )
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("script body ran") == 1
    assert "points 2 runs 4" in p.stdout
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(axes={"wireless.channel.p": "0.1"}), "give a list of values"),
        (dict(axes={"wireless.channel.p": []}), "non-empty"),
        (dict(axes={"wireless.channel.p": [0.1, 7]}), "at point (wireless.channel.p=7)"),
        (dict(axes={"wireless.bogus": [1]}), "wireless.bogus"),
        (dict(replications=0), "replications"),
        (dict(replications=True), "replications"),
        (dict(workers=0), "workers"),
        (dict(axes={"wireless.channel.p": list(range(1001))}, replications=1000), "at most"),
    ],
)
def test_sweep_api_refuses_bad_arguments_before_running(kwargs, message):
    import thinwire

    with pytest.raises(thinwire.ScenarioError) as e:
        thinwire.sweep(SMALL, **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_sweep_api_from_a_module_run_with_dash_m(tmp_path):
    """`python -m usermodule` without a guard: spawn would import it again by name."""
    (tmp_path / "base.toml").write_text(SMALL)
    (tmp_path / "usermod.py").write_text(
        "import thinwire\n"
        "print('module body ran')\n"
        "runs, summary = thinwire.sweep('base.toml', axes={'wireless.channel.p': [0.0, 0.05]},\n"
        "    set={'flow.0.bytes': '20KB'}, replications=2, workers=2, progress=False)\n"
        "print('points', summary.height)\n"
    )
    p = subprocess.run([sys.executable, "-m", "usermod"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("module body ran") == 1 and "points 2" in p.stdout


def test_a_sweep_says_nothing_about_a_busy_dashboard_port(tmp_path):
    """Another Dask cluster holding port 8787 once made every sweep warn: the local
    cluster runs without a dashboard."""
    sw = write_sweep(tmp_path, reps=1)
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", 8787))
            s.listen()
        except OSError:
            pass  # already taken by someone else: the same situation
        p = thinwire_cli("sweep", sw, "--out", tmp_path / "o", "--workers", "1", "--quiet")
    finally:
        s.close()
    assert p.returncode == 0, p.stderr
    assert "8787" not in p.stderr and "dashboard" not in p.stderr.lower(), p.stderr
