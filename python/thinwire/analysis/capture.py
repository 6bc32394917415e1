"""Capture analysis (pcap / pcapng, real or simulated): per-connection statistics in
the manner of `tcptrace -l -r`, plus per-packet, RTT-sample and event tables.

The work is done by the Rust core (`thinwire.analysis` module there documents every
definition); this module turns its output into polars DataFrames.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .. import _core

CaptureError = _core.CaptureError

KINDS = ["none", "new", "retransmit", "probe", "out_of_order"]
EVENT_KINDS = ["fast_retransmit", "timeout", "spurious_timeout"]


def _i64(b):
    import numpy as np

    return np.frombuffer(b, dtype="<i8")


class CaptureAnalysis:
    """The analysis of one capture file."""

    def __init__(self, path: Path, raw: dict):
        self.path = path
        self.raw = raw

    def __repr__(self) -> str:
        return f"CaptureAnalysis({str(self.path)!r}: {self.raw['packets']} packets, {len(self.raw['connections'])} connections)"

    @property
    def warnings(self) -> list[str]:
        return list(self.raw["warnings"])

    @property
    def connection_list(self) -> list[dict]:
        """Per connection: addresses, times, and `a2b` / `b2a` statistics dicts."""
        return self.raw["connections"]

    @property
    def connections(self):
        """One row per connection; direction statistics flattened as `a2b_*` / `b2a_*`."""
        import polars as pl

        rows = []
        for c in self.raw["connections"]:
            r = {k: v for k, v in c.items() if k not in ("a2b", "b2a")}
            for d in ("a2b", "b2a"):
                r.update({f"{d}_{k}": v for k, v in c[d].items()})
            rows.append(r)
        return pl.DataFrame(rows, infer_schema_length=None)

    def _cols(self):
        c = self.raw.get("columns")
        if c is None:
            raise ValueError(
                "this analysis was made without per-packet columns (use analyze_capture(path, columns=True))"
            )
        return c

    @property
    def packets(self):
        """Per TCP packet: time_s, conn, dir (0 = a->b), seq and ack (relative; -1 if
        none), len, win (scaled), flags, kind (new / retransmit / probe / out_of_order / none)."""
        import numpy as np
        import polars as pl

        c = self._cols()
        t = _i64(c["t_ns"])
        return pl.DataFrame(
            {
                "time_s": t / 1e9,
                "conn": np.frombuffer(c["conn"], dtype="<u4").astype(np.int64),
                "dir": np.frombuffer(c["dir"], dtype=np.uint8).astype(np.int64),
                "seq": _i64(c["seq"]),
                "len": _i64(c["len"]),
                "ack": _i64(c["ack"]),
                "win": _i64(c["win"]),
                "flags": np.frombuffer(c["flags"], dtype=np.uint8).astype(np.int64),
                "kind": pl.Series(
                    np.asarray(KINDS, dtype=object)[np.frombuffer(c["kind"], dtype=np.uint8)] if len(t) else [],
                    dtype=pl.Utf8,
                ),
            }
        )

    @property
    def rtt(self):
        """RTT samples (Karn): time_s (when the ACK was seen), conn, dir (of the data), rtt_s."""
        import numpy as np
        import polars as pl

        c = self._cols()
        return pl.DataFrame(
            {
                "time_s": _i64(c["rtt_t_ns"]) / 1e9,
                "conn": np.frombuffer(c["rtt_conn"], dtype="<u4").astype(np.int64),
                "dir": np.frombuffer(c["rtt_dir"], dtype=np.uint8).astype(np.int64),
                "rtt_s": _i64(c["rtt_ns"]) / 1e9,
            }
        )

    @property
    def events(self):
        """TCP events: time_s, conn, dir (of the data), kind (fast_retransmit / timeout / spurious_timeout), seq."""
        import numpy as np
        import polars as pl

        c = self._cols()
        k = np.frombuffer(c["ev_kind"], dtype=np.uint8)
        return pl.DataFrame(
            {
                "time_s": _i64(c["ev_t_ns"]) / 1e9,
                "conn": np.frombuffer(c["ev_conn"], dtype="<u4").astype(np.int64),
                "dir": np.frombuffer(c["ev_dir"], dtype=np.uint8).astype(np.int64),
                "kind": pl.Series(np.asarray(EVENT_KINDS, dtype=object)[k] if len(k) else [], dtype=pl.Utf8),
                "seq": _i64(c["ev_seq"]),
            }
        )

    def to_json(self) -> dict:
        return {
            "path": str(self.path),
            "format": self.raw["format"],
            "packets": self.raw["packets"],
            "tcp_packets": self.raw["tcp_packets"],
            "warnings": self.warnings,
            "connections": self.raw["connections"],
        }


def analyze_capture(path: str | os.PathLike, columns: bool = True, interface: int | None = None) -> CaptureAnalysis:
    """Analyses a pcap or pcapng file. Raises CaptureError (one line) if it cannot be
    read. `interface`: the pcapng interface to analyse (default: the first that has
    packets; an emulation's capture.pcapng has mobile 0, then server or gateway)."""
    if interface is not None and (not isinstance(interface, int) or isinstance(interface, bool) or interface < 0):
        raise CaptureError(f"interface {interface!r}: give an interface number (0, 1, ...)")
    p = Path(path)
    if not p.exists():
        raise CaptureError(f"{p}: no such file (give a .pcap or .pcapng capture, or a thinwire run directory)")
    if p.is_dir():
        raise CaptureError(f"{p}: is a directory, not a capture file")
    if stat.S_ISFIFO(p.stat().st_mode):
        fd = _open_fifo(p)
        try:
            return CaptureAnalysis(path=p, raw=_core.analyze_capture(str(p), columns, fd, interface))
        finally:
            os.close(fd)
    return CaptureAnalysis(path=p, raw=_core.analyze_capture(str(p), columns, None, interface))


# How long a FIFO (a named pipe, or /dev/stdin from a pipe) may have no data.
FIFO_WAIT_S = 10.0


def _open_fifo(p: Path) -> int:
    """Opens a FIFO for reading without blocking for ever when it has no writer
    (once a hang): waits at most FIFO_WAIT_S for data, then says so. Returns a
    blocking descriptor, held open so that data written and closed meanwhile stays."""
    import select

    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(FIFO_WAIT_S * 1000):
        os.close(fd)
        raise CaptureError(
            f"{p}: is a FIFO and nothing was written to it in {FIFO_WAIT_S:.0f} s; start its writer first (e.g. tcpdump -w {p})"
        )
    os.set_blocking(fd, True)
    return fd
