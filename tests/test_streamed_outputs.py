"""Traces and captures streamed by the core into the output folder while a run goes
(`run(out=...)`, `thinwire run --out`): the same content as the in-memory path,
read back lazily, in time order, and atomic as a set."""

import json

import polars as pl
import pytest
import thinwire
from conftest import SCENARIOS
from thinwire.traces import read_trace, scan_trace

ALL = ["tcp", "link", "queue", "channel", "proxy"]


@pytest.mark.parametrize(
    "scenario,overrides",
    [
        # Two-state channel: transitions revealed late, inserted in order.
        ("shared-link-sr.toml", {"flow.0.bytes": "3MB"}),
        ("gprs-proxy.toml", {}),
        ("web-browsing.toml", {}),
        ("gsm-csd-upload.toml", {}),
    ],
)
def test_streamed_outputs_equal_the_in_memory_ones(tmp_path, scenario, overrides):
    sc = SCENARIOS / scenario
    mem = thinwire.run(sc, set=overrides, trace=ALL, pcap=True, mm_log=True)
    out = tmp_path / "run"
    st = thinwire.run(sc, set=overrides, trace=ALL, pcap=True, mm_log=True, out=out)
    names = sorted(p.name for p in out.iterdir())
    want = ["flows.parquet", "mm-down.log", "mm-up.log", "mobile.pcap", "server.pcap", "summary.json"]
    if mem.raw["trace"]["rows"]:
        want.append("trace.parquet")
    assert names == sorted(want), names
    assert sorted(p.name for p in st.written) == sorted(want)
    # Not held in memory: only the row count came back.
    assert st.raw["trace"]["time_ns"] == b"" and st.raw.get("pcap_server") is None
    assert st.raw["trace"]["rows"] == mem.raw["trace"]["rows"] > 0
    assert st.trace.equals(mem.trace)
    assert st.scan_trace().collect().equals(mem.trace)
    assert read_trace(out / "trace.parquet").equals(mem.trace)
    assert (out / "server.pcap").read_bytes() == mem.pcap_server == st.pcap_server
    assert (out / "mobile.pcap").read_bytes() == mem.pcap_mobile
    assert (out / "mm-down.log").read_bytes() == mem.raw["mm_down"]
    assert (out / "mm-up.log").read_bytes() == mem.raw["mm_up"]
    assert pl.read_parquet_metadata(out / "trace.parquet")["thinwire.sorted"] == "true"
    # A run held in memory is written by the same writer: the same file, byte for byte.
    mem.write(tmp_path / "mem")
    assert (tmp_path / "mem" / "trace.parquet").read_bytes() == (out / "trace.parquet").read_bytes()
    # A second copy through write() (from the streamed files) is the same set.
    again = st.write(tmp_path / "copy")
    assert sorted(p.name for p in again) == sorted(want)
    assert (tmp_path / "copy" / "trace.parquet").read_bytes() == (out / "trace.parquet").read_bytes()


def test_the_file_is_sorted_and_splits_into_row_groups(tmp_path):
    out = tmp_path / "run"
    st = thinwire.run(SCENARIOS / "shared-link-sr.toml", set={"flow.0.bytes": "12MB"}, trace=ALL, out=out)
    n = st.raw["trace"]["rows"]
    assert n > 3 * 65536, n  # several row groups
    t = pl.read_parquet(out / "trace.parquet")  # as any Parquet reader sees it
    assert t.height == n and t["time_ns"].is_sorted()
    assert set(t["layer"].unique()) == {"tcp", "link", "queue", "channel"}
    # Row-group statistics let a time window skip most of the file.
    lo, hi = t["time_ns"][n // 2], t["time_ns"][n // 2 + 1000]
    w = scan_trace(out / "trace.parquet").filter(pl.col("time_ns").is_between(lo, hi)).collect()
    assert w.height >= 1001 and w["time_ns"].min() == lo


def test_cli_run_streams_and_analyses_the_folder(tmp_path):
    out = tmp_path / "run"
    from conftest import thinwire_cli

    p = thinwire_cli(
        "run", SCENARIOS / "shared-link-sr.toml", "--set", "flow.0.bytes=1MB", "--out", out, "--pcap", "--json"
    )
    assert p.returncode == 0, p.stderr
    written = json.loads(p.stdout)["written"]
    assert sorted(x.rsplit("/", 1)[1] for x in written) == [
        "flows.parquet",
        "mobile.pcap",
        "server.pcap",
        "summary.json",
        "trace.parquet",
    ]
    assert not [x for x in out.iterdir() if x.name.startswith(".")], "no temporary folder left"
    p = thinwire_cli("analyze", out, "--json")
    assert p.returncode == 0, p.stderr
