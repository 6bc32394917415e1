"""The split-TCP proxy inside the simulator (scenario [proxy])."""

import re
from pathlib import Path

import pytest
import thinwire

GPRS = (Path(__file__).resolve().parent.parent / "scenarios" / "gprs-download.toml").read_text()
LINK = GPRS.replace('outage_every = "300s"\n', "").split("[[flow]]")[0]
BULK = '[[flow]]\napp = "bulk"\nbytes = "{}"\nstart = "{}"\ntcp = {{ profile = "linux-2.4" }}\n'


def run(flows: str, proxy: bool, **kw):
    return thinwire.run(LINK + ("[proxy]\n" if proxy else "") + flows, **kw)


def test_proxy_keeps_the_gateway_queue_short_at_full_speed():
    plain = run(BULK.format("600KB", "0s"), False).raw
    split = run(BULK.format("600KB", "0s"), True).raw
    assert plain["proxy"] is None and split["proxy"]["connections"] == 1
    assert split["flows"][0]["bytes_delivered"] == 600_000
    # Same transfer time (the link is the bottleneck either way) ...
    assert split["flows"][0]["completion_s"] < 1.03 * plain["flows"][0]["completion_s"]
    # ... but the gateway holds a few packets instead of tens (seed 004 §III).
    assert plain["link"]["down"]["queue_max"] >= 25
    assert split["link"]["down"]["queue_max"] <= 8


def test_a_second_download_gets_its_share_only_with_the_proxy():
    flows = BULK.format("400KB", "0s") + BULK.format("200KB", "20s")
    share = {}
    for proxy in (False, True):
        r = run(flows, proxy, trace=["tcp"])
        tr = r.trace
        recv = tr.filter(
            (tr["event"] == "recv") & (tr["node"] == "mobile") & (tr["time_ns"] >= 25e9) & (tr["time_ns"] < 60e9)
        )
        by = {f: recv.filter(recv["flow"] == f)["len"].sum() for f in (0, 1)}
        share[proxy] = by[1] / (by[0] + by[1])
    assert share[True] > 0.4, share
    assert share[False] < 0.25, share


def test_proxy_decisions_are_traced():
    r = run(BULK.format("100KB", "0s"), True, trace=["proxy"])
    ev = set(r.trace["event"].unique().to_list())
    assert {"pick", "queue_len", "adv_window"} <= ev
    assert set(r.trace["layer"].unique().to_list()) == {"proxy"}


def test_web_sessions_through_the_proxy_deliver_everything():
    web = '[[flow]]\napp = "http"\nbytes = "6KB"\nobjects = 4\ntransactions = 3\n{}tcp = {{ profile = "linux-2.4" }}\n'
    for persistent in ("", "persistent = true\n"):
        r = run(web.format(persistent), True).raw
        f = r["flows"][0]
        assert f["transactions"] == 3 and f["bytes_delivered"] == 3 * 4 * 6000
        assert r["proxy"]["connections"] == (3 if persistent else 12)


@pytest.mark.parametrize(
    "bad,field",
    [
        ('clamp = "1B"', "proxy.clamp"),
        ("headroom = -1.0", "proxy.headroom"),
        ("retransmit_at = 0", "proxy.retransmit_at"),
        ('cc = "bbr"', "proxy.cc"),
        ('cc = "vegas"', "proxy.cc"),
        ('cc = "cubic"\nestimate_clamp = true', "proxy.estimate_clamp"),
        ("initial_window = 0", "proxy.initial_window"),
        ("classes = [{ port = 23, tickets = 0 }]", "proxy.classes[0].tickets"),
        ("burst = 0", "proxy.burst"),
        ("burst = 65", "proxy.burst"),
        ("bogus = 1", "proxy"),
    ],
)
def test_bad_proxy_fields_name_the_field(bad, field):
    with pytest.raises(thinwire.ScenarioError, match=re.escape(field)):
        thinwire.run(LINK + "[proxy]\n" + bad + "\n" + BULK.format("10KB", "0s"))


def test_the_aggregate_takes_a_congestion_controller():
    """`proxy.cc`: CUBIC over the GPRS link grows the aggregate's window past the
    seeds' fixed one (its summary's `clamp` is the last window), and the
    download completes."""
    flow = BULK.format("200KB", "0s")
    fixed = thinwire.run(LINK + "[proxy]\n" + flow).raw
    cubic = thinwire.run(LINK + '[proxy]\ncc = "cubic"\n' + flow).raw
    for r in (fixed, cubic):
        assert r["flows"][0]["bytes_delivered"] == 200_000
    assert cubic["proxy"]["clamp"] > fixed["proxy"]["clamp"]


def test_multilayer_plot_shows_the_proxy(tmp_path):
    from thinwire.analysis import SimRun
    from thinwire.analysis.plots import build_series, plot

    text = LINK.replace('protocol = "gprs"', 'protocol = "gprs"\noutages = [["20s", "25s"]]')
    r = thinwire.run(text + "[proxy]\n" + BULK.format("200KB", "0s"), trace=["tcp", "proxy"])
    run_ = SimRun.from_result(r)
    series, _ = build_series(run_, "tsq")
    by = {s.name: s for s in series}
    assert {"PxySnd_data", "PxySnd_rexmt", "PxySnd_wnd", "Pxy_stall"} <= set(by)
    # The proxy's wireless-leg sends sit between the server's and the receiver's.
    assert len(by["PxySnd_data"].x) >= 200_000 // 1460 and len(by["Pxy_stall"].x) == 1
    assert 20 < by["Pxy_stall"].x[0] < 45
    out = plot(run_, "tsq", tmp_path / "p.png")
    assert out.stat().st_size > 20_000


def test_tickets_share_the_link_between_two_downloads():
    flows = BULK.format("400KB", "0s") + "port = 8001\n" + BULK.format("400KB", "0s") + "port = 8002\n"
    shares = {}
    for tickets in (100, 300):
        proxy = f"[proxy]\nclasses = [{{ port = 8001, priority = 1, tickets = {tickets} }}, {{ port = 8002, priority = 1, tickets = 100 }}]\n"
        r = thinwire.run(LINK + proxy + flows, trace=["tcp"])
        tr = r.trace
        recv = tr.filter(
            (tr["event"] == "recv") & (tr["node"] == "mobile") & (tr["time_ns"] >= 10e9) & (tr["time_ns"] < 90e9)
        )
        by = [recv.filter(recv["flow"] == f)["len"].sum() for f in (0, 1)]
        shares[tickets] = by[0] / sum(by)
    # Stride scheduling (seed 004 §IV-B): equal tickets, equal shares; 3:1, three quarters.
    assert abs(shares[100] - 0.5) < 0.05, shares
    assert abs(shares[300] - 0.75) < 0.05, shares


def test_concurrent_sessions_through_the_proxy_stay_apart(tmp_path):
    # Two page-loading flows and repeated downloads at once: every connection has its
    # own ports, so the proxy never mistakes one for another and all complete.
    flows = (
        '[[flow]]\napp = "http"\nbytes = "5KB"\nobjects = 3\ntransactions = 3\ntcp = { profile = "linux-2.4" }\n'
        '[[flow]]\napp = "http"\nbytes = "7KB"\nobjects = 2\ntransactions = 3\npersistent = true\ntcp = { profile = "linux-2.4" }\n'
        '[[flow]]\napp = "ttcp"\nbytes = "6KB"\nrepeat = 4\ntcp = { profile = "linux-2.4" }\n'
    )
    res = run(flows, True, pcap=True)
    r = res.raw
    got = [(f["transactions"], f["bytes_delivered"]) for f in r["flows"]]
    assert got == [(3, 45_000), (3, 42_000), (4, 24_000)], got
    assert r["proxy"]["connections"] == 9 + 3 + 4
    # On the wire (the mobile's capture), every connection has its own ports.
    from thinwire.analysis import open_path

    cap_file = tmp_path / "mobile.pcap"
    cap_file.write_bytes(r["pcap_mobile"])
    conns = open_path(cap_file).connection_list
    pairs = [(c["port_a"], c["port_b"]) for c in conns]
    assert len(conns) == 16 and len(set(pairs)) == 16, pairs
