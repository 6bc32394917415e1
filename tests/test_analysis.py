"""MultiTracer analyses: the capture analyser cross-checked against the simulator's
own counts, simulated-trace metrics, goodput at several time scales, CLI and the
HTML viewer in a real headless browser."""

import json
import shutil
import subprocess

import numpy as np
import polars as pl
import pytest
import thinwire
from conftest import SMALL, shared_pcap, thinwire_cli
from thinwire.analysis import SimRun, analyze_capture, window_goodput
from thinwire.analysis.simtrace import _spurious_and_competing


def _data_dir(c):
    return c["a2b"] if c["a2b"]["unique_bytes"] > c["b2a"]["unique_bytes"] else c["b2a"]


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno", "sack"])
def test_capture_analysis_of_simulated_pcap_matches_the_simulator(variant, tmp_path):
    # The simulator knows what its TCP sender did; the capture analyser infers it
    # from the packets at the sender. They must agree on retransmissions, fast
    # retransmits, timeouts and unique bytes.
    exact = 0
    for proto, p, seed in (("raw", 0.03, 1), ("raw", 0.08, 3), ("sr", 0.1, 1), ("sr", 0.1, 3)):
        r = thinwire.run(
            SMALL,
            seed=seed,
            set={"wireless.arq.protocol": proto, "wireless.channel.p": p, "flow.0.tcp.variant": variant},
            pcap=True,
            trace=["tcp"],
        )
        d = tmp_path / f"{proto}-{p}-{seed}"
        r.write(d)
        c = _data_dir(analyze_capture(d / "server.pcap", columns=False).connection_list[0])
        f = r.summary["flows"][0]
        rex = r.trace.filter((pl.col("event") == "retransmit") & (pl.col("node") == "server")).height
        assert (c["retransmitted_packets"], c["unique_bytes"]) == (rex, f["bytes_delivered"]), (variant, proto, p, seed)
        # Fast retransmit or timeout is inferred from timing (ACK-clocked or not): a
        # timer that fires just after a duplicate ACK arrived can be taken for a fast
        # retransmit, so allow one such coincidence per run.
        assert f["tcp_timeouts"] + f["tcp_fast_retransmits"] > 0
        assert abs(c["fast_retransmits"] - f["tcp_fast_retransmits"]) + abs(c["timeouts"] - f["tcp_timeouts"]) <= 2, (
            variant,
            proto,
            p,
            seed,
            c,
            f,
        )
        exact += (c["fast_retransmits"], c["timeouts"]) == (f["tcp_fast_retransmits"], f["tcp_timeouts"])
    assert exact >= 3


def test_truncated_and_garbage_captures(tmp_path):
    src = shared_pcap("tcptrace_long_rtt.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src[: len(src) - 20])  # the last record loses its tail
    a = analyze_capture(cut)
    assert a.raw["packets"] == 41 and len(a.warnings) == 1 and "cut short" in a.warnings[0]
    p = thinwire_cli("analyze", cut)
    assert p.returncode == 0 and "warning:" in p.stdout
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"GET / HTTP/1.1\r\n" * 10)
    for args in (["analyze", junk], ["analyze", tmp_path / "nope.pcap"], ["plot", junk], ["analyze", tmp_path]):
        p = thinwire_cli(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def test_analyze_json_names_the_statistics():
    p = thinwire_cli("analyze", shared_pcap("tcptrace_dsack.pcap"), "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    c = j["connections"][0]
    for k in (
        "packets",
        "data_packets",
        "data_bytes",
        "unique_bytes",
        "retransmitted_packets",
        "retransmitted_bytes",
        "pure_acks",
        "sack_blocks",
        "duplicate_acks",
        "triple_duplicate_acks",
        "rtt_samples",
        "rtt_min_ms",
        "rtt_avg_ms",
        "rtt_max_ms",
        "rtt_stdev_ms",
        "throughput_Bps",
        "idle_max_s",
        "fast_retransmits",
        "timeouts",
        "spurious_timeouts",
    ):
        assert k in c["a2b"], k
    assert c["a2b"]["unique_bytes"] == 16777216


def test_spurious_and_competing_definitions():
    # Segment 100 sent at 1 s, timeout at 3 s resends it; the first copy arrives at
    # 3.5 s (delayed in the link), the second at 4 s: a spurious timeout and a
    # competing retransmission. Segment 200 is lost and resent: neither.
    data = pl.DataFrame(
        {"time_ns": [1, 2, 3, 5], "seq": [100, 200, 100, 200], "event": ["send", "send", "retransmit", "retransmit"]}
    ).with_columns(pl.col("time_ns") * 10**9)
    arr = pl.DataFrame({"time_ns": [3.5e9, 4e9, 6e9], "seq": [100, 100, 200]}).with_columns(
        pl.col("time_ns").cast(pl.Int64)
    )
    assert _spurious_and_competing(data, arr, [3 * 10**9, 5 * 10**9]) == (1, 1)
    # If the first copy of 100 had been lost, nothing is spurious.
    arr2 = arr.filter(pl.col("time_ns") != 3.5e9)
    assert _spurious_and_competing(data, arr2, [3 * 10**9, 5 * 10**9]) == (0, 0)


def test_reliable_link_makes_every_timeout_spurious():
    # Persistent SR never loses a packet (and the queue is large): any TCP timeout
    # must be spurious, and its retransmission competes with the link's own.
    text = (
        SMALL.replace('protocol = "sr"', 'protocol = "sr"\ntimeout = "1s"') + '\n[wireless.queue]\nlimit = "1000pkt"\n'
    )
    r = thinwire.run(text, set={"wireless.channel.p": 0.3, "flow.0.tcp.min_rto": "200ms"}, trace=["tcp", "link"])
    m = SimRun.from_result(r).flow_metrics().row(0, named=True)
    assert m["tcp_timeouts"] > 0
    assert m["needless_timeouts"] == m["tcp_timeouts"]
    assert m["competing_retransmissions"] > 0


def test_utilization_is_high_on_a_clean_link_and_drops_with_tcp_retransmissions():
    # An 8 KiB receive window keeps the interface queue from overflowing: no TCP
    # retransmission, so utilization is the link's busy share over the connection.
    w = {"flow.0.tcp.rcv_buf": "8KiB"}
    r = thinwire.run(SMALL, set={**w, "wireless.channel.p": 0.0}, trace=["tcp", "link"])
    clean = SimRun.from_result(r).flow_metrics().row(0, named=True)
    assert clean["tcp_retransmits"] == 0
    assert 0.9 < clean["utilization"] <= 1.0
    assert abs(clean["utilization"] - r.summary["link"]["down"]["utilization"]) < 0.02
    # Link retransmissions count as busy time, TCP retransmissions do not.
    sr = (
        SimRun.from_result(thinwire.run(SMALL, set={**w, "wireless.channel.p": 0.1}, trace=["tcp", "link"]))
        .flow_metrics()
        .row(0, named=True)
    )
    assert sr["link_retransmitted_frames"] > 20 and sr["tcp_retransmits"] == 0 and sr["utilization"] > 0.8
    raw = (
        SimRun.from_result(
            thinwire.run(
                SMALL, set={**w, "wireless.channel.p": 0.05, "wireless.arq.protocol": "raw"}, trace=["tcp", "link"]
            )
        )
        .flow_metrics()
        .row(0, named=True)
    )
    assert raw["tcp_retransmits"] > 0 and raw["utilization"] < clean["utilization"] - 0.1


def test_window_goodput():
    t = np.arange(0, 100.0, 0.5)
    b = np.cumsum(np.full(len(t), 50.0))  # 100 B/s
    v = window_goodput(t, b, 10.0, max_rate_Bps=200.0)
    assert len(v) == 9 and np.allclose(v, 0.5)
    assert window_goodput(t, b, 1000.0).size == 0
    with pytest.raises(ValueError):
        window_goodput(t, b, 0)
    # NaN, tiny windows (3 TiB of windows once), a zero max rate: clear errors.
    for w, rate, words in [
        (float("nan"), None, "positive number of seconds"),
        (1e-9, None, "at most 10,000,000"),
        (10.0, 0.0, "max rate"),
        (10.0, float("inf"), "max rate"),
    ]:
        with pytest.raises(ValueError, match=words):
            window_goodput(t, b, w, max_rate_Bps=rate)


def test_plot_rejects_bad_goodput_options_with_one_line(small_scenario, tmp_path):
    out = tmp_path / "run"
    assert thinwire_cli("run", small_scenario, "--out", out).returncode == 0
    for args in (["--windows", "nan"], ["--windows", "1e-9"], ["--max-rate", "0"]):
        p = thinwire_cli("plot", out, "--kind", "goodput", *args, "--out", tmp_path / "g.png")
        assert p.returncode == 2, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (args, p.stderr)


def test_plots_of_a_run_and_a_capture(small_scenario, tmp_path):
    out = tmp_path / "run"
    p = thinwire_cli("run", small_scenario, "--out", out, "--plot", "--pcap")
    assert p.returncode == 0, p.stderr
    assert (out / "tsq.png").stat().st_size > 10_000 and (out / "tsq.html").is_file()
    for kind in ("tsq", "rtt", "cwnd", "goodput"):
        for ext in (".png", ".svg", ".pdf"):
            f = tmp_path / f"{kind}{ext}"
            p = thinwire_cli("plot", out, "--kind", kind, "--out", f, "--windows", "1", "5")
            assert p.returncode == 0, p.stderr
            assert f.stat().st_size > 1000
    cap = shared_pcap("tcptrace_dsack.pcap")
    for kind in ("tsq", "rtt", "cwnd", "goodput"):
        f = tmp_path / f"cap-{kind}.png"
        p = thinwire_cli("plot", cap, "--kind", kind, "--out", f)
        assert p.returncode == 0, p.stderr
    for args, what in (
        (["--out", tmp_path / "x.gif"], "format"),
        (["--layers", "Nope"], "Nope"),
        (["--flow", "9"], "flow 9"),
    ):
        p = thinwire_cli("plot", out, *args)
        assert p.returncode == 2 and what in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_html_viewer_in_headless_chromium(tmp_path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium not installed (apt-get install chromium)")
    html = tmp_path / "tsq.html"
    p = thinwire_cli("plot", shared_pcap("tcptrace_dsack.pcap"), "--out", html)
    assert p.returncode == 0, p.stderr
    n_points = analyze_capture(shared_pcap("tcptrace_dsack.pcap")).packets.height  # data + acks drawn
    r = subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1200,800",
            "--dump-dom",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = r.stdout
    assert 'id="tw-status"' in dom, r.stderr[-2000:]
    import re

    m = re.search(r'id="tw-status"[^>]*>drawn (\d+) points', dom)
    assert m, dom[-2000:]
    drawn = int(m.group(1))
    assert 0.9 * n_points <= drawn <= n_points + 100
    errs = re.search(r'id="tw-errors"[^>]*>([^<]*)<', dom)
    assert errs and errs.group(1).strip() == "", errs and errs.group(1)
    assert "Uncaught" not in r.stderr, r.stderr[-2000:]
    assert dom.count('type="checkbox"') >= 3
    # One tick format: the viewer's y ticks read as the static plots' (tick_label).
    from thinwire.analysis.plots import tick_label

    ticks = re.search(r'data-yticks="([^"]*)"', dom)
    assert ticks and ticks.group(1), dom[-2000:]
    for pair in ticks.group(1).split("|"):
        v, label = pair.split("=")
        assert tick_label(float(v)) == label, (v, label)


def test_delivered_counts_data_bytes_only():
    # 100 KB (SI) of application data: the SYN and FIN take sequence numbers but
    # are not delivered bytes; the first delivery is exactly one MSS.
    d = SimRun.from_result(thinwire.run(SMALL, trace=["tcp"])).delivered(0)
    assert d["bytes"][-1] == 100_000
    assert d.filter(pl.col("bytes") > 0)["bytes"][0] % 210 == 0


def test_sender_events_of_a_simulated_run_are_marked():
    """The time/sequence series of a simulated run carry the sender's events —
    fast recoveries, timeouts, loss probes, undos — as marks, so a cwnd plot
    shows why the window moved."""
    from thinwire.analysis.series import sim_tsq

    over = {"wireless.channel.p": 0.03, "flow.0.bytes": "300KB", "flow.0.tcp.profile": "linux"}
    r = thinwire.run(SMALL, set=over, trace=["tcp"])
    f = r.flows.row(0, named=True)
    names = {s.name: len(s.x) for s in sim_tsq(SimRun.from_result(r), 0)}
    assert names.get("fast_retransmit", 0) == f["tcp_fast_retransmits"] > 0
    assert names.get("timeout", 0) == f["tcp_timeouts"]
    assert names.get("loss_probe", 0) == f["tcp_loss_probes"]
    assert names.get("undo", 0) == f["tcp_undos"]
