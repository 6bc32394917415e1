"""Trace tables: columns from the Rust core turned into a polars DataFrame."""

from __future__ import annotations

from . import _core


def trace_frame(cols: dict):
    """Columns: time_ns (Int64), time_s (Float64), layer, event, node, dir
    (Categorical), flow, seq, ack, len, value (Int64). `flow`, `seq` and `ack` are
    null where they do not apply (a frame that carries no packet's bytes, a TCP
    variable change, a segment without the ACK flag)."""
    import numpy as np
    import polars as pl

    def cat(name: str, names: list[str]):
        codes = np.frombuffer(cols[name], dtype=np.uint8)
        return pl.Series(name, np.asarray(names, dtype=object)[codes] if len(codes) else [], dtype=pl.Utf8).cast(
            pl.Categorical
        )

    def i64(name: str):
        return pl.Series(name, np.frombuffer(cols[name], dtype="<i8"), dtype=pl.Int64)

    t = i64("time_ns")
    # Rows are recorded in event order; a few (channel transitions) are stamped with
    # an earlier time than the event that revealed them: a stable sort fixes that.
    absent = ("flow", "seq", "ack")  # -1 in the core's columns: null here
    return (
        pl.DataFrame(
            [
                t,
                # Times 1e-9, as the core's trace.parquet writer computes it.
                pl.Series("time_s", np.frombuffer(cols["time_ns"], dtype="<i8") * 1e-9, dtype=pl.Float64),
                cat("layer", _core.TRACE_LAYERS),
                cat("event", _core.TRACE_EVENTS),
                cat("node", _core.TRACE_NODES),
                cat("dir", _core.TRACE_DIRS),
                i64("flow"),
                i64("seq"),
                i64("ack"),
                i64("len"),
                i64("value"),
            ]
        )
        .with_columns([pl.when(pl.col(c) == -1).then(None).otherwise(pl.col(c)).alias(c) for c in absent])
        .sort("time_ns", maintain_order=True)
    )


_CATEGORICAL = ("layer", "event", "node", "dir")


def scan_trace(path, layer: str | None = None):
    """A trace.parquet as a polars LazyFrame with the columns of `trace_frame`
    (layer, event, node, dir Categorical), in time order; with `layer`, only that
    layer's rows (filtered before anything else, so only they are decoded further).

    The core writes the file in time order and says so in its metadata
    (`thinwire.sorted`); a file without the key (written by polars: the emulator,
    the proxy daemon, earlier versions) was sorted before writing. Only a file marked
    unsorted (a channel direction that stayed unrevealed for long,
    src/outputs.rs) is sorted here."""
    import polars as pl

    lf = pl.scan_parquet(path)
    if layer is not None:
        lf = lf.filter(pl.col("layer").cast(pl.Utf8) == layer)
    lf = lf.with_columns([pl.col(c).cast(pl.Categorical) for c in _CATEGORICAL])
    if pl.read_parquet_metadata(path).get("thinwire.sorted") == "false":
        lf = lf.sort("time_ns", maintain_order=True)
    return lf


def read_trace(path, layer: str | None = None):
    """A trace.parquet as the DataFrame `trace_frame` gives (see `scan_trace`);
    with `layer`, only that layer's rows."""
    return scan_trace(path, layer).collect()


def syn_fin_retransmits(tcp) -> tuple[int, int]:
    """(SYNs or SYN-ACKs, FINs without data) sent again in a flow's `tcp` trace rows,
    by either end host (the send events' `value` is the segment's TCP flags; the
    proxy's own rows are left out): `tcp_syn_retransmits` and `tcp_fin_retransmits`
    as the simulator counts them (thinwire.fields)."""
    import polars as pl

    ctl = tcp.filter((pl.col("event") == "retransmit") & (pl.col("len") == 0) & (pl.col("node") != "proxy"))
    syn = ctl.filter((pl.col("value") & 0x02) != 0).height
    fin = ctl.filter((pl.col("value") & 0x03) == 0x01).height
    return syn, fin
