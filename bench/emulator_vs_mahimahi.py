"""`thinwire emulate` against Mahimahi's `mm-link` (issue "Speed", part 4), side by
side, runs alternated: the goodput ceiling on constant delivery traces (K
opportunities of 1,504 bytes per ms, K × 12.032 Mbit/s offered), with and without
20 ms of delay, on a cellular trace, the emulators' CPU per Gbit/s, and each
packet's timing error measured from a capture at the receiving host.

Run as root, Mahimahi installed (built from source, github.com/ravinet/mahimahi,
with its Debian build dependencies; `mm-link`, `mm-delay` on PATH, setuid root;
Mahimahi refuses to run as root, so it runs as an unprivileged user, `mmuser` by
default: `useradd -M mmuser`):

    .venv/bin/python bench/emulator_vs_mahimahi.py [--seconds 8] [--rounds 3] [--only const-200]
        [--no-offload]   (thinwire without segmentation offload, as before it)

Each run: one iperf3 TCP stream (cubic), server → receiving host (`-R`), for
`--seconds`. thinwire: `thinwire emulate` on a `raw` link whose two directions
follow the trace (1,500-byte frames, no header, 4,000-packet DropTail queues,
the delay as the wireless link's, no wired link in the way). Mahimahi: `mm-link`
with the same traces and 4,000-packet DropTail queues, inside `mm-delay` when
there is delay; iperf3's server runs outside (the host's namespace), its client
inside. CPU = all children's user + system time minus what both iperf3 ends
report for themselves (so it includes the emulators' own processes, and for
thinwire its Python start-up, ~0.3 s). Timing: on a trace of one opportunity per
5 ms (2.4 Mbit/s) the receiving host captures with tcpdump; every data packet is
due at a multiple of 5 ms after the emulator's (unknown) time zero, so its timing
error is its capture time modulo 5 ms, less the phase where the packets cluster
(`timing_error`): p50 and p99 over all packets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

EXE = Path(sys.executable).parent / "thinwire"
# The unprivileged user Mahimahi runs as (it refuses root): --mm-user.
USER = "mmuser"
# The timing case's trace: one opportunity every PERIOD_MS (2.4 Mbit/s), so that a
# packet up to PERIOD_MS - 1 ms late is not taken for one due a period later.
PERIOD_MS = 5
CELL = Path(__file__).resolve().parents[1].parent / "shared" / "testdata" / "traces" / "ATT-LTE-driving-2016"

THINWIRE = """
seed = 1
[wired]
rate = "100000Mbps"
delay = "0ms"
[wireless]
rate = "100000Mbps"
delay = "{delay}ms"
frame = "1500B"
header = "0B"
queue = {{ limit = "4000pkt" }}
[wireless.down]
delivery_trace = "{down}"
[wireless.up]
delivery_trace = "{up}"
"""


def iperf_cpu_s(ip: dict, seconds: float) -> float:
    if "error" in ip:
        raise SystemExit(f"iperf3: {ip['error']}")
    u = ip["end"]["cpu_utilization_percent"]
    return (u["host_total"] + u["remote_total"]) / 100 * seconds


def capture_cmd(dev: str, cap: Path | None) -> str:
    if cap is None:
        return ""
    return f"tcpdump -i {dev} -s 96 -w {cap} -U 2>/dev/null & TD=$!; sleep 0.5; "


def run_thinwire(tmp: Path, down: Path, up: Path, delay: int, seconds: float, cap: Path | None, offload: bool) -> dict:
    sc = tmp / "tw.toml"
    sc.write_text(THINWIRE.format(delay=delay, down=down, up=up))
    res = tmp / "tw.iperf.json"
    mobile = (
        capture_cmd("$THINWIRE_DEV", cap)
        + f"iperf3 -c $THINWIRE_PEER -R -t {seconds} -J --connect-timeout 3000 > {res}"
        + ("; sleep 0.3; kill $TD" if cap else "")
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(
        [str(EXE), "emulate", str(sc), "--json", "--mobile", mobile, "--server", "exec iperf3 -s -1 -B $THINWIRE_ADDR"]
        + ["--server-ready", "5201"]
        + ([] if offload else ["--no-offload"]),
        capture_output=True,
        text=True,
        timeout=seconds + 90,
    )
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"thinwire emulate failed: {p.stderr.strip()[-500:]}")
    s = json.loads(p.stdout)
    ip = json.loads(res.read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) - iperf_cpu_s(ip, seconds)
    pk = s["packets"]
    return {
        "goodput_mbps": ip["end"]["sum_received"]["bits_per_second"] / 1e6,
        "retransmits": ip["end"]["sum_sent"].get("retransmits", 0),
        "emu_cpu_pct": 100 * max(cpu, 0.0) / wall,
        "drops_outside_model": pk["from_server_queue_drops"] + pk["from_mobile_queue_drops"] + pk["write_drops"],
        "own_lateness_p99_ms": s["lateness"]["p99_ms"],
    }


def run_mahimahi(tmp: Path, down: Path, up: Path, delay: int, seconds: float, cap: Path | None) -> dict:
    res = tmp / "mm.iperf.json"
    pidf = tmp / "mm.pid"
    pidf.unlink(missing_ok=True)
    server = subprocess.Popen(["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    # Mahimahi refuses root: it runs as USER, its shell too; the capture is
    # made from outside, in the shell's namespace.
    inner = f"echo $$ > {pidf}; sleep {1.0 if cap else 0.2}; "
    inner += f"iperf3 -c $MAHIMAHI_BASE -R -t {seconds} -J --connect-timeout 3000 > {res}"
    q = ["--downlink-queue=droptail", "--downlink-queue-args=packets=4000"]
    q += ["--uplink-queue=droptail", "--uplink-queue-args=packets=4000"]
    cmd = ["mm-link", str(up), str(down), *q, "--", "sh", "-c", inner]
    if delay:
        cmd = ["mm-delay", str(delay), *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    mm = subprocess.Popen(
        ["runuser", "-u", USER, "--", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    td = None
    if cap is not None:
        while not pidf.exists() or not pidf.read_text().strip():
            if mm.poll() is not None or time.monotonic() - t0 > 10:
                break
            time.sleep(0.02)
        pid = pidf.read_text().strip() if pidf.exists() else ""
        if pid:
            td = subprocess.Popen(
                ["nsenter", "-t", pid, "-n", "tcpdump", "-i", "ingress", "-s", "96", "-U", "-w", str(cap)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
    out, err = mm.communicate(timeout=seconds + 90)
    wall = time.monotonic() - t0
    if td is not None:
        td.terminate()
        td.wait()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if mm.returncode != 0 or not res.exists() or not res.read_text().strip():
        raise SystemExit(f"mm-link failed ({mm.returncode}): {err.strip()[-500:]}")
    ip = json.loads(res.read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) - iperf_cpu_s(ip, seconds)
    return {
        "goodput_mbps": ip["end"]["sum_received"]["bits_per_second"] / 1e6,
        "retransmits": ip["end"]["sum_sent"].get("retransmits", 0),
        "emu_cpu_pct": 100 * max(cpu, 0.0) / wall,
    }


def pcap_times(p: Path, min_len: int = 1000) -> list[float]:
    """Capture times (s) of the packets of at least `min_len` bytes (pcap, either
    timestamp resolution)."""
    b = p.read_bytes()
    magic = struct.unpack_from("<I", b, 0)[0]
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    out, i = [], 24
    while i + 16 <= len(b):
        sec, frac, incl, orig = struct.unpack_from("<IIII", b, i)
        if orig >= min_len:
            out.append(sec + frac * scale)
        i += 16 + incl
    return out


def timing_error(times: list[float], period_ms: float = PERIOD_MS) -> tuple[float, float, int]:
    """p50 and p99 (ms) of each packet's timing error (module doc): its capture
    time modulo the period, as an offset from the phase where the packets cluster
    (the start of the densest 50 µs window), taken in [-1 ms, period - 1 ms), less
    the offsets' 0.5th percentile (the constant delay from the emulator's write to
    the capture's stamp, the same for both tools)."""
    per = period_ms * 1e3
    fr = sorted((t * 1e6) % per for t in times)  # µs within the period
    n = len(fr)
    if n < 100:
        return float("nan"), float("nan"), n
    ext = fr + [f + per for f in fr]
    best, phase, j = -1, 0.0, 0
    for i in range(n):
        while ext[j] < ext[i] + 50.0:
            j += 1
        if j - i > best:
            best, phase = j - i, ext[i]
    err = sorted(((f - phase + 1000.0) % per) - 1000.0 for f in fr)
    zero = err[n // 200]
    return (err[n // 2] - zero) / 1e3, (err[min(n - 1, int(n * 0.99))] - zero) / 1e3, n


def main() -> None:
    global USER
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="run the cases whose name starts with this")
    ap.add_argument("--no-offload", dest="offload", action="store_false")
    ap.add_argument("--mm-user", default=USER, help="unprivileged user to run Mahimahi as (it refuses root)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespaces)")
    USER = a.mm_user
    for t in ("mm-link", "mm-delay", "iperf3", "tcpdump", "nsenter", "runuser"):
        if shutil.which(t) is None:
            raise SystemExit(f"{t} is not installed (Mahimahi: build it from github.com/ravinet/mahimahi)")
    subprocess.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chmod(tmp, 0o777)  # Mahimahi's shell writes iperf3's report there
        cases = []
        for k, delay in ((100, 0), (200, 0), (400, 0), (800, 0), (200, 20)):
            f = tmp / f"k{k}.trace"
            f.write_text("1\n" * k)
            cases.append((f"const-{k}-per-ms-{k * 12.032:.0f}Mbps-delay-{delay}ms", f, f, delay, False))
        if CELL.with_suffix(".down").exists():
            cases.append(("cellular-ATT-LTE-driving", CELL.with_suffix(".down"), CELL.with_suffix(".up"), 20, False))
        one = tmp / "sparse.trace"
        one.write_text(f"{PERIOD_MS}\n")
        cases.append((f"timing-1-per-{PERIOD_MS}ms", one, tmp / "k100.trace", 0, True))
        rows = []
        for name, down, up, delay, timed in cases:
            if a.only and not name.startswith(a.only):
                continue
            for r in range(a.rounds):
                order = ("thinwire", "mahimahi") if r % 2 == 0 else ("mahimahi", "thinwire")
                for tool in order:
                    cap = tmp / f"{tool}.pcap" if timed else None
                    if tool == "thinwire":
                        row = run_thinwire(tmp, down, up, delay, a.seconds, cap, a.offload)
                    else:
                        row = run_mahimahi(tmp, down, up, delay, a.seconds, cap)
                    if cap is not None:
                        p50, p99, n = timing_error(pcap_times(cap))
                        row.update(timing_p50_ms=p50, timing_p99_ms=p99, timed_packets=n)
                    rows.append({"case": name, "tool": tool, "round": r, **row})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(
        "| case | tool | goodput Mbit/s (median) | runs | emulator CPU % of a core | CPU % per Gbit/s | timing p50 / p99 ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["case"] for r in rows):
        for tool in ("thinwire", "mahimahi"):
            rs = [r for r in rows if r["case"] == name and r["tool"] == tool]
            if not rs:
                continue
            g = median(r["goodput_mbps"] for r in rs)
            cpu = median(r["emu_cpu_pct"] for r in rs)
            timing = (
                f"{median(r['timing_p50_ms'] for r in rs):.3f} / {median(r['timing_p99_ms'] for r in rs):.3f}"
                if "timing_p50_ms" in rs[0]
                else ""
            )
            fmt = "{:,.0f}" if g >= 100 else "{:.2f}"
            runs = ", ".join(fmt.format(r["goodput_mbps"]) for r in rs)
            print(
                f"| {name} | {tool} | {fmt.format(g)} | {runs} | {cpu:.0f} | {cpu / max(g / 1000, 1e-9):.0f} | {timing} |"
            )


if __name__ == "__main__":
    main()
