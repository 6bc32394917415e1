"""TCP sender state from real hosts, aligned with a capture: Linux `ss -tin` samples
and `tcp:tcp_probe` tracepoint output, as TcpSnd_cwnd / SRTT / RTO series.

**ss samples.** A text file of `ss -tin` outputs, each preceded by a line holding
the Unix time of the sample, as this loop writes it:

    while sleep 0.05; do date +%s.%N; ss -tin dst 10.0.0.2; done > ss.log

Each connection gives cwnd (segments, times the `mss:` shown), ssthresh, `rtt:`
SRTT/RTTVAR (ms) and `rto:` (ms). The Unix time is the capture's clock when both
come from the same host (tcpdump stamps packets with Unix time), so no alignment
is needed.

**tcp_probe.** The text of `/sys/kernel/tracing/trace` (or `trace-cmd report`) with
`tcp:tcp_probe` enabled. Each event gives snd_cwnd (segments), ssthresh, srtt (µs)
and snd_una/snd_nxt, stamped in seconds since boot, not Unix time. **Alignment by
matching events:** the probe fires when an ACK reaches the sender, and carries
snd_una — the ACK number of the ACK just processed, or of the one before (kernels
differ in where the tracepoint sits). For both hypotheses every probe whose
snd_una is new is matched with the first ACK in the capture carrying that number;
the hypothesis whose offsets (capture time minus probe time) spread least (inter-
quartile range) wins, and its median offset moves the probe series onto the
capture's clock. The alignment reports the offset, the number of matched events
and the spread. tcp_probe has no RTO: RTO series come from ss only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_TS = re.compile(r"^\s*#?\s*(\d{6,}(?:\.\d+)?)\s*$")
_SS_CONN = re.compile(
    r"^\s*(?:ESTAB|SYN-SENT|SYN-RECV|FIN-WAIT-1|FIN-WAIT-2|CLOSE-WAIT|LAST-ACK|CLOSING|TIME-WAIT)\s+\d+\s+\d+\s+(\S+)\s+(\S+)"
)
_PROBE = re.compile(
    r"\s(\d+\.\d+):\s+tcp_probe:\s+family=\S+\s+src=(\S+)\s+dest=(\S+)\s.*?snd_nxt=(0x[0-9a-f]+)\s+snd_una=(0x[0-9a-f]+)\s+snd_cwnd=(\d+)\s+ssthresh=(\d+)\s+snd_wnd=(\d+)\s+srtt=(\d+)"
)


class SenderStateError(ValueError):
    pass


def _int(s: str, base: int = 10, limit: int = 2**32) -> int:
    """An integer field of the kernel's (32-bit) within its range (found by
    fuzzing: a 60-digit cwnd reached polars as an OverflowError)."""
    v = int(s, base)
    if not 0 <= v < limit:
        raise ValueError(f"{s[:30]} is out of range")
    return v


def _split_addr(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    host = host.strip("[]")
    if host.startswith("::ffff:") and "." in host:
        host = host[7:]
    p = int(port)
    if not 0 <= p <= 65535:
        raise ValueError(f"port {port} is not 0 to 65535")
    return host.split("%")[0], p


def sniff(path: str | Path) -> str:
    """'tcp_probe' or 'ss', from the file's content."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(1 << 16)
    if "tcp_probe:" in head:
        return "tcp_probe"
    if any(_TS.match(l) for l in head.splitlines()) and ("ESTAB" in head or "State" in head):
        return "ss"
    raise SenderStateError(
        f"{path}: neither tcp_probe trace output nor timestamped 'ss -tin' samples "
        "(see 'thinwire plot --help' for the accepted formats)"
    )


def read_ss(path: str | Path):
    """ss samples: time_s (Unix), src, sport, dst, dport, cwnd_bytes, ssthresh_bytes, srtt_s, rttvar_s, rto_s, mss."""
    import polars as pl

    rows = []
    t = None
    cur = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            try:
                t, cur = _ss_line(line, t, cur, rows)
            except (ValueError, OverflowError) as e:
                raise SenderStateError(f"{path}:{n}: not a valid 'ss -tin' line ({e})") from None
    if not rows:
        raise SenderStateError(f"{path}: no 'ss -tin' connection lines with a preceding Unix-time line found")
    return pl.DataFrame(rows, infer_schema_length=None)


def _ss_line(line: str, t, cur, rows: list):
    """One line of 'ss -tin' output: returns the (time, connection) state after it."""
    m = _TS.match(line)
    if m:
        return float(m.group(1)), cur
    m = _SS_CONN.match(line)
    if m:
        (s, sp), (d, dp) = _split_addr(m.group(1)), _split_addr(m.group(2))
        return t, (s, sp, d, dp)
    if cur is None or t is None or not ("cwnd:" in line or "rto:" in line):
        return t, cur
    kv = dict(re.findall(r"\b(rto|rtt|mss|cwnd|ssthresh):([0-9./]+)", line))
    mss = _int(kv.get("mss", "0"), limit=2**20) or None
    srtt, _, var = kv.get("rtt", "").partition("/")
    rows.append(
        {
            "time_s": t,
            "src": cur[0],
            "sport": cur[1],
            "dst": cur[2],
            "dport": cur[3],
            "cwnd_bytes": _int(kv["cwnd"]) * (mss or 0) if "cwnd" in kv and mss else None,
            "ssthresh_bytes": _int(kv["ssthresh"]) * mss if "ssthresh" in kv and mss else None,
            "srtt_s": float(srtt) / 1e3 if srtt else None,
            "rttvar_s": float(var) / 1e3 if var else None,
            "rto_s": float(kv["rto"]) / 1e3 if "rto" in kv else None,
            "mss": mss,
        }
    )
    return t, None


def read_tcp_probe(path: str | Path):
    """tcp_probe events: t_boot_s, src, sport, dst, dport, snd_nxt, snd_una (raw), cwnd (segments), ssthresh (segments), srtt_s."""
    import polars as pl

    cols = {
        k: [] for k in ("t_boot_s", "src", "sport", "dst", "dport", "snd_nxt", "snd_una", "cwnd", "ssthresh", "srtt_s")
    }
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = _PROBE.search(line)
            if not m:
                continue
            try:
                vals = _probe_values(m)
            except (ValueError, OverflowError) as e:
                raise SenderStateError(f"{path}:{n}: not a valid tcp_probe line ({e})") from None
            for k, v in zip(cols, vals):
                cols[k].append(v)
    if not cols["t_boot_s"]:
        raise SenderStateError(
            f"{path}: no tcp_probe events found (enable events/tcp/tcp_probe in tracefs and save 'trace')"
        )
    return pl.DataFrame(cols)


def _probe_values(m) -> tuple:
    (s, sp), (d, dp) = _split_addr(m.group(2)), _split_addr(m.group(3))
    return (
        float(m.group(1)),
        s,
        sp,
        d,
        dp,
        _int(m.group(4), 16),
        _int(m.group(5), 16),
        _int(m.group(6)),
        _int(m.group(7)),
        _int(m.group(9)) / 1e6,
    )


@dataclass
class Alignment:
    offset_s: float
    matched: int
    spread_ms: float
    hypothesis: str

    def describe(self) -> str:
        return (
            f"tcp_probe clock aligned to the capture by {self.matched} matched ACKs "
            f"(snd_una {self.hypothesis}; offset {self.offset_s:.6f} s, interquartile spread {self.spread_ms:.2f} ms)"
        )


def _conn_of(cap, conn: int, direction: int):
    c = cap.connection_list[conn]
    hosts = [(c["host_a"], c["port_a"]), (c["host_b"], c["port_b"])]
    return c, hosts[direction], hosts[1 - direction]


def align_probe(probe, cap, conn: int, direction: int) -> Alignment:
    """Offset from tcp_probe's boot clock to the capture's clock (see the module doc)."""
    import polars as pl

    c, (sh, sp), (dh, dp) = _conn_of(cap, conn, direction)
    pr = probe.filter(
        (pl.col("src") == sh) & (pl.col("sport") == sp) & (pl.col("dst") == dh) & (pl.col("dport") == dp)
    ).sort("t_boot_s")
    if pr.height == 0:
        raise SenderStateError(f"no tcp_probe events for {sh}:{sp} -> {dh}:{dp} (the capture's connection {conn})")
    base = c["a2b" if direction == 0 else "b2a"]["first_seq"]
    pk = cap.packets.filter((pl.col("conn") == conn) & (pl.col("dir") == 1 - direction) & (pl.col("ack") >= 0))
    raw = (pk["ack"].to_numpy() + base) % (1 << 32)
    vals, first = np.unique(raw, return_index=True)
    first_t = dict(zip(vals.tolist(), pk["time_s"].to_numpy()[first].tolist()))
    t = pr["t_boot_s"].to_numpy()
    una = pr["snd_una"].to_numpy()
    new = np.r_[True, una[1:] != una[:-1]]
    best = None
    for name, idx, key in (
        ("after the ACK", np.nonzero(new)[0], lambda i: una[i]),
        ("before the ACK", np.nonzero(np.r_[una[1:] != una[:-1], False])[0], lambda i: una[i + 1]),
    ):
        offs = np.array([first_t[int(key(i))] - t[i] for i in idx if int(key(i)) in first_t])
        if len(offs) < 5:
            continue
        q1, med, q3 = np.percentile(offs, [25, 50, 75])
        cand = Alignment(float(med), len(offs), float(q3 - q1) * 1e3, name)
        if best is None or cand.spread_ms < best.spread_ms:
            best = cand
    if best is None:
        raise SenderStateError(
            "could not align tcp_probe with the capture: fewer than 5 probe events match ACKs in the capture "
            "(are they of the same transfer, recorded at the sender?)"
        )
    return best


def _smss(cap, conn: int, direction: int) -> int:
    c = cap.connection_list[conn]
    me, peer = (c["a2b"], c["b2a"]) if direction == 0 else (c["b2a"], c["a2b"])
    opts = [x for x in (me["mss_requested"], peer["mss_requested"]) if x]
    mss = min(opts) if opts else me["max_segment"]
    return mss - (12 if me["timestamps"] and peer["timestamps"] else 0)


def sender_series(path: str | Path, cap, conn: int, direction: int) -> tuple[dict, str]:
    """{"cwnd": (t, bytes), "ssthresh": ..., "srtt": (t, s), "rto": ...} on the
    capture's time axis (seconds from the connection's first packet), and a note
    saying where they came from and how they were aligned."""
    import polars as pl

    kind = sniff(path)
    t0 = cap.packets.filter(pl.col("conn") == conn)["time_s"].min()
    c, (sh, sp), (dh, dp) = _conn_of(cap, conn, direction)
    out = {}
    if kind == "ss":
        d = read_ss(path).filter(
            (pl.col("src") == sh) & (pl.col("sport") == sp) & (pl.col("dst") == dh) & (pl.col("dport") == dp)
        )
        if d.height == 0:
            raise SenderStateError(
                f"{path}: no ss samples for {sh}:{sp} -> {dh}:{dp} (the capture's connection {conn})"
            )
        t = d["time_s"].to_numpy() - t0
        for k, col in (("cwnd", "cwnd_bytes"), ("ssthresh", "ssthresh_bytes"), ("srtt", "srtt_s"), ("rto", "rto_s")):
            v = d[col].to_numpy().astype(float)
            out[k] = (t, v)
        return out, f"sender state from {d.height} ss samples (Unix time, same clock as the capture)"
    pr = read_tcp_probe(path)
    al = align_probe(pr, cap, conn, direction)
    d = pr.filter(
        (pl.col("src") == sh) & (pl.col("sport") == sp) & (pl.col("dst") == dh) & (pl.col("dport") == dp)
    ).sort("t_boot_s")
    t = d["t_boot_s"].to_numpy() + al.offset_s - t0
    mss = _smss(cap, conn, direction)
    ss = d["ssthresh"].to_numpy().astype(float)
    ss[ss >= 2**31 - 1] = np.nan
    out["cwnd"] = (t, d["cwnd"].to_numpy() * float(mss))
    out["ssthresh"] = (t, ss * mss)
    out["srtt"] = (t, d["srtt_s"].to_numpy())
    return out, al.describe() + f"; cwnd in bytes = segments x {mss}"
