"""Sender state imported from real hosts: `ss -tin` samples and tcp_probe output,
aligned with a capture."""

import numpy as np
import polars as pl
import pytest
from conftest import ROOT, shared_pcap, thinwire_cli
from thinwire.analysis import analyze_capture
from thinwire.analysis.sender_state import SenderStateError, align_probe, read_ss, read_tcp_probe, sender_series, sniff

SS = """1795357040.500000
State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
ESTAB 0      69504      10.0.0.1:40001    10.0.0.2:5001
	 cubic wscale:7,7 rto:204 rtt:3.75/6.475 mss:1448 pmtu:1500 cwnd:21 ssthresh:16 bytes_sent:46336
ESTAB 0      0      [::ffff:10.0.0.1]:22    10.0.0.9:5555
	 cubic rto:1000 rtt:100/50 mss:500 cwnd:10
1795357040.550000
State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
ESTAB 0      56472      10.0.0.1:40001    10.0.0.2:5001
	 cubic wscale:7,7 rto:224 rtt:20.29/18.019 mss:1448 cwnd:30 bytes_sent:72400
"""


def test_read_ss(tmp_path):
    p = tmp_path / "ss.log"
    p.write_text(SS)
    assert sniff(p) == "ss"
    d = read_ss(p)
    assert d.height == 3
    r = d.filter(pl.col("sport") == 40001).sort("time_s")
    assert r["cwnd_bytes"].to_list() == [21 * 1448, 30 * 1448]
    assert r["ssthresh_bytes"].to_list()[0] == 16 * 1448
    assert r["rto_s"].to_list() == [0.204, 0.224]
    assert abs(r["srtt_s"][1] - 0.02029) < 1e-9 and abs(r["rttvar_s"][1] - 0.018019) < 1e-9
    assert d.filter(pl.col("sport") == 22)["src"][0] == "10.0.0.1"  # IPv4-mapped form unwrapped


def test_tcp_probe_alignment_recovers_a_known_offset(tmp_path):
    # Synthesise tcp_probe events from the ACKs of a real capture, stamped on a
    # "boot" clock 8e8 s behind, with the probe firing 40 us after each ACK and
    # showing the snd_una from before it (as Linux 6.x does).
    cap = analyze_capture(shared_pcap("tcptrace_dsack.pcap"))
    c = cap.connection_list[0]
    acks = cap.packets.filter((pl.col("conn") == 0) & (pl.col("dir") == 1) & (pl.col("ack") >= 0))
    raw = ((acks["ack"].to_numpy() + c["a2b"]["first_seq"]) % (1 << 32)).tolist()
    t = acks["time_s"].to_numpy()
    lines, prev = [], raw[0]
    for ti, a in zip(t, raw):
        lines.append(
            f"   python-1 [001] ..s1. {ti - 8e8 + 40e-6:.6f}: tcp_probe: family=AF_INET src=132.235.3.145:1024 dest=132.235.3.157:5001 "
            f"mark=0x0 data_len=0 snd_nxt={prev + 10000:#x} snd_una={prev:#x} snd_cwnd=20 ssthresh=2147483647 snd_wnd=60000 srtt=585000 rcv_wnd=65535 sock_cookie=1"
        )
        prev = a
    p = tmp_path / "probe.txt"
    p.write_text("# tracer: nop\n" + "\n".join(lines) + "\n")
    assert sniff(p) == "tcp_probe"
    al = align_probe(read_tcp_probe(p), cap, 0, 0)
    assert al.hypothesis == "before the ACK"
    assert abs(al.offset_s - (8e8 - 40e-6)) < 2e-6 and al.matched > 1000 and al.spread_ms < 0.01
    s, note = sender_series(p, cap, 0, 0)
    assert "matched ACKs" in note
    assert np.allclose(s["cwnd"][1], 20 * 1448) and np.allclose(s["srtt"][1], 0.585)
    # A probe of another connection cannot be aligned: a clear error.
    q = tmp_path / "other.txt"
    q.write_text(p.read_text().replace("src=132.235.3.145:1024", "src=10.9.9.9:1"))
    with pytest.raises(SenderStateError):
        sender_series(q, cap, 0, 0)


def test_cli_sender_state_errors(tmp_path):
    cap = shared_pcap("tcptrace_long_rtt.pcap")
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\n")
    for args, what in (
        (["--sender-state", bad], "neither tcp_probe"),
        (["--sender-state", tmp_path / "none"], "no such file"),
    ):
        p = thinwire_cli("plot", cap, "--kind", "cwnd", "--out", tmp_path / "x.png", *args)
        assert p.returncode == 2 and what in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_real_host_sender_state(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "tools"))
    import netns_capture as nc

    why = nc.available()
    if why or not nc.probe_available():
        pytest.skip(f"namespace captures with tcp_probe: {why or 'tracepoint unavailable'}")
    cap_p = nc.capture(tmp_path / "c.pcap", nbytes=800_000, probe=tmp_path / "probe.txt", ss=tmp_path / "ss.log")
    cap = analyze_capture(cap_p)
    al = align_probe(read_tcp_probe(tmp_path / "probe.txt"), cap, 0, 0)
    assert al.matched >= 20 and al.spread_ms < 1.0, al
    rtt = cap.rtt.filter(pl.col("dir") == 0)["rtt_s"].median()
    for src in ("probe.txt", "ss.log"):
        s, _ = sender_series(tmp_path / src, cap, 0, 0)
        srtt = np.nanmedian(s["srtt"][1])
        assert rtt / 3 < srtt < rtt * 3, (src, srtt, rtt)
        assert np.nanmax(s["cwnd"][1]) > 10_000
        p = thinwire_cli(
            "plot", cap_p, "--kind", "cwnd", "--sender-state", tmp_path / src, "--out", tmp_path / f"{src}.png"
        )
        assert p.returncode == 0, p.stderr
    s, _ = sender_series(tmp_path / "ss.log", cap, 0, 0)
    assert np.nanmin(s["rto"][1]) >= 0.2  # Linux's minimum RTO
