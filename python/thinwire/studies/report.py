"""What every study writes the same way: its claims (JSON and a Markdown table) and
figures (PNG and PDF)."""

from __future__ import annotations

import json
from pathlib import Path

from ..figures import tidy
from ..outputs import write_text


def verdict(c: dict) -> str:
    """A claim's result as shown: INCONCLUSIVE when the means its verdict rests on
    lie within each other's 95 % CIs (`inconclusive` in the JSON; more replications
    decide; `pass` keeps what the means alone say), else PASS or FAIL."""
    if c.get("inconclusive"):
        return "INCONCLUSIVE"
    return "PASS" if c["pass"] else "FAIL"


def counts(claims: list[dict]) -> tuple[int, int, int]:
    """(reproduced, inconclusive, not reproduced)."""
    inc = sum(bool(c.get("inconclusive")) for c in claims)
    ok = sum(bool(c["pass"]) and not c.get("inconclusive") for c in claims)
    return ok, inc, len(claims) - ok - inc


def write_claims(out: Path, claims: list[dict]) -> None:
    """`claims.json` and `claims.md` (one table row per claim, PASS/FAIL)."""
    write_text(out / "claims.json", json.dumps(claims, indent=2) + "\n")
    lines = ["| section | claim | expected | measured | result |", "|---|---|---|---|---|"]
    lines += [f"| {c['section']} | {c['claim']} | {c['expected']} | {c['measured']} | {verdict(c)} |" for c in claims]
    write_text(out / "claims.md", "\n".join(lines) + "\n")


def save_figure(fig, out: Path, stem: str, written: list, dpi: int = 150) -> None:
    """Writes `fig` as `stem.png` (at `dpi`) and `stem.pdf` in `out` and records the paths."""
    from ..figures import save

    for ext in (".png", ".pdf"):
        written.append(save(fig, out / f"{stem}{ext}", dpi=dpi))


def label(ax, xlabel: str, ylabel: str | None = None, title: str | None = None, legend: bool = True) -> None:
    """The axis labels, an optional small title, legend and grid every study plot uses."""
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    if legend:
        ax.legend()
    ax.grid(alpha=0.3)


def finish_figure(fig, out: Path, stem: str, written: list, dpi: int = 150) -> None:
    """Lays out, writes (PNG at `dpi`, and PDF) and closes `fig`."""
    import matplotlib.pyplot as plt

    tidy(fig)
    save_figure(fig, out, stem, written, dpi)
    plt.close(fig)
