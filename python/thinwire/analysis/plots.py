"""MultiTracer plots: time/sequence (`tsq`), RTT/SRTT/RTO (`rtt`), congestion window
(`cwnd`) and short-time goodput histograms (`goodput`), for a simulated run or a
capture. Static output via matplotlib (.png, .pdf, .svg); .html gives the
interactive viewer (`thinwire.analysis.html`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..figures import save, tidy
from .series import COLORS, TSQ_LAYERS, Series, capture_outstanding, capture_tsq, sim_tsq

KINDS = ("tsq", "rtt", "cwnd", "goodput")
FORMATS = (".png", ".pdf", ".svg", ".html")


def rfc6298(samples_s: np.ndarray, min_rto_s: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """SRTT and RTO after each RTT sample, per RFC 6298 (alpha 1/8, beta 1/4, K 4)."""
    srtt = np.empty(len(samples_s))
    rto = np.empty(len(samples_s))
    s = v = None
    for i, r in enumerate(samples_s):
        if s is None:
            s, v = r, r / 2
        else:
            v = 0.75 * v + 0.25 * abs(s - r)
            s = 0.875 * s + 0.125 * r
        srtt[i] = s
        rto[i] = max(s + 4 * v, min_rto_s)
    return srtt, rto


def build_series(
    src,
    kind: str,
    flow: int | None = None,
    conn: int = 0,
    direction: int | None = None,
    windows=(10.0, 100.0, 1000.0),
    max_rate_Bps: float | None = None,
    sender_state: str | Path | None = None,
) -> tuple[list[Series], dict]:
    """The series of one plot and its labels (title, xlabel, ylabel). For captures,
    `sender_state` names an `ss -tin` log or tcp_probe output (see sender_state.py)
    that supplies the TCP sender's cwnd, ssthresh, SRTT and RTO."""
    import polars as pl

    from .capture import CaptureAnalysis
    from .goodput import window_goodput

    is_cap = isinstance(src, CaptureAnalysis)
    if is_cap:
        if direction is None:
            c = src.connection_list[conn] if conn < len(src.connection_list) else None
            direction = 0 if c is None or c["a2b"]["unique_bytes"] >= c["b2a"]["unique_bytes"] else 1
        label = f"{src.path.name}, connection {conn} ({'a->b' if direction == 0 else 'b->a'})"
    else:
        if flow is None:
            flows = src.tcp_flows()
            if not flows:
                raise ValueError("the run has no TCP flows to plot")
            flow = flows[0]
            if src.summary.get("kind") == "emulation":
                # Real connections are numbered as they appear (a page's small
                # first object, ...): the one that carried the most data.
                sizes = dict(zip(src.flows["id"].to_list(), src.flows["bytes_delivered"].to_list()))
                flow = max(flows, key=lambda f: (sizes.get(f) or 0, -f))
        label = f"{src.summary.get('scenario', 'run')}, flow {flow}"
    meta = {"title": label}
    state = None
    if sender_state is not None:
        if not is_cap:
            raise ValueError("--sender-state applies to captures; a simulated run traces its sender itself")
        from .sender_state import sender_series

        state, meta["note"] = sender_series(sender_state, src, conn, direction)
    if kind == "tsq":
        s = capture_tsq(src, conn, direction) if is_cap else sim_tsq(src, flow)
        if state:
            s.append(Series("TcpSnd_cwnd", *state["cwnd"], "step"))
        meta.update(xlabel="time (s)", ylabel="sequence number (bytes)")
        return s, meta
    if kind == "rtt":
        meta.update(xlabel="time (s)", ylabel="RTT, SRTT and RTO (s)")
        if is_cap:
            r = src.rtt.filter((pl.col("conn") == conn) & (pl.col("dir") == direction))
            t0 = src.packets.filter(pl.col("conn") == conn)["time_s"].min()
            x = r["time_s"].to_numpy() - (t0 or 0)
            y = r["rtt_s"].to_numpy()
            out = [Series("RTT", x, y, "points", "s")]
            if state:
                out.append(Series("SRTT", *state["srtt"], "step", "s"))
                if "rto" in state:
                    out.append(Series("RTO", *state["rto"], "step", "s"))
                return out, meta
            srtt, rto = rfc6298(y)
            meta["note"] = "SRTT and RTO estimated from the samples (RFC 6298, minimum RTO 200 ms)"
            return out + [Series("SRTT", x, srtt, "step", "s"), Series("RTO", x, rto, "step", "s")], meta
        out = []
        t0 = src._need_trace("tcp").filter(pl.col("flow") == flow)["time_ns"].min()
        for var, name in (("srtt", "SRTT"), ("rto", "RTO")):
            v = src.sender_vars(flow, var)
            out.append(Series(name, v["time_s"].to_numpy() - t0 / 1e9, v["value"].to_numpy() / 1e9, "step", "s"))
        link = src.layer("link")
        if link.height and link.filter(pl.col("event") == "packet_deliver").height:
            from .simtrace import _flow_dir

            d = _flow_dir(src._need_trace("tcp").filter(pl.col("flow") == flow), flow)
            q = src.queue_delay(flow).filter(pl.col("dir") == ("down", "up")[d])
            out.append(Series("link_delay", q["time_s"].to_numpy() - t0 / 1e9, q["delay_s"].to_numpy(), "points", "s"))
            meta["note"] = (
                "link_delay: time each data packet of the flow spent in the link layer (queueing, ARQ, transmission)"
            )
        return out, meta
    if kind == "cwnd":
        meta.update(xlabel="time (s)", ylabel="bytes")
        if is_cap:
            if state:
                return [
                    Series("TcpSnd_cwnd", *state["cwnd"], "step"),
                    Series("TcpSnd_ssthresh", *state["ssthresh"], "step"),
                    capture_outstanding(src, conn, direction),
                ], meta
            meta["note"] = "a capture shows outstanding data; give --sender-state (ss or tcp_probe) for cwnd"
            return [capture_outstanding(src, conn, direction)], meta
        t0 = src._need_trace("tcp").filter(pl.col("flow") == flow)["time_ns"].min() / 1e9
        out = []
        for var, name in (("cwnd", "TcpSnd_cwnd"), ("ssthresh", "TcpSnd_ssthresh")):
            v = src.sender_vars(flow, var)
            y = v["value"].to_numpy().astype(float)
            y[y > 1e12] = np.nan  # "infinite" initial ssthresh
            out.append(Series(name, v["time_s"].to_numpy() - t0, y, "step"))
        o = src.outstanding(flow)
        out.append(Series("outstanding", o["time_s"].to_numpy() - t0, o["bytes"].to_numpy().astype(float), "step"))
        return out, meta
    if kind == "goodput":
        if is_cap:
            p = src.packets.filter((pl.col("conn") == conn) & (pl.col("dir") == 1 - direction) & (pl.col("ack") >= 0))
            t, b = p["time_s"].to_numpy(), np.maximum.accumulate(p["ack"].to_numpy()) if p.height else np.zeros(0)
        else:
            dl = src.delivered(flow)
            t, b = dl["time_s"].to_numpy(), dl["bytes"].to_numpy()
        out = []
        span = float(t[-1] - t[0]) if len(t) else 0.0
        fits = [w for w in windows if w <= span]
        if not fits:
            raise ValueError(
                f"{label}: its {span:.3g} s of data are shorter than the smallest window ({min(windows):g} s); "
                "give shorter windows (--windows 1 5)"
            )
        if len(fits) < len(windows):
            left = ", ".join(f"{w:g} s" for w in windows if w > span)
            meta["note"] = f"no panel for {left} windows: longer than the connection's {span:.3g} s of data"
        for w in fits:
            v = window_goodput(t, b, w, max_rate_Bps)
            out.append(
                Series(
                    f"{w:g} s windows", np.arange(len(v), dtype=float), v, "hist", "fraction" if max_rate_Bps else "B/s"
                )
            )
        meta.update(
            xlabel=("goodput (fraction of %g B/s)" % max_rate_Bps) if max_rate_Bps else "goodput (bytes/s)",
            ylabel="share of windows",
        )
        return out, meta
    raise ValueError(f"plot kind {kind!r}: use one of {', '.join(KINDS)}")


def tick_label(v: float) -> str:
    """A tick's text, as the HTML viewer writes it (html.py's `fmt`): 1.2M, 12.3k,
    250, 2.5, 0.025 (trailing zeros dropped); one format in every output."""

    def trim(t: str) -> str:
        return t.rstrip("0").rstrip(".") if "." in t else t

    a = abs(v)
    if v == 0:
        return "0"
    if a >= 1e6:
        return trim(f"{v / 1e6:.2f}") + "M"
    if a >= 1e4:
        return trim(f"{v / 1e3:.1f}") + "k"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 1:
        return trim(f"{v:.2f}")
    t = f"{v:#.3g}"
    return t if "e" in t else trim(t)


def _ticks(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    f = FuncFormatter(lambda v, _pos: tick_label(v))
    ax.xaxis.set_major_formatter(f)
    ax.yaxis.set_major_formatter(f)


def _draw(ax, s: Series):
    c = COLORS.get(s.name, None)
    if s.style == "points":
        mk = "x" if "rexmt" in s.name else ("." if len(s.x) > 2000 else "o")
        ax.plot(s.x, s.y, mk, ms=2.5 if mk != "x" else 4, color=c, label=s.label, lw=0, mew=0.8 if mk == "x" else 0)
    elif s.style == "step":
        ax.step(s.x, s.y, where="post", color=c, label=s.label, lw=0.9)
    elif s.style == "line":
        ax.plot(s.x, s.y, color=c, label=s.label, lw=0.9)
    elif s.style == "events":
        # Time marks: a triangle at the foot of the axes and a faint line across,
        # whatever the value axis shows.
        from matplotlib.transforms import blended_transform_factory

        tr = blended_transform_factory(ax.transData, ax.transAxes)
        # Clipped to the axes: marks of a zoomed-out time stay out of the figure.
        ax.plot(s.x, np.full(len(s.x), 0.04), "^", color=c, label=s.label, ms=7, transform=tr)
        for x in s.x:
            ax.axvline(x, color=c, lw=0.6, alpha=0.35)


def render(series: list[Series], meta: dict, out: str | Path, kind: str) -> Path:
    """Writes a static figure (.png/.pdf/.svg) or the interactive viewer (.html)."""
    out = Path(out)
    if out.suffix.lower() == ".html":
        from .html import write_html

        return write_html(series, meta, out, kind)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if kind == "goodput":
        fig, axes = plt.subplots(len(series), 1, figsize=(6.4, 1.9 * len(series) + 0.6), sharex=True, squeeze=False)
        top = max([float(s.y.max()) for s in series if len(s.y)] or [1.0])
        for ax, s in zip(axes[:, 0], series):
            v = s.y
            hi = 1.0 if s.unit == "fraction" else top
            w = np.ones_like(v) / max(len(v), 1)
            ax.hist(v, bins=50, range=(0, max(hi, 1e-12)), weights=w, color="#1f4e9c")
            ax.set_ylabel(meta["ylabel"], fontsize=8)
            ax.set_title(f"{s.name} (n = {len(v)})", fontsize=9)
            _ticks(ax)
        axes[-1, 0].set_xlabel(meta["xlabel"])
        fig.suptitle(meta["title"], fontsize=10)
    else:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for s in series:
            if len(s.x):
                _draw(ax, s)
        ax.set_xlabel(meta["xlabel"])
        ax.set_ylabel(meta["ylabel"])
        ax.set_title(meta["title"], fontsize=10)
        ax.grid(alpha=0.3)
        _ticks(ax)
        ax.legend(fontsize=7, loc="upper left", markerscale=2)
        if meta.get("xlim"):
            a, b = meta["xlim"]
            ax.set_xlim(a, b)
            ys = [s.y[(s.x >= a) & (s.x <= b)] for s in series if s.style != "events" and len(s.x)]
            ys = np.concatenate([y[np.isfinite(y)] for y in ys]) if ys else np.array([])
            if ys.size:
                lo, hi = float(ys.min()), float(ys.max())
                pad = (hi - lo) * 0.05 or 1.0
                ax.set_ylim(lo - pad, hi + pad)
    if meta.get("note"):
        import textwrap

        fig.text(
            0.01, 0.005, "\n".join(textwrap.wrap(meta["note"], 140)), ha="left", va="bottom", fontsize=6, color="#555"
        )
        tidy(fig, rect=(0, 0.04, 1, 1))
    else:
        tidy(fig)
    try:
        save(fig, out, dpi=150)
    finally:
        plt.close(fig)
    return out


def plot(
    src,
    kind: str = "tsq",
    out: str | Path | list[str | Path] = "plot.png",
    layers: list[str] | None = None,
    title: str | None = None,
    xlim: tuple[float, float] | None = None,
    **kw,
) -> Path:
    """Builds and writes one plot. `src` is a SimRun, a CaptureAnalysis or a path;
    `title` replaces the default (scenario or capture name and flow); `xlim` zooms
    to a time range (seconds), fitting the value axis to what is in it. `out` may
    be a list (e.g. a PNG and a PDF of one figure): the first path is returned."""
    from . import open_path

    if isinstance(src, (str, Path)):
        src = open_path(src)
    series, meta = build_series(src, kind, **kw)
    if title:
        meta["title"] = title
    if xlim:
        meta["xlim"] = xlim
    if layers:
        names = {s.name for s in series}
        unknown = [l for l in layers if l not in names and l not in TSQ_LAYERS]
        if unknown:
            raise ValueError(f"layer {unknown[0]!r} is not one of {', '.join(s.name for s in series)}")
        series = [s for s in series if s.name in layers]
    if not any(len(s.x) for s in series):
        # Once an empty figure with matplotlib warnings on stderr.
        what = meta.get("title") or "the selection"
        raise ValueError(f"{what}: no data to plot (a connection without data, or layers that recorded nothing)")
    outs = out if isinstance(out, (list, tuple)) else [out]
    written = [render(series, meta, o, kind) for o in outs]
    return written[0]
