"""Frame-error traces (seed 000 §4.1, §6): a run's channel decisions exported with
`thinwire channel-trace` and replayed with `model = "trace"` reproduce the run's
link decisions exactly, for every link protocol; traces by time; a Gilbert–Elliott
fit (`thinwire fit-channel`) recovers the two-state channel a trace came from;
bad traces exit 2 with one line."""

import json

import polars as pl
import pytest
import thinwire
from conftest import thinwire_cli
from thinwire.channel_trace import export, fit, read

BASE = """
seed = {seed}
stop = "end"
[wired]
rate = "10Mbps"
delay = "5ms"
[wireless]
rate = "{rate}"
delay = "40ms"
{wireless}
[[flow]]
app = "bulk"
bytes = "60KB"
tcp = {{ profile = "linux" }}
[[flow]]
app = "bulk"
bytes = "20KB"
direction = "up"
start = "1s"
tcp = {{ profile = "linux-2.4", variant = "sack" }}
"""

# Every link protocol, each with a random channel of its own kind.
PROTOCOLS = {
    "raw": ("512kbps", 'frame = "1500B"\n[wireless.channel]\nmodel = "uniform"\np = 0.08'),
    "sr": (
        "128kbps",
        '[wireless.channel]\nmodel = "two-state"\ngood = { ber = 1e-6, mean = "2s" }\nbad = { ber = 1e-3, mean = "300ms" }\n[wireless.arq]\nprotocol = "sr"',
    ),
    "asr": ("128kbps", '[wireless.channel]\nmodel = "uniform"\np = 0.05\n[wireless.arq]\nprotocol = "asr"'),
    "rlc": (
        "128kbps",
        'frame = "40B"\n[wireless.channel]\nmodel = "uniform"\np = 0.03\n[wireless.arq]\nprotocol = "rlc"',
    ),
    "is707": (
        "64kbps",
        'frame = "200B"\n[wireless.channel]\nmodel = "fading"\npe = 0.05\nfdt = 0.05\n[wireless.arq]\nprotocol = "is707"',
    ),
    "rlp-gsm": (
        "9600bps",
        'frame = "24B"\nheader = "6B"\n[wireless.channel]\nmodel = "uniform"\np = 0.02\n[wireless.arq]\nprotocol = "rlp-gsm"\nheader_compression = true',
    ),
    "gprs": (
        "40kbps",
        'frame = "1500B"\nheader = "0B"\n[wireless.channel]\nmodel = "uniform"\np = 0.05\n[wireless.arq]\nprotocol = "gprs"',
    ),
}


def _without_channel(text: str, file) -> str:
    """The scenario with its [wireless.channel] table replaced by the trace."""
    head, _, rest = text.partition("[wireless.channel]")
    _, sep, tail = rest.partition("\n[")
    return head + f'[wireless.channel]\nmodel = "trace"\nfile = "{file}"\n' + (sep + tail if sep else "")


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_replaying_a_runs_channel_reproduces_its_link_decisions(protocol, tmp_path):
    rate, wireless = PROTOCOLS[protocol]
    text = BASE.format(seed=4, rate=rate, wireless=wireless)
    a = thinwire.run(text, trace=["tcp", "link", "queue"], out=tmp_path / "a")
    lost = a.summary["link"]["down"]["frames_lost"] + a.summary["link"]["up"]["frames_lost"]
    assert lost > 0, "the channel must lose frames for the test to mean anything"
    trace_file = tmp_path / "ch.toml"
    trace_file.write_text(export(tmp_path / "a"))
    b = thinwire.run(_without_channel(text, trace_file), trace=["tcp", "link", "queue"], out=tmp_path / "b")
    assert a.summary["flows"] == b.summary["flows"]
    assert a.summary["link"] == b.summary["link"]
    ta, tb = a.trace, b.trace
    assert ta.height > 100 and ta.equals(tb)


def test_the_command_writes_the_trace_and_a_bad_run_dir_exits_2(tmp_path):
    rate, wireless = PROTOCOLS["sr"]
    thinwire.run(BASE.format(seed=1, rate=rate, wireless=wireless), out=tmp_path / "run", trace=["link"])
    r = thinwire_cli("channel-trace", tmp_path / "run", "-o", tmp_path / "t.toml")
    assert r.returncode == 0, r.stderr
    assert "[down]" in (tmp_path / "t.toml").read_text()
    thinwire.run(BASE.format(seed=1, rate=rate, wireless=wireless), out=tmp_path / "notrace", trace=["tcp"])
    for bad in (tmp_path / "notrace", tmp_path / "nothing"):
        r = thinwire_cli("channel-trace", bad)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_trace_by_time_loses_the_frames_that_start_in_its_bad_intervals(tmp_path):
    f = tmp_path / "t.toml"
    # Raw 1500-byte frames at 512 kbit/s: 23.4 ms each. Down: bad from 1 s to 1.5 s,
    # repeating every 3 s; up: a clean minute.
    f.write_text('[down]\nduration = "3s"\nbad = [["1s", "1.5s"]]\n[up]\nduration = "60s"\n')
    text = BASE.format(
        seed=1, rate="512kbps", wireless=f'frame = "1500B"\n[wireless.channel]\nmodel = "trace"\nfile = "{f}"'
    )
    r = thinwire.run(text, trace=["link"])
    link = r.layer("link")
    sent = link.filter(
        pl.col("event").is_in(["frame_send", "frame_retransmit", "ack_send"]) & (pl.col("dir") == "down")
    )
    lost = link.filter((pl.col("event") == "frame_lost") & (pl.col("dir") == "down"))
    t = sent["time_ns"].to_numpy() % 3_000_000_000
    in_bad = ((t >= 1_000_000_000) & (t < 1_500_000_000)).sum()
    assert lost.height == in_bad > 0
    assert r.summary["link"]["up"]["frames_lost"] == 0
    # Once: no repetition after the trace's end.
    r2 = thinwire.run(text.replace(f'file = "{f}"', f'file = "{f}"\nrepeat = false'), trace=["link"])
    lost2 = r2.layer("link").filter((pl.col("event") == "frame_lost"))
    assert lost2.height > 0 and lost2["time_ns"].max() < 3_000_000_000


def test_fit_recovers_the_two_state_channel_the_trace_came_from(tmp_path):
    """A long raw run over seed 002's two-state channel (10 s good at BER 1e-6,
    500 ms bad at 1e-2): the Gilbert–Elliott fit, written back as thinwire's
    two-state channel, has the same means and error rates within a quarter."""
    text = BASE.format(
        seed=2,
        rate="128kbps",
        wireless='frame = "250B"\n[wireless.channel]\nmodel = "two-state"\ngood = { ber = 1e-6, mean = "10s" }\nbad = { ber = 1e-2, mean = "500ms" }',
    ).replace('bytes = "60KB"', 'bytes = "10MB"')
    thinwire.run(text, out=tmp_path / "run", trace=["link"])
    (tmp_path / "t.toml").write_text(export(tmp_path / "run"))
    fates, meta = read(tmp_path / "t.toml", "down")
    res = fit(fates, meta)
    good, bad = res["two_state"]["good"], res["two_state"]["bad"]
    assert 7.5 < good["mean_s"] < 12.5 and 0.375 < bad["mean_s"] < 0.625, res["two_state"]
    assert 0.0075 < bad["ber"] < 0.0125 and good["ber"] < 3e-6, res["two_state"]
    assert abs(res["model"]["mean_burst"] - res["trace"]["mean_burst"]) < 0.15 * res["trace"]["mean_burst"]
    r = thinwire_cli("fit-channel", tmp_path / "t.toml", "--plot", tmp_path / "fit.png", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fit"]["eb"] > 0.5 and (tmp_path / "fit.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[down]\nframes = 10\nlost = [3, 12]\n", ["lost index 12"]),
        ("[down]\nframes = 10\nlost = [5, 3]\n", ["increase"]),
        ('[down]\nduration = "1s"\nbad = [["0.5s", "2s"]]\n', ["within the duration"]),
        ('[down]\nframes = 10\nduration = "1s"\n', ["frames", "duration"]),
        ("[up]\nframes = 10\n", ["no [down] table"]),
        ("not toml [", ["malformed TOML"]),
    ],
)
def test_bad_traces_exit_2_with_one_line(content, words, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    sc = tmp_path / "s.toml"
    sc.write_text(BASE.format(seed=1, rate="64kbps", wireless='[wireless.channel]\nmodel = "trace"\nfile = "bad.toml"'))
    r = thinwire_cli("check", sc)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "wireless.channel.file" in r.stderr and all(w in r.stderr for w in words), r.stderr


def test_fit_reads_a_plain_block_error_log(tmp_path):
    """A measured log of 0s and 1s (one radio block each) fits as it is."""
    from thinwire import _core

    fates = _core.sample_gilbert_elliott(0.01, 0.2, 0.0, 0.8, 50_000, 3)
    log = tmp_path / "blocks.txt"
    log.write_text("\n".join(str(b) for b in fates) + "\n")
    r = thinwire_cli("fit-channel", log, "--json")
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)["fit"]
    assert abs(f["p"] - 0.01) < 0.003 and abs(f["r"] - 0.2) < 0.05 and abs(f["eb"] - 0.8) < 0.08, f
