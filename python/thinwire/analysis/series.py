"""The named series of MultiTracer's plots (seed 000 §4.5), built from a simulated
run or a capture, shared by the static (matplotlib) and interactive (HTML) plots.

| name | what |
|---|---|
| TcpSnd_data | data segments leaving the TCP sender (sequence number of the first byte) |
| TcpSnd_rexmt | the TCP retransmissions among them |
| TcpSnd_ack | ACKs arriving at the TCP sender (next expected sequence number) |
| TcpSnd_cwnd | the sender's congestion window (bytes) |
| TcpRcv_data | data segments arriving at the TCP receiver |
| TcpRcv_ack | ACKs leaving the TCP receiver |
| RlpSnd_data | link-layer data frames leaving the link sender (cumulative frame bytes) |
| RlpSnd_rexmt | link-layer retransmissions (at the height of the frame's first transmission) |
| RlpSnd_rst | link resets (time/event marks) |
| PxySnd_data | segments the split-TCP proxy sends on the wireless leg (scheduler picks) |
| PxySnd_rexmt | the proxy's retransmissions among them |
| PxySnd_wnd | the window the proxy advertises to the wired sender (bytes) |
| Pxy_stall | the proxy's aggregate timer expiring (link stall; time/event marks) |

As in the seed, the RlpSnd_*, TcpSnd_* and TcpRcv_* groups are offset from each
other (default 10,000 bytes: TcpRcv at 0, TcpSnd at +offset, PxySnd — with a
proxy — at +2 offset, RlpSnd above them) so that they do not overlap; cwnd and the
proxy's advertised window are drawn without offset. Times are seconds from the
flow's (connection's) first packet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# One colour per series, the same in every plot.
COLORS = {
    # A hue per group (TCP sender: blue/red/green; receiver: cyan/brown; link:
    # orange; proxy: magenta/gold; sender variables: purple), no two series that
    # share a plot alike (tests/test_plots.py checks their distance).
    "TcpSnd_data": "#1f4e9c",
    "TcpSnd_rexmt": "#d62728",
    "TcpSnd_ack": "#2ca02c",
    "TcpSnd_cwnd": "#7b3fa0",
    "TcpRcv_data": "#17becf",
    "TcpRcv_ack": "#8c564b",
    "RlpSnd_data": "#ff7f0e",
    "RlpSnd_rexmt": "#7f3b08",
    "RlpSnd_rst": "#000000",
    "TcpSnd_ssthresh": "#c9a0dc",
    "RTT": "#1f4e9c",
    "SRTT": "#2ca02c",
    "RTO": "#d62728",
    "PxySnd_data": "#e7298a",
    "PxySnd_rexmt": "#67001f",
    "PxySnd_wnd": "#c8a000",
    "Pxy_stall": "#525252",
    "outstanding": "#7f7f7f",
    "link_delay": "#ff7f0e",
    "fast_retransmit": "#f781bf",
    "timeout": "#0000ff",
    "spurious_timeout": "#b2df8a",
    "loss_probe": "#4292c6",
    "undo": "#66c2a5",
    "ecn_reduction": "#fdae61",
    "hystart_exit": "#9e9ac8",
}
# The sender's events a simulated run records (marked on the time/sequence plot at
# the cumulative ACK of their moment).
SIM_EVENTS = ("fast_retransmit", "timeout", "loss_probe", "undo", "ecn_reduction", "hystart_exit")
TSQ_LAYERS = [
    "TcpSnd_data",
    "TcpSnd_rexmt",
    "TcpSnd_ack",
    "TcpSnd_cwnd",
    "TcpRcv_data",
    "TcpRcv_ack",
    "RlpSnd_data",
    "RlpSnd_rexmt",
    "RlpSnd_rst",
    "PxySnd_data",
    "PxySnd_rexmt",
    "PxySnd_wnd",
    "Pxy_stall",
]


@dataclass
class Series:
    name: str
    x: np.ndarray
    y: np.ndarray
    style: str  # "points" | "step" | "line" | "events"
    unit: str = "bytes"
    # Added to the values to keep the groups apart (time/sequence plots); shown in
    # the legend, so that a reader can take it off again.
    offset: float = 0.0

    @property
    def label(self) -> str:
        """The legend's name: with its offset, e.g. "TcpSnd_data (+10 kB)"."""
        return f"{self.name} (+{self.offset / 1000:g} kB)" if self.offset else self.name


def _np(col) -> np.ndarray:
    return col.to_numpy()


def sim_tsq(run, flow: int, offset: int = 10_000) -> list[Series]:
    import polars as pl

    from .simtrace import DATA_EVENTS, _flow_dir

    tcp = run._need_trace("tcp").filter(pl.col("flow") == flow)
    if tcp.height == 0:
        raise ValueError(
            f"flow {flow} has no TCP trace events (TCP flows: {', '.join(map(str, run.tcp_flows())) or 'none'})"
        )
    d = _flow_dir(tcp, flow)
    snd, rcv = ("server", "mobile") if d == 0 else ("mobile", "server")
    t0 = tcp["time_ns"].min()
    ts = lambda df: (df["time_ns"].to_numpy() - t0) / 1e9
    out = []
    sdata = tcp.filter((pl.col("node") == snd) & pl.col("event").is_in(DATA_EVENTS) & (pl.col("len") > 0))
    out.append(Series("TcpSnd_data", ts(sdata), _np(sdata["seq"]) + offset, "points", offset=offset))
    rex = sdata.filter(pl.col("event") == "retransmit")
    out.append(Series("TcpSnd_rexmt", ts(rex), _np(rex["seq"]) + offset, "points", offset=offset))
    sack = tcp.filter((pl.col("node") == snd) & (pl.col("event") == "recv") & (pl.col("ack") >= 0))
    out.append(Series("TcpSnd_ack", ts(sack), _np(sack["ack"]) + offset, "step", offset=offset))
    cw = tcp.filter((pl.col("node") == snd) & (pl.col("event") == "cwnd"))
    out.append(Series("TcpSnd_cwnd", ts(cw), _np(cw["value"]).astype(float), "step"))
    at, ack = ts(sack), _np(sack["ack"]) + offset
    for k in SIM_EVENTS:
        e = tcp.filter((pl.col("node") == snd) & (pl.col("event") == k))
        if e.height and len(at):
            i = np.clip(np.searchsorted(at, ts(e), side="right") - 1, 0, len(at) - 1)
            out.append(Series(k, ts(e), ack[i].astype(float), "events"))
    rdata = tcp.filter((pl.col("node") == rcv) & (pl.col("event") == "recv") & (pl.col("len") > 0))
    out.append(Series("TcpRcv_data", ts(rdata), _np(rdata["seq"]).astype(float), "points"))
    rack = tcp.filter((pl.col("node") == rcv) & pl.col("event").is_in(DATA_EVENTS) & (pl.col("ack") >= 0))
    out.append(Series("TcpRcv_ack", ts(rack), _np(rack["ack"]).astype(float), "step"))
    rlp_at = 2 * offset
    if run.has_trace():
        px = run.layer("proxy").filter(pl.col("flow") == flow)
        if px.height and d == 0:
            rlp_at = 3 * offset
            picks = px.filter((pl.col("event") == "pick") & (pl.col("len") > 0))
            out.append(Series("PxySnd_data", ts(picks), _np(picks["seq"]) + 2.0 * offset, "points", offset=2 * offset))
            rx = px.filter((pl.col("event") == "retransmit") & (pl.col("len") > 0))
            out.append(Series("PxySnd_rexmt", ts(rx), _np(rx["seq"]) + 2.0 * offset, "points", offset=2 * offset))
            wnd = px.filter(pl.col("event") == "adv_window")
            out.append(Series("PxySnd_wnd", ts(wnd), _np(wnd["value"]).astype(float), "step"))
            # Stalls belong to the aggregate, not to a flow: those within the flow's life.
            st = run.layer("proxy").filter(
                (pl.col("event") == "stall")
                & (pl.col("value") == 1)
                & pl.col("time_ns").is_between(t0, tcp["time_ns"].max())
            )
            if st.height:
                out.append(Series("Pxy_stall", ts(st), np.zeros(st.height), "events"))
        all_link = run.layer("link")
        if all_link.height == 0:
            return out
        all_link = all_link.filter(pl.col("dir") == ("down", "up")[d])
        link = all_link.filter(pl.col("flow") == flow)
        first = link.filter(pl.col("event") == "frame_send")
        if first.height:
            y = np.concatenate([[0], np.cumsum(_np(first["len"]))[:-1]]) + rlp_at
            out.append(Series("RlpSnd_data", ts(first), y.astype(float), "points", offset=rlp_at))
            pos = dict(zip(first["seq"].to_list(), y.tolist()))
            rx = link.filter(pl.col("event") == "frame_retransmit")
            ry = np.array([pos.get(s, np.nan) for s in rx["seq"].to_list()], dtype=float)
            out.append(Series("RlpSnd_rexmt", ts(rx), ry, "points", offset=rlp_at))
        # A reset belongs to the link, not to a flow: every reset frame sent in the
        # flow's data direction (SABM, UA, DISC).
        rst = (
            all_link.filter(pl.col("event") == "reset")
            if "reset" in set(all_link["event"].cast(pl.Utf8).unique().to_list())
            else all_link.clear()
        )
        if rst.height:
            out.append(Series("RlpSnd_rst", ts(rst), np.zeros(rst.height), "events"))
    return out


def capture_tsq(cap, conn: int, direction: int) -> list[Series]:
    """Time/sequence series of one connection direction as seen at the capture point."""
    import polars as pl

    p = cap.packets.filter(pl.col("conn") == conn)
    if p.height == 0:
        raise ValueError(
            f"connection {conn} does not exist (the capture has {len(cap.connection_list)} connections, numbered from 0)"
        )
    t0 = p["time_s"].min()
    data = p.filter((pl.col("dir") == direction) & (pl.col("len") > 0))
    rex = data.filter(pl.col("kind") == "retransmit")
    acks = p.filter((pl.col("dir") == 1 - direction) & (pl.col("ack") >= 0))
    out = [
        Series("TcpSnd_data", _np(data["time_s"]) - t0, _np(data["seq"]).astype(float), "points"),
        Series("TcpSnd_rexmt", _np(rex["time_s"]) - t0, _np(rex["seq"]).astype(float), "points"),
        Series("TcpSnd_ack", _np(acks["time_s"]) - t0, _np(acks["ack"]).astype(float), "step"),
    ]
    ev = cap.events.filter((pl.col("conn") == conn) & (pl.col("dir") == direction))
    for k in ("fast_retransmit", "timeout", "spurious_timeout"):
        e = ev.filter(pl.col("kind") == k)
        if e.height:
            out.append(Series(k, _np(e["time_s"]) - t0, _np(e["seq"]).astype(float), "events"))
    return out


def capture_outstanding(cap, conn: int, direction: int) -> Series:
    """Bytes outstanding (highest sequence sent minus highest ACK seen), at each packet."""
    import polars as pl

    p = cap.packets.filter(pl.col("conn") == conn).sort("time_s", maintain_order=True)
    t0 = p["time_s"].min()
    hi = p.select(
        pl.when((pl.col("dir") == direction) & (pl.col("seq") >= 0))
        .then(pl.col("seq") + pl.col("len"))
        .otherwise(0)
        .cum_max()
    )
    ack = p.select(
        pl.when((pl.col("dir") == 1 - direction) & (pl.col("ack") >= 0)).then(pl.col("ack")).otherwise(0).cum_max()
    )
    v = np.clip(hi.to_series().to_numpy() - ack.to_series().to_numpy(), 0, None)
    return Series("outstanding", _np(p["time_s"]) - t0, v.astype(float), "step")
