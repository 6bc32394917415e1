"""The sim-vs-real study: its simulated side for every cell, its reading of the
kernel's counters, its pass band, its refusal without privileges, and (as root,
in CI) the quick study end to end over the emulator."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from thinwire.studies import sim_vs_real


@pytest.mark.parametrize("cell", list(sim_vs_real.CELLS))
def test_simulated_downloads_of_each_cell_complete(cell):
    for tcp in sim_vs_real.TCPS:
        r = sim_vs_real.sim_run(cell, tcp, 1)
        assert r["completion_s"] and r["completion_s"] > 0, r
        assert set(sim_vs_real.COUNTERS) <= set(r)


def test_netstat_pairs_names_with_values():
    text = (
        "TcpExt: TCPTimeouts TCPLossProbes TCPSackRecovery\nTcpExt: 3 5 7\n"
        "IpExt: InNoRoutes\nIpExt: 0\n"
        "Tcp: RtoAlgorithm RetransSegs\nTcp: 1 12\n"
    )
    k = sim_vs_real.netstat(text)
    assert k["TcpExt.TCPTimeouts"] == 3 and k["TcpExt.TCPSackRecovery"] == 7 and k["Tcp.RetransSegs"] == 12


def test_a_run_is_rejected_when_over_one_percent_of_its_outputs_are_late():
    """p99 over 2 ms where a p99 can be estimated; one late output in a short run
    (a GSM download writes 28) is allowed, two are not."""
    assert not sim_vs_real.rejected(0, 28) and not sim_vs_real.rejected(1, 28)
    assert sim_vs_real.rejected(2, 28)
    assert not sim_vs_real.rejected(30, 3000) and sim_vs_real.rejected(31, 3000)


def test_the_ratio_interval_holds_the_ratio_and_narrows_with_more_runs():
    import numpy as np

    rng = np.random.default_rng(1)
    real = list(np.exp(rng.normal(3.5, 0.6, 10)))
    sim = list(np.exp(rng.normal(3.5, 0.6, 30)))
    lo, hi = sim_vs_real.ratio_ci(sim, real)
    r = float(np.median(sim) / np.median(real))
    assert lo < r < hi
    lo2, hi2 = sim_vs_real.ratio_ci(sim * 10, real * 10)
    assert hi2 - lo2 < hi - lo
    assert sim_vs_real.ratio_ci(sim, real) == (lo, hi), "a fixed seed: the same rows, the same interval"


def test_the_pass_band():
    """Ratio 0.9–1.1, the real median inside the simulated 10th–90th percentile,
    counters within ±max(2, 30 %); rejected real runs do not count."""

    def row(side, t, seed, rexmit, rejected=False):
        r = {"cell": "c", "tcp": "cubic", "side": side, "seed": seed, "completion_s": t, "retransmits": rexmit}
        r.update({c: 0 for c in sim_vs_real.COUNTERS})
        r["rejected"] = rejected
        return r

    real = [row("real", 10.0, 1, 10), row("real", 10.4, 2, 10), row("real", 99.0, 3, 99, rejected=True)]
    sim = [row("sim", 9.0 + 0.2 * i, i, 14) for i in range(11)]
    (s,) = sim_vs_real.summarize(real + sim)
    assert s["n_real"] == 2 and s["real_median_s"] == pytest.approx(10.2)
    cl = {c["claim"]: c["pass"] for c in sim_vs_real.claims_of([s])}
    assert cl["median completion, simulated / real"]
    assert cl["real median inside the simulated 10th–90th percentile"]
    assert not cl["retransmits per run (median)"], "14 against 10 ± 3 fails"
    sim = [row("sim", 12.0, i, 10) for i in range(11)]
    (s,) = sim_vs_real.summarize(real + sim)
    cl = {c["claim"]: c["pass"] for c in sim_vs_real.claims_of([s])}
    assert not cl["median completion, simulated / real"] and cl["retransmits per run (median)"]


def test_simulated_receive_windows_match_the_recorded_kernel():
    """The `linux` profile's advertised windows (stock buffers, and `tcp_rmem`
    tuned to 65,535 B with and without window scaling) against the windows Linux 6.18 advertised over the
    emulator, recorded in the study's micro.json: inside the real runs' range
    at every point, exactly for the tuned receiver (no autotuning there)."""
    rec = json.loads((Path(__file__).parents[1] / "docs/studies/sim-vs-real/micro.json").read_text())
    for name in sim_vs_real.RWND:
        (real,) = [r for r in rec if r["cell"] == name and r["side"] == "real"]
        sim = sim_vs_real.micro_sim(name)
        assert sim_vs_real.micro_claims([sim, real])[0]["pass"], (name, sim["windows"], real["windows_runs"])
        if sim_vs_real.RWND[name][0]:
            assert sim["windows"] == real["windows_runs"][0], f"{name}: the tuned receiver, exactly"


def test_simulated_idle_restarts_match_the_recorded_kernel():
    """After an idle period (restart per RTO idled, none below an RTO, none with
    `tcp_slow_start_after_idle` = 0, BBR's own restart) the `linux` profile's
    second reply goes out as Linux 6.18's did over the emulator, recorded in
    micro.json: its segments per round trip, its time, no events, and the reply
    carrying the second request's ACK (ping-pong mode; the model without it sent
    a pure ACK first, which the claim refuses)."""
    rec = json.loads((Path(__file__).parents[1] / "docs/studies/sim-vs-real/micro.json").read_text())
    for name in sim_vs_real.IDLE:
        (real,) = [r for r in rec if r["cell"] == name and r["side"] == "real"]
        sim = sim_vs_real.micro_sim(name)
        claims = sim_vs_real.micro_claims([sim, real])
        for c in claims:
            assert c["pass"], (name, c)
        assert [c["pass"] for c in claims if "ping-pong" in c["claim"]] == [True]
        assert sim["request2_acks"] == 0
        assert not sim_vs_real.idle_claims({**sim, "request2_acks": 1}, real)[-1]["pass"]


def test_idle_claims_fail_on_another_restart():
    """The idle cells tell the kernel's restart from RFC 5681's: idled between
    one and two RTOs, Linux halves the window once (25 segments), RFC 5681
    restarts from the initial window (10)."""
    rec = json.loads((Path(__file__).parents[1] / "docs/studies/sim-vs-real/micro.json").read_text())
    (real,) = [r for r in rec if r["cell"] == "idle-cubic-1rto" and r["side"] == "real"]
    sim = sim_vs_real.micro_sim("idle-cubic-1rto")
    assert sim["rounds"][0] == 25
    cc, sysctls, _, gap = sim_vs_real.IDLE["idle-cubic-1rto"]
    sim_vs_real.IDLE["idle-x"] = (cc, sysctls, '{profile="linux", idle_restart="rfc5681"}', gap)
    try:
        other = sim_vs_real.micro_sim("idle-x")
    finally:
        del sim_vs_real.IDLE["idle-x"]
    assert other["rounds"][0] == 10
    assert not sim_vs_real.idle_claims({**other, "cell": "idle-cubic-1rto"}, real)[0]["pass"]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to drop capabilities")
@pytest.mark.skipif(os.geteuid() != 0, reason="dropping capabilities with setpriv needs root (CI runs as root)")
def test_without_privileges_the_study_exits_2_with_one_line(tmp_path):
    exe = Path(sys.executable).parent / "thinwire"
    drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-net_admin,-sys_admin", "--"]
    p = subprocess.run(
        [*drop, str(exe), "reproduce", "sim-vs-real", "--quick", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "sim-vs-real" in p.stderr, p.stderr


def test_quick_study_over_the_emulator(tmp_path):
    """Real downloads over the emulator and the simulator's, side by side, with the
    server kernel's counters read from its namespace."""
    from thinwire.emulate import available

    why = available()
    if why:
        pytest.skip(why)
    exe = Path(sys.executable).parent / "thinwire"
    out = tmp_path / "o"
    p = subprocess.run(
        [str(exe), "reproduce", "sim-vs-real", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    # runs.json keeps the real runs (the simulated ones are recomputed); the
    # summary counts both.
    real = json.loads((out / "runs.json").read_text())
    assert {r["side"] for r in real} == {"real"} and len(real) >= sim_vs_real.QUICK["real"]
    (summary,) = json.loads((out / "summary.json").read_text())
    assert summary["n_sim"] == sim_vs_real.QUICK["sim"] and summary["n_real"] >= 1
    # The kernel's counters were read: a 1.5 % lossy link makes it retransmit.
    assert all(r["retransmits"] > 0 and r["completion_s"] > 1 for r in real), real
    for f in ("claims.md", "table.md", "summary.json", "completion_cdf.png"):
        assert (out / f).is_file(), f
    # The micro-cell: one scripted loss, the kernel's events against the model's.
    micro = json.loads((out / "micro.json").read_text())
    assert {r["side"] for r in micro} == {"real", "sim"}
    loss = [r for r in micro if r["cell"] in sim_vs_real.MICRO]
    assert loss and all(r["server_rexmit_s"] for r in loss), loss
    # The idle cell: the window after the idle period, the kernel's and the model's.
    idle = {r["side"]: r for r in micro if r["cell"] in sim_vs_real.IDLE}
    assert idle["sim"]["rounds"] and len(idle["real"]["runs"]) == sim_vs_real.IDLE_RUNS
    assert all(r["rounds"][0] == idle["sim"]["rounds"][0] for r in idle["real"]["runs"]), idle
    # The receive-window cell: a tuned kernel's windows, read from its ACKs,
    # against the model's (the claim is in claims.md; here: they were read).
    (rw,) = [r for r in micro if r["cell"] == "rwnd-65535" and r["side"] == "real"]
    assert len(rw["windows_runs"]) == sim_vs_real.RWND_RUNS
    assert all(w[0] == 32120 for w in rw["windows_runs"]), rw
    # ss -tin samples of the sender beside the simulated sender, on one time axis.
    (st,) = json.loads((out / "sender_state.json").read_text())
    assert (out / "sender_state.png").is_file()
    real = [r for r in st["real"] if r["cwnd_bytes"]]
    assert len(real) > 10, st["real"][:5]
    # Samples fall within the download (the clocks were mapped), RTOs of a
    # 100 ms path are above Linux's 200 ms floor.
    assert all(-0.5 < r["t_s"] < st["real_completion_s"] + 1.0 for r in real)
    assert all(0.2 <= r["rto_s"] < 5 for r in real if r["rto_s"])
    assert st["sim"]["cwnd"] and st["sim"]["rto"]


def test_gsm_probe_outstanding_then_timeout_as_the_kernel():
    """The GSM cell without timestamps, seed 3, as a capture of the kernel showed
    it (docs/studies/sim-vs-real.md): the header's small segment is acknowledged
    early, the loss probe goes (the last segment again), and when the probe timer
    fires again before the next ACK, with that probe still outstanding, no second
    probe goes: the retransmission timer runs from the first unacknowledged
    segment's transmission and fires at once (`tcp_send_loss_probe`'s
    `rearm_timer`, `tcp_rto_delta_us`) — one timeout, then go-back-N, eleven
    retransmissions in all. Timed from the probe, the timer would not fire."""
    import polars as pl
    import thinwire

    text, over, _ = sim_vs_real.cell_text("gsm-rlp-vj")
    r = thinwire.run(text, seed=3, set=over + [f"flow.0.tcp={sim_vs_real.TCPS['cubic-nots'][1]}"], trace=["tcp"])
    f = r.flows.row(0, named=True)
    assert (f["tcp_loss_probes"], f["tcp_timeouts"], f["tcp_retransmits"]) == (1, 1, 11)
    t = r.trace.filter((pl.col("node") == "server") & pl.col("event").cast(pl.String).is_in(["loss_probe", "timeout"]))
    probe, timeout = t["time_s"].to_list()
    # The kernel's: probe 1.55 s after the first data, timeout 2.16 s after the probe.
    assert 1.0 < timeout - probe < 2.5
