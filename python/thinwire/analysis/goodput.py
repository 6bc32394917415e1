"""Short-time goodput (seed 001 §III): in-sequence bytes received in consecutive,
non-overlapping windows of a given length, normalised to a maximum rate.

Input is a cumulative series (time_s, bytes): the receiver's cumulative ACK, which
advances exactly by the in-sequence bytes delivered. The window grid starts at the
first sample; a final partial window is dropped, so every value covers a whole window.
"""

from __future__ import annotations

# More windows than this is a mistake (a window far shorter than a packet's time).
MAX_WINDOWS = 10_000_000


def window_goodput(times, cum_bytes, window_s: float, max_rate_Bps: float | None = None, start_s: float | None = None):
    """Returns a numpy array of goodput per window (fraction of `max_rate_Bps`, or
    bytes/s if it is None)."""
    import numpy as np

    t = np.asarray(times, dtype=float)
    b = np.asarray(cum_bytes, dtype=float)
    if not (np.isfinite(window_s) and window_s > 0):
        raise ValueError(f"goodput window {window_s} s: must be a positive number of seconds")
    if max_rate_Bps is not None and not (np.isfinite(max_rate_Bps) and max_rate_Bps > 0):
        raise ValueError(f"max rate {max_rate_Bps} bytes/s: must be a positive number (or left out)")
    if len(t) == 0:
        return np.zeros(0)
    t0 = t[0] if start_s is None else start_s
    span = t[-1] - t0
    if span / window_s > MAX_WINDOWS:
        raise ValueError(
            f"goodput window {window_s:g} s: {span:.6g} s of data would make {span / window_s:.3g} windows "
            f"(at most {MAX_WINDOWS:,}); use a window of at least {span / MAX_WINDOWS:.3g} s"
        )
    n = int(span // window_s)
    if n <= 0:
        return np.zeros(0)
    edges = t0 + window_s * np.arange(n + 1)
    # cumulative bytes at each edge: last sample at or before the edge
    idx = np.searchsorted(t, edges, side="right") - 1
    at = np.where(idx >= 0, b[np.clip(idx, 0, None)], 0.0)
    per = np.diff(at) / window_s
    return per / max_rate_Bps if max_rate_Bps else per


def goodput_histograms(
    times, cum_bytes, windows=(10.0, 100.0, 1000.0), max_rate_Bps: float | None = None, bins: int = 50
):
    """For each window length: (values, histogram counts, bin edges) over [0, 1] when
    normalised, else over [0, max]."""
    import numpy as np

    out = {}
    for w in windows:
        v = window_goodput(times, cum_bytes, w, max_rate_Bps)
        hi = 1.0 if max_rate_Bps else (float(v.max()) if len(v) else 1.0)
        counts, edges = np.histogram(v, bins=bins, range=(0.0, max(hi, 1e-12)))
        out[w] = (v, counts, edges)
    return out
