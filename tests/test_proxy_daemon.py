"""`thinwire proxy`, the split-TCP proxy daemon, between real Linux hosts:
mobile ns — `thinwire emulate` GPRS link — gateway ns running the daemon — veth —
server ns. Needs root, /dev/net/tun, iproute2 and nftables (CI has them; elsewhere
these tests skip and say why). Every byte is checked by sha256; every test checks
that nothing is left behind."""

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, thinwire_cli
from test_emulate import WHY, clean, emulate, pcapng_interfaces, processes, served, sha  # noqa: F401  (clean is a fixture)

NFT = shutil.which("nft") or (os.path.exists("/usr/sbin/nft") and "/usr/sbin/nft")
pytestmark = [
    pytest.mark.usefixtures("clean"),
    pytest.mark.skipif(
        WHY is not None or not NFT,
        reason=f"{WHY or 'the proxy daemon needs nftables (nft)'} (CI runs these tests as root)",
    ),
]
APPS = ROOT / "tests" / "tools" / "proxy_apps.py"
PY = sys.executable
S = "10.0.0.1"

LINK = """
seed = 3
[wireless]
rate = "{rate}"
delay = "{delay}"
frame = "1500B"
header = "0B"
{queue}
[wireless.arq]
protocol = "gprs"
setup_down = ["50ms", "150ms"]
setup_up = ["30ms", "80ms"]
"""

CONFIG = """
[proxy]
link_rate = "{rate}"
link_rtt = "{rtt}"
[daemon]
mobile_interface = "set-by-the-command-line"
drain_timeout = "2s"
{extra}
"""


def app(*args) -> str:
    return " ".join([PY, str(APPS), *map(str, args)])


def run_with_proxy(
    tmp: Path,
    rate: str,
    delay: str,
    rtt: str,
    mobile: str,
    server: str,
    extra: str = "",
    pre="",
    args="",
    queue="",
    emu_args=(),
):
    """Runs an emulation with the daemon in the gateway namespace; returns the
    emulator's process, its --out directory and the daemon's log events."""
    cfg = tmp / "proxy.toml"
    cfg.write_text(CONFIG.format(rate=rate, rtt=rtt, extra=extra))
    log = tmp / "proxy.log"
    gw = tmp / "gateway.sh"
    gw.write_text(
        "#!/bin/bash\n"
        f"{pre}\n"
        f"{PY} -m thinwire.cli proxy --config {cfg} --set daemon.mobile_interface=$THINWIRE_DEV {args} > {log} 2>&1 &\n"
        "pid=$!\n"
        f"echo $pid > {tmp / 'proxy.pid'}\n"
        "trap 'kill -TERM $pid; wait $pid; echo $? > " + str(tmp / "proxy.rc") + "; "
        f"{{ ip rule; ip -6 rule; nft list tables; }} > {tmp / 'after.txt'} 2>&1; exit 0' TERM\n"
        "wait $pid\n"
    )
    gw.chmod(0o755)
    # The mobile waits until the daemon has installed its rules.
    mobile = f"for i in $(seq 100); do grep -q started {log} 2>/dev/null && break; sleep 0.1; done; {mobile}"
    p, out = emulate(
        tmp, LINK.format(rate=rate, delay=delay, queue=queue), mobile, server, "--gateway", str(gw), *emu_args
    )
    events = []
    for line in log.read_text().splitlines() if log.exists() else []:
        if not line.startswith("wrote "):  # --out's last line, on stderr
            events.append(json.loads(line))  # every other line is JSON
    return p, out, events


def last(events, name):
    got = [e for e in events if e["event"] == name]
    assert got, f"no {name!r} event in {[e['event'] for e in events]}"
    return got[-1]


def blob(tmp: Path, name: str, size: int, seed: int) -> Path:
    p = served(tmp, size, seed) / "f.bin"
    dst = tmp / name
    p.rename(dst)
    return dst


def test_downloads_and_uploads_are_byte_exact(tmp_path):
    files = {n: blob(tmp_path, f"{n}.bin", n, n) for n in (1, 100_000, 5_000_000)}
    sink = tmp_path / "sink"
    sink.mkdir()
    server = "exec " + app(
        *(["serve"] + [f"{8000 + i}:file:{f}" for i, f in enumerate(files.values())] + [f"9000:sink:{sink}"])
    )
    got = {n: tmp_path / f"got-{n}" for n in files}
    mobile = " && ".join(
        [app("fetch", S, 8000 + i, got[n]) for i, n in enumerate(files)]
        + [app("put", S, 9000, files[n]) for n in files]
    )
    p, out, ev = run_with_proxy(tmp_path, "8Mbps", "20ms", "100ms", mobile, server)
    assert p.returncode == 0, p.stdout + p.stderr
    for n in files:
        assert sha(got[n]) == sha(files[n]), f"download of {n} bytes differs"
    uploads = sorted(sink.glob("*.bin"), key=lambda f: f.stat().st_size)
    assert [sha(u) for u in uploads] == [sha(files[n]) for n in sorted(files)]
    # Transparent: the server saw the mobile's address, not the proxy's.
    assert {f.read_text() for f in sink.glob("*.peer")} == {"10.0.1.2"}
    end = last(ev, "stopped")
    assert end["proxied"] == 6 and end["passed_limit"] == 0
    assert end["bytes_down"] == sum(files) and end["bytes_up"] == sum(files)
    assert (tmp_path / "proxy.rc").read_text().strip() == "0", "SIGTERM: a clean stop"
    after = (tmp_path / "after.txt").read_text()
    assert "7100" not in after and "thinwire" not in after, f"rules left behind: {after}"
    assert not processes("thinwire.cli proxy")


def test_half_close_reset_and_refusal_semantics(tmp_path):
    """The PEPsal cases and the mapping of RSTs, over a slow link."""
    echo_in = blob(tmp_path, "echo.bin", 300_000, 7)
    reply = blob(tmp_path, "reply.bin", 150_000, 8)
    big = blob(tmp_path, "big.bin", 1_000_000, 9)
    marks = tmp_path / "marks"
    marks.mkdir()
    server = "exec " + app(
        "serve", "7:echo", f"8001:request:{reply}", f"8002:file:{big}", "8003:reset:5000", f"8004:hold:{marks}"
    )
    steps = [
        app("echo", S, 7, echo_in, tmp_path / "echo.out"),
        app("request", S, 8001, tmp_path / "reply.out"),
        app("fetch", S, 8002, tmp_path / "big.out"),
        app("reset-seen", S, 8003),
        app("reset-after", S, 8004, 3000),
        app("refused", S, 9),  # nothing listens: the server's RST reaches the mobile
        app("refused", "10.0.1.1", 9),  # the proxy host's own address is not relayed
    ]
    mobile = " && ".join(f"{{ {s} || {{ echo 'failed: {s}' >&2; exit 1; }}; }}" for s in steps) + "; sleep 2"
    p, out, ev = run_with_proxy(tmp_path, "1Mbps", "100ms", "400ms", mobile, server)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sha(tmp_path / "echo.out") == sha(echo_in), "echo with a half-close: every byte comes back"
    assert sha(tmp_path / "reply.out") == sha(reply), "request + half-close: the full response"
    assert sha(tmp_path / "big.out") == sha(big), "a server closing right after writing: all bytes arrive"
    assert list(marks.glob("reset-*")), "the mobile's RST reached the server"
    end = last(ev, "stopped")
    assert end["resets_from_server"] >= 1 and end["resets_from_mobile"] >= 1 and end["server_refused"] >= 1
    # Six connections were split (the refused one included); the own address was not.
    assert end["proxied"] == 6, end
    assert all(e.get("server", "").split(":")[0] != "10.0.1.1" for e in ev if e["event"] == "connect")


def test_limits_pass_new_connections_through_and_reload_on_sighup(tmp_path):
    f = blob(tmp_path, "f.bin", 60_000, 11)
    cfg = tmp_path / "proxy.toml"
    # First 5 parallel fetches with at most 2 proxied per mobile, then raise the
    # limit in the file, SIGHUP, and 5 more.
    mobile = (
        app("parallel", S, 8000, 5, tmp_path / "a")
        + f" && sed -i 's/max_connections_per_mobile = 2/max_connections_per_mobile = 50/' {cfg}"
        + f" && kill -HUP $(cat {tmp_path / 'proxy.pid'}) && sleep 1 && "
        + app("parallel", S, 8000, 5, tmp_path / "b")
    )
    server = "exec " + app("serve", f"8000:file:{f}")
    p, out, ev = run_with_proxy(
        tmp_path, "2Mbps", "50ms", "200ms", mobile, server, extra="max_connections_per_mobile = 2"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    for k in range(5):
        assert sha(tmp_path / f"a.{k}") == sha(f) and sha(tmp_path / f"b.{k}") == sha(f)
    passed = [e for e in ev if e["event"] == "passed"]
    assert passed and all(e["limit"] == "max_connections_per_mobile" for e in passed)
    reload_at = [i for i, e in enumerate(ev) if e["event"] == "reloaded"]
    assert reload_at and ev[reload_at[0]]["max_connections_per_mobile"] == 50
    assert not [e for e in ev[reload_at[0] :] if e["event"] == "passed"], "after the reload nothing passes"
    end = last(ev, "stopped")
    assert end["proxied"] + end["passed_limit"] == 10, end


def test_bad_configuration_exits_2_with_one_line(tmp_path):
    for text, words in [
        ("[daemon]\n", "mobile_interface"),
        ("[daemon]\nmobile_interface = 'eth1'\nmax_buffer = 'lots'\n", "daemon.max_buffer"),
        ("[proxy]\nclamp = '1B'\n[daemon]\nmobile_interface = 'eth1'\n", "proxy.clamp"),
        ("[daemon\n", "malformed TOML"),
    ]:
        cfg = tmp_path / "bad.toml"
        cfg.write_text(text)
        r = subprocess.run(
            [PY, "-m", "thinwire.cli", "proxy", "--config", str(cfg)], capture_output=True, text=True, timeout=30
        )
        assert r.returncode == 2, (text, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, (text, r.stderr)
        assert "Traceback" not in r.stderr
    r = thinwire_cli("proxy", "--config", tmp_path / "missing.toml")
    assert r.returncode == 2 and "no such file" in r.stderr


def unacked_per_mobile(capture: Path) -> dict[str, list[tuple[float, int]]]:
    """From the capture at the wireless hop: per mobile, at each data segment the
    proxy sends, the sum over its connections of data bytes sent and not yet
    acknowledged (highest data byte sent minus highest ACK seen)."""
    from thinwire.analysis import analyze_capture

    cap = analyze_capture(capture)
    conns = cap.connection_list
    pk = cap.packets.sort("time_s", maintain_order=True)
    top: dict[int, int] = {}
    acked: dict[int, int] = {}
    out: dict[str, list[tuple[float, int]]] = {}
    mobile_of = {}
    for i, c in enumerate(conns):
        # a = the end that sent the SYN: the mobile (its data direction is b2a).
        mobile_of[i] = c["host_a"]
    total: dict[str, int] = {}

    def unacked(conn: int) -> int:
        return max(0, top[conn] - max(acked.get(conn, 1), 1)) if top.get(conn) else 0

    for t, conn, d, seq, ln, ack in pk.select(["time_s", "conn", "dir", "seq", "len", "ack"]).iter_rows():
        m = mobile_of[conn]
        before = unacked(conn)
        if d == 1 and ln > 0:  # proxy -> mobile data
            top[conn] = max(top.get(conn, 0), seq + ln)
        elif d == 0 and ack >= 0:  # the mobile's ACK
            acked[conn] = max(acked.get(conn, 0), ack)
        total[m] = total.get(m, 0) + unacked(conn) - before
        if d == 1 and ln > 0:
            out.setdefault(m, []).append((t, total[m]))
    return out


def test_200_connections_and_20_mobiles_share_their_aggregate_windows(tmp_path):
    """200 concurrent downloads from one mobile, then 20 mobiles (20 addresses in
    the mobile namespace, sharing the one emulated link) with 10 each, through the
    daemon with --out: every byte exact; at the wireless hop each mobile's
    unacknowledged bytes never exceed its aggregate window (the proxy's clamp);
    the run directory plots the proxy's decisions."""
    f = blob(tmp_path, "f.bin", 3_000, 21)
    mobiles = [f"10.0.1.{10 + k}" for k in range(20)]
    add = "; ".join(f"ip addr add {a}/32 dev $THINWIRE_DEV" for a in mobiles)
    mobile = (
        f"{add}; "
        + app("parallel", S, 8000, 200, tmp_path / "one")
        + " && "
        + app("parallel", S, 8000, 200, tmp_path / "many", "--from", ",".join(mobiles))
    )
    server = "ip route add 10.0.1.0/24 via 10.0.0.2; exec " + app("serve", f"8000:file:{f}")
    px = tmp_path / "px"
    clamp = 12_000
    p, out, ev = run_with_proxy(
        tmp_path,
        "2Mbps",
        "50ms",
        "200ms",
        mobile,
        server,
        extra="",
        pre="ip route add 10.0.1.0/24 dev $THINWIRE_DEV",
        args=f"--out {px} --set proxy.clamp={clamp}B",
        # 20 mobiles share this one emulated link (in GPRS each has its own): a
        # queue that holds all their windows, so that no loss (and no SACK, which
        # would let a window legitimately cover more than the unacknowledged
        # bytes) muddles the check.
        queue='queue = { limit = "1MB" }',
    )
    assert p.returncode == 0, p.stdout + p.stderr
    for k in range(200):
        assert sha(tmp_path / f"one.{k}") == sha(f) and sha(tmp_path / f"many.{k}") == sha(f), k
    end = last(ev, "stopped")
    assert end["proxied"] == 400 and end["passed_limit"] == 0, end
    # No loss on the link: retransmissions would be spurious (delayed ACKs, acb.rs).
    # (In full: a CI-like run once counted 38 here, not reproduced since.)
    kinds = collections.Counter(e["event"] for e in ev)
    assert end["retransmits"] <= 20, json.dumps({"end": end, "events": kinds})
    seen = {e["mobile"].split(":")[0] for e in ev if e["event"] == "connect"}
    assert seen == {"10.0.1.2", *mobiles}
    # The run directory: summary, flows, trace with both layers, capture of both legs.
    for name in ("capture.pcapng", "trace.parquet", "flows.parquet", "summary.json", "daemon.log"):
        assert (px / name).stat().st_size > 0, name
    assert not (px / "trace.rows").exists()
    per_iface = pcapng_interfaces(px / "capture.pcapng")
    assert per_iface.get(0, 0) > 2000 and per_iface.get(1, 0) > 2000, per_iface
    # Each mobile's unacknowledged bytes at the wireless hop stay within its window.
    un = unacked_per_mobile(px / "capture.pcapng")
    assert set(un) == {"10.0.1.2", *mobiles}
    worst = {m: max(v for _, v in xs) for m, xs in un.items()}
    assert max(worst.values()) <= clamp, worst
    # 200 connections of one mobile did fill its window (the check can fail).
    assert worst["10.0.1.2"] > clamp // 2, worst
    from thinwire.analysis import SimRun
    from thinwire.analysis.series import sim_tsq

    run = SimRun.from_dir(px)
    assert len(run.flows) == 400
    series = {s.name: s for s in sim_tsq(run, 0)}
    for name in ("TcpSnd_data", "TcpSnd_ack", "TcpRcv_ack", "PxySnd_data", "PxySnd_wnd"):
        assert len(series[name].x) > 0, name
    r = thinwire_cli("plot", px, "--flow", "0", "--out", tmp_path / "tsq.png")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tsq.png").stat().st_size > 10_000


def test_20_mobiles_on_20_gprs_links_each_with_its_own_aggregate(tmp_path):
    """Seed 004's deployment with real hosts: 20 mobile namespaces, each over its
    own GPRS link (--mobiles 20), all through one daemon. Every mobile runs 5
    concurrent downloads: every byte exact; the daemon sees 20 mobiles and keeps
    each one's unacknowledged bytes within its own aggregate window; every link
    carried its own mobile's traffic; every path replays exactly."""
    n, k = 20, 5
    f = blob(tmp_path, "f.bin", 20_000, 24)
    mobile = app("parallel", S, 8000, k, f"{tmp_path}/m$THINWIRE_MOBILE")
    server = "exec " + app("serve", f"8000:file:{f}")
    px = tmp_path / "px"
    clamp = 12_000
    p, out, ev = run_with_proxy(
        tmp_path,
        "400kbps",
        "50ms",
        "300ms",
        mobile,
        server,
        args=f"--out {px} --set proxy.clamp={clamp}B",
        emu_args=("--mobiles", str(n)),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    for m in range(n):
        for i in range(k):
            assert sha(tmp_path / f"m{m}.{i}") == sha(f), (m, i)
    end = last(ev, "stopped")
    assert end["proxied"] == n * k and end["passed_limit"] == 0, end
    seen = {e["mobile"].split(":")[0] for e in ev if e["event"] == "connect"}
    assert seen == {f"10.0.1.{2 + m}" for m in range(n)}
    s = json.loads(p.stdout)
    assert len(s["link"]) == n and s["packets"]["unroutable"] == 0
    for m, lk in enumerate(s["link"]):
        assert k * f.stat().st_size < lk["down"]["bytes_sent"] < 2 * k * f.stat().st_size, (m, lk["down"])
    un = unacked_per_mobile(px / "capture.pcapng")
    assert set(un) == seen
    worst = {m: max(v for _, v in xs) for m, xs in un.items()}
    assert max(worst.values()) <= clamp, worst
    # Each mobile's 5 connections did fill its window (the check can fail).
    assert min(worst.values()) > clamp // 2, worst
    r = thinwire_cli("simulate-log", out, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["identical"], r.stdout + r.stderr


def test_gprs_proxy_claims_over_real_hosts(tmp_path):
    """Seed 004 Figs. 10 and 12 over real Linux hosts through the daemon
    (studies/gprs_proxy_real.py): a second download 20 s after the first connects
    and takes about half the link at once; after a 25 s outage the proxy's
    download moves again within seconds, plain TCP only after its backed-off RTO;
    two mobiles on links of their own (--mobiles 2) do not couple through the
    daemon: the later one connects as on an idle link and gets half of the bytes,
    with the proxy as without. The simulator's numbers for the same experiments
    come with them."""
    from thinwire.studies.gprs_proxy_real import run_real

    rows = run_real(tmp_path / "real")
    got = {(r["experiment"], r["proxy"], r["measure"]): r for r in rows}
    assert set(got) == {
        ("fairness", True, "syn_sends"),
        ("fairness", True, "connect_s"),
        ("fairness", True, "share_50s"),
        ("fairness", False, "syn_sends"),
        ("fairness", False, "connect_s"),
        ("fairness", False, "share_50s"),
        ("stall", True, "recovery_s"),
        ("stall", False, "recovery_s"),
        *((("mobiles", p, m) for p in (True, False) for m in ("syn_sends", "connect_s", "share_50s"))),
    }
    for p in (True, False):
        share, setup = got[("mobiles", p, "share_50s")], got[("mobiles", p, "connect_s")]
        assert 0.35 <= share["real"] <= 0.65 and 0.35 <= share["simulated"] <= 0.65, (p, share)
        assert setup["real"] is not None and setup["real"] < 4.0, (p, setup)
    fair = got[("fairness", True, "share_50s")]
    assert 0.35 <= fair["real"] <= 0.65, fair
    # It connects at once: the SYN-ACK waits only behind the aggregate's window
    # of data (9.7 KB: 2.3 s at 4.15 KB/s), not behind the 120 KB queue; Linux's
    # 1 s initial RTO (RFC 6298) sends the SYN again meanwhile, once or twice.
    fast, slow = got[("fairness", True, "connect_s")]["real"], got[("fairness", False, "connect_s")]["real"]
    assert fast is not None and fast < 4.0, fast
    assert slow is None or slow > 3 * fast, (fast, slow)
    assert got[("fairness", True, "syn_sends")]["real"] <= 3
    with_proxy, without = got[("stall", True, "recovery_s")], got[("stall", False, "recovery_s")]
    assert with_proxy["real"] is not None and with_proxy["real"] < 5.0, with_proxy
    assert without["real"] is None or without["real"] > 3 * with_proxy["real"], (with_proxy, without)
    assert with_proxy["simulated"] < 5.0 < without["simulated"]
    assert (tmp_path / "real" / "real_hosts.csv").is_file()
    assert (tmp_path / "real" / "stall-proxy" / "proxy" / "trace.parquet").is_file()


def test_connections_from_the_server_side_are_not_intercepted(tmp_path):
    """A connection that does not come in on the mobile-side interface (here the
    server opening one to a service on the mobile) is routed, not split."""
    f = blob(tmp_path, "f.bin", 50_000, 31)
    got = tmp_path / "got.bin"
    mobile = "exec " + app("serve", f"8100:file:{f}") + " & sleep 12"
    server = "exec " + app("serve", "8000:echo", "--fetch-after", 2, "10.0.1.2", 8100, got)
    p, out, ev = run_with_proxy(tmp_path, "2Mbps", "50ms", "200ms", mobile, server)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sha(got) == sha(f), "the server's download from the mobile"
    end = last(ev, "stopped")
    assert end["proxied"] == 0 and not [e for e in ev if e["event"] == "connect"], end
    assert end["packets_passed"] > 30, end


def test_a_storm_of_signals_during_shutdown_leaves_nothing_behind(tmp_path):
    """Issue: a second SIGTERM during shutdown left the daemon's `ip rule`s and
    nftables table behind (10 of 10). Here SIGTERM comes every 2 ms from the
    first until the daemon has exited, five times over: every rule and the table
    are gone each time, and the daemon logged its `stopped` line."""
    ns = f"twsig{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (
            ["link", "add", "d0", "type", "veth", "peer", "name", "d1"],
            ["link", "set", "d0", "up"],
            ["link", "set", "lo", "up"],
        ):
            subprocess.run(["ip", "-n", ns, *cmd], check=True)
        cfg = tmp_path / "proxy.toml"
        cfg.write_text('[daemon]\nmobile_interface = "d0"\ntun = "twsig0"\ndrain_timeout = "2s"\n')
        for i in range(5):
            log = tmp_path / f"proxy{i}.log"
            with open(log, "w") as f:
                p = subprocess.Popen(
                    ["ip", "netns", "exec", ns, PY, "-m", "thinwire.cli", "proxy", "--config", str(cfg)],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                )
            try:
                for _ in range(200):
                    if "started" in log.read_text() or p.poll() is not None:
                        break
                    time.sleep(0.05)
                assert "started" in log.read_text(), log.read_text()
                while p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    time.sleep(0.002)
            finally:
                if p.poll() is None:
                    p.kill()
                p.wait()
            after = subprocess.run(
                ["ip", "netns", "exec", ns, "sh", "-c", "ip rule; ip -6 rule; nft list tables"],
                capture_output=True,
                text=True,
            ).stdout
            assert "7100" not in after and "thinwire" not in after, f"run {i}: left behind: {after}"
            assert '"stopped"' in log.read_text(), f"run {i}: {log.read_text()}"
    finally:
        subprocess.run(["ip", "netns", "del", ns])


def test_a_burst_of_queue_drops_is_recovered_within_twice_the_direct_time(tmp_path):
    """Issue: 100 concurrent 3 KB downloads over 20 Mbit/s with a 50-packet
    queue — 10 hung over 120 s through the daemon, all done in 2.5 s without it.
    Three runs each way (the daemon told the link's rate and RTT, from which
    its timers follow); the median through the daemon must be within twice the
    median without it, and every byte exact. (Before: 8.1 s against 1.4 s, the
    seeds' 3 s minimum RTO whatever the link; with it set to 200 ms, 1.78 s.)"""
    f = blob(tmp_path, "f.bin", 3_000, 31)
    server = "exec " + app("serve", f"8000:file:{f}")
    link = LINK.format(rate="20Mbps", delay="5ms", queue='queue = { limit = "50pkt" }')

    def mobile(d: Path) -> str:
        return (
            f"s=$(date +%s.%N); {app('parallel', S, 8000, 100, d / 'got')}; st=$?; "
            f'e=$(date +%s.%N); echo "$s $e" > {d / "t"}; exit $st'
        )

    def took(d: Path) -> float:
        for k in range(100):
            assert sha(d / f"got.{k}") == sha(f), k
        s, e = map(float, (d / "t").read_text().split())
        return e - s

    direct, proxied = [], []
    for i in range(3):
        d = tmp_path / f"direct{i}"
        d.mkdir()
        p, _ = emulate(d, link, mobile(d), server, "--gateway", "")
        assert p.returncode == 0, p.stdout + p.stderr
        direct.append(took(d))
        d = tmp_path / f"proxied{i}"
        d.mkdir()
        p, _, ev = run_with_proxy(
            d,
            "20Mbps",
            "5ms",
            "20ms",
            mobile(d),
            server,
            queue='queue = { limit = "50pkt" }',
        )
        assert p.returncode == 0, p.stdout + p.stderr
        assert last(ev, "stopped")["proxied"] == 100
        proxied.append(took(d))
    md, mp = sorted(direct)[1], sorted(proxied)[1]
    print(f"100 x 3 KB: through the daemon {sorted(proxied)} s, without it {sorted(direct)} s")
    assert mp <= 2 * md, f"through the daemon {sorted(proxied)} s, without it {sorted(direct)} s"


def test_the_readme_proxy_example_has_no_race_and_no_leftovers(tmp_path):
    """The README's example as written: the daemon as the --gateway command with
    --out, a plain curl (no retries) started once the server listens. When emulate
    returns, the daemon's outputs are complete; its connection closed over the
    link (no retransmission into a torn-down link, no phantom flow); the summary
    has no empty sections."""
    www = served(tmp_path, 40_000)
    got = tmp_path / "got.bin"
    cfg = tmp_path / "proxy.toml"
    cfg.write_text('[proxy]\nlink_rate = "400kbps"\n[daemon]\nmobile_interface = "eth1"\n')
    px = tmp_path / "px"
    gateway = f"{PY} -m thinwire.cli proxy --config {cfg} --set daemon.mobile_interface=$THINWIRE_DEV --out {px}"
    server = f"sleep 1; exec {PY} -m http.server 8000 --bind 10.0.0.1 --directory {www}"
    mobile = f"curl -sf -o {got} http://{S}:8000/f.bin"
    p, out = emulate(
        tmp_path,
        LINK.format(rate="400kbps", delay="50ms", queue=""),
        mobile,
        server,
        "--gateway",
        gateway,
        "--server-ready",
        "8000",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert sha(got) == sha(www / "f.bin")
    s = json.loads(p.stdout)
    assert s["gateway_wind_down_s"] is not None and s["gateway_wind_down_s"] < 10, s["gateway_wind_down_s"]
    for f in ("summary.json", "flows.parquet", "trace.parquet", "capture.pcapng", "daemon.log"):
        assert (px / f).is_file(), f"{f} missing when emulate returned"
    assert not (px / "trace.rows").exists()
    ps = json.loads((px / "summary.json").read_text())
    assert [f["bytes_delivered"] > 40_000 for f in ps["flows"]] == [True], ps["flows"]  # one flow, no phantom
    assert ps["daemon"]["proxied"] == 1 and ps["daemon"]["open"] == 0
    assert ps["daemon"]["retransmits"] == 0 and ps["daemon"]["aggregate_timeouts"] == 0
    empty = [k for k, v in ps.items() if v in ({}, [], None)]
    assert not empty, f"empty summary keys {empty}"
    assert not processes("thinwire.cli proxy")


def test_server_ready_refuses_a_server_that_never_listens(tmp_path):
    p, _ = emulate(
        tmp_path,
        LINK.format(rate="400kbps", delay="50ms", queue=""),
        "true",
        "sleep 0.5; exit 3",
        "--server-ready",
        "8000",
    )
    assert p.returncode == 2 and "exited (status 3) before anything listened on port 8000" in p.stderr, p.stderr
    assert p.stderr.count("\n") <= 2
