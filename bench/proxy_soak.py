"""Soak test of the `thinwire proxy` daemon: web-like load for a while, the daemon's
file descriptors and memory sampled, every transfer checked.

    sudo .venv/bin/python bench/proxy_soak.py [--minutes 10] [--workers 16] [--out DIR]
        [--mobiles 20 [--misbehave]]

Topology: `thinwire emulate --gateway` (mobile ns — 2 Mbit/s, 50 ms GPRS-like link —
gateway ns running the daemon — veth — server ns). The mobile runs `--workers`
clients, each looping: a download of a size drawn from a heavy-tailed mix (1 KB to
1 MB; 1 in 10 an upload of up to 200 KB whose SHA-256 the server returns), a
think time of 0–0.5 s, and every byte checked. Every 10 s the gateway samples the
daemon's open descriptors and resident memory (/proc) and its stats line. Prints
one line per minute and the totals; nonzero exit if any transfer failed or came
back wrong.

`--mobiles N`: N mobile namespaces, each over its own copy of the link
(`thinwire emulate --mobiles`), each running `--workers` clients. `--misbehave`
adds four more mobiles (bench/misbehave.py): one floods SYNs (200 per second), one
uploads ignoring the advertised window, one sends blind RSTs at its own
downloads, one starts five downloads and then vanishes (drops everything both
ways). The well-behaved mobiles' transfers must all be exact, and the daemon's
descriptors and memory flat.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

LINK = """
seed = 1
[wireless]
rate = "2Mbps"
delay = "50ms"
frame = "1500B"
header = "0B"
[wireless.arq]
protocol = "gprs"
setup_down = ["50ms", "150ms"]
setup_up = ["30ms", "80ms"]
"""
CONFIG = """
[proxy]
link_rate = "2Mbps"
link_rtt = "200ms"
[daemon]
mobile_interface = "set-by-the-command-line"
drain_timeout = "5s"
stats_interval = "10s"
"""
SERVER = r"""
import hashlib, socket, threading, time
def body(n):
    seed = hashlib.sha256(str(n).encode()).digest()
    return (seed * (n // 32 + 1))[:n]
def one(c):
    try:
        f = c.makefile("rb")
        kind, n = f.readline().split()
        n = int(n)
        if kind == b"GET":
            c.sendall(body(n))
        elif kind == b"HOLD":
            # Never reads: the proxy's buffer toward this server fills, and the
            # mobile must be held to the window the proxy advertises.
            time.sleep(10**6)
        else:
            h, got = hashlib.sha256(), 0
            while got < n:
                b = f.read1(65536)
                if not b:
                    break
                h.update(b); got += len(b)
            c.sendall(h.hexdigest().encode())
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(512)
while True:
    c, _ = s.accept(); threading.Thread(target=one, args=(c,), daemon=True).start()
"""
CLIENT = r"""
import hashlib, json, random, socket, sys, threading, time
end = time.monotonic() + float(sys.argv[1]); workers = int(sys.argv[2]); out = sys.argv[3]
def body(n):
    seed = hashlib.sha256(str(n).encode()).digest()
    return (seed * (n // 32 + 1))[:n]
SIZES = [1_000, 5_000, 15_000, 40_000, 100_000, 300_000, 1_000_000]
WEIGHTS = [30, 25, 20, 12, 8, 4, 1]
stats = {"ok": 0, "bad": 0, "failed": 0, "bytes": 0, "errors": []}
lock = threading.Lock()
def worker(k):
    rng = random.Random(k)
    while time.monotonic() < end:
        up = rng.random() < 0.1
        n = rng.choices(SIZES, WEIGHTS)[0] if not up else rng.randint(1, 200_000)
        try:
            c = socket.create_connection(("10.0.0.1", 8000), timeout=120)
            if up:
                data = bytes(rng.getrandbits(8) for _ in range(min(n, 64))) * (n // 64 + 1)
                data = data[:n]
                c.sendall(b"PUT %d\n" % n + data); c.shutdown(socket.SHUT_WR)
                want = hashlib.sha256(data).hexdigest().encode()
            else:
                c.sendall(b"GET %d\n" % n); c.shutdown(socket.SHUT_WR)
                want = body(n)
            got = bytearray()
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += b
            c.close()
            with lock:
                if bytes(got) == want:
                    stats["ok"] += 1; stats["bytes"] += n
                else:
                    stats["bad"] += 1; stats["errors"].append(f"{'PUT' if up else 'GET'} {n}: {len(got)} bytes back")
        except OSError as e:
            with lock:
                stats["failed"] += 1; stats["errors"].append(f"{'PUT' if up else 'GET'} {n}: {e}")
        time.sleep(rng.random() * 0.5)
ts = [threading.Thread(target=worker, args=(k,)) for k in range(workers)]
[t.start() for t in ts]; [t.join() for t in ts]
stats["errors"] = stats["errors"][:20]
open(out, "w").write(json.dumps(stats))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--out", help="keep the files here (default: a temporary directory)")
    ap.add_argument("--mobiles", type=int, default=1, help="well-behaved mobile hosts, each on its own link")
    ap.add_argument("--misbehave", action="store_true", help="four more mobiles that misbehave (module doc)")
    a = ap.parse_args()
    d = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="proxy-soak-"))
    d.mkdir(parents=True, exist_ok=True)
    (d / "link.toml").write_text(LINK)
    (d / "proxy.toml").write_text(CONFIG)
    (d / "server.py").write_text(SERVER)
    (d / "client.py").write_text(CLIENT)
    log, samples = d / "proxy.log", d / "samples.txt"
    gw = d / "gateway.sh"
    gw.write_text(
        "#!/bin/bash\n"
        f"{PY} -m thinwire.cli proxy --config {d / 'proxy.toml'} --set daemon.mobile_interface=$THINWIRE_DEV > {log} 2>&1 &\n"
        "pid=$!\n"
        "( while kill -0 $pid 2>/dev/null; do\n"
        f"    echo \"$(date +%s.%N) $(ls /proc/$pid/fd | wc -l) $(awk '/VmRSS/ {{print $2}}' /proc/$pid/status)\" >> {samples}\n"
        "    sleep 10\n"
        "  done ) &\n"
        "trap 'kill -TERM $pid; wait $pid; exit 0' TERM\n"
        "wait $pid\n"
    )
    gw.chmod(0o755)
    secs = a.minutes * 60
    wait = f"for i in $(seq 100); do grep -q started {log} 2>/dev/null && break; sleep 0.1; done; "
    good = f"{PY} {d / 'client.py'} {secs} {a.workers} {d}/client.$THINWIRE_MOBILE.json"
    mis = str(ROOT / "bench" / "misbehave.py")
    bad = {
        0: f"{PY} {mis} synflood 10.0.0.1 8000 200 {secs} {d}/mis.0.json",
        1: f"{PY} {mis} nowindow 10.0.0.1 8000 {secs} {d}/mis.1.json",
        2: f"{PY} {mis} blindrst 10.0.0.1 8000 {secs} {d}/mis.2.json",
        3: f"{PY} {mis} vanish 10.0.0.1 8000 {secs} {d}/mis.3.json",
    }
    n = a.mobiles + (4 if a.misbehave else 0)
    branch = f"if [ $THINWIRE_MOBILE -lt {a.mobiles} ]; then {good}; else case $((THINWIRE_MOBILE - {a.mobiles})) in "
    branch += " ".join(f"{k}) {c};;" for k, c in bad.items()) + " esac; fi"
    mobile = wait + branch
    cmd = [PY, "-m", "thinwire.cli", "emulate", str(d / "link.toml"), "--mobile", mobile, "--mobiles", str(n)]
    cmd += ["--server", f"exec {PY} {d / 'server.py'}", "--gateway", str(gw), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"emulation failed ({p.returncode}): {p.stderr.strip()[-800:]}", file=sys.stderr)
        return 1
    client = {"ok": 0, "bad": 0, "failed": 0, "bytes": 0, "errors": []}
    per_mobile = []
    for k in range(a.mobiles):
        c = json.loads((d / f"client.{k}.json").read_text())
        per_mobile.append(c["ok"])
        for key in client:
            client[key] += c[key]
    misbehaved = [json.loads((d / f"mis.{k}.json").read_text()) for k in range(4) if (d / f"mis.{k}.json").is_file()]
    rows = [ln.split() for ln in samples.read_text().splitlines() if len(ln.split()) == 3]
    t0 = float(rows[0][0])
    events = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    stats = [e for e in events if e["event"] == "stats"]
    print(f"{'min':>5} {'fds':>5} {'RSS MB':>7} {'open':>5} {'proxied':>8}")
    for i, (t, fds, rss) in enumerate(rows):
        if i % 6 == 0 or i == len(rows) - 1:
            st = min(stats, key=lambda e: abs(e["ts"] - float(t))) if stats else {}
            print(
                f"{(float(t) - t0) / 60:5.1f} {int(fds):5d} {int(rss) / 1024:7.1f} {st.get('open', 0):5d} {st.get('proxied', 0):8d}"
            )
    end = next((e for e in reversed(events) if e["event"] == "stopped"), {})
    fds = [int(r[1]) for r in rows]
    rss = [int(r[2]) / 1024 for r in rows]
    half = len(rows) // 2
    if a.mobiles > 1:
        print(f"per mobile transfers ok: min {min(per_mobile)} max {max(per_mobile)}")
    for m in misbehaved:
        print("misbehaving:", json.dumps(m))
    keys = ("half_open_dropped", "challenge_acks", "rsts_ignored", "window_probes", "buffered", "open")
    print("daemon at the end:", {k: end.get(k) for k in keys})
    print(
        f"transfers: {client['ok']} ok, {client['bad']} wrong, {client['failed']} failed; "
        f"{client['bytes'] / 1e6:.1f} MB checked; proxied {end.get('proxied')}, passed {end.get('passed_limit')}, "
        f"timeouts {end.get('timeouts')}, retransmits {end.get('retransmits')}"
    )
    print(
        f"fds: min {min(fds)} max {max(fds)}; RSS MB: first half max {max(rss[:half] or rss):.1f}, "
        f"second half max {max(rss[half:]):.1f}, last {rss[-1]:.1f}"
    )
    for e in client["errors"]:
        print("  error:", e)
    print(f"files in {d}")
    return 0 if client["bad"] == 0 and client["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
