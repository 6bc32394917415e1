"""Real Linux TCP captures made in network namespaces (root, iproute2, tcpdump).

Three namespaces in a line, sender - router - receiver, joined by veth pairs; the
router's egress is shaped by tbf (rate, burst and a short queue that overflows, so
real losses and retransmissions happen; netem is not available on every kernel).
A bulk transfer runs while tcpdump captures at the sender, on its veth (Ethernet,
with TSO super-segments) or on `any` (Linux cooked capture v2). Used by the tests and by `bench/`; run directly to make one:

    python tests/tools/netns_capture.py OUT.pcap [--bytes N] [--v6] [--any] [--rate 4mbit]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVER = r"""
import socket, sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(4)
print('ready', flush=True)
for _ in range(int(sys.argv[2])):
    c, _ = s.accept(); n = 0
    while True:
        b = c.recv(1 << 16)
        if not b: break
        n += len(b)
    c.close()
"""
CLIENT = r"""
import socket, struct, sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
c = socket.socket(fam, socket.SOCK_STREAM)
# A fixed source port (and an abortive close, so no TIME_WAIT) makes every
# transfer reuse the same 4-tuple.
c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
c.bind(('', 40001))
c.connect((sys.argv[1], 5001))
left = int(sys.argv[2]); chunk = b'x' * 65536
while left > 0:
    k = c.send(chunk[:min(left, len(chunk))]); left -= k
c.shutdown(socket.SHUT_WR); c.recv(1)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0)); c.close()
"""


def available() -> str | None:
    """None if captures can be made here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root"
    for t in ("ip", "tc", "tcpdump"):
        if shutil.which(t) is None:
            return f"{t} not installed"
    return None


def _sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


TRACEFS = Path("/sys/kernel/tracing")


def probe_available() -> bool:
    """Whether the tcp:tcp_probe tracepoint can be used (tracefs mounted or mountable)."""
    if not (TRACEFS / "events").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True)
    return (TRACEFS / "events" / "tcp" / "tcp_probe" / "enable").is_file()


def _ss_sampler(ns: str, out: Path, stop: threading.Event, period: float = 0.02):
    """`ss -tin` every `period` seconds in namespace `ns`, each sample preceded by
    a line holding the Unix time (as `date +%s.%N` would print it)."""
    with out.open("w") as f:
        while not stop.is_set():
            t = time.time()
            r = subprocess.run(
                ["ip", "netns", "exec", ns, "ss", "-tin", "sport", "=", ":40001"], capture_output=True, text=True
            )
            f.write(f"{t:.6f}\n{r.stdout}")
            stop.wait(period)


def capture(
    out: Path,
    nbytes: int = 2_000_000,
    v6: bool = False,
    any_if: bool = False,
    rate: str = "4mbit",
    transfers: int = 1,
    snaplen: int = 128,
    probe: Path | None = None,
    ss: Path | None = None,
) -> Path:
    """Makes a capture of `transfers` bulk transfers of `nbytes` each; returns `out`.

    Topology: sender A -- router R -- receiver B. R shapes its egress toward B with
    tbf and a short queue, so it drops packets; the capture runs on A's interface,
    before the drop point, and so sees every original and every retransmission
    (and A's TSO super-segments, which R splits). `probe` records the tcp:tcp_probe
    tracepoint (clock: time since boot) and `ss` samples `ss -tin` at the sender."""
    why = available()
    if why:
        raise RuntimeError(f"cannot make namespace captures: {why}")
    tag = f"tw{os.getpid() % 100000}"
    a, r, b = f"{tag}a", f"{tag}r", f"{tag}b"
    try:
        for ns in (a, r, b):
            _sh("ip", "netns", "add", ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        links = (
            (a, f"{tag}a0", "10.77.1.1/24", "fd77:1::1/64", r, f"{tag}r0", "10.77.1.2/24", "fd77:1::2/64"),
            (b, f"{tag}b0", "10.77.2.1/24", "fd77:2::1/64", r, f"{tag}r1", "10.77.2.2/24", "fd77:2::2/64"),
        )
        for n1, d1, v41, v61, n2, d2, v42, v62 in links:
            _sh("ip", "link", "add", d1, "type", "veth", "peer", "name", d2)
            for ns, dev, v4, v6a in ((n1, d1, v41, v61), (n2, d2, v42, v62)):
                _sh("ip", "link", "set", dev, "netns", ns)
                _sh("ip", "-n", ns, "addr", "add", v4, "dev", dev)
                _sh("ip", "-n", ns, "addr", "add", v6a, "dev", dev, "nodad")
                _sh("ip", "-n", ns, "link", "set", dev, "up")
        _sh("ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
        for ns, gw4, gw6 in ((a, "10.77.1.2", "fd77:1::2"), (b, "10.77.2.2", "fd77:2::2")):
            _sh("ip", "-n", ns, "route", "add", "default", "via", gw4)
            _sh("ip", "-n", ns, "-6", "route", "add", "default", "via", gw6)
        # Shaped bottleneck with a short queue at the router: drops under slow start.
        _sh(
            "tc",
            "-n",
            r,
            "qdisc",
            "add",
            "dev",
            f"{tag}r1",
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            "8kb",
            "limit",
            "24kb",
        )
        dst = "fd77:2::1" if v6 else "10.77.2.1"
        srv = subprocess.Popen(
            ["ip", "netns", "exec", b, sys.executable, "-c", SERVER, dst, str(transfers)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert srv.stdout.readline().strip() == "ready"
        cmd = [
            "ip",
            "netns",
            "exec",
            a,
            "tcpdump",
            "-i",
            "any" if any_if else f"{tag}a0",
            "-s",
            str(snaplen),
            "-U",
            "-w",
            str(out),
            "tcp port 5001",
        ]
        if any_if:
            cmd[7:7] = ["-y", "LINUX_SLL2"]
        dump = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if probe is not None:
            if not probe_available():
                raise RuntimeError("the tcp:tcp_probe tracepoint is not available")
            (TRACEFS / "trace").write_text("")
            (TRACEFS / "events/tcp/tcp_probe/enable").write_text("1")
        stop = threading.Event()
        sampler = None
        if ss is not None:
            sampler = threading.Thread(target=_ss_sampler, args=(a, ss, stop), daemon=True)
            sampler.start()
        time.sleep(0.7)
        try:
            for _ in range(transfers):
                _sh("ip", "netns", "exec", a, sys.executable, "-c", CLIENT, dst, str(nbytes))
            srv.wait(timeout=300)
        finally:
            stop.set()
            if sampler:
                sampler.join()
            if probe is not None:
                (TRACEFS / "events/tcp/tcp_probe/enable").write_text("0")
                probe.write_text((TRACEFS / "trace").read_text())
        time.sleep(1.0)
        dump.send_signal(signal.SIGINT)
        dump.wait(timeout=30)
        return out
    finally:
        for ns in (a, r, b):
            _sh("ip", "netns", "del", ns, check=False)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--bytes", type=int, default=2_000_000)
    p.add_argument("--transfers", type=int, default=1)
    p.add_argument("--v6", action="store_true")
    p.add_argument("--any", action="store_true", help="capture on 'any' (Linux cooked v2)")
    p.add_argument("--rate", default="4mbit")
    p.add_argument("--probe", help="also record tcp:tcp_probe output to this file")
    p.add_argument("--ss", help="also record `ss -tin` samples to this file")
    a = p.parse_args()
    print(
        capture(
            Path(a.out),
            a.bytes,
            a.v6,
            a.any,
            a.rate,
            a.transfers,
            probe=Path(a.probe) if a.probe else None,
            ss=Path(a.ss) if a.ss else None,
        )
    )
