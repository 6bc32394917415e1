"""Frame-error traces (seed 000 §4.1, §6): export a run's channel decisions as a
trace that `model = "trace"` replays exactly, and fit a Gilbert–Elliott model to
a trace.

    thinwire channel-trace RUN_DIR [-o FILE]
    thinwire fit-channel FILE [--direction down] [--slot 20ms] [--plot fit.png]

The file format is described in `crates/thinwire/src/channel/trace.rs` and
docs/scenario.md ("Frame-error traces"): per direction either `frames` and the
0-based `lost` indices, or a `duration` and `bad` intervals; optionally
`frame_time` and `frame_bits` (what one frame took on the air), which let the fit
be written as thinwire's time-based two-state channel."""

from __future__ import annotations

import math
from pathlib import Path

import tomllib

from . import _core

# Link-layer events of a frame handed to the radio: each got one channel decision,
# in this order per direction; a `frame_lost` row follows a lost one.
SENT = ("frame_send", "frame_retransmit", "ack_send", "nack_send", "status_send", "idle_send", "reset")
DIRS = ("down", "up")


class TraceError(ValueError):
    """A run directory or a trace file cannot be used; the message says why."""


def export(run_dir: str | Path) -> str:
    """The channel decisions of a run directory (`thinwire run --out`, `thinwire
    emulate --out`) as a frame-error trace file's text."""
    import json

    import polars as pl

    from .traces import read_trace

    d = Path(run_dir)
    path = d / "trace.parquet"
    if not path.is_file():
        raise TraceError(f"{d}: no trace.parquet (a run directory of 'thinwire run --out' or 'emulate --out')")
    t = read_trace(path).filter(pl.col("layer") == "link")
    if t.height == 0:
        raise TraceError(f"{path}: no link-layer rows; run with --trace link (--out records it by default)")
    rates = {}
    summary = d / "summary.json"
    if summary.is_file():
        try:
            link = json.loads(summary.read_text()).get("link") or {}
            rates = {k: (link.get(k) or {}).get("rate_bps") for k in DIRS}
        except (OSError, ValueError):
            rates = {}
    lines = [
        "# thinwire frame-error trace: the channel decisions of one run, by frame index",
        f"# from {d.resolve()}",
        '# replay: [wireless.channel] model = "trace", file = "<this file>"',
    ]
    ev = t["event"].cast(pl.Utf8).to_list()
    dirs = t["dir"].cast(pl.Utf8).to_list()
    lens = t["len"].to_list()
    for name in DIRS:
        index, lost, bits = 0, [], 0
        for e, dd, n in zip(ev, dirs, lens):
            if dd != name:
                continue
            if e in SENT:
                index += 1
                bits += 8 * (n or 0)
            elif e == "frame_lost":
                lost.append(index - 1)
        lines.append(f"\n[{name}]")
        lines.append(f"frames = {index}")
        if index:
            mean_bits = round(bits / index)
            lines.append(f"frame_bits = {mean_bits}")
            rate = rates.get(name)
            if rate:
                lines.append(f'frame_time = "{mean_bits / rate * 1e3:.6g}ms"')
        lines.append("lost = [" + ", ".join(map(str, lost)) + "]")
    return "\n".join(lines) + "\n"


def _duration_s(v) -> float:
    """A duration of a trace file ("20ms", or seconds as a number) in seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
    s = str(v).strip()
    for u in sorted(units, key=len, reverse=True):
        if s.endswith(u):
            try:
                return float(s[: -len(u)]) * units[u]
            except ValueError:
                break
    raise TraceError(f'{v!r} is not a duration such as "20ms"')


def read(path: str | Path, direction: str = "down", slot: float | None = None) -> tuple[bytes, dict]:
    """One direction of a trace file as frame fates (a byte per frame, 1 = lost)
    and its metadata. A trace by time is cut into slots of `slot` seconds, a slot
    lost when it starts inside a bad interval. A file of nothing but 0s and 1s
    (a measured block-error log, one fate per frame) is read as it is."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"{p}: {e.strerror if isinstance(e, OSError) else 'not UTF-8 text'}") from None
    plain = "".join(text.split())
    if plain and set(plain) <= {"0", "1"}:
        # A measured block-error log: one fate per frame, 1 = lost (whitespace ignored).
        return bytes(int(c) for c in plain), {}
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TraceError(f"{p}: not a frame-error trace ({e})") from None
    t = doc.get(direction)
    if not isinstance(t, dict):
        raise TraceError(f"{p}: no [{direction}] table")
    meta = {k: t[k] for k in ("frame_bits", "frame_time") if k in t}
    if "frames" in t:
        n = int(t["frames"])
        fates = bytearray(n)
        for i in t.get("lost", []):
            if not 0 <= int(i) < n:
                raise TraceError(f"{p}: [{direction}] lost index {i} is not below frames = {n}")
            fates[int(i)] = 1
        return bytes(fates), meta
    if "duration" in t:
        if slot is None:
            raise TraceError(f"{p}: [{direction}] is a trace by time: give --slot (a frame's time, e.g. 20ms)")
        dur = _duration_s(t["duration"])
        n = int(dur / slot)
        fates = bytearray(n)
        for a, b in t.get("bad", []):
            lo, hi = _duration_s(a), _duration_s(b)
            for k in range(math.ceil(lo / slot), min(n, math.ceil(hi / slot))):
                fates[k] = 1
        meta.setdefault("frame_time", f"{slot * 1e3:g}ms")
        return bytes(fates), meta
    raise TraceError(f"{p}: [{direction}] needs frames (and lost) or duration (and bad)")


def runs(fates: bytes) -> tuple[list[int], list[int]]:
    """Lengths of the runs of losses (bursts) and of deliveries (gaps)."""
    bursts, gaps = [], []
    i, n = 0, len(fates)
    while i < n:
        j = i
        while j < n and fates[j] == fates[i]:
            j += 1
        (bursts if fates[i] else gaps).append(j - i)
        i = j
    return bursts, gaps


def fit(fates: bytes, meta: dict | None = None) -> dict:
    """The Gilbert–Elliott fit (maximum likelihood) with the run statistics of
    the trace and of a long sequence drawn from the fit; with the frame's airtime
    and bits, thinwire's two-state channel that has the same means."""
    if len(fates) < 2:
        raise TraceError("a trace of fewer than two frames cannot be fitted")
    m = _core.fit_gilbert_elliott(fates)
    drawn = _core.sample_gilbert_elliott(m["p"], m["r"], m["eg"], m["eb"], max(len(fates), 200_000), 1)
    out = {"frames": len(fates), "loss_ratio": sum(fates) / len(fates), "fit": m}
    for name, seq in (("trace", fates), ("model", drawn)):
        b, g = runs(seq)
        out[name] = {
            "bursts": b,
            "gaps": g,
            "mean_burst": sum(b) / len(b) if b else 0.0,
            "mean_gap": sum(g) / len(g) if g else 0.0,
            "loss_ratio": sum(seq) / len(seq),
        }
    meta = meta or {}
    if "frame_time" in meta and "frame_bits" in meta:
        ft, bits = _duration_s(meta["frame_time"]), int(meta["frame_bits"])

        def ber(e: float) -> float:
            return 1.0 - (1.0 - min(e, 1 - 1e-12)) ** (1.0 / bits)

        out["two_state"] = {
            "good": {"ber": ber(m["eg"]), "mean_s": ft / m["p"]},
            "bad": {"ber": ber(m["eb"]), "mean_s": ft / m["r"]},
        }
    return out


def two_state_toml(res: dict, direction: str) -> str | None:
    """The fit as a scenario's `[wireless.<direction>.channel]` table."""
    ts = res.get("two_state")
    if not ts:
        return None
    g, b = ts["good"], ts["bad"]
    return (
        f'[wireless.{direction}.channel]\nmodel = "two-state"\n'
        f'good = {{ ber = {g["ber"]:.4g}, mean = "{g["mean_s"]:.6g}s" }}\n'
        f'bad = {{ ber = {b["ber"]:.4g}, mean = "{b["mean_s"]:.6g}s" }}\n'
    )


def plot(res: dict, path: str | Path, title: str = "") -> None:
    """Burst- and gap-length distributions (complementary CDFs) of the trace and
    of the fitted model, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, key, label in (
        (axes[0], "bursts", "burst length (lost frames in a row)"),
        (axes[1], "gaps", "gap length (delivered frames in a row)"),
    ):
        for name, style in (("trace", dict(color="#1f77b4", lw=2)), ("model", dict(color="#d62728", lw=1.5, ls="--"))):
            v = np.sort(np.asarray(res[name][key]))
            if v.size == 0:
                continue
            ccdf = 1.0 - np.arange(v.size) / v.size
            what = "trace" if name == "trace" else "Gilbert–Elliott fit"
            ax.step(v, ccdf, where="post", label=f"{what} (mean {res[name]['mean_' + key[:-1]]:.3g})", **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("fraction of runs ≥ x")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    f = res["fit"]
    fig.suptitle(
        (title + "\n" if title else "")
        + f"p = {f['p']:.3g}, r = {f['r']:.3g}, loss | good = {f['eg']:.3g}, loss | bad = {f['eb']:.3g}",
        fontsize=10,
    )
    from .figures import save

    save(fig, path, dpi=150)
    plt.close(fig)
