"""Study `is707-idle-frames` (seed 001_87989bffdea0b38b.txt): TCP Reno over IS-707
RLP on a fading channel, with and without idle frames.

Setup (seed 001 §III): a remote host sends a continuous TCP Reno flow (MSS 536,
40-byte ACKs: no TCP options) over a 1.5 Mbit/s, 200 ms wired link to the access
point, then over IS-707 RLP at 9600 bit/s (24-byte frames with 19 bytes of payload,
one per 20 ms) to the mobile host. The radio channel is the first-order Markov
fading model with frame error rate Pe and normalised Doppler fdT ∈ {0.01, 0.1, 1.0}
in both directions. Goodput is the in-sequence TCP payload delivered, normalised to
the maximum net link throughput of 7600 bit/s; 1 − Pe bounds it.

Figures: 3 (long-time goodput against Pe without idle frames), 4 (with unlimited
idle frames), 5–6 (sequence and RTO sample paths at fdT = 0.01, Pe = 0.3 without
idle frames), 7–8 (the same with unlimited idle frames), 9 (goodput against the
number of idle frames at Pe = 0.3, one curve per fdT), 10–12 (histograms of goodput
over 10, 100 and 1,000 s windows at Pe = 0.3 with unlimited idle frames, one per
fdT). Long-time points average 10 runs of 2·10^4 s (`--quick`: 3 of 5000 s); at
fdT = 0.01 and Pe = 0.3 TCP spends minutes in backed-off timeouts, so shorter runs
give averages dominated by noise. The seed uses 10,000 windows of each length,
which needs 10^7 simulated seconds per fdT; the full study does that (in 10 runs of
10^6 s with independent seeds), `--quick` uses 2·10^4 s.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..figures import tidy
from .report import save_figure
from .study import Study

FDTS = [0.01, 0.1, 1.0]
PES = [0.01, 0.03, 0.05, 0.1, 0.2, 0.3]
IDLE_NS = [0, 1, 2, 3, 5, 10, 20]
MAX_BPS = 7600.0
WINDOWS = [10.0, 100.0, 1000.0]

BASE = """
seed = 1
stop = "{stop}"
[wired]
rate = "1.5Mbps"
delay = "200ms"
[wireless]
rate = "9600bps"
delay = "10ms"
frame = "19B"
header = "5B"
queue = {{ limit = "50pkt" }}
[wireless.channel]
model = "fading"
pe = 0.1
fdt = 0.1
[wireless.arq]
protocol = "is707"
{idle}
[[flow]]
app = "bulk"
direction = "down"
tcp = {{ variant = "reno", mss = 536, timestamps = false, sack = false, window_scaling = false }}
"""


def scenario(stop: str, idle) -> str:
    line = "" if idle is None else ('idle_frames = "unlimited"' if idle == "unlimited" else f"idle_frames = {idle}")
    return BASE.format(stop=stop, idle=line)


def _sweeps(out: Path, quick: bool, reps: int):
    from ..sweeping import Sweep

    stop = "5000s" if quick else "20000s"
    chan = [{"model": "fading", "pe": pe, "fdt": f} for f in FDTS for pe in PES]
    hi = [{"model": "fading", "pe": 0.3, "fdt": f} for f in FDTS]
    return [
        ("pe-idle0", Sweep(scenario(stop, 0), "pe-idle0", [], {"wireless.channel": chan}, reps, True)),
        (
            "pe-unlimited",
            Sweep(scenario(stop, "unlimited"), "pe-unlimited", [], {"wireless.channel": chan}, reps, True),
        ),
        (
            "idle-n",
            Sweep(
                scenario(stop, 0),
                "idle-n",
                [],
                {"wireless.channel": hi, "wireless.arq.idle_frames": IDLE_NS},
                reps,
                True,
            ),
        ),
    ]


def _chan(text: str) -> dict:
    import tomllib

    return tomllib.loads(f"v = {text}")["v"]


def run_all(out: Path, quick: bool, scheduler, workers, progress, reps: int):
    """The three sweeps, `reps` replications per point (`Study.reproduce` passes
    10, `quick` 3, or `--replications`),
    and the histogram runs (not replications: one long sample per fdT, cut into
    windows), on one cluster under one progress bar (resumable: sweeps in
    data/NAME/runs.parquet, histogram runs in data/histogram-runs.jsonl).
    Returns (per-run table, histograms)."""
    import polars as pl

    from ..runner import tasks_group
    from ..sweeping import execute_sweeps

    sw = _sweeps(out, quick, reps)
    n_hist = 1 if quick else 10
    stop = 20_000 if quick else 1_000_000
    hist_jobs = [[f, 1000 + k, stop] for f in FDTS for k in range(n_hist)]
    group, store, keys = tasks_group(_hist_job, hist_jobs, out / "data" / "histogram-runs.jsonl", long=True)
    res = execute_sweeps(
        [(s, out / "data" / n) for n, s in sw],
        scheduler,
        workers,
        progress,
        desc="is707-idle-frames",
        extra=[group],
        keep_foreign=True,
    )
    store.settle(keys)
    rows = []
    for (name, _), (runs, _) in zip(sw, res):
        for r in runs.to_dicts():
            ch = _chan(r["axis:wireless.channel"])
            idle = {"pe-idle0": 0, "pe-unlimited": "unlimited"}.get(name, r.get("axis:wireless.arq.idle_frames"))
            idle = int(float(idle)) if idle != "unlimited" else idle  # axis values come back as floats
            rows.append(
                {
                    "sweep": name,
                    "fdt": ch["fdt"],
                    "pe": ch["pe"],
                    "idle": str(idle),
                    "replication": r["replication"],
                    "goodput": r["flow0.throughput_bps"] / MAX_BPS,
                    "timeouts": r["flow0.tcp_timeouts"],
                }
            )
    vals: dict = {f: {w: [] for w in WINDOWS} for f in FDTS}
    for f, ws in (store.results[k] for k in keys):
        for w, v in ws.items():
            vals[f][float(w)] += v
    (out / "data" / "histograms-first-arrivals.json").write_text(
        json.dumps(
            {
                "stop": stop,
                "runs": n_hist,
                "values": {str(f): {str(w): v for w, v in ws.items()} for f, ws in vals.items()},
            }
        )
    )
    return pl.DataFrame(rows), vals


def summarize(df):
    import polars as pl

    from ..stats import ci95_expr

    s = df.group_by(["sweep", "fdt", "pe", "idle"], maintain_order=True).agg(
        pl.col("goodput").mean().alias("mean"),
        pl.col("goodput").std().alias("sd"),
        pl.col("goodput").count().alias("n"),
        pl.col("timeouts").mean().alias("timeouts"),
    )
    return s.with_columns(ci95_expr("sd", "n", single=0.0).alias("ci95")).sort(["sweep", "fdt", "pe"])


def _hist_job(args):
    """One long run at Pe = 0.3 with unlimited idle frames: goodput per window.

    Goodput counts the bytes of data segments the TCP receiver gets correctly, each
    segment once (its first arrival), as the seed does ("correctly received TCP
    segment bytes", at most 17 segments in 10 s). The cumulative ACK would count a
    hole's fill and the out-of-order segments behind it in one instant, which puts
    up to 30 segments in a 10 s window."""
    fdt, seed, stop_s = args  # a list: tasks travel as JSON
    import numpy as np
    import polars as pl

    import thinwire
    from thinwire.analysis import SimRun, window_goodput

    r = thinwire.run(
        scenario(f"{stop_s}s", "unlimited"),
        seed=seed,
        set={"wireless.channel.pe": 0.3, "wireless.channel.fdt": fdt},
        trace=["tcp"],
    )
    tcp = SimRun.from_result(r).trace
    got = tcp.filter(
        (pl.col("flow") == 0) & (pl.col("node") == "mobile") & (pl.col("event") == "recv") & (pl.col("len") > 0)
    )
    got = got.filter(pl.col("seq").is_first_distinct())
    # Windows start at 0: prepend the origin so early windows count from the start.
    t = np.r_[0.0, got["time_s"].to_numpy()]
    b = np.r_[0, np.cumsum(got["len"].to_numpy())]
    return fdt, {w: window_goodput(t, b, w, start_s=0.0).tolist() for w in WINDOWS}


def _fig(out: Path, stem: str, title: str, xlabel: str, ylabel: str, lines, written, bound=None, logx=False):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, x, y, ci in lines:
        ax.errorbar(x, y, yerr=ci, marker="o", ms=4, capsize=3, label=label)
    if bound is not None:
        ax.plot(bound[0], bound[1], "k--", lw=1, label="1 − Pe")
    if logx:
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    tidy(fig)
    save_figure(fig, out, stem, written)
    plt.close(fig)


def plot(summary, hists, out: Path, quick: bool) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import polars as pl

    written: list[Path] = []
    for fig_no, sweep, what in (
        (3, "pe-idle0", "without idle frames"),
        (4, "pe-unlimited", "with unlimited idle frames"),
    ):
        lines = []
        for f in FDTS:
            s = summary.filter((pl.col("sweep") == sweep) & (pl.col("fdt") == f)).sort("pe")
            lines.append((f"fdT = {f:g}", s["pe"].to_list(), s["mean"].to_list(), s["ci95"].to_list()))
        _fig(
            out,
            f"fig{fig_no:02d}_goodput-vs-pe",
            f"Fig. {fig_no}: long-time goodput {what}",
            "frame error rate Pe",
            "goodput (of 7600 bit/s)",
            lines,
            written,
            bound=(PES, [1 - p for p in PES]),
        )
    lines = []
    for f in FDTS:
        s = summary.filter((pl.col("sweep") == "idle-n") & (pl.col("fdt") == f))
        s = s.with_columns(pl.col("idle").cast(pl.Int64).alias("k")).sort("k")
        lines.append((f"fdT = {f:g}", s["k"].to_list(), s["mean"].to_list(), s["ci95"].to_list()))
    _fig(
        out,
        "fig09_goodput-vs-idle-frames",
        "Fig. 9: long-time goodput against the number of idle frames, Pe = 0.3",
        "idle frames after the last data frame",
        "goodput (of 7600 bit/s)",
        lines,
        written,
        logx=True,
    )
    for i, f in enumerate(FDTS):
        fig, axes = plt.subplots(3, 1, figsize=(6.4, 6.4))
        for ax, w in zip(axes, WINDOWS):
            v = np.asarray(hists[f][w]) / (MAX_BPS / 8)
            ax.hist(v, bins=60, range=(0, 1), weights=np.ones_like(v) / max(len(v), 1), color="#1f4e9c")
            ax.set_title(f"{w:g} s windows (n = {len(v):,})", fontsize=9)
            ax.set_ylabel("share", fontsize=8)
        axes[-1].set_xlabel("goodput (of 7600 bit/s)")
        fig.suptitle(f"Fig. {10 + i}: short-time goodput, fdT = {f:g}, Pe = 0.3, unlimited idle frames", fontsize=10)
        tidy(fig)
        save_figure(fig, out, f"fig{10 + i:02d}_goodput-histograms-fdt{f:g}", written)
        plt.close(fig)
    written += _sample_paths(out, quick)
    return written


def _sample_paths(out: Path, quick: bool) -> list[Path]:
    """Figs. 5–8: TCP sequence and RTO over time at fdT = 0.01, Pe = 0.3, without
    (5, 6) and with (7, 8) idle frames."""
    import thinwire
    from thinwire.analysis import SimRun
    from thinwire.analysis.plots import plot as mt_plot

    written = []
    stop = "600s" if quick else "2000s"
    for idle, figs in ((0, (5, 6)), ("unlimited", (7, 8))):
        r = thinwire.run(
            scenario(stop, idle),
            seed=7,
            set={"wireless.channel.pe": 0.3, "wireless.channel.fdt": 0.01},
            trace=["tcp", "link"],
        )
        run = SimRun.from_result(r)
        tag = "idle0" if idle == 0 else "idle-unlimited"
        for fig_no, kind in zip(figs, ("tsq", "rtt")):
            layers = (
                None
                if kind == "rtt"
                else ["TcpSnd_data", "TcpSnd_rexmt", "TcpSnd_ack", "TcpRcv_ack", "RlpSnd_data", "RlpSnd_rexmt"]
            )
            for ext in (".png", ".pdf"):
                what = "TCP sequence" if kind == "tsq" else "TCP RTO"
                title = f"Fig. {fig_no}: {what}, fdT = 0.01, Pe = 0.3, {'no' if idle == 0 else 'unlimited'} idle frames"
                written.append(
                    mt_plot(
                        run, kind, out / f"fig{fig_no:02d}_{kind}-fdt0.01-pe0.3-{tag}{ext}", layers=layers, title=title
                    )
                )
    return written


def claims(summary, hists) -> list[dict]:
    import numpy as np
    import polars as pl

    out = []

    def at(sweep, f, pe=0.3, idle=None):
        s = summary.filter((pl.col("sweep") == sweep) & (pl.col("fdt") == f) & (pl.col("pe") == pe))
        if idle is not None:
            s = s.filter(pl.col("idle") == str(idle))
        return s.row(0, named=True) if s.height else None

    def add(section, claim, expected, measured, ok, tie=False):
        """`tie`: the compared means lie within each other's 95 % CIs (the verdict
        is inconclusive; more replications decide)."""
        out.append(
            {
                "section": section,
                "claim": claim,
                "expected": expected,
                "measured": measured,
                "pass": bool(ok),
                "inconclusive": bool(tie),
            }
        )

    g0 = {f: at("pe-idle0", f) for f in FDTS}
    gu = {f: at("pe-unlimited", f) for f in FDTS}
    for f in FDTS:
        add(
            "III Figs. 3-4",
            f"idle frames raise goodput at Pe = 0.3, fdT = {f:g}",
            "with unlimited idle frames > without",
            f"{gu[f]['mean']:.3f} ± {gu[f]['ci95']:.3f} vs {g0[f]['mean']:.3f} ± {g0[f]['ci95']:.3f}",
            gu[f]["mean"] > g0[f]["mean"],
            tie=abs(gu[f]["mean"] - g0[f]["mean"]) <= gu[f]["ci95"] + g0[f]["ci95"],
        )
    gain = {f: gu[f]["mean"] / max(g0[f]["mean"], 1e-9) for f in FDTS}
    add(
        "III Figs. 3-4",
        "the gain is largest in the correlated high-loss regime",
        "relative gain at fdT 0.01 > at fdT 1.0 (Pe = 0.3)",
        ", ".join(f"fdT {f:g}: ×{gain[f]:.2f}" for f in FDTS),
        gain[0.01] > gain[1.0],
    )
    worst = summary.filter(pl.col("mean") > 1 - pl.col("pe") + 0.01)
    add(
        "II",
        "goodput stays below the 1 − Pe bound",
        "every point ≤ 1 − Pe",
        f"{worst.height} of {summary.height} points above",
        worst.height == 0,
    )
    share = {}
    for f in FDTS:
        five, none, unl = at("idle-n", f, idle=5), at("idle-n", f, idle=0), gu[f]
        full = unl["mean"] - none["mean"]
        share[f] = (five["mean"] - none["mean"]) / full if full > 0 else float("nan")  # nan: no gain to share
    for f in (0.1, 1.0):
        add(
            "III Fig. 9",
            f"about 5 idle frames give most of the gain at fdT {f:g}",
            "5 idle frames: ≥ 70 % of the unlimited gain",
            f"{share[f] * 100:.0f} %",
            share[f] >= 0.7,
        )
    add(
        "III Fig. 9",
        "at fdT 0.01 the gain grows slowly with the number of idle frames",
        "share of the gain at 5 idle frames smaller at fdT 0.01 than at 0.1 and 1.0",
        ", ".join(f"fdT {f:g}: {share[f] * 100:.0f} %" for f in FDTS),
        share[0.01] < min(share[0.1], share[1.0]),
    )  # False when any is nan
    segs = []
    for f in FDTS:
        v = np.asarray(hists[f][10.0]) * 10 / 536
        segs.append(
            (f, float(np.max(v)) if len(v) else 0.0, float(np.mean(np.abs(v - np.round(v)) < 1e-6)) if len(v) else 0.0)
        )
    add(
        "III Figs. 10-12",
        "10 s goodput is quantised in whole segments, at most 17 per window",
        "every 10 s value a whole number of 536-byte segments, max 17",
        "; ".join(f"fdT {f:g}: max {m:.0f} segments, {q * 100:.0f} % whole" for f, m, q in segs),
        all(m <= 17 and q == 1.0 for _, m, q in segs),
    )
    return out


def _tables(_runs, summary, out: Path) -> None:
    summary.write_parquet(out / "summary.parquet")
    summary.write_csv(out / "summary.csv")


STUDY = Study(
    run=run_all,
    reduce=lambda runs: summarize(runs[0]),
    tables=_tables,
    figures=lambda runs, summary, out, quick, workers: plot(summary, runs[1], out, quick),
    claims=lambda runs, summary: claims(summary, runs[1]),
    timing=lambda quick: {"histogram_simulated_s_per_fdt": 20_000 if quick else 10_000_000},
    replications=(3, 10),
)
reproduce = STUDY.reproduce
