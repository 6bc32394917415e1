"""Analyses of thinwire's own multi-layer traces, which know what a capture cannot:
which link frames carried which flow, when TCP's timers fired, and whether an
earlier copy of a retransmitted segment reached the receiver.

Definitions (per TCP flow, in its data direction):
- **utilization** (seed 000 §4.3): the share of the connection time (first TCP
  packet sent to last TCP packet received) during which the radio link carried
  data that TCP sent only once. Busy time is the airtime of the flow's link data
  frames (first transmissions and link retransmissions); it is scaled by the share
  of TCP data bytes that were not TCP retransmissions, since frames are not traced
  per TCP segment. Idle time and TCP retransmissions therefore do not count.
- **needless timeout** (`needless_timeouts`; seed 000's spurious timeout, not the
  sender's own undo count `tcp_spurious_timeouts` nor a capture's Eifel count): a TCP timeout whose retransmitted segment (the first
  retransmission at or after the timeout) had an earlier copy that reached the
  receiver. The link delivers each flow's packets in order, so when the receiver
  gets a sequence number more often than it was sent from the timeout on, an
  earlier copy arrived (a lower bound when copies are lost).
- **competing retransmission** (seed 000 §5.4): a TCP retransmission sent while an
  earlier copy of the same segment was still in transit (it arrived later), i.e.
  TCP and the link layer were both recovering the same data.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..traces import syn_fin_retransmits

DATA_EVENTS = ("send", "retransmit")
# Events only a sender whose TCP thinwire ran records (not a tap on real hosts).
SENDER_STATE = ("cwnd", "ssthresh", "srtt", "rto", "timeout", "fast_retransmit")


def _flow_dir(tcp, flow: int) -> int:
    """The direction of a flow's data: 0 = down (server to mobile), 1 = up; the
    direction that carried more data bytes (a request-response connection's
    responses outweigh its requests), ties to the first."""
    import polars as pl

    d = tcp.filter((pl.col("flow") == flow) & (pl.col("len") > 0) & pl.col("event").is_in(DATA_EVENTS))
    if d.height == 0:
        return 0
    first = d["dir"].cast(pl.Utf8).to_list()[0]
    by = {r["dir"]: r["len"] for r in d.group_by(pl.col("dir").cast(pl.Utf8)).agg(pl.col("len").sum()).to_dicts()}
    other = "down" if first == "up" else "up"
    best = other if by.get(other, 0) > by.get(first, 0) else first
    return int(best == "up")


@dataclass
class SimRun:
    """A simulated run: its summary, per-flow table and multi-layer trace.

    A run directory's trace.parquet is scanned lazily: analyses ask for one layer
    at a time (`layer`), and only that layer's rows are read; `trace` (every row)
    is read only when something asks for it."""

    summary: dict
    flows: object
    trace_frame: object = field(default=None, repr=False)
    path: Path | None = None
    pcaps: dict = field(default_factory=dict)
    # The trace.parquet read lazily (instead of trace_frame).
    trace_file: Path | None = None
    _layers: dict = field(default_factory=dict, repr=False)

    @property
    def trace(self):
        """Every trace row (a DataFrame), or None for a run without a trace."""
        if self.trace_frame is None and self.trace_file is not None:
            from ..traces import read_trace

            self.trace_frame = read_trace(self.trace_file)
        return self.trace_frame

    def has_trace(self) -> bool:
        return self.trace_frame is not None or self.trace_file is not None

    def layer(self, name: str):
        """The rows of one layer (an empty DataFrame for a run without a trace)."""
        import polars as pl

        if name not in self._layers:
            if self.trace_frame is not None:
                self._layers[name] = self.trace_frame.filter(pl.col("layer") == name)
            elif self.trace_file is not None:
                from ..traces import scan_trace

                self._layers[name] = scan_trace(self.trace_file, name).collect()
            else:
                self._layers[name] = pl.DataFrame()
        return self._layers[name]

    @classmethod
    def from_dir(cls, d: str | os.PathLike) -> "SimRun":
        import polars as pl

        d = Path(d)
        if (d / "trace.rows").is_file():
            # A proxy daemon's --out directory it could not finish (it was killed).
            from ..proxyd import finish

            finish(d)
        if not (d / "summary.json").is_file():
            raise ValueError(
                f"{d}: not a thinwire run directory (no summary.json; make one with 'thinwire run SCENARIO --out DIR')"
            )
        summary = json.loads((d / "summary.json").read_text())
        if summary.get("kind") == "emulation" and summary.get("cell") == "separate" and summary.get("mobiles", 1) > 1:
            # Each mobile's path wrote its own trace: the run of one mobile is its folder.
            n = summary["mobiles"]
            raise ValueError(
                f"{d}: an emulation of {n} mobiles, each over its own link: each one's run is in "
                f"{d}/mobile-0 to {d}/mobile-{n - 1} (e.g. thinwire analyze {d}/mobile-0); {d}/flows.parquet lists them all"
            )
        flows = (
            pl.read_parquet(d / "flows.parquet") if (d / "flows.parquet").is_file() else pl.DataFrame(summary["flows"])
        )
        tp = d / "trace.parquet"
        pcaps = {k: d / f"{k}.pcap" for k in ("server", "mobile") if (d / f"{k}.pcap").is_file()}
        return cls(summary=summary, flows=flows, path=d, pcaps=pcaps, trace_file=tp if tp.is_file() else None)

    @classmethod
    def from_result(cls, res) -> "SimRun":
        if not res.raw["trace"]["rows"]:
            return cls(summary=res.summary, flows=res.flows)
        if res._streamed("trace.parquet"):
            return cls(summary=res.summary, flows=res.flows, trace_file=res._files_dir / "trace.parquet")
        return cls(summary=res.summary, flows=res.flows, trace_frame=res.trace)

    def _need_trace(self, layer: str):
        rows = self.layer(layer)
        if rows.height == 0:
            raise ValueError(
                f"the run has no '{layer}' trace events (run it with --trace including {layer}, or --out to trace all layers)"
            )
        return rows

    def tcp_flows(self) -> list[int]:
        import polars as pl

        return [int(f["id"]) for f in self.flows.filter(pl.col("app") != "media").iter_rows(named=True)]

    # ----- per-flow metrics -----
    def flow_metrics(self):
        """Per TCP flow: data direction, bytes, TCP retransmissions, timeouts, fast
        retransmits, spurious timeouts, competing retransmissions, utilization."""
        import polars as pl

        tcp = self._need_trace("tcp")
        link = self.layer("link")
        rows = []
        for f in self.tcp_flows():
            ft = tcp.filter(pl.col("flow") == f)
            d = _flow_dir(ft, f)
            dname = ("down", "up")[d]
            snd_node, rcv_node = ("server", "mobile") if d == 0 else ("mobile", "server")
            data = ft.filter((pl.col("node") == snd_node) & pl.col("event").is_in(DATA_EVENTS) & (pl.col("len") > 0))
            arr = ft.filter((pl.col("node") == rcv_node) & (pl.col("event") == "recv") & (pl.col("len") > 0))
            tos = ft.filter((pl.col("node") == snd_node) & (pl.col("event") == "timeout"))
            frs = ft.filter((pl.col("node") == snd_node) & (pl.col("event") == "fast_retransmit"))
            rex = data.filter(pl.col("event") == "retransmit")
            syn_rex, fin_rex = syn_fin_retransmits(ft)
            # The sender's timer events are in the trace only where thinwire ran the
            # sender's TCP (a simulation); an emulation's trace holds what the taps
            # saw, so timeouts and fast retransmits are unknown there, not zero.
            known = (
                tos.height > 0
                or not ft.filter((pl.col("node") == snd_node) & pl.col("event").is_in(SENDER_STATE)).is_empty()
            )
            spurious, competing = _spurious_and_competing(data, arr, tos["time_ns"].to_list())
            t0 = ft["time_ns"].min() if ft.height else 0
            t1 = ft.filter(pl.col("event") == "recv")["time_ns"].max() if ft.height else 0
            span = max((t1 or 0) - (t0 or 0), 1)
            frames = link.filter(
                (pl.col("flow") == f)
                & (pl.col("dir") == dname)
                & pl.col("event").is_in(["frame_send", "frame_retransmit"])
            )
            rate = self.summary.get("link", {}).get(dname, {}).get("rate_bps")
            util = None
            sent_bytes = int(data["len"].sum() or 0)
            if rate and frames.height and sent_bytes:
                busy_ns = float(frames["len"].sum()) * 8 / rate * 1e9
                once = 1 - int(rex["len"].sum() or 0) / sent_bytes
                util = min(busy_ns * once / span, 1.0)
            rows.append(
                {
                    "flow": f,
                    "direction": dname,
                    "data_bytes_sent": sent_bytes,
                    "tcp_retransmits": rex.height,
                    "tcp_retransmitted_bytes": int(rex["len"].sum() or 0),
                    "tcp_syn_retransmits": syn_rex,
                    "tcp_fin_retransmits": fin_rex,
                    "tcp_timeouts": tos.height if known else None,
                    "tcp_fast_retransmits": frs.height if known else None,
                    "needless_timeouts": spurious if known else None,
                    "competing_retransmissions": competing,
                    "link_data_frames": int(frames.filter(pl.col("event") == "frame_send").height),
                    "link_retransmitted_frames": int(frames.filter(pl.col("event") == "frame_retransmit").height),
                    "connection_time_s": span / 1e9,
                    "utilization": util,
                }
            )
        return pl.DataFrame(rows, infer_schema_length=None)

    # ----- series for plots -----
    def sender_vars(self, flow: int, var: str):
        """A TCP sender variable over time (cwnd, ssthresh, srtt, rttvar, rto): time_s, value."""
        import polars as pl

        tcp = self._need_trace("tcp")
        d = _flow_dir(tcp, flow)
        node = ("server", "mobile")[d]
        return tcp.filter((pl.col("flow") == flow) & (pl.col("node") == node) & (pl.col("event") == var)).select(
            "time_s", "value"
        )

    def delivered(self, flow: int):
        """In-sequence bytes received over time (the receiver's cumulative ACK): time_s, bytes."""
        import polars as pl

        tcp = self._need_trace("tcp")
        d = _flow_dir(tcp, flow)
        rnode = ("mobile", "server")[d]
        f = tcp.filter(pl.col("flow") == flow)
        a = f.filter((pl.col("node") == rnode) & pl.col("event").is_in(DATA_EVENTS) & (pl.col("ack") >= 0))
        # Sequence numbers are relative to the ISN: the SYN takes number 0 and a FIN
        # the number after the last data byte; neither is a delivered byte.
        fins = f.filter((pl.col("node") != rnode) & pl.col("event").is_in(DATA_EVENTS) & ((pl.col("value") & 1) == 1))
        top = (
            pl.col("ack")
            if fins.height == 0
            else pl.min_horizontal(pl.col("ack"), pl.lit(int((fins["seq"] + fins["len"]).min())))
        )
        return a.select("time_s", (top - 1).clip(lower_bound=0).cum_max().alias("bytes"))

    def queue_delay(self, flow: int | None = None):
        """Link-layer delay of delivered packets (queueing + ARQ + transmission): time_s, dir, flow, delay_s."""
        import polars as pl

        link = self._need_trace("link")
        p = link.filter(pl.col("event") == "packet_deliver")
        if flow is not None:
            p = p.filter(pl.col("flow") == flow)
        return p.select("time_s", "dir", "flow", (pl.col("value") / 1e9).alias("delay_s"))

    def outstanding(self, flow: int):
        """Outstanding data at the sender over time: highest sequence sent minus highest ACK received."""
        import polars as pl

        tcp = self._need_trace("tcp")
        d = _flow_dir(tcp, flow)
        snode = ("server", "mobile")[d]
        ft = tcp.filter((pl.col("flow") == flow) & (pl.col("node") == snode))
        sent = ft.filter(pl.col("event").is_in(DATA_EVENTS)).select(
            "time_ns", (pl.col("seq") + pl.col("len")).alias("hi"), pl.lit(None, dtype=pl.Int64).alias("acked")
        )
        acks = ft.filter((pl.col("event") == "recv") & (pl.col("ack") >= 0)).select(
            "time_ns", pl.lit(None, dtype=pl.Int64).alias("hi"), pl.col("ack").alias("acked")
        )
        m = (
            pl.concat([sent, acks])
            .sort("time_ns", maintain_order=True)
            .with_columns(pl.col("hi").fill_null(0).cum_max(), pl.col("acked").fill_null(0).cum_max())
        )
        return m.select(
            (pl.col("time_ns") / 1e9).alias("time_s"),
            (pl.col("hi") - pl.col("acked")).clip(lower_bound=0).alias("bytes"),
        )


def _spurious_and_competing(data, arr, timeouts: list[int]) -> tuple[int, int]:
    """Counts spurious timeouts and competing retransmissions (see the module doc).

    For a retransmission of `s` at `t`: n = sends of `s` at or after `t` (this one
    included); an earlier copy arrived if more than n copies of `s` arrived after
    `t` (competing) or at all (spurious). Vectorised: sends and arrivals sorted by
    (sequence, time) as one integer key each, counts by binary search."""
    import numpy as np

    st, ss = data["time_ns"].to_numpy(), data["seq"].to_numpy()
    at, aseq = arr["time_ns"].to_numpy(), arr["seq"].to_numpy()
    rex = (data["event"] == "retransmit").to_numpy()
    rt, rs = st[rex], ss[rex]
    if len(rt) == 0:
        return 0, 0
    # Dense ranks of sequence numbers and times, so (sequence, time) fits one int64.
    seqs, seq_idx = np.unique(np.concatenate([ss, aseq]), return_inverse=True)
    times, time_idx = np.unique(np.concatenate([st, at]), return_inverse=True)
    width = len(times) + 1
    skey = np.sort(seq_idx[: len(ss)] * width + time_idx[: len(st)])
    akey = np.sort(seq_idx[len(ss) :] * width + time_idx[len(st) :])
    r_seq = np.searchsorted(seqs, rs)  # every retransmitted sequence is a sent one
    r_time = np.searchsorted(times, rt)  # and its time a send time
    key = r_seq * width + r_time
    group_end = (r_seq + 1) * width
    n_from_t = np.searchsorted(skey, group_end) - np.searchsorted(skey, key, "left")
    arrived_after = np.searchsorted(akey, group_end) - np.searchsorted(akey, key, "right")
    arrived = np.searchsorted(akey, group_end) - np.searchsorted(akey, r_seq * width)
    competing = int(np.count_nonzero(arrived_after > n_from_t))
    # Each timeout's retransmission: the first at or after it.
    i = np.searchsorted(rt, np.asarray(timeouts, dtype=np.int64), "left")
    i = i[i < len(rt)]
    spurious = int(np.count_nonzero(arrived[i] > n_from_t[i]))
    return spurious, competing
