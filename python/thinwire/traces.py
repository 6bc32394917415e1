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
                (t.cast(pl.Float64) / 1e9).alias("time_s"),
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
