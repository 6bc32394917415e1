"""Writes the committed seed corpus fuzz/seeds/TARGET (small files): simulator
captures (pcap, and a pcapng made from one), packets, the example scenarios, a
proxy daemon config, delivery traces, ss/tcp_probe samples and sweep files.
    .venv/bin/python fuzz/make_seeds.py"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import thinwire

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "fuzz" / "seeds"
SMALL = '[wireless]\nrate = "64kbps"\ndelay = "50ms"\n[wireless.arq]\nprotocol = "sr"\n[[flow]]\napp = "bulk"\nbytes = "3KB"\n'


def put(target: str, name: str, data: bytes | str) -> None:
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data.encode() if isinstance(data, str) else data)


def pcap_records(pcap: bytes):
    """(seconds, microseconds, bytes) of each record (nanosecond pcaps too)."""
    nano = struct.unpack_from("<I", pcap)[0] == 0xA1B23C4D
    off = 24
    while off + 16 <= len(pcap):
        sec, frac, incl, orig = struct.unpack_from("<IIII", pcap, off)
        yield sec, frac // 1000 if nano else frac, pcap[off + 16 : off + 16 + incl]
        off += 16 + incl


def pcapng_of(pcap: bytes, linktype: int) -> bytes:
    """The same packets as a pcapng (section header, one interface, enhanced blocks)."""

    def block(kind: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", kind, n) + body + struct.pack("<I", n)

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", linktype, 0, 65535))
    for sec, usec, data in pcap_records(pcap):
        ts = sec * 1_000_000 + usec
        out += block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + data)
    return out


def main() -> int:
    # The first byte of a capture seed is the chunk size chosen by the target.
    r = thinwire.run(SMALL, pcap=True)
    pcap = r.pcap_server
    linktype = struct.unpack_from("<I", pcap, 20)[0]
    put("capture", "sim.pcap", b"\x07" + pcap)
    put("capture", "sim.pcapng", b"\x1f" + pcapng_of(pcap, linktype))
    put(
        "capture",
        "long_rtt.pcap",
        b"\x00" + (ROOT.parent / "shared/testdata/pcaps/tcptrace_long_rtt.pcap").read_bytes(),
    )
    put("replay", "inputs.pcapng", pcapng_of(pcap, linktype))
    for i, (_, _, data) in enumerate(list(pcap_records(pcap))[:4]):
        put("packet", f"p{i}", data)
    for p in sorted((ROOT / "scenarios").glob("*.toml")):
        put("scenario", p.name, p.read_text())
    put("scenario", "with-overrides.toml", SMALL + "\n--\nflow.0.bytes=2KB\nwireless.arq.window=8\n")
    put(
        "daemon_config",
        "proxy.toml",
        '[proxy]\nlink_rate = "33.2kbps"\nlink_rtt = "1.8s"\n[daemon]\nmobile_interface = "eth1"\n'
        'mobile_prefixes = ["10.0.1.0/24"]\nmax_connections = 4096\nidle_timeout = "10min"\n',
    )
    put("daemon_config", "with-overrides.toml", '[daemon]\nmobile_interface = "eth1"\n--\ndaemon.max_buffer=1MB\n')
    # Found by this target: an unknown quoted key holding an escaped line break.
    put("daemon_config", "key-with-line-break.toml", '"3n =3.2\\\\.\\nfetir"=30')
    put("delivery_trace", "constant", "".join(f"{t}\n" for t in range(1, 41)))
    put("delivery_trace", "bursty", "5\n5\n5\n12\n30\n30\n31\n")
    ss = (
        "1795357040.500000\nState Recv-Q Send-Q Local Address:Port Peer Address:Port\n"
        "ESTAB 0      69504      10.0.0.1:40001    10.0.0.2:5001\n"
        "\t cubic wscale:7,7 rto:204 rtt:3.75/6.475 mss:1448 pmtu:1500 cwnd:21 ssthresh:16 bytes_sent:46336\n"
    )
    put("sender_state", "ss.txt", ss)
    put(
        "sender_state",
        "probe.txt",
        "# tracer: nop\n   python-1 [001] ..s1. 1234.000040: tcp_probe: family=AF_INET src=10.0.0.1:1024 "
        "dest=10.0.0.2:5001 mark=0x0 data_len=0 snd_nxt=0x2710 snd_una=0x1 snd_cwnd=20 ssthresh=2147483647 "
        "snd_wnd=60000 srtt=585000 rcv_wnd=65535 sock_cookie=1\n",
    )
    put(
        "sweep_file",
        "sweep.toml",
        'scenario = "base.toml"\nreplications = 2\ncommon_random_numbers = true\n[set]\n"flow.0.bytes" = "5KB"\n'
        '[axes]\n"wireless.rate" = ["32kbps", "64kbps"]\n',
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
