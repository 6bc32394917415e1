"""Figure helpers shared by plots and studies."""

from __future__ import annotations

import warnings


def tidy(fig, **kw) -> None:
    """`fig.tight_layout(**kw)` without matplotlib's warning when some decoration
    does not fit (the figure then keeps its layout, which is readable)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout(**kw)
