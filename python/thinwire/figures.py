"""Figure helpers shared by plots and studies."""

from __future__ import annotations

import warnings


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
