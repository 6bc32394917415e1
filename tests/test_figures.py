"""Figure files: the same figure gives the same bytes (no clock or random salt
in PDF/SVG), and `render_all` over processes writes what one process writes, in
the specs' order."""

import hashlib

import pytest

pytest.importorskip("matplotlib")

from thinwire.figures import render_all, save  # noqa: E402


def _digest(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def draw_one(out, stem, ys):
    """A small figure as png, pdf and svg (module level: drawn in workers too)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(range(len(ys)), ys, label=stem)
    ax.legend()
    paths = [save(fig, out / f"{stem}.{ext}", dpi=80) for ext in ("png", "pdf", "svg")]
    plt.close(fig)
    return paths


def test_same_figure_same_bytes(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    first = draw_one(a, "f", [1, 3, 2])
    # A clock a day later: a time stamp in the file would differ.
    import time

    later = time.time() + 86400
    monkeypatch.setattr(time, "time", lambda: later)
    second = draw_one(b, "f", [1, 3, 2])
    for p, q in zip(first, second):
        assert p.read_bytes() == q.read_bytes(), p.name
    pdf = first[1].read_bytes()
    assert b"/CreationDate" not in pdf
    assert b"<dc:date>" not in first[2].read_bytes()
    assert not list(a.glob(".*")), "no temporary file left beside the figures"


def test_render_all_over_processes_writes_what_one_process_writes(tmp_path):
    specs_for = lambda d: [(d, f"s{i}", [i, i * i % 5, 2]) for i in range(5)]  # noqa: E731
    one = render_all(draw_one, specs_for(tmp_path / "one"), workers=1)
    two = render_all(draw_one, specs_for(tmp_path / "two"), workers=2)
    assert (
        [p.name for p in one] == [p.name for p in two] == [f"s{i}.{e}" for i in range(5) for e in ("png", "pdf", "svg")]
    )
    assert [_digest(p) for p in one] == [_digest(p) for p in two]
