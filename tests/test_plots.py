"""Plots that explain themselves: offsets in the legend, colours a reader can tell
apart, one tick format in PNG and HTML, axis labels that say what is drawn, marks
kept inside the axes, titles that fit, goodput panels only for windows the run
fills (and why)."""

import itertools

import numpy as np
import pytest
import thinwire
from conftest import SCENARIOS, SMALL
from thinwire.analysis import SimRun
from thinwire.analysis.plots import build_series, plot, tick_label
from thinwire.analysis.series import COLORS, SIM_EVENTS, TSQ_LAYERS


def _lab(hex_color: str) -> np.ndarray:
    """CIE L*a*b* (D65) of an sRGB colour."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(hex_color))
    rgb = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_series_that_share_a_plot_have_distinct_colours():
    # Time/sequence series and the event marks drawn with them: CIE76 distance of
    # at least 20 (the old palette had two purples at 16 and three greens).
    names = TSQ_LAYERS + list(SIM_EVENTS)
    close = [
        (round(float(np.linalg.norm(_lab(COLORS[a]) - _lab(COLORS[b]))), 1), a, b)
        for a, b in itertools.combinations(names, 2)
        if np.linalg.norm(_lab(COLORS[a]) - _lab(COLORS[b])) < 20
    ]
    assert not close, close


def test_offsets_are_stated_in_the_legend(tmp_path):
    r = thinwire.run(SCENARIOS / "gprs-proxy.toml", set={"flow.0.bytes": "30KB"}, trace=["tcp", "link", "proxy"])
    series, _ = build_series(SimRun.from_result(r), "tsq")
    labels = {s.name: s.label for s in series}
    assert labels["TcpSnd_data"] == "TcpSnd_data (+10 kB)"
    assert labels["PxySnd_data"] == "PxySnd_data (+20 kB)"
    assert labels["RlpSnd_data"] == "RlpSnd_data (+30 kB)"
    assert labels["TcpRcv_data"] == "TcpRcv_data" and labels["TcpSnd_cwnd"] == "TcpSnd_cwnd"
    html = tmp_path / "tsq.html"
    plot(SimRun.from_result(r), "tsq", html)
    assert "PxySnd_data (+20 kB)" in html.read_text()


def test_tick_labels_are_the_html_viewers():
    cases = {
        0: "0",
        2_500_000: "2.5M",
        12_345: "12.3k",
        250: "250",
        2.5: "2.5",
        5.0: "5",
        0.025: "0.025",
        -15_000: "-15k",
    }
    assert {v: tick_label(v) for v in cases} == cases


def test_rtt_plot_says_what_it_draws_and_marks_stay_inside(tmp_path):
    r = thinwire.run(SMALL, set={"wireless.channel.p": 0.05}, trace=["tcp", "link"])
    run = SimRun.from_result(r)
    _, meta = build_series(run, "rtt")
    assert meta["ylabel"] == "RTT, SRTT and RTO (s)"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from thinwire.analysis.plots import _draw
    from thinwire.analysis.series import Series

    fig, ax = plt.subplots()
    _draw(ax, Series("timeout", np.array([1.0, 50.0]), np.zeros(2), "events"))
    assert all(line.get_clip_on() for line in ax.lines)
    plt.close(fig)


def test_long_titles_are_wrapped_to_fit():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from thinwire.figures import tidy

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("Fig. 7: local buffer overflow (6-packet interface buffer): source quench, then fast retransmit")
    tidy(fig)
    r = fig.canvas.get_renderer()
    assert "\n" in ax.get_title()
    assert ax.title.get_window_extent(r).width <= fig.bbox.width
    plt.close(fig)


def test_goodput_panels_only_for_windows_the_run_fills(tmp_path):
    short = SimRun.from_result(thinwire.run(SMALL, set={"flow.0.bytes": "20KB"}, trace=["tcp"]))
    with pytest.raises(ValueError, match=r"shorter than the smallest window \(10 s\)"):
        plot(short, "goodput", tmp_path / "g.png")
    r = thinwire.run(SMALL, set={"flow.0.bytes": "600KB"}, trace=["tcp"])  # about 100-200 s
    run = SimRun.from_result(r)
    series, meta = build_series(run, "goodput")
    span = r.flows["completion_s"][0]
    assert [s.name for s in series] == [f"{w:g} s windows" for w in (10.0, 100.0, 1000.0) if w <= span]
    assert "1000 s" in meta["note"] and "longer than" in meta["note"]
    assert plot(run, "goodput", tmp_path / "g.png").stat().st_size > 0
