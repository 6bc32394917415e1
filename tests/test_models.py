"""End-to-end model checks through the public API."""

from pathlib import Path

import polars as pl
import pytest
import thinwire
from conftest import SMALL
from thinwire.analysis import SimRun


def run(extra="", **kw):
    return thinwire.run(SMALL + extra, **kw)


def test_upload_direction():
    r = run(set={"flow.0.direction": "up"})
    f = r.summary["flows"][0]
    assert f["direction"] == "up" and f["bytes_delivered"] == 100_000
    # Data frames now go up; the down direction carries only ACK traffic.
    assert r.summary["link"]["up"]["bytes_sent"] > 5 * r.summary["link"]["down"]["bytes_sent"]


def test_flows_share_the_wireless_link_in_both_directions():
    extra = """
[[flow]]
app = "bulk"
bytes = "100KB"
direction = "down"
tcp = { variant = "sack", mss = 210 }
[[flow]]
app = "bulk"
bytes = "50KB"
direction = "up"
start = "2s"
"""
    r = run(extra)
    fl = r.flows
    assert fl["bytes_delivered"].to_list() == [100_000, 100_000, 50_000]
    assert fl["variant"].to_list() == ["reno", "sack", "newreno"]
    # Two equal downloads share 64 kbit/s: each gets well under the link rate, and
    # together they use most of it.
    down = fl.filter(pl.col("direction") == "down")
    assert all(t < 40_000 for t in down["throughput_bps"])
    alone = run().flows["throughput_bps"][0]
    # Sharing: the later of the two takes at least half as long again as one alone
    # (not twice: one flow alone leaves the link idle while SR repairs a loss, two
    # fill it).
    assert down["completion_s"].max() > 1.5 * 100_000 * 8 / alone


def test_raw_link_with_frames_larger_than_packets_sends_one_frame_per_packet():
    r = run(
        set={"wireless.arq.protocol": "raw", "wireless.frame": "1500B", "wireless.channel.p": 0.0},
        trace=["tcp", "link"],
    )
    frames = r.layer("link").filter((pl.col("event") == "frame_recv") & (pl.col("dir") == "down"))
    segs = r.layer("tcp").filter((pl.col("event") == "recv") & (pl.col("node") == "mobile"))
    # A 210-byte segment is a 250-byte packet, carried whole in one 254-byte frame.
    assert frames.height == segs.height
    assert (frames["len"] == 254).sum() == (segs["len"] == 210).sum() > 400


def test_droplist_channel_loses_exactly_the_listed_frames():
    r = thinwire.run(
        SMALL.replace('model = "uniform"\np = 0.02', 'model = "droplist"\nframes = [10, 11, 12]'), trace=["link"]
    )
    lost = r.layer("link").filter((pl.col("event") == "frame_lost") & (pl.col("dir") == "down"))
    assert lost.height == 3
    # Per-direction frame indices 10..12 are the 11th..13th frames sent down.
    sent_down = r.layer("link").filter(
        pl.col("event").is_in(["frame_send", "frame_retransmit", "ack_send", "nack_send"]) & (pl.col("dir") == "down")
    )
    assert lost["time_ns"].to_list() == sent_down["time_ns"][10:13].to_list()
    assert r.summary["link"]["up"]["frames_lost"] == 3  # both directions use the list


def test_fading_channel_average_and_burstiness():
    text = SMALL.replace('model = "uniform"\np = 0.02', 'model = "fading"\npe = 0.05\nfdt = 0.02').replace(
        '"100KB"', '"400KB"'
    )
    r = thinwire.run(text, set={"wireless.arq.protocol": "raw"}, trace=["link"])
    flr = r.summary["link"]["down"]["flr"]
    assert 0.02 < flr < 0.09
    # Bursty: a lost frame is followed by another lost frame far more often than Pe.
    fates = r.layer("link").filter(
        (pl.col("dir") == "down")
        & pl.col("event").is_in(["frame_send", "frame_retransmit", "ack_send", "nack_send", "frame_lost"])
    )
    seq = []
    for e in fates["event"].to_list():
        if e == "frame_lost":
            seq[-1] = 1
        else:
            seq.append(0)
    pairs = sum(1 for a, b in zip(seq, seq[1:]) if a and b)
    cond = pairs / max(1, sum(seq))
    assert cond > 0.3, f"P(loss | previous lost) = {cond}"


def test_per_direction_channel_override():
    text = SMALL + '\n[wireless.up.channel]\nmodel = "none"\n'
    s = thinwire.run(text).summary
    assert s["link"]["up"]["frames_lost"] == 0 and s["link"]["down"]["frames_lost"] > 0


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno", "sack"])
def test_every_variant_completes_over_lossy_raw_link(variant):
    s = run(set={"flow.0.tcp.variant": variant, "wireless.arq.protocol": "raw", "wireless.channel.p": 0.03}).summary
    f = s["flows"][0]
    assert f["bytes_delivered"] == 100_000 and f["tcp_retransmits"] > 0


def test_two_state_channel_trace_marks_bad_periods():
    text = SMALL.replace(
        'model = "uniform"\np = 0.02',
        'model = "two-state"\ngood = { ber = 0.0, mean = "5s" }\nbad = { ber = 1.0, mean = "1s" }',
    ).replace('"100KB"', '"300KB"')
    r = thinwire.run(text, set={"wireless.arq.protocol": "raw"}, trace=["channel", "link"])
    t = r.trace
    assert t["time_ns"].is_sorted()
    st = r.layer("channel").filter(pl.col("dir") == "down")
    assert st.height >= 4
    assert st["value"].to_list()[:4] == [1, 0, 1, 0]  # starts good, alternates
    # With BER 0 / 1, a down frame is lost exactly when it overlaps a bad period.
    periods = list(zip(st.filter(pl.col("value") == 1)["time_ns"], st.filter(pl.col("value") == 0)["time_ns"]))
    sent = r.layer("link").filter(
        (pl.col("dir") == "down") & pl.col("event").is_in(["frame_send", "frame_retransmit", "ack_send", "nack_send"])
    )
    lost = set(
        r.layer("link").filter((pl.col("dir") == "down") & (pl.col("event") == "frame_lost"))["time_ns"].to_list()
    )
    for t0, ln in zip(sent["time_ns"].to_list(), sent["len"].to_list()):
        t1 = t0 + ln * 8 * 10**9 // 64_000
        overlaps = any(a < t1 and t0 < b for a, b in periods)
        if t0 < periods[-1][1]:
            assert (t0 in lost) == overlaps, t0


MEDIA = """
[[flow]]
app = "media"
direction = "down"
"""


def test_media_alone_on_a_clean_link():
    text = SMALL.replace("p = 0.02", "p = 0.0") + MEDIA
    r = thinwire.run(text, set={"flow.0.bytes": "1KB", "stop": "300s"})
    m = r.summary["flows"][1]
    assert m["app"] == "media" and m["loss"] == 0.0
    # Average 56 kbit/s x 1/(1+1.35) ≈ 23.8 kbit/s of IP packets, 222 of each 250 bytes are payload.
    assert 15_000 < m["throughput_bps"] < 27_000
    d = r.media_delays(1)
    assert d.height == m["packets_received"]
    # Base delay: wired 1 ms + 0.2 ms serialisation + one 254-byte frame (31.75 ms,
    # shorter than the 35.7 ms packet interval) + 50 ms propagation = 82.95 ms.
    assert d["delay_s"].min() == pytest.approx(0.08295, abs=1e-6)
    # Once the 1 KB TCP transfer is over (its frames alternate with media frames at
    # the start), the stream has the link to itself and never queues.
    assert d["delay_s"][100:].max() == pytest.approx(0.08295, abs=1e-6)


def test_media_bypasses_arq_and_contends_with_tcp():
    base = SMALL.replace('"100KB"', '"300KB"')
    alone = thinwire.run(base).summary["flows"][0]
    r = thinwire.run(base + MEDIA).summary
    tcp, media = r["flows"]
    assert tcp["throughput_bps"] < 0.8 * alone["throughput_bps"]
    # Media frames are never retransmitted: with 2% uniform frame loss, lost media
    # packets stay lost.
    assert media["loss"] > 0.005
    # Priority for the bypass session shortens media delay.
    prio = thinwire.run(base + MEDIA, set={"wireless.scheduler": "bypass-first"}).summary["flows"][1]
    assert prio["delay_mean_s"] < 0.5 * media["delay_mean_s"]


def test_media_config_errors():
    for key, val, field in (
        ("flow.1.tcp", '{variant = "reno"}', "flow[1].tcp"),
        ("flow.1.talk", '"0s"', "flow[1].talk"),
        ("flow.0.talk", '"1s"', "flow[0].talk"),
        ("wireless.scheduler", '"fifo"', "wireless.scheduler"),
    ):
        with pytest.raises(thinwire.ScenarioError, match=field.replace("[", r"\[").replace("]", r"\]")):
            thinwire.run(SMALL + MEDIA, set=[f"{key}={val}"])
    with pytest.raises(thinwire.ScenarioError, match="stop"):
        thinwire.run(
            SMALL.replace(
                'app = "bulk"\nbytes = "100KB"\ndirection = "down"\ntcp = { variant = "reno", mss = 210 }',
                'app = "media"',
            )
        )


def test_shared_frame_queue_makes_arq_timers_include_queueing():
    # Under contention, frames wait behind media frames in the shared interface
    # queue while their SR timers run: short timeouts fire spuriously.
    base = (
        SMALL.replace('"100KB"', '"300KB"').replace(
            'tcp = { variant = "reno", mss = 210 }', 'tcp = { variant = "reno", mss = 210, rcv_buf = "4200B" }'
        )
        + MEDIA
    )
    s = {"wireless.arq.timeout": "0.9s", "wireless.channel.p": 0.0}
    pull = thinwire.run(base, set=s).summary["link"]["down"]
    shared = thinwire.run(base, set={**s, "wireless.mux": "shared-queue"}).summary["link"]["down"]
    assert pull["frames_lost"] == shared["frames_lost"] == 0
    assert pull["frames_retransmitted"] == 0
    assert shared["frames_retransmitted"] > 50
    assert pull["frame_queue_drops"] == 0


def test_shared_frame_queue_drops_frames_that_find_it_full():
    text = SMALL.replace("p = 0.02", "p = 0.0")
    r = thinwire.run(
        text, set={"wireless.mux": "shared-queue", "wireless.frame_queue": 5, "flow.0.tcp.rcv_buf": "64KiB"}
    ).summary
    assert r["link"]["down"]["frame_queue_drops"] > 0
    assert r["flows"][0]["bytes_delivered"] == 100_000  # SR recovers the dropped frames
    with pytest.raises(thinwire.ScenarioError, match="wireless.mux"):
        thinwire.run(text, set={"wireless.mux": "push"})


WEB = SMALL.replace('app = "bulk"\nbytes = "100KB"\ndirection = "down"\n', 'app = "web"\ntransactions = 12\n')


def test_web_transactions_run_back_to_back_on_fresh_connections():
    r = thinwire.run(WEB, set={"wireless.channel.p": 0.0}, trace=["tcp"])
    f = r.summary["flows"][0]
    assert f["app"] == "web" and f["transactions"] == 12
    assert f["throughput_bps"] == pytest.approx(f["bytes_delivered"] * 8 / f["completion_s"])
    # With stop = "end" the run ends when the 12th transaction completes.
    assert r.summary["sim_time_s"] == pytest.approx(f["completion_s"])
    t = r.layer("tcp")
    syns = t.filter((pl.col("event") == "send") & (pl.col("node") == "mobile") & ((pl.col("value") & 2) == 2))
    fins = t.filter((pl.col("event") == "send") & (pl.col("node") == "server") & ((pl.col("value") & 1) == 1))
    # One connection per exchange (page + 1..65 objects per transaction), each opened
    # by the client and closed by the server after its reply.
    assert syns.height >= 24 and fins.height == syns.height
    # Data flows both ways: requests up, replies down; the down bytes are the metric.
    down = t.filter((pl.col("event") == "recv") & (pl.col("node") == "mobile"))["len"].sum()
    assert down >= f["bytes_delivered"]


def test_web_is_deterministic_and_seeded():
    a = thinwire.run(WEB).summary["flows"][0]
    b = thinwire.run(WEB).summary["flows"][0]
    c = thinwire.run(WEB, seed=5).summary["flows"][0]
    assert a == b
    assert a["bytes_delivered"] != c["bytes_delivered"]


def test_web_config_errors():
    for key, val, field in (
        ("flow.0.direction", '"up"', "flow[0].direction"),
        ("flow.0.bytes", '"1MB"', "flow[0].bytes"),
        ("flow.0.transactions", "0", "flow[0].transactions"),
    ):
        with pytest.raises(thinwire.ScenarioError, match=field.replace("[", r"\[").replace("]", r"\]")):
            thinwire.run(WEB, set=[f"{key}={val}"])
    with pytest.raises(thinwire.ScenarioError, match="transactions"):
        thinwire.run(WEB.replace("transactions = 12\n", ""))


GSM = (Path(__file__).resolve().parent.parent / "scenarios" / "gsm-csd-upload.toml").read_text()


def _gsm(**over):
    return thinwire.run(GSM, set={"wireless.channel.p": 0.0, **over}, trace=["tcp", "queue"])


def test_gsm_csd_upload_fills_the_l2r_rate_with_ppp_overhead():
    # 460-byte segments + 40 bytes of headers + 12 of timestamps + 7 of PPP over
    # 960 bytes/s: at most 851 bytes/s of payload (seed 000 §4.4: 848 measured).
    r = _gsm()
    f = r.summary["flows"][0]
    bps = f["throughput_bps"] / 8
    assert 0.96 * 851 < bps < 851, bps
    assert r.summary["link"]["up"]["l2r_busy"] > 10
    # Without L2R the link carries 1200 bytes/s of RLP payload.
    fast = _gsm(**{"wireless.arq.l2r_rate": "1Gbps"}).summary["flows"][0]["throughput_bps"] / 8
    assert fast > 1.2 * bps


def test_bsd_profile_quenches_the_sender_on_a_local_interface_drop():
    # An interface buffer of 6 packets below the 8 KiB window overflows (seed 000
    # Fig. 7): each drop at the mobile puts its sender's cwnd back to one segment.
    for quench in (True, False):
        r = _gsm(**{"wireless.queue.limit": "6pkt", "flow.0.tcp.source_quench": quench})
        t = SimRun.from_result(r).trace
        drops = t.filter((pl.col("event") == "drop") & (pl.col("node") == "mobile"))["time_ns"].to_list()
        assert drops, "the small buffer must overflow"
        cw = t.filter((pl.col("event") == "cwnd") & (pl.col("node") == "mobile"))
        at_drop = cw.filter(pl.col("time_ns").is_in(drops))
        one_seg = at_drop.filter(pl.col("value") <= 460)
        if quench:
            assert one_seg.height >= 1, "cwnd falls to one segment at a drop"
        else:
            assert one_seg.height == 0


def test_bsd_profile_values():
    r = thinwire.run(GSM, set={"stop": "30s", "flow.0.bytes": "unlimited"}, trace=["tcp"])
    t = SimRun.from_result(r).trace
    rto = t.filter((pl.col("event") == "rto") & (pl.col("node") == "mobile"))["value"].to_list()
    assert rto[0] == 6_000_000_000, "initial RTO 6 s"
    assert all(v % 500_000_000 == 0 for v in rto), "RTO in 500 ms ticks"
    cw = t.filter((pl.col("event") == "cwnd") & (pl.col("node") == "mobile"))["value"].to_list()
    assert cw[0] <= 460, "initial window of one segment"


GPRS = (Path(__file__).resolve().parent.parent / "scenarios" / "gprs-download.toml").read_text()


def test_gprs_download_fills_the_link_and_the_gateway_buffer():
    # Seed 003 §IV: a 600 KB download runs at about the link rate while TCP's 64 KB
    # window fills the gateway buffer, inflating the RTT to tens of seconds.
    text = GPRS.replace('outage_every = "300s"\n', "")
    r = thinwire.run(text, trace=["tcp"])
    f = r.summary["flows"][0]
    rate = 33200 / 8
    assert 0.85 * rate < f["throughput_bps"] / 8 < rate
    assert f["rtt_avg_s"] > 5
    assert r.summary["link"]["down"]["queue_max"] > 20
    assert r.summary["link"]["down"]["tbf_setups"] >= 1 and r.summary["link"]["down"]["outages"] == 0
    # The Linux receiver's first advertised window is 5392 bytes.
    t = SimRun.from_result(r).trace
    syn = t.filter((pl.col("node") == "mobile") & (pl.col("event") == "send")).row(0, named=True)
    assert syn["value"] & 2  # the SYN


def test_gprs_gateway_buffer_defaults_to_120kb():
    text = GPRS.replace('outage_every = "300s"\n', "")
    default = text.replace('queue = { limit = "120KB" }\n', "")
    assert default != text
    a, b = thinwire.run(text).summary, thinwire.run(default).summary
    assert a["flows"][0]["completion_s"] == b["flows"][0]["completion_s"]
    assert a["link"]["down"]["queue_max"] == b["link"]["down"]["queue_max"] > 20
    # A window larger than the buffer: GPRS's default holds 120 KB (80 full
    # packets); other link protocols keep the 50-packet default.
    big = default.replace(
        'tcp = { profile = "linux-2.4", mss = 1460 }',
        'tcp = { profile = "linux-2.4", mss = 1460, window_scaling = true, rcv_buf = "256KB", snd_buf = "256KB" }',
    )
    assert big != default
    g = thinwire.run(big).summary["link"]["down"]
    # The same scenario over a raw link (its [wireless.arq] takes no GPRS fields).
    arq = big.index("[wireless.arq]")
    raw_text = big[:arq] + '[wireless.arq]\nprotocol = "raw"\n' + big[big.index("[[flow]]", arq) :]
    raw = thinwire.run(raw_text).summary["link"]["down"]
    assert 50 < g["queue_max"] <= 120_000 // 1500 and g["queue_drops"] > 0
    assert raw["queue_max"] == 50 and raw["queue_drops"] > 0


def test_gprs_outages_stall_the_transfer():
    long = GPRS.replace('outage_every = "300s"', 'outage_every = "20s"')
    r = thinwire.run(long)
    assert r.summary["link"]["down"]["outages"] >= 1
    calm = thinwire.run(GPRS.replace('outage_every = "300s"\n', ""))
    assert r.summary["flows"][0]["completion_s"] > calm.summary["flows"][0]["completion_s"] + 5


def test_cwnd_clamp_over_gprs_keeps_the_link_full_with_short_queues():
    # Seed 003 §V, Fig. 7: fixed windows from about the BDP (10 KB) up finish a 600 KB
    # download as fast as standard TCP; 4 KB under-uses the link; the RTT grows with
    # the window.
    text = GPRS.replace('outage_every = "300s"\n', "")
    res = {}
    for c in (None, "4KB", "10KB", "16KB", "32KB"):
        f = thinwire.run(text, set={} if c is None else {"flow.0.tcp.cwnd_clamp": c}).summary["flows"][0]
        res[c] = (f["completion_s"], f["rtt_avg_s"])
    base = res[None][0]
    assert res["4KB"][0] > 1.5 * res["10KB"][0]
    for c in ("10KB", "16KB", "32KB"):
        assert abs(res[c][0] - base) < 0.05 * base, (c, res)
    rtts = [res[c][1] for c in ("10KB", "16KB", "32KB", None)]
    assert rtts == sorted(rtts) and rtts[-1] > 3 * rtts[0], rtts


def test_gsm_downlink_frames_through_l2r_carry_their_flow():
    """Bytes the network-side L2R relay passes to RLP a few at a time still label
    the RLP frames with the flow they belong to (MultiTracer's RlpSnd series)."""
    r = thinwire.run(
        "scenarios/gsm-csd-upload.toml",
        trace=["link"],
        set={"flow.0.bytes": "20KB", "flow.0.direction": "down", "wireless.arq.header_compression": True},
    )
    sent = r.trace.filter((pl.col("event") == "frame_send") & (pl.col("dir") == "down"))
    assert sent.height > 800
    assert sent["flow"].null_count() == 0


def test_gprs_sends_packets_whole_and_has_no_header_by_default():
    """docs/scenario.md: with gprs, `frame` does not apply and `header` (per-packet
    link overhead) defaults to 0 B, so a scenario that leaves them out runs as
    seed 003's link (once it silently paid 4 B per packet)."""
    base = """
[wireless]
rate = "64kbps"
delay = "50ms"
{extra}
[wireless.arq]
protocol = "gprs"
[[flow]]
app = "bulk"
bytes = "50KB"
"""

    def done(extra: str) -> float:
        return thinwire.run(base.format(extra=extra)).flows["completion_s"][0]

    plain = done("")
    assert plain == done('frame = "1500B"\nheader = "0B"') == done('frame = "250B"')
    assert done('header = "40B"') > plain


RLC_MEDIA = """
stop = "300s"
[wireless]
rate = "64kbps"
delay = "50ms"
[wireless.channel]
model = "uniform"
p = 0.05
[wireless.arq]
protocol = "rlc"
[[flow]]
app = "bulk"
bytes = "unlimited"
[[flow]]
app = "media"
"""


def test_rlc_trace_shows_polls_windows_and_status_contents():
    """The link layer of an RLC run says what the protocol did: each poll with
    the sender's window (VT(A) <= polled SN < VT(S)), each STATUS PDU's ACK SUFI
    (VR(R)) and how many PDUs it reported missing."""
    r = thinwire.run(RLC_MEDIA, seed=3, set={"stop": "60s", "wireless.arq.preset": "typical"}, trace=["link"])
    link = r.layer("link")
    polls = link.filter(pl.col("event") == "poll")
    status = link.filter(pl.col("event") == "status_report")
    sends = link.filter(pl.col("event") == "status_send")
    assert polls.height > 10 and status.height == sends.height > 10
    assert (polls["ack"] <= polls["seq"]).all() and (polls["seq"] < polls["value"]).all()
    assert status["ack"].null_count() < status.height
    nacked = status.filter(pl.col("len") > 0)
    assert nacked.height > 0 and (nacked["seq"] >= nacked["ack"]).all()  # first missing at or past VR(R)
    assert (status.filter(pl.col("len") == 0)["seq"].is_null()).all()


def test_rlc_without_a_last_pdu_poll_warns_and_typical_bounds_waits():
    """Seed 002's Table I presets never poll the last PDU: a lost lone TCP ACK
    waits for the next one (once 39.5 s). check() and run() say so; the `typical`
    preset polls it, and no uplink packet then waits long."""
    assert any("poll_last_tx" in w for w in thinwire.check(RLC_MEDIA))
    assert thinwire.check(RLC_MEDIA, set={"wireless.arq.preset": "typical"}) == []
    with pytest.warns(thinwire.ScenarioWarning, match="poll_last_tx"):
        thinwire.run(RLC_MEDIA, set={"stop": "5s"})

    def worst_uplink_wait(preset: str) -> float:
        worst = 0.0
        for seed in range(1, 9):
            r = thinwire.run(RLC_MEDIA, seed=seed, set={"wireless.arq.preset": preset}, trace=["link"])
            d = r.layer("link").filter((pl.col("event") == "packet_deliver") & (pl.col("dir") == "up"))
            worst = max(worst, d["value"].max() / 1e9)
        return worst

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", thinwire.ScenarioWarning)
        table_i, typical = worst_uplink_wait("uniform"), worst_uplink_wait("typical")
    assert typical < 2.0 < table_i, (typical, table_i)


def test_mobiles_of_a_shared_cell_have_their_own_sessions_addresses_and_queues(tmp_path):
    """Flows of `mobile = k` on one link: each mobile's packets carry its address
    (10.0.1.2 + k) and take its own ARQ session and IP queue. A download to
    mobile 0 keeps a backlog in its queue (a 64 KB window into a 500-packet
    queue); mobile 1's small download beside it takes turns with it on the radio
    instead of waiting behind that backlog, as it does when both share one
    session."""
    extra = """
[[flow]]
app = "bulk"
bytes = "8KB"
start = "10s"
tcp = { variant = "reno", mss = 210 }
mobile = 1
"""
    base = SMALL.replace('bytes = "100KB"', 'bytes = "300KB"').replace("p = 0.02", "p = 0.0")
    base = base.replace('header = "4B"', 'header = "4B"\nqueue = { limit = "500pkt" }')
    base = base.replace("mss = 210 }", 'mss = 210, rcv_buf = "64KB" }', 1)
    own = thinwire.run(base + extra, pcap=True, out=tmp_path / "own")
    one = thinwire.run(base + extra.replace("mobile = 1", "mobile = 0"))
    assert own.summary["link"]["down"]["queue_max"] > 200
    assert own.flows["mobile"].to_list() == [0, 1] and one.flows["mobile"].to_list() == [0, 0]
    small, behind = (r.flows.filter(pl.col("id") == 1)["completion_s"][0] for r in (own, one))
    # 8 KB at half of 64 kbit/s: about 2 s and a handshake; behind ~250 packets of
    # mobile 0's (31 ms of airtime each) it took longer than that backlog.
    assert small < 4 and behind > 8, (small, behind)
    assert own.flows["completion_s"][0] < one.flows["completion_s"][0] + 1
    # Each mobile's packets carry its own address.
    pcap = (tmp_path / "own" / "mobile.pcap").read_bytes()
    assert bytes([10, 0, 1, 2]) in pcap and bytes([10, 0, 1, 3]) in pcap
    for key, val, want in (
        ("flow.1.mobile", "250", "between 0 and 249"),
        ("wireless.arq.protocol", '"is707"', "circuit"),
    ):
        with pytest.raises(thinwire.ScenarioError, match=want):
            thinwire.run(base + extra, set=[f"{key}={val}"])
