"""bench/pgo.py's training workload stays valid as the studies' designs change: every
scenario it would run is checked (not run), so `make pgo` cannot rot unseen. The build
itself (two compilations and llvm-profdata) is not run here."""

import importlib.util
from pathlib import Path

import thinwire

PGO = Path(__file__).resolve().parent.parent / "bench" / "pgo.py"


def load_pgo():
    spec = importlib.util.spec_from_file_location("bench_pgo", PGO)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_training_workload_is_valid(monkeypatch):
    calls = []

    def check_path(path, **kw):
        assert not kw
        thinwire.check(path)
        calls.append(("file", path))

    def check_text(text, set=None, **kw):
        assert not kw
        thinwire.check(text, set=set)
        calls.append(("text", text))

    monkeypatch.setattr(thinwire, "run", check_path)
    monkeypatch.setattr(thinwire, "run_text", check_text)
    load_pgo().train()
    files = [c for c in calls if c[0] == "file"]
    texts = [c for c in calls if c[0] == "text"]
    examples = sorted((PGO.parent.parent / "scenarios").glob("*.toml"))
    assert len(files) == 2 * len(examples)
    # Every shared-link-arq job at three channel points and four IS-707 runs.
    from thinwire.studies.shared_link_arq import design

    assert len(texts) == 3 * len(design.jobs(False)) + 4
    assert any("is707" in t for _, t in texts) and any('"sr"' in t for _, t in texts)


def test_a_missing_llvm_profdata_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    import subprocess

    pgo = load_pgo()
    real = subprocess.run

    def fake(cmd, *a, **kw):
        if cmd[:2] == ["rustc", "--print"]:
            return subprocess.CompletedProcess(cmd, 0, stdout=str(tmp_path) + "\n", stderr="")
        return real(cmd, *a, **kw)

    monkeypatch.setattr(pgo.subprocess, "run", fake)
    try:
        pgo.llvm_profdata()
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("no exit")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rustup component add llvm-tools" in err
