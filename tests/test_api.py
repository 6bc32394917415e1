import json
import os

import polars as pl
import pytest
import thinwire
from conftest import SCENARIOS


def test_run_returns_dataframes(small_scenario):
    r = thinwire.run(small_scenario, trace=["tcp", "link", "queue"])
    flows = r.flows
    assert isinstance(flows, pl.DataFrame)
    assert flows["bytes_delivered"][0] == 100_000
    t = r.trace
    assert isinstance(t, pl.DataFrame)
    assert set(t["layer"].unique().to_list()) == {"tcp", "link", "queue"}
    # Every data byte the receiver got was sent by the server first.
    sends = r.layer("tcp").filter((pl.col("event") == "send") & (pl.col("node") == "server"))
    recvs = r.layer("tcp").filter((pl.col("event") == "recv") & (pl.col("node") == "mobile"))
    assert sends["time_ns"].min() < recvs["time_ns"].min()
    assert (recvs["seq"] + recvs["len"]).max() >= 100_000
    # Link-layer losses in the trace agree with the summary.
    lost = r.layer("link").filter(pl.col("event") == "frame_lost").height
    assert lost == r.summary["link"]["down"]["frames_lost"] + r.summary["link"]["up"]["frames_lost"]


def test_cwnd_trace_present(small_scenario):
    r = thinwire.run(small_scenario, trace=["tcp"])
    cw = r.layer("tcp").filter((pl.col("event") == "cwnd") & (pl.col("node") == "server"))
    assert cw.height > 10
    assert cw["value"].min() >= 170  # at least one segment (MSS 210 minus nothing)


def test_seed_changes_losses_and_same_seed_repeats(small_scenario):
    a = thinwire.run(small_scenario, seed=1).summary
    b = thinwire.run(small_scenario, seed=1).summary
    c = thinwire.run(small_scenario, seed=2).summary
    for k in ("wall_s", "events_per_s"):
        a.pop(k), b.pop(k), c.pop(k)
    assert a == b
    assert a["link"] != c["link"]


def test_adding_a_flow_keeps_other_streams():
    # Channel losses come from per-direction streams and ISNs from per-flow streams:
    # a second flow that starts later does not change what happens before it starts.
    base = (SCENARIOS / "shared-link-sr.toml").read_text()
    one = thinwire.run(base, set={"flow.0.bytes": "20KB"}, trace=["link", "tcp"])
    two_text = base + '\n[[flow]]\napp = "bulk"\nbytes = "20KB"\ndirection = "down"\nstart = "1000s"\n'
    two = thinwire.run(two_text, set={"flow.0.bytes": "20KB"}, trace=["link", "tcp"])
    end = one.summary["sim_time_s"]
    assert end < 1000
    f = lambda r: r.trace.filter(pl.col("time_s") < end).drop("time_s").to_dicts()
    assert len(f(one)) > 500
    assert f(one) == f(two)


def test_scenario_error_is_raised(small_scenario):
    with pytest.raises(thinwire.ScenarioError, match="wireless.rate"):
        thinwire.run(small_scenario, set={"wireless.rate": "fast"})
    with pytest.raises(thinwire.ScenarioError, match="no such scenario"):
        thinwire.run("does/not/exist.toml")


def test_write_outputs(small_scenario, tmp_path):
    r = thinwire.run(small_scenario, trace=["tcp"], pcap=True)
    paths = r.write(tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == ["flows.parquet", "mobile.pcap", "server.pcap", "summary.json", "trace.parquet"]
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["flows"][0]["bytes_delivered"] == 100_000
    t = pl.read_parquet(tmp_path / "out" / "trace.parquet")
    assert t.height == r.trace.height


def test_a_path_with_an_equals_sign_is_a_path(small_scenario, tmp_path):
    """Sweep folders name files after their settings (`loss=0.1.toml`): such a
    string is a path (it was read as TOML text and failed to parse), while one
    line of TOML given directly is still text."""
    d = tmp_path / "p=0.02"
    d.mkdir()
    f = d / "loss=0.02.toml"
    f.write_text(small_scenario.read_text())
    for s in (str(f), f, str(d / "missing=1.toml")):
        if "missing" in str(s):
            with pytest.raises(thinwire.ScenarioError, match="no such scenario file"):
                thinwire.run(s)
        else:
            assert thinwire.run(s).flows.height == 1
    with pytest.raises(thinwire.ScenarioError) as e:
        thinwire.run('seed = "x"')
    assert "no such scenario file" not in str(e.value)
    # Missing paths with an `=` (no `.toml`, or a folder named after a setting)
    # are missing files, not TOML; a one-line TOML typo is a TOML error.
    for missing in (str(tmp_path / "loss=0.1"), "p=0.02/x", "runs/loss=0.1"):
        with pytest.raises(thinwire.ScenarioError, match="no such scenario file"):
            thinwire.run(missing)
    for text in ('seed = "x', "[wired", "loss=0.1"):
        with pytest.raises(thinwire.ScenarioError) as e:
            thinwire.run(text)
        assert "no such scenario file" not in str(e.value), text


def test_a_scenario_path_that_is_no_text_file_is_one_clear_error(tmp_path):
    """`run` reads the file once: a folder, a missing file, bytes that are not
    UTF-8 and a FIFO (never waited on) each get their own reason."""
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe seed = 1\n")
    # A FIFO with no writer: reading it would wait for ever.
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path, why in (
        (tmp_path, "a directory, not a scenario file"),
        (tmp_path / "none.toml", "no such scenario file"),
        (bad, "cannot read it as UTF-8 text"),
        (fifo, "not a regular file"),
    ):
        with pytest.raises(thinwire.ScenarioError, match=why):
            thinwire.run(path)
        with pytest.raises(thinwire.ScenarioError, match=why):
            thinwire.check(str(path))


def test_run_text_never_reads_a_path(small_scenario, tmp_path):
    """`run_text` takes TOML text whatever it looks like: the same string that
    `run` reads as a path (an existing file) is parsed as TOML there, and the
    file's text runs as it does from the file."""
    f = tmp_path / "loss=0.02.toml"
    f.write_text(small_scenario.read_text())
    assert thinwire.run(str(f)).flows.height == 1
    with pytest.raises(thinwire.ScenarioError) as e:
        thinwire.run_text(str(f))
    assert "no such scenario file" not in str(e.value)
    a = thinwire.run_text(f.read_text(), seed=3).summary
    b = thinwire.run(f, seed=3).summary
    assert a["flows"] == b["flows"] and a["scenario"] == "scenario" and b["scenario"] == "loss=0.02"
    with pytest.raises(TypeError):
        thinwire.run_text(f)


def test_trace_takes_the_clis_string_form_too(small_scenario):
    """`trace="tcp,link"` is two layers and `trace="none"` none (as --trace takes
    them), not the string's letters; a name that is no layer is refused clearly."""
    r = thinwire.run(small_scenario, trace="tcp, link")
    assert set(r.trace["layer"].unique().to_list()) == {"tcp", "link"}
    assert thinwire.run(small_scenario, trace="none").trace.height == 0
    with pytest.raises(thinwire.ScenarioError, match='"bogus" is not a layer'):
        thinwire.run(small_scenario, trace="tcp,bogus")
