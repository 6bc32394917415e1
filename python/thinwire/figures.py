"""Figure helpers shared by plots and studies: layout (`tidy`), writing a figure
the same way every time (`save`), and rendering many figures over processes
(`render_all`)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

# What matplotlib would otherwise stamp into a file from the clock or a random
# salt: a PDF's /CreationDate, an SVG's <dc:date> and element ids. Without them
# the same figure gives the same bytes (PNG carries only the software's name).
_FIXED_METADATA = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def wrap_titles(fig) -> None:
    """Breaks every axes title (and the figure's suptitle) that is wider than its
    axes (the figure) into lines that fit, so that no title is cut off."""
    import textwrap

    renderer = fig.canvas.get_renderer()

    def fit(text, width_px: float) -> None:
        s = text.get_text()
        if not s or "\n" in s:
            return
        w = text.get_window_extent(renderer).width
        if w <= width_px:
            return
        chars = max(10, int(len(s) * width_px / w) - 1)
        text.set_text("\n".join(textwrap.wrap(s, chars)))

    for ax in fig.axes:
        for t in (ax.title, ax._left_title, ax._right_title):
            fit(t, ax.get_window_extent(renderer).width)
    if fig._suptitle is not None:
        fit(fig._suptitle, fig.bbox.width * 0.95)


def tidy(fig, **kw) -> None:
    """`fig.tight_layout(**kw)` without matplotlib's warning when some decoration
    does not fit (the figure then keeps its layout, which is readable); titles too
    wide for their axes are wrapped first."""
    wrap_titles(fig)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout(**kw)


def save(fig, path: str | os.PathLike, dpi: float | None = None) -> Path:
    """Writes `fig` to `path` atomically (`outputs.atomic_path`), in the format its
    suffix names, with no time stamp or random id in the file: the same figure,
    the same bytes."""
    import matplotlib

    from .outputs import atomic_path

    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or None
    kw: dict[str, Any] = {"format": fmt}
    if dpi is not None:
        kw["dpi"] = dpi
    if fmt in _FIXED_METADATA:
        kw["metadata"] = _FIXED_METADATA[fmt]
    with atomic_path(path) as tmp, matplotlib.rc_context({"svg.hashsalt": "thinwire"}):
        fig.savefig(tmp, **kw)
    return path


def render_all(draw: Callable[..., list], specs: Sequence[tuple], workers: int | None = None) -> list:
    """`draw(*spec)` for every spec, each returning the paths it wrote; the paths
    in the specs' order. With more than one worker (default: the number of cores)
    the figures are drawn in that many fresh processes (`spawn`: nothing of the
    caller's threads is forked), each taking every `workers`-th spec, so a study's
    dozens of figures do not wait on one core. `draw` must be a module-level
    function and the specs picklable."""
    n = min(workers or os.cpu_count() or 1, len(specs))
    if n <= 1:
        return [p for spec in specs for p in draw(*spec)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from .runner import _main_not_rerun

    shares = [list(specs[i::n]) for i in range(n)]
    # The caller's script is not run again in the workers (see `_main_not_rerun`).
    with _main_not_rerun(), ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = list(pool.map(_draw_share, [draw] * n, shares))
    out: list = [None] * len(specs)
    for i, paths in enumerate(done):
        out[i::n] = paths
    return [p for paths in out for p in paths]


def _draw_share(draw: Callable[..., list], specs: list[tuple]) -> list[list]:
    return [draw(*spec) for spec in specs]
