"""Writing output files so that none is ever left half-written.

Every file a command writes goes to a temporary name beside it (same folder, same
suffix, so writers that choose a format by suffix still do) and is renamed over the
final name only when complete; if writing fails (a full disk, a read-only folder)
the temporary file is removed and the error raised, and the CLI reports it as one
line with exit status 2.
"""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary path to write; renames it to `path` on success."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.stem}.tmp{os.getpid()}{final.suffix}")
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: str | os.PathLike, data: bytes | memoryview) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_parquet(df, path: str | os.PathLike) -> None:
    """A DataFrame to Parquet through Python's file I/O, so that a failed write
    raises OSError naming the file (polars' own writer reports a full disk as an
    unrelated "Invalid thrift" error)."""
    buf = io.BytesIO()
    df.write_parquet(buf)
    write_bytes(path, buf.getbuffer())


# Every file a run directory can hold (`RunResult.write` and `thinwire run --plot`);
# a new run into the directory removes those it does not write itself.
RUN_OUTPUTS = (
    "summary.json",
    "flows.parquet",
    "trace.parquet",
    "server.pcap",
    "mobile.pcap",
    "mm-down.log",
    "mm-up.log",
    "tsq.png",
    "tsq.html",
)

# What `thinwire emulate --out` and `thinwire proxy --out` write: streamed while
# they run, so not renamed into place; instead what an earlier run left under these
# names is removed before the new one starts, so a directory never mixes two runs.
EMULATE_OUTPUTS = (
    "inputs.pcapng",
    "schedule.log",
    "capture.pcapng",
    "mm-down.log",
    "mm-up.log",
    "mobile.pcap",
    "server.pcap",
    "emulation.json",
    "trace.parquet",
    "flows.parquet",
    "summary.json",
)
PROXY_OUTPUTS = ("capture.pcapng", "trace.rows", "trace.parquet", "flows.parquet", "summary.json", "daemon.log")


def clear_outputs(directory: str | os.PathLike, names: tuple[str, ...]) -> None:
    """Creates `directory` and removes the outputs `names` an earlier run left there."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).unlink(missing_ok=True)
