"""Mahimahi delivery traces as a direction's capacity (`[wireless.down]
delivery_trace`), in the simulator: throughput follows the trace, the trace repeats
or ends, paths are relative to the scenario file, bad traces are refused."""

import json

import pytest
import thinwire
from conftest import thinwire_cli

# Packet-sized frames without a link header, as Mahimahi counts bytes.
BASE = """
seed = 1
stop = "end"
max_time = "{max_time}"
[wired]
rate = "100Mbps"
delay = "5ms"
[wireless]
rate = "1Mbps"
delay = "20ms"
frame = "1500B"
header = "0B"
queue = {{ limit = "200pkt" }}
[wireless.down]
delivery_trace = "{trace}"
{extra}
[wireless.arq]
protocol = "raw"
[[flow]]
app = "bulk"
bytes = "{bytes}"
direction = "down"
tcp = {{ variant = "sack", mss = 1460, rcv_buf = "200KB", snd_buf = "200KB" }}
"""


def scenario(tmp_path, lines, name="t.trace", bytes="400KB", extra="", max_time="100s", trace=None):
    (tmp_path / name).write_text("".join(f"{v}\n" for v in lines))
    p = tmp_path / "sc.toml"
    p.write_text(BASE.format(trace=trace or name, bytes=bytes, extra=extra, max_time=max_time))
    return p


def down(r):
    f = r.summary["flows"][0]
    return f, r.summary["link"]["down"]


def test_throughput_follows_the_trace_and_a_constant_trace_matches_its_rate(tmp_path):
    # One opportunity every 10 ms: 1504 B / 10 ms = 1.2032 Mbit/s.
    p = scenario(tmp_path, range(10, 1001, 10))
    traced = thinwire.run(p)
    f, link = down(traced)
    assert f["bytes_delivered"] == 400_000
    assert link["rate_bps"] == 1_203_200
    # The same capacity as a constant rate.
    flat = thinwire.run(p, set={"wireless.down.delivery_trace": "", "wireless.rate": "1203200bps"})
    ff, _ = down(flat)
    # A 1500-byte packet needs one opportunity: the traced link sends one packet
    # per 10 ms, the constant one a packet per 9.97 ms; both saturate the link.
    assert ff["completion_s"] < f["completion_s"] < ff["completion_s"] * 1.03
    # Twice the opportunities (two per line time): about twice as fast.
    fast = thinwire.run(scenario(tmp_path, sorted(list(range(10, 1001, 10)) * 2), name="x2.trace"))
    f2, link2 = down(fast)
    assert link2["rate_bps"] == 2 * 1_203_200
    assert 0.45 < f2["completion_s"] / f["completion_s"] < 0.6


def test_bursty_trace_capacity_bounds_delivery_and_idle_opportunities_are_wasted(tmp_path):
    # 20 opportunities at 0..19 ms of every 200 ms: mean 1.2 Mbit/s, in bursts.
    p = scenario(tmp_path, list(range(0, 20)) + [200])
    f, link = down(thinwire.run(p))
    assert f["bytes_delivered"] == 400_000
    # Bytes carried by the radio never exceed what the opportunities offered up
    # to the end (21 per 200 ms: the line at 200 ms is the next period's 0 ms).
    offered = (f["completion_s"] / 0.2 + 1) * 21 * 1504
    assert link["bytes_sent"] <= offered
    # Spread evenly, the same mean capacity finishes sooner: TCP's window cannot
    # fill a 20 ms burst after 180 ms of silence.
    even = scenario(tmp_path, range(10, 201, 10), name="even.trace")
    fe, _ = down(thinwire.run(even))
    assert fe["completion_s"] < f["completion_s"]


def test_once_trace_stops_carrying_at_its_end(tmp_path):
    # 100 opportunities over 1 s, then nothing: at most 150,400 bytes get through.
    p = scenario(tmp_path, range(10, 1001, 10), extra="delivery_repeat = false", max_time="20s")
    f, link = down(thinwire.run(p))
    assert link["bytes_sent"] <= 100 * 1504
    assert 0 < f["bytes_delivered"] < 150_400
    again = thinwire.run(p, set={"wireless.down.delivery_repeat": True})
    assert down(again)[0]["bytes_delivered"] == 400_000


def test_trace_path_is_relative_to_the_scenario_file(tmp_path):
    sub = tmp_path / "traces"
    sub.mkdir()
    p = scenario(sub, range(10, 1001, 10), trace="t.trace")
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    r = thinwire_cli("run", p, "--json", cwd=moved)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["link"]["down"]["rate_bps"] == 1_203_200


@pytest.mark.parametrize(
    "lines, words",
    [
        (["10", "abc", "30"], ["line 2", "abc", "milliseconds"]),
        (["10", "", "30"], ["line 2", "empty"]),
        (["30", "10"], ["line 2", "decrease"]),
        (["0", "0"], ["lasts no time"]),
        ([], ["no delivery opportunities"]),
    ],
)
def test_bad_trace_exits_2_with_one_line(tmp_path, lines, words):
    p = scenario(tmp_path, lines)
    for cmd in ("check", "run"):
        r = thinwire_cli(cmd, p)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        err = r.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "wireless.down.delivery_trace" in err and "t.trace" in err, err
        for w in words:
            assert w in err, err


def test_missing_trace_file_and_rate_with_trace_are_refused(tmp_path):
    p = scenario(tmp_path, [10], trace="nope.trace")
    r = thinwire_cli("check", p)
    assert r.returncode == 2 and "nope.trace: no such file" in r.stderr, r.stderr
    p = scenario(tmp_path, [10], extra='rate = "1Mbps"')
    r = thinwire_cli("check", p)
    assert r.returncode == 2 and "either rate or delivery_trace" in r.stderr, r.stderr
    r = thinwire_cli("check", scenario(tmp_path, [10]), "--set", "wireless.up.delivery_repeat=false")
    assert r.returncode == 2 and "needs delivery_trace" in r.stderr, r.stderr
