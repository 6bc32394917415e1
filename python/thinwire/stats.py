"""Small statistics helpers (no SciPy dependency)."""

from __future__ import annotations

import math

# Two-sided 95 % Student t quantiles t_{0.975, df} (standard table values).
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    21: 2.080,
    22: 2.074,
    23: 2.069,
    24: 2.064,
    25: 2.060,
    26: 2.056,
    27: 2.052,
    28: 2.048,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        return math.nan
    if df in _T975:
        return _T975[df]
    keys = sorted(_T975)
    if df > keys[-1]:
        return 1.960 + (1.980 - 1.960) * 120 / df
    lo = max(k for k in keys if k < df)
    hi = min(k for k in keys if k > df)
    # interpolate linearly in 1/df, which is close to exact for the t quantile
    w = (1 / df - 1 / hi) / (1 / lo - 1 / hi)
    return _T975[hi] + w * (_T975[lo] - _T975[hi])


def ci95(sd: float | None, n: int | None, single: float | None = None) -> float | None:
    """Half-width of the 95 % confidence interval of a mean of `n` samples with
    standard deviation `sd`: t_{0.975, n-1} · sd / √n; `single` when there is no
    spread to speak of (fewer than two samples, or no sd). The one helper for every
    CI in sweeps and studies."""
    if not n or n < 2 or sd is None:
        return single
    return t975(n - 1) * sd / math.sqrt(n)


def ci95_expr(sd_col: str, n_col: str, single: float | None = None):
    """`ci95` as a polars expression over a table's sd and n columns."""
    import polars as pl

    return pl.struct([sd_col, n_col]).map_elements(lambda x: ci95(x[sd_col], x[n_col], single), return_dtype=pl.Float64)
