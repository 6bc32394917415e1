"""A bounded campaign of mutated inputs through the command line, as a demanding
user would try them (issue 18): captures through `analyze --json` and `plot`,
scenarios through `check` and `run --json`, odd `--set` values. Every outcome must
be exit 0 with sane numbers or exit 2 with one line on stderr; anything else (a
traceback, another exit status, a hang, a negative RTT, utilisation above 1) is a
finding, saved with its command under OUT/findings/.

    .venv/bin/python bench/campaign.py --seconds 600 --out /tmp/campaign

Deterministic for a given --seed (the mutations; not the time budget). Prints one
line per finding and a closing count; exit 1 if anything was found.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).parent / "thinwire")
TIMEOUT_S = 60

ODD_VALUES = [
    "0", "-1", "1e20", "nan", "inf", '""', '"0s"', '"1ns"', '"1e10s"', '"-5ms"', '"0B"', '"1e20B"', '"4294967296B"',
    '"1bps"', '"8bps"', '"1e15bps"', '"off"', '"end"', "true", '"true"', "[]", "{}", '"x\\ny"', "18446744073709551615",
    '"18446744073709551616"', '"1e-9s"', '"999999s"', "0.5", "1000000000",
]  # fmt: skip
KEYS = [
    "seed", "stop", "max_time", "wireless.rate", "wireless.delay", "wireless.frame", "wireless.header",
    "wireless.frame_queue", "wireless.queue.limit", "wired.rate", "wired.delay", "flow.0.bytes", "flow.0.start",
    "flow.0.tcp.mss", "flow.0.tcp.min_rto", "flow.0.tcp.max_rto", "flow.0.tcp.initial_rto",
    "flow.0.tcp.timer_granularity", "flow.0.tcp.cwnd_clamp", "flow.0.tcp.rcv_wnd_initial", "flow.0.tcp.rcv_buf",
    "flow.0.tcp.initial_window", "flow.0.tcp.delayed_ack.timeout", "wireless.arq.window", "wireless.arq.timeout",
    "wireless.arq.ack_delay", "wireless.channel.p", "proxy.link_rate", "proxy.min_rto", "proxy.clamp",
]  # fmt: skip


def mutate_bytes(rng: random.Random, b: bytes) -> bytes:
    b = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        i = rng.randrange(len(b)) if b else 0
        if op < 0.5 and b:
            b[i] = rng.randrange(256)
        elif op < 0.65 and b:
            # Integer fields: a byte to an extreme.
            b[i] = rng.choice((0, 0x7F, 0x80, 0xFF))
        elif op < 0.8:
            del b[i : i + rng.randint(1, 64)]
        elif op < 0.9 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 64)]
        else:
            del b[rng.randrange(len(b) + 1) :]
    return bytes(b)


def mutate_text(rng: random.Random, t: str) -> str:
    lines = t.splitlines()
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        if "=" in lines[i] and rng.random() < 0.7:
            k = lines[i].split("=", 1)[0]
            lines[i] = f"{k}= {rng.choice(ODD_VALUES)}"
        elif rng.random() < 0.5:
            del lines[i]
        else:
            lines.insert(i, lines[rng.randrange(len(lines))])
    return "\n".join(lines) + "\n"


def sane_run(s: dict) -> str | None:
    if not s["sim_time_s"] >= 0:
        return f"sim_time_s {s['sim_time_s']}"
    for d in ("down", "up"):
        u = s["link"][d]["utilization"]
        if not 0 <= u <= 1:
            return f"{d} utilisation {u}"
    for f in s["flows"]:
        for k in ("bytes_delivered", "throughput_bps", "completion_s", "rtt_avg_s", "delay_mean_s"):
            v = f.get(k)
            if v is not None and not v >= 0:
                return f"flow {f['id']} {k} {v}"
    if s["end"] == "finished" and s["unfinished_flows"]:
        return "finished with unfinished flows"
    return None


def sane_analysis(a: dict) -> str | None:
    for c in a["connections"]:
        if not c["duration_s"] >= 0:
            return f"connection {c['id']} duration {c['duration_s']}"
        for d in ("a2b", "b2a"):
            s = c[d]
            for k in ("rtt_min_ms", "rtt_max_ms", "rtt_avg_ms", "idle_max_s", "data_time_s", "throughput_Bps"):
                v = s.get(k)
                if v is not None and not v >= 0:
                    return f"connection {c['id']} {d} {k} {v}"
    return None


def judge(p: subprocess.CompletedProcess, check=None) -> str | None:
    """None if the outcome is acceptable, else what is wrong."""
    err = p.stderr.strip()
    if p.returncode == 2:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("thinwire: error:"):
            return f"exit 2 without one error line: {err[:300]!r}"
        return None
    if p.returncode != 0:
        return f"exit {p.returncode}: {err[-300:]!r}"
    if "Traceback" in err:
        return f"traceback with exit 0: {err[-300:]!r}"
    if check is not None:
        try:
            return check(json.loads(p.stdout))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            return f"unreadable JSON: {e}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("/tmp/thinwire-campaign"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = a.out / "work"
    found = a.out / "findings"
    work.mkdir(parents=True, exist_ok=True)
    found.mkdir(parents=True, exist_ok=True)
    captures = sorted((ROOT / "fuzz" / "seeds" / "capture").iterdir())
    capture_bytes = [c.read_bytes()[1:] for c in captures]  # the fuzz seeds' first byte is the chunk size
    scenarios = [p.read_text() for p in sorted((ROOT / "scenarios").glob("*.toml"))]
    counts = {"exit 0": 0, "exit 2": 0, "findings": 0}
    deadline = time.monotonic() + a.seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
        kind = rng.choice(("capture", "capture", "scenario", "set"))
        if kind == "capture":
            f = work / f"c{n % 50}.pcap"
            f.write_bytes(mutate_bytes(rng, rng.choice(capture_bytes)))
            cmds = [
                (["analyze", str(f), "--json"], sane_analysis),
                (["plot", str(f), "--out", str(work / "p.png")], None),
            ]
            keep = f
        else:
            text = scenarios[rng.randrange(len(scenarios))]
            sets: list[str] = []
            if kind == "scenario":
                text = mutate_text(rng, text)
            else:
                for _ in range(rng.randint(1, 3)):
                    sets += ["--set", f"{rng.choice(KEYS)}={rng.choice(ODD_VALUES)}"]
            f = work / f"s{n % 50}.toml"
            f.write_text(text)
            # Bound each run's simulated time so the campaign measures breadth.
            cmds = [
                (["check", str(f), *sets], None),
                (["run", str(f), "--json", *sets, "--set", "max_time=300s"], sane_run),
            ]
            keep = f
        for args, check in cmds:
            try:
                p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=TIMEOUT_S)
                why = judge(p, check)
            except subprocess.TimeoutExpired:
                why, p = f"no answer in {TIMEOUT_S} s", None
            if p is not None and why is None:
                counts["exit 0" if p.returncode == 0 else "exit 2"] += 1
                continue
            counts["findings"] += 1
            d = found / f"{counts['findings']:03d}"
            d.mkdir(exist_ok=True)
            (d / keep.name).write_bytes(keep.read_bytes())
            (d / "command.txt").write_text(" ".join(["thinwire", *args]) + f"\n{why}\n")
            print(f"finding {d.name}: thinwire {args[0]}: {why}", flush=True)
    total = counts["exit 0"] + counts["exit 2"] + counts["findings"]
    print(f"campaign: {total} commands, {counts['exit 0']} exit 0 sane, {counts['exit 2']} exit 2 one line")
    print(f"campaign: {total - counts['findings']} passed, {counts['findings']} failed")
    return 1 if counts["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
