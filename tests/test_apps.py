"""Applications over the GPRS model: ttcp repetitions, HTTP/1.0 vs 1.1, interactive."""

import re
from pathlib import Path

import pytest
import thinwire

GPRS = (Path(__file__).resolve().parent.parent / "scenarios" / "gprs-download.toml").read_text()
# The link without outages and without the 600 KB flow.
LINK = GPRS.replace('outage_every = "300s"\n', "").split("[[flow]]")[0]


def run(flows: str, **kw):
    return thinwire.run(LINK + flows, **kw)


def test_ttcp_repeats_downloads_one_after_another():
    r = run('[[flow]]\napp = "ttcp"\nbytes = "10KB"\nrepeat = 6\nthink = "2s"\ntcp = { profile = "linux-2.4" }\n')
    f = r.raw["flows"][0]
    assert f["transactions"] == 6 and f["bytes_delivered"] == 60_000
    d = f["durations_s"]
    assert len(d) == 6
    # Each download needs at least a handshake and the data at ~4.15 KB/s.
    assert all(x > 10_000 / 4150 for x in d)
    # Downloads are sequential, separated by the think time.
    assert f["completion_s"] >= sum(d) + 5 * 2.0 - 1e-6


def test_http11_persistent_saves_connection_setups():
    page = '[[flow]]\napp = "http"\nbytes = "5KB"\nobjects = 5\ntransactions = 3\npersistent = {}\ntcp = {{ profile = "linux-2.4" }}\n'
    h10 = run(page.format("false")).raw["flows"][0]
    h11 = run(page.format("true")).raw["flows"][0]
    assert h10["bytes_delivered"] == h11["bytes_delivered"] == 3 * 5 * 5000
    # A handshake per object costs about an RTT (~2 s) each over GPRS.
    assert sum(h11["durations_s"]) < sum(h10["durations_s"]) - 3 * 4 * 1.0


def test_interactive_messages_wait_behind_a_bulk_download():
    chat = '[[flow]]\napp = "interactive"\nmessages = 30\nstart = "1s"\ntcp = { profile = "linux-2.4" }\n'
    bulk = '[[flow]]\napp = "bulk"\nbytes = "200KB"\ntcp = { profile = "linux-2.4" }\n'
    alone = run(chat).raw["flows"][0]
    busy = run(bulk + chat).raw["flows"][1]
    assert alone["packets_sent"] == alone["packets_received"] == 30
    assert busy["packets_received"] == 30
    # Alone a message takes about a one-way GPRS latency; behind a download it
    # waits in the 120 KB gateway buffer for many seconds (seed 004 §III).
    assert alone["delay_mean_s"] < 2.0
    assert busy["delay_mean_s"] > 5 * alone["delay_mean_s"]


@pytest.mark.parametrize(
    "bad,field",
    [
        ('app = "ttcp"\nrepeat = 3\n', "flow[0].bytes"),
        ('app = "ttcp"\nbytes = "10KB"\nrepeat = 0\n', "flow[0].repeat"),
        ('app = "http"\nbytes = "10KB"\nrepeat = 2\n', "flow[0].repeat"),
        ('app = "interactive"\ninterval = "0s"\nmessages = 3\n', "flow[0].interval"),
        ('app = "interactive"\n', "flow[0].messages"),
        ('app = "chat"\n', "flow[0].app"),
    ],
)
def test_bad_application_fields_name_the_field(bad, field):
    with pytest.raises(thinwire.ScenarioError, match=re.escape(field)):
        run("[[flow]]\n" + bad)


def test_probe_latencies_first_packet_of_a_burst_pays_the_setup():
    flows = (
        '[[flow]]\napp = "probe"\nmessages = 60\n'
        '[[flow]]\napp = "probe"\ndirection = "up"\nmessages = 60\nstart = "2s"\n'
        '[[flow]]\napp = "probe"\nburst = 4\nmessages = 40\nstart = "500s"\n'
    )
    r = thinwire.run(LINK.replace('stop = "end"', 'stop = "900s"') + flows)
    down, up, burst = r.raw["flows"]
    assert down["packets_received"] == 60 and up["packets_received"] == 60 and burst["packets_received"] == 160
    # Seed 003 Fig. 2: the downlink is slower and more variable than the uplink.
    assert down["delay_mean_s"] > up["delay_mean_s"] + 0.2
    d = r.media_delays(burst["id"])["delay_s"].to_list()
    first = [d[i] for i in range(0, len(d), 4)]
    spread = lambda v: max(v) - min(v)
    # Only the first packet of a burst sees the set-up jitter; the others follow tightly.
    assert spread(first) > 1.0
    assert spread([d[i + 1] - d[i] for i in range(0, len(d), 4)]) < 0.1


def test_an_aborted_download_sends_one_rst_and_the_server_stops():
    """`abort`: at 20 s the mobile's application aborts a download — one RST
    from the mobile; the server sends nothing new once it has it; the data
    already queued in front of the slow link still arrives (stale data, seed 000
    §5.2); the run ends without waiting for the unfinished flow."""
    import polars as pl
    import thinwire

    sc = """
seed = 1
[wireless]
rate = "40kbps"
delay = "150ms"
frame = "1500B"
queue = { limit = "120KB" }
[[flow]]
app = "bulk"
bytes = "500KB"
abort = "20s"
tcp = { profile = "linux" }
[[flow]]
app = "bulk"
bytes = "5KB"
start = "20s"
"""
    r = thinwire.run(sc, trace=["tcp", "link"])
    tcp = r.layer("tcp").filter(pl.col("flow") == 0)
    rst = tcp.filter(pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 4) == 4))
    assert rst["node"].to_list() == ["mobile"] and rst["time_s"].to_list() == [20.0]
    got = tcp.filter((pl.col("node") == "server") & (pl.col("event") == "recv") & ((pl.col("value") & 4) == 4))
    t_rst = got["time_s"].min()
    sent = tcp.filter((pl.col("node") == "server") & pl.col("event").is_in(["send", "retransmit"]))
    assert sent["time_s"].max() < t_rst
    stale = r.layer("link").filter(
        (pl.col("event") == "packet_deliver") & (pl.col("flow") == 0) & (pl.col("time_s") > 21)
    )
    assert stale.height > 10
    f0, f1 = r.summary["flows"]
    assert f0["completion_s"] is None and 0 < f0["bytes_delivered"] < 500_000
    assert f1["bytes_delivered"] == 5_000 and r.summary["end"] == "finished"


def test_an_http_header_written_apart_leaves_in_a_segment_of_its_own():
    """`header`: a server writes its status line and headers, then the body
    (Python's http.server does): the first reply segment carries the header alone,
    the body follows in full segments, the same bytes arrive. Without it the
    reply is one write, cut into full segments from its start."""
    import polars as pl

    page = '[[flow]]\napp = "http"\nbytes = "20000B"\nobjects = 1\ntransactions = 1\nrequest = "82B"\n{}tcp = {{ profile = "linux" }}\n'
    firsts = {}
    for head in ("", 'header = "203B"\n'):
        r = run(page.format(head), trace=["tcp"])
        assert r.raw["flows"][0]["bytes_delivered"] == 20_000
        t = r.trace.filter((pl.col("node") == "server") & (pl.col("event") == "send") & (pl.col("len") > 0))
        firsts[head] = t["len"].to_list()[:3]
    assert firsts[""] == [1448, 1448, 1448]
    assert firsts['header = "203B"\n'] == [203, 1448, 1448]
