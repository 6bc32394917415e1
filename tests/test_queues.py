"""Queue disciplines at the simulator's queues, through the public API: the
disciplines change what the flows see, ECN marks instead of drops end to end, the
sojourn layer, and bad settings exit 2 with the field's name."""

import polars as pl
import pytest
import thinwire
from thinwire._core import ScenarioError

# A 2 Mbit/s raw wireless bottleneck, 40 ms each way, with a deep (300-packet)
# IP queue: a bulk download fills it (the seed-000 over-buffering).
BASE = """
seed = 3
[wired]
rate = "100Mbps"
delay = "5ms"
[wireless]
rate = "2Mbps"
delay = "40ms"
frame = "1500B"
queue = {queue}
[[flow]]
app = "bulk"
bytes = "3MB"
tcp = {{ profile = "linux", ecn = {ecn} }}
"""


def run(queue='{ limit = "300pkt" }', ecn="false", **kw):
    return thinwire.run(BASE.format(queue=queue, ecn=ecn), **kw)


def rtt(r):
    return r.summary["flows"][0]["rtt_avg_s"]


def test_an_aqm_keeps_the_queue_short_where_drop_tail_fills_it():
    tail = run()
    link = tail.summary["link"]["down"]
    assert link["queue_max"] > 100 and link["queue_aqm_drops"] == 0
    for disc in ("codel", "pie", "red", "fq_codel"):
        q = f'{{ discipline = "{disc}", limit = "300pkt", ecn = false }}'
        r = run(q)
        f, d = r.summary["flows"][0], r.summary["link"]["down"]
        assert f["bytes_delivered"] == 3_000_000, disc
        assert d["queue_aqm_drops"] > 0 and d["queue_marks"] == 0, disc
        assert rtt(r) < 0.6 * rtt(tail), (disc, rtt(r), rtt(tail))


def test_ecn_marks_instead_of_drops_end_to_end():
    q = '{ discipline = "codel", limit = "300pkt", ecn = true }'
    r = run(q, ecn="true")
    f, d = r.summary["flows"][0], r.summary["link"]["down"]
    assert f["bytes_delivered"] == 3_000_000
    assert d["queue_marks"] > 0 and d["queue_aqm_drops"] == 0
    # Every mark the sender heard of was acted on once per window: the
    # receiver saw the CE marks, the sender reduced, nothing was lost to the AQM.
    assert f["tcp_ce_received"] == d["queue_marks"] and f["tcp_ecn_reductions"] > 0
    assert f["tcp_retransmits"] == 0
    # Without ECN negotiated the same queue drops the packets instead.
    r = run(q, ecn="false")
    d = r.summary["link"]["down"]
    assert d["queue_marks"] == 0 and d["queue_aqm_drops"] > 0


def test_the_sojourn_layer_gives_each_departure_its_wait():
    r = run('{ discipline = "codel", limit = "300pkt" }', trace=["queue", "sojourn"])
    soj = r.layer("sojourn")
    assert set(soj["event"].to_list()) == {"dequeue"}
    down = soj.filter((pl.col("node") == "gateway") & (pl.col("dir") == "down"))
    # CoDel holds the standing wait near its target (5 ms) plus one
    # transmission (6 ms at 2 Mbit/s); drop-tail would hold hundreds of ms.
    assert down.height > 1000 and down["value"].median() < 40e6
    q = r.layer("queue")
    assert {"enqueue", "aqm_drop"} <= set(q["event"].to_list())


def test_a_discipline_at_the_wired_link():
    # The wired link is the bottleneck here; each discipline runs there.
    sc = BASE.format(queue='{ limit = "300pkt" }', ecn="false").replace('rate = "100Mbps"', 'rate = "1Mbps"')
    tail = thinwire.run(sc).summary
    for disc in ("codel", "fq_codel", "pie", "red"):
        s = thinwire.run(sc + f'[wired.down]\nqueue = {{ discipline = "{disc}", ecn = false }}\n').summary
        assert s["flows"][0]["bytes_delivered"] == 3_000_000
        assert s["wired_queue_aqm_drops"][0] > 0 and s["wired_queue_drops"][0] >= s["wired_queue_aqm_drops"][0]
        assert s["flows"][0]["rtt_avg_s"] < tail["flows"][0]["rtt_avg_s"], disc


def test_drop_tail_settings_keep_their_old_form():
    a = run('{ limit = "20pkt" }').summary
    b = run('{ discipline = "droptail", limit = "20pkt" }').summary
    assert a["flows"] == b["flows"] and a["link"] == b["link"]


@pytest.mark.parametrize(
    ("queue", "field"),
    [
        ('{ discipline = "blue" }', "discipline"),
        ('{ discipline = "codel", min = "5pkt" }', "min"),
        ('{ discipline = "droptail", ecn = true }', "ecn"),
        ('{ discipline = "codel", target = "0ms" }', "target"),
        ('{ discipline = "red", min = "30pkt", max = "10pkt" }', "min"),
        ('{ discipline = "red", probability = 2.0 }', "probability"),
        ('{ discipline = "fq_codel", flows = 0 }', "flows"),
        ('{ discipline = "pie", ecn_threshold = -1.0 }', "ecn_threshold"),
        ('{ limit = "0pkt" }', "limit"),
        ("7", "table"),
    ],
)
def test_bad_queue_settings_name_the_field(queue, field):
    with pytest.raises(ScenarioError, match=rf"wireless\.queue.*{field}|{field}.*wireless\.queue"):
        run(queue)


def test_bad_queue_settings_exit_2_with_one_line(tmp_path):
    from conftest import thinwire_cli

    p = tmp_path / "s.toml"
    p.write_text(BASE.format(queue='{ discipline = "codel", min = "5pkt" }', ecn="false"))
    r = thinwire_cli("check", str(p))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "min" in r.stderr and "codel" in r.stderr


def test_the_bypass_session_takes_its_own_queue():
    """`bypass_queue`: the media (bypass) session's IP queue apart from the ARQ
    session's. A 2-packet bypass queue drops a media burst the default 50-packet
    one holds, and the TCP flow on the ARQ session is untouched by it."""
    sc = """
seed = 1
stop = "30s"
[wireless]
rate = "64kbps"
delay = "50ms"
{bq}
[wireless.arq]
protocol = "sr"
[[flow]]
app = "media"
link = "bypass"
rate = "80kbps"
[[flow]]
app = "bulk"
bytes = "20KB"
"""
    wide = thinwire.run(sc.format(bq="")).summary
    narrow = thinwire.run(sc.format(bq='bypass_queue = { limit = "2pkt" }')).summary
    assert narrow["link"]["down"]["queue_drops"] > wide["link"]["down"]["queue_drops"]
    assert narrow["flows"][0]["loss"] > wide["flows"][0]["loss"]
    assert narrow["flows"][1]["bytes_delivered"] == wide["flows"][1]["bytes_delivered"] == 20_000
