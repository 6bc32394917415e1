"""Misbehaving mobiles for the proxy soak (bench/proxy_soak.py --misbehave), run in
a mobile namespace of `thinwire emulate --mobiles N`. Each writes a JSON line of
what it did to OUT at its end.

    misbehave.py synflood HOST PORT RATE SECONDS OUT
        SYNs from this host's address, random source ports and sequence numbers,
        RATE per second, never completing (the kernel's RSTs to the SYN-ACKs are
        dropped by an nftables rule in this namespace, as a spoofer's would never
        be sent).
    misbehave.py nowindow HOST PORT SECONDS OUT
        A hand-made connection (raw socket) that uploads to a server that never
        reads (`HOLD`), as fast as it can, ignoring the advertised window:
        sequential data segments sent whatever the window (which closes), the
        peer's ACKs read only to count them.
    misbehave.py blindrst HOST PORT SECONDS OUT
        Real downloads (`GET 300000`) one after another, each checked, while RSTs
        for the same connection with random sequence numbers are sent, 50 per
        second: a blind attacker who knows the ports but not the sequence space.
    misbehave.py vanish HOST PORT SECONDS OUT
        Five downloads of 1 MB started, then after 3 s the host drops every packet
        both ways (nftables) and stays silent until the end.
"""

import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

NFT_NO_RST = """table inet misbehave {
  chain out {
    type filter hook output priority 0;
    tcp flags & rst == rst drop;
  }
}
"""
NFT_SILENT = """table inet vanish {
  chain out {
    type filter hook output priority 0;
    drop;
  }
  chain inp {
    type filter hook input priority 0;
    drop;
  }
}
"""


def nft(rules: str) -> None:
    subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)


def checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def segment(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload=b"", win=65535):
    """A TCP segment (no options) with its checksum over the IPv4 pseudo-header."""
    off = 5 << 12
    hdr = struct.pack("!HHIIHHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, off | flags, win, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(hdr) + len(payload))
    c = checksum(pseudo + hdr + payload)
    return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload


SYN, RST, PSH, ACK = 0x02, 0x04, 0x08, 0x10


def raw() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)


def synflood(host: str, port: int, rate: float, secs: float) -> dict:
    nft(NFT_NO_RST)
    me = os.environ["THINWIRE_ADDR"]
    s = raw()
    end, sent = time.monotonic() + secs, 0
    while time.monotonic() < end:
        seg = segment(me, host, random.randint(1024, 65535), port, random.getrandbits(32), 0, SYN)
        s.sendto(seg, (host, 0))
        sent += 1
        time.sleep(1 / rate)
    return {"syns": sent}


def nowindow(host: str, port: int, secs: float) -> dict:
    nft(NFT_NO_RST)
    me = os.environ["THINWIRE_ADDR"]
    s = raw()
    s.settimeout(0.2)
    sport, isn = random.randint(20000, 60000), random.getrandbits(32)
    acks, window0, peer = 0, 0, None
    for _ in range(50):
        s.sendto(segment(me, host, sport, port, isn, 0, SYN), (host, 0))
        t = time.monotonic() + 1
        while time.monotonic() < t and peer is None:
            try:
                pkt = s.recv(65535)
            except TimeoutError:
                continue
            ihl = (pkt[0] & 15) * 4
            sp, dp, seq, ack, offl, win = struct.unpack("!HHIIHH", pkt[ihl : ihl + 16])
            if sp == port and dp == sport and offl & (SYN | ACK) == SYN | ACK:
                peer = seq + 1
        if peer is not None:
            break
    if peer is None:
        return {"error": "no SYN-ACK"}
    s.sendto(segment(me, host, sport, port, isn + 1, peer, ACK), (host, 0))
    nxt = isn + 1
    head = b"HOLD 0\n"
    chunk = bytes(1400)
    sent = 0
    stop = threading.Event()

    def reader():
        nonlocal acks, window0
        while not stop.is_set():
            try:
                pkt = s.recv(65535)
            except (TimeoutError, OSError):
                continue
            ihl = (pkt[0] & 15) * 4
            sp, dp, _, _, _, win = struct.unpack("!HHIIHH", pkt[ihl : ihl + 16])
            if sp == port and dp == sport:
                acks += 1
                window0 += win == 0

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    end = time.monotonic() + secs
    payload = head + chunk[len(head) :]
    while time.monotonic() < end:
        s.sendto(segment(me, host, sport, port, nxt, peer, ACK | PSH, payload), (host, 0))
        nxt += len(payload)
        sent += len(payload)
        payload = chunk
        time.sleep(0.005)  # ~280 kB/s offered, far beyond any window
    stop.set()
    return {"bytes_offered": sent, "acks_seen": acks, "zero_windows_seen": window0}


def _fetch(host: str, port: int, n: int, on_connect=None) -> bool:
    c = socket.create_connection((host, port), timeout=120)
    if on_connect:
        on_connect(c.getsockname()[1])
    c.sendall(b"GET %d\n" % n)
    c.shutdown(socket.SHUT_WR)
    got = bytearray()
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
    c.close()
    import hashlib

    seed = hashlib.sha256(str(n).encode()).digest()
    return bytes(got) == (seed * (n // 32 + 1))[:n]


def blindrst(host: str, port: int, secs: float) -> dict:
    me = os.environ["THINWIRE_ADDR"]
    s = raw()
    ports: list[int] = []
    stop = threading.Event()
    rsts = 0

    def attacker():
        nonlocal rsts
        while not stop.is_set():
            if ports:
                seg = segment(me, host, ports[-1], port, random.getrandbits(32), 0, RST)
                s.sendto(seg, (host, 0))
                rsts += 1
            time.sleep(0.02)

    th = threading.Thread(target=attacker, daemon=True)
    th.start()
    ok = bad = failed = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            if _fetch(host, port, 300_000, ports.append):
                ok += 1
            else:
                bad += 1
        except OSError:
            failed += 1
            time.sleep(1)
    stop.set()
    return {"downloads_ok": ok, "wrong": bad, "failed": failed, "rsts": rsts}


def vanish(host: str, port: int, secs: float) -> dict:
    started = []
    for _ in range(5):
        t = threading.Thread(target=lambda: _safe_fetch(host, port), daemon=True)
        t.start()
        started.append(t)
    time.sleep(3)
    nft(NFT_SILENT)
    time.sleep(max(0, secs - 3))
    return {"downloads_started": len(started)}


def _safe_fetch(host, port):
    try:
        _fetch(host, port, 1_000_000)
    except OSError:
        pass


def main() -> None:
    kind, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if kind == "synflood":
        r = synflood(host, port, float(sys.argv[4]), float(sys.argv[5]))
        out = sys.argv[6]
    else:
        r = {"nowindow": nowindow, "blindrst": blindrst, "vanish": vanish}[kind](host, port, float(sys.argv[4]))
        out = sys.argv[5]
    with open(out, "w") as f:
        f.write(json.dumps({"kind": kind, **r}) + "\n")
    os._exit(0)


if __name__ == "__main__":
    main()
