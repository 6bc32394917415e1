import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCENARIOS, thinwire_cli


def test_run_prints_summary(small_scenario):
    p = thinwire_cli("run", small_scenario)
    assert p.returncode == 0, p.stderr
    assert "throughput" in p.stdout and "FLR" in p.stdout
    assert "100,000" in p.stdout


def test_run_json_has_required_fields(small_scenario):
    p = thinwire_cli("run", small_scenario, "--json", "--set", "flow.0.bytes=50KB")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    for k in ("wall_s", "events", "events_per_s", "sim_time_s", "flows", "link"):
        assert k in s
    f = s["flows"][0]
    for k in (
        "id",
        "app",
        "direction",
        "bytes_delivered",
        "throughput_bps",
        "completion_s",
        "tcp_retransmits",
        "tcp_timeouts",
        "rtt_avg_s",
    ):
        assert k in f
    assert f["bytes_delivered"] == 50_000
    for d in ("down", "up"):
        for k in ("frames_sent", "frames_lost", "flr", "frames_retransmitted"):
            assert k in s["link"][d]
    assert s["events"] > 1000 and s["sim_time_s"] > 6  # 50 kB at < 64 kbit/s


def test_determinism_byte_identical_outputs(small_scenario, tmp_path):
    outs = []
    for i in range(2):
        d = tmp_path / f"o{i}"
        p = thinwire_cli("run", small_scenario, "--out", d, "--pcap", "--seed", "7")
        assert p.returncode == 0, p.stderr
        outs.append(d)
    for name in ("trace.parquet", "flows.parquet", "server.pcap", "mobile.pcap"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    a, b = (json.loads((o / "summary.json").read_text()) for o in outs)
    for s in (a, b):
        s.pop("wall_s"), s.pop("events_per_s")
    assert a == b


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_pcap_reads_cleanly_in_tshark(small_scenario, tmp_path):
    p = thinwire_cli("run", small_scenario, "--out", tmp_path, "--pcap", "--trace", "none")
    assert p.returncode == 0, p.stderr
    for name in ("server.pcap", "mobile.pcap"):
        q = subprocess.run(
            [
                "tshark",
                "-r",
                str(tmp_path / name),
                "-o",
                "tcp.check_checksum:TRUE",
                "-o",
                "ip.check_checksum:TRUE",
                "-Y",
                "_ws.malformed || _ws.expert.severity >= error",
                "-T",
                "fields",
                "-e",
                "frame.number",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert q.returncode == 0, q.stderr
        assert q.stdout.strip() == "", f"{name}: malformed or bad-checksum packets: {q.stdout[:200]}"
        n = subprocess.run(
            ["tshark", "-r", str(tmp_path / name), "-T", "fields", "-e", "frame.number"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert len(n.stdout.split()) > 400


BAD = [
    (["wireless.rate=0kbps"], "wireless.rate"),
    (["wireless.rate=64furlongs"], "wireless.rate"),
    (["wireless.delay=-5ms"], "wireless.delay"),
    (["wired.bogus=1"], "wired.bogus"),
    (["wireless.channel.model=rayleigh"], "wireless.channel.model"),
    (["wireless.arq.protocol=hdlc"], "wireless.arq.protocol"),
    (["flow.0.tcp.variant=vegas"], "flow[0].tcp.variant"),
    (["flow.0.tcp.cc=vegas"], "flow[0].tcp.cc"),
    (["flow.0.tcp.recovery=fack"], "flow[0].tcp.recovery"),
    (["flow.5.bytes=1MB"], "flow"),
    (["flow.0.bytes=unlimited"], "flow[0].bytes"),
    (["wireless.arq.protocol=is707", "wireless.arq.idle_frames=lots"], "wireless.arq.idle_frames"),
    (["wireless.arq.protocol=is707", "wireless.arq.nak_rounds=[1, 0]"], "wireless.arq.nak_rounds"),
    (["wireless.arq.protocol=is707", "wireless.arq.nak_timer=0ms"], "wireless.arq.nak_timer"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.on_n2=hangup"], "wireless.arq.on_n2"),
    (["flow.0.tcp.profile=solaris"], "flow[0].tcp.profile"),
    (["wireless.arq.protocol=gprs", 'wireless.arq.setup_down=["2s", "1s"]'], "wireless.arq.setup_down"),
    (["wireless.arq.protocol=gprs", "wireless.arq.outage_every=0s"], "wireless.arq.outage_every"),
    (["wireless.arq.protocol=gprs", "wireless.arq.rlc_buffer=0"], "wireless.arq.rlc_buffer"),
    (["wireless.arq.protocol=gprs", "wireless.arq.poor_share=1.5"], "wireless.arq.poor_share"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.n2=0"], "wireless.arq.n2"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.window=62"], "wireless.arq.window"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.t1=-1s"], "wireless.arq.t1"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.l2r_rate=fast"], "wireless.arq.l2r_rate"),
    (["wireless.arq.protocol=rlp-gsm", "wireless.arq.header_compression=maybe"], "wireless.arq.header_compression"),
    (["wireless.arq.protocol=gprs", 'wireless.arq.outages=[["60s", "0s"]]'], "wireless.arq.outages[0]"),
    (["proxy.clamp=10furlongs"], "proxy.clamp"),
    (["proxy.link_rtt=0s"], "proxy.link_rtt"),
    (["proxy.estimate_clamp=sometimes"], "proxy.estimate_clamp"),
    (["flow.0.app=ttcp", "flow.0.repeat=0"], "flow[0].repeat"),
    (["flow.0.app=http", "flow.0.gap=-1s"], "flow[0].gap"),
    (["flow.0.app=probe", "flow.0.bytes=1MB"], "flow[0].bytes"),
]


@pytest.mark.parametrize("overrides,field", BAD)
def test_bad_input_exits_2_with_one_line(small_scenario, overrides, field):
    args = ["run", small_scenario]
    for o in overrides:
        args += ["--set", o]
    p = thinwire_cli(*args)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert field in lines[0] and "Traceback" not in p.stderr


def test_malformed_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[wireless\nrate = 1")
    for args in (
        ["run", bad],
        ["run", tmp_path / "missing.toml"],
        ["run"],
        ["run", bad, "--bogus"],
        ["frobnicate"],
        ["run", SCENARIOS / "shared-link-sr.toml", "--trace", "tcp,phy"],
        ["run", SCENARIOS / "shared-link-sr.toml", "--set", "novalue"],
    ):
        p = thinwire_cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_reproduce_into_a_file_says_so_before_running(tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep")
    p = thinwire_cli("reproduce", "gprs-tcp", "--quick", "--out", f)
    assert p.returncode == 2 and p.stderr.strip() == f"thinwire: error: --out {f}: exists and is not a directory"
    assert f.read_text() == "keep"


def test_binary_file_is_rejected(tmp_path):
    b = tmp_path / "x.toml"
    b.write_bytes(b"\xff\xfe\x00garbage")
    p = thinwire_cli("run", b)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_check_command(small_scenario):
    assert thinwire_cli("check", small_scenario).returncode == 0
    assert thinwire_cli("check", small_scenario, "--set", "wireless.frame=0B").returncode == 2


def test_every_example_scenario_runs_quickly():
    import tomllib

    for sc in sorted(SCENARIOS.glob("*.toml")):
        flows = tomllib.loads(sc.read_text())["flow"]
        extra = [x for i, f in enumerate(flows) if f["app"] == "bulk" for x in ("--set", f"flow.{i}.bytes=unlimited")]
        p = thinwire_cli("run", sc, "--json", "--set", 'stop="30s"', *extra)
        assert p.returncode == 0, (sc, p.stderr)
        assert json.loads(p.stdout)["sim_time_s"] == pytest.approx(30.0)


def test_tcp_counters_reach_the_summary_and_show_only_when_used(small_scenario):
    """The sender's Linux counters (loss probes, undos, spurious timeouts, DSACKs,
    ECN reductions, HyStart exits) are flow fields; the summary table shows a
    counter's column only when some flow used the mechanism, so the seeds'
    profiles keep their narrow table."""
    lossy = ["--set", 'wireless.channel={model="uniform", p=0.03}', "--set", "flow.0.bytes=300KB"]
    seeds = thinwire_cli("run", small_scenario, *lossy, "--set", 'flow.0.tcp={variant="newreno"}')
    linux = thinwire_cli("run", small_scenario, *lossy, "--set", 'flow.0.tcp={profile="linux"}')
    js = thinwire_cli("run", small_scenario, *lossy, "--set", 'flow.0.tcp={profile="linux"}', "--json")
    assert seeds.returncode == linux.returncode == js.returncode == 0, seeds.stderr + linux.stderr
    f = json.loads(js.stdout)["flows"][0]
    counters = ("tcp_spurious_timeouts", "tcp_loss_probes", "tcp_undos", "tcp_dsacks", "tcp_ecn_reductions")
    assert all(isinstance(f[k], int) for k in counters + ("tcp_lost_retransmits", "tcp_hystart_exits"))
    head = {"tcp_spurious_timeouts": "spurious", "tcp_loss_probes": "TLP", "tcp_undos": "undo"}
    for k, h in head.items():
        assert (h in linux.stdout.split("\n")[2]) == (f[k] > 0), (k, f[k], linux.stdout)
        assert h not in seeds.stdout
    assert any(f[k] > 0 for k in head), f


def test_version_flag_and_reproduce_help_lists_the_studies():
    from thinwire import __version__
    from thinwire.studies import STUDIES

    p = thinwire_cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"thinwire {__version__}", p.stdout + p.stderr
    h = thinwire_cli("reproduce", "--help")
    assert h.returncode == 0
    text = " ".join(h.stdout.split()).replace("- ", "-")  # argparse wraps at hyphens
    assert all(s in text for s in STUDIES), text
    assert "--strict" in text


def test_reproduce_strict_exits_1_when_a_claim_fails(tmp_path, monkeypatch, capsys):
    """Without --strict a study that reproduces some claims and not others exits
    0 (it reports); with --strict it exits 1 and says how many failed."""
    from thinwire import cli
    from thinwire.studies import STUDIES

    mod = tmp_path / "fake_study_for_strict.py"
    mod.write_text(
        "def reproduce(out, quick, scheduler, workers, progress):\n"
        "    c = dict(section='I', claim='c', expected='e', measured='m', why='')\n"
        "    return [dict(c, id='a', **{'pass': True}), dict(c, id='b', **{'pass': ok})]\n"
        "ok = False\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STUDIES, "fake", "fake_study_for_strict")
    assert cli.main(["reproduce", "fake", "--out", str(tmp_path / "o")]) == 0
    assert cli.main(["reproduce", "fake", "--strict", "--out", str(tmp_path / "o")]) == 1
    assert "1 of 2 claims not reproduced (--strict" in capsys.readouterr().err
    import fake_study_for_strict

    fake_study_for_strict.ok = True
    assert cli.main(["reproduce", "fake", "--strict", "--out", str(tmp_path / "o")]) == 0


def test_a_claim_that_rests_on_a_tie_is_inconclusive(tmp_path, monkeypatch, capsys):
    """A claim whose means lie within each other's 95 % CIs is printed
    INCONCLUSIVE (not PASS or FAIL), counted apart, and not a --strict failure."""
    from thinwire import cli
    from thinwire.studies import STUDIES

    mod = tmp_path / "fake_study_for_ties.py"
    mod.write_text(
        "def reproduce(out, quick, scheduler, workers, progress):\n"
        "    c = dict(section='I', claim='c', expected='e', measured='m', why='w')\n"
        "    return [dict(c, id='a', inconclusive=False, **{'pass': True}),\n"
        "            dict(c, id='b', inconclusive=True, **{'pass': False})]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STUDIES, "ties", "fake_study_for_ties")
    assert cli.main(["reproduce", "ties", "--strict", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "[INCONCLUSIVE] §I c" in out and "FAIL by the means" in out and "[PASS] §I c" in out
    assert "1 of 2 claims reproduced, 1 inconclusive" in out


def test_the_python_version_is_claimed_alike_everywhere():
    """The wheel is abi3 for one minimum Python (pyo3's abi3-pyXY); pyproject's
    requires-python and the README say the same (pip on 3.10 refused a wheel
    claimed for 3.10)."""
    import re

    import tomllib
    from conftest import ROOT

    cargo = (ROOT / "crates" / "thinwire-py" / "Cargo.toml").read_text()
    abi = re.search(r"abi3-py3(\d+)", cargo).group(1)
    req = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    readme = re.findall(r"Python ≥ 3\.(\d+)", (ROOT / "README.md").read_text())
    assert req == f">=3.{abi}", req
    assert readme and set(readme) == {abi}, readme


def test_a_fifo_or_directory_as_a_trace_file_is_refused_at_once(tmp_path):
    """A scenario naming a FIFO (or a directory) as its delivery or frame-error
    trace: exit 2 and one line naming the key, at once (reading the FIFO blocked
    for ever)."""
    import os

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    base = '[wireless]\nrate = "64kbps"\ndelay = "50ms"\n[[flow]]\napp = "bulk"\nbytes = "10KB"\n'
    cases = [
        ('[wireless.down]\ndelivery_trace = "fifo"\n', "wireless.down.delivery_trace", "not a regular file"),
        ('[wireless.down]\ndelivery_trace = "dir"\n', "wireless.down.delivery_trace", "a directory"),
        ('[wireless.channel]\nmodel = "trace"\nfile = "fifo"\n', "wireless.channel.file", "not a regular file"),
    ]
    for extra, key, why in cases:
        sc = tmp_path / "s.toml"
        sc.write_text(base + extra)
        for cmd in ("run", "check"):
            p = subprocess.run(
                [str(Path(sys.executable).parent / "thinwire"), cmd, str(sc)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert p.returncode == 2, (cmd, extra, p.stderr)
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and key in lines[0] and why in lines[0], (cmd, p.stderr)


def test_counts_in_the_summary_agree_in_number():
    """'1 connection', not '1 connections' (issue: a pip user's thinwire, item 12)."""
    p = thinwire_cli("run", SCENARIOS / "gprs-proxy.toml", "--set", "flow.0.bytes=10KB")
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("proxy:"))
    assert line.startswith("proxy: 1 connection, ") and "0 timeouts in 0 stalls" in line, line


def test_the_summary_is_headed_by_the_scenarios_own_name(tmp_path):
    """A scenario's top-level `name` heads its summary (it was the file's stem)."""
    sc = tmp_path / "x1.toml"
    sc.write_text('name = "GPRS cell, busy hour"\n' + (SCENARIOS / "gprs-download.toml").read_text())
    p = thinwire_cli("run", sc, "--set", "flow.0.bytes=5KB")
    assert p.returncode == 0 and p.stdout.startswith("scenario GPRS cell, busy hour:"), p.stdout[:80] + p.stderr
    j = thinwire_cli("run", sc, "--set", "flow.0.bytes=5KB", "--json")
    assert json.loads(j.stdout)["scenario"] == "GPRS cell, busy hour"


def test_wireless_rate_may_come_from_each_direction(tmp_path):
    """`[wireless] rate` is not needed when both directions give their own; when
    one does not, the error names the field and the direction."""
    body = '[wireless]\ndelay = "50ms"\n[wireless.down]\nrate = "40kbps"\n{up}[[flow]]\napp = "bulk"\nbytes = "5KB"\n'
    both = tmp_path / "both.toml"
    both.write_text(body.format(up='[wireless.up]\nrate = "12kbps"\n'))
    p = thinwire_cli("run", both, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["flows"][0]["bytes_delivered"] == 5000
    one = tmp_path / "one.toml"
    one.write_text(body.format(up=""))
    p = thinwire_cli("run", one)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "wireless.rate" in lines[0] and "[wireless.up]" in lines[0], (
        p.stderr
    )


def test_pcap_epoch_puts_a_date_on_simulated_captures(tmp_path, small_scenario):
    """By default a simulated capture's timestamps are the simulated time (the
    Unix epoch at zero, as ns-3's); trace.pcap_epoch puts a wall-clock date there."""
    import struct

    def first_ts(*extra):
        out = tmp_path / f"o{len(extra)}"
        p = thinwire_cli("run", small_scenario, "--pcap", "--out", out, *extra)
        assert p.returncode == 0, p.stderr
        b = (out / "server.pcap").read_bytes()
        sec, frac = struct.unpack("<II", b[24:32])
        return sec + frac / 1e9

    plain = first_ts()
    assert plain < 10
    dated = first_ts("--set", 'trace.pcap_epoch="2026-11-27T09:30:00Z"')
    assert abs(dated - (1_795_771_800 + plain)) < 1e-6
    assert abs(first_ts("--set", 'trace.pcap_epoch="2024-02-29"', "--set", "seed=1") - (1_709_164_800 + plain)) < 1e-6
    for bad in ('"2026-02-30"', '"yesterday"', "-5", "5000000000", "1.5"):
        p = thinwire_cli("check", small_scenario, "--set", f"trace.pcap_epoch={bad}")
        assert p.returncode == 2 and "trace.pcap_epoch" in p.stderr and p.stderr.count("\n") == 1, (bad, p.stderr)


def test_run_help_lists_every_trace_layer():
    from thinwire._core import TRACE_LAYERS

    h = thinwire_cli("run", "--help")
    text = " ".join(h.stdout.split())
    assert h.returncode == 0 and all(layer in text for layer in TRACE_LAYERS), text
    assert "proxy" in TRACE_LAYERS
