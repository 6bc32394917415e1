"""mm-link-format logs of the wireless link (`thinwire run --mm-log`): the format
Mahimahi's scripts parse, and what the lines say agrees with the run."""

import re

import thinwire
from conftest import thinwire_cli

SCENARIO = """
seed = 3
stop = "end"
[wired]
rate = "100Mbps"
delay = "5ms"
[wireless]
rate = "1Mbps"
delay = "20ms"
frame = "1500B"
header = "0B"
queue = {{ limit = "{queue}pkt" }}
[wireless.down]
{down}
[wireless.arq]
protocol = "raw"
[[flow]]
app = "bulk"
bytes = "300KB"
direction = "down"
tcp = {{ variant = "newreno", mss = 1460, rcv_buf = "200KB", snd_buf = "200KB" }}
"""

LINE = re.compile(r"^(\d+) (?:\+ (\d+)|# (1504)|- (\d+) (\d+)|d (\d+) (\d+))$")


def parse(text: str):
    """Events as (ms, kind, bytes, delay); checks every line against mm-link's format."""
    head = [x for x in text.splitlines() if x.startswith("#")]
    assert "# base timestamp: 0" in head and any(x.startswith("# mahimahi mm-link") for x in head), head
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, f"not an mm-link log line: {line!r}"
        t = int(m.group(1))
        if m.group(2):
            out.append((t, "+", int(m.group(2)), None))
        elif m.group(3):
            out.append((t, "#", 1504, None))
        elif m.group(4):
            out.append((t, "-", int(m.group(4)), int(m.group(5))))
        else:
            assert m.group(6) == "1"
            out.append((t, "d", int(m.group(7)), None))
    times = [e[0] for e in out]
    assert times == sorted(times), "times go backwards"
    return out


def test_constant_rate_log_matches_the_run(tmp_path):
    sc = SCENARIO.format(queue=8, down="")
    r = thinwire.run(sc, mm_log=True)
    down = parse(r.raw["mm_down"].decode())
    up = parse(r.raw["mm_up"].decode())
    link = r.summary["link"]["down"]
    drops = [e for e in down if e[1] == "d"]
    assert len(drops) == link["queue_drops"] > 0
    arrivals = [e for e in down if e[1] == "+"]
    departures = [e for e in down if e[1] == "-"]
    # Every arrival either departed, was dropped, or was still on its way at the end.
    assert len(departures) + len(drops) <= len(arrivals) <= len(departures) + len(drops) + 8 + 2
    assert sum(e[2] for e in departures) >= 300_000
    # Each departure waited at least the propagation delay (20 ms) and its own
    # airtime (12 ms for 1500 bytes; whole-ms times may lose 1 ms).
    assert min(e[3] for e in departures if e[2] == 1500) >= 31
    # 1 Mbit/s: one 1504-byte slot every 12.032 ms up to the end of the run.
    caps = [e[0] for e in down if e[1] == "#"]
    end_ms = r.summary["sim_time_s"] * 1000
    assert len(caps) == int(end_ms / 12.032)
    assert caps[:3] == [12, 24, 36]
    # The uplink carries the ACKs.
    assert sum(1 for e in up if e[1] == "-") > 50


def test_trace_driven_log_lists_every_opportunity_and_departures_fit_in_them(tmp_path):
    (tmp_path / "t.trace").write_text("".join(f"{v}\n" for v in [3, 3, 10, 17, 20]))
    sc = tmp_path / "sc.toml"
    sc.write_text(SCENARIO.format(queue=100, down='delivery_trace = "t.trace"'))
    r = thinwire_cli("run", sc, "--out", tmp_path / "out", "--mm-log", "--trace", "none")
    assert r.returncode == 0, r.stderr
    down = parse((tmp_path / "out" / "mm-down.log").read_text())
    assert (tmp_path / "out" / "mm-up.log").is_file()
    caps = [e[0] for e in down if e[1] == "#"]
    period = [3, 3, 10, 17, 20]
    want = [k * 20 + v for k in range(100_000) for v in period if k * 20 + v <= caps[-1]]
    assert caps == want
    # A departure leaves 20 ms after the opportunity that carried it, so by any
    # time the bytes that left fit in the opportunities up to 20 ms earlier.
    left = 0
    cap_times = caps
    for t, kind, size, _ in down:
        if kind == "-":
            left += size
            assert left <= 1504 * sum(1 for c in cap_times if c <= t - 20)


def test_mm_log_needs_no_out_dir_from_the_api_and_makes_one_from_the_cli(tmp_path):
    r = thinwire_cli("run", "--mm-log", "--json", _write(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "thinwire-out" / "sc" / "mm-down.log").is_file()


def _write(tmp_path):
    p = tmp_path / "sc.toml"
    p.write_text(SCENARIO.format(queue=50, down=""))
    return p
