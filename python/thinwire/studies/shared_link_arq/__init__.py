"""Study `shared-link-arq` (seed 002_7c10a20fa5911126.txt): link-layer ARQ designs on
a shared 64 kbit/s wireless link.

File Transfer and Web Browsing over fixed-timeout SR (§IV, Figs. 2–9), adaptive SR
(§V, Figs. 10–13 and the web results §V states without figures), UMTS RLC with 1–5
retransmissions (§VI, Figs. 14–17 and the web results stated without figures), and
the comparison of the tuned protocols with the Raw Link (§VII, Figs. 18–25), plus
Media Distribution delay against File Transfer (Figs. 26–27) and against Web
Browsing (stated without figures); uniform and two-state errors, with and without
contention from Media Distribution. Web Browsing runs for 2000 s (seed 002 §III);
its metric is the bytes of completed transactions over the time at the end of the
last one.

Setup (seed 002 §III): server — 10 Mbit/s, 1 ms — access point — 64 kbit/s, 50 ms —
client; 250-byte frames plus a 4-byte header; TCP Reno with 10 ms timers, MSS 210
(250-byte packets); 10 MB files; SR window 127 frames, ACK delay 0.5 s; ASR initial
srtt 1.1 s; RLC with Table I's column for the error model in use. The two-state
model's bad-state means 100/200/500/1000 ms are the ones the paper lists for FLRs
1.5/2.5/5.4/9.8 %; the uniform model uses those FLRs. Contention: the Media
Distribution UDP source bypassing ARQ. Link-layer frames of both sessions go through
one 50-frame drop-tail interface queue below the link layer (`mux =
"shared-queue"`), the structure of the ns-2 simulator the paper used: ARQ timers run
while a frame waits there behind media frames. The study also runs every point with
thinwire's default `pull` multiplexer, which gives the link layer the radio only
when it is free (`--mux shared-queue|pull|both`, default both; the paper does not
say where its timers start, and the two structures reproduce different sections —
see docs/studies/shared-link-arq.md). Every claim is checked under each structure
run; a claim that fails says why (`why`). The TCP
window is ns-2's default of 20 segments (the paper used ns-2 and does not say
otherwise). §VII uses SR 1.1 s, ASR 3+2 (uniform) / 4+0 (two-state) and RLC 2 / 1
retransmissions, as the paper does. Claims are checked at FLR 5.4 %, as the paper's
"5.4 % performance gaps" are, unless the paper names another FLR.
"""

from __future__ import annotations

from pathlib import Path

from ...figures import render_all, save, tidy
from ..study import Study
from .claims import claims as check_claims
from .claims import claims_markdown
from .design import (  # noqa: F401 (the study's design, as `thinwire.studies.shared_link_arq.X`)
    APPS,
    ARQ,
    ASR_POLICIES,
    BAD_MEAN,
    BASE,
    COMPARE_FIGS,
    DELAY_FIGS,
    FIGS,
    FLRS,
    MEDIA,
    MODELS,
    MUXES,
    NAMES,
    RLC_RETX,
    SETTINGS,
    SR_TIMEOUTS,
    TUNED,
    _model_flr,
    channel,
    channels,
    jobs,
    select,
    structures,
)


def run_all(out: Path, quick: bool, scheduler, workers, progress, muxes, reps: int):
    """Every sweep of the study, `reps` replications per point (`Study.reproduce`
    passes the study's 30, `quick` 3, or `--replications`)."""
    import polars as pl

    from ...sweeping import Sweep, execute_sweeps

    js = jobs(quick, muxes)
    sweeps = []
    for j in js:
        axis, settings = SETTINGS[j["protocol"]]
        axes = {axis: [int(x) for x in settings] if j["protocol"] == "rlc" else settings} if axis else {}
        axes["wireless.channel"] = channels(j["models"])
        sweeps.append((Sweep(j["text"], j["protocol"], [], axes, reps, True), out / "data" / j["name"]))
    results = execute_sweeps(sweeps, scheduler, workers, progress, desc="shared-link-arq", keep_foreign=True)
    frames = []
    parsed: dict[str, dict] = {}  # a channel's text -> its table (nine texts, 35,760 runs)
    for j, (runs, _) in zip(js, results):
        axis = SETTINGS[j["protocol"]][0]
        rows = []
        for r in runs.to_dicts():
            text = r["axis:wireless.channel"]
            if text not in parsed:
                parsed[text] = _parse_channel(text)
            ch = parsed[text]
            setting = "-" if axis is None else r[f"axis:{axis}"]
            if j["protocol"] == "rlc":
                setting = str(int(setting))
            for model, flr in _model_flr(ch):
                if model not in j["models"]:
                    continue
                rows.append(
                    {
                        "mux": j["mux"],
                        "app": j["app"],
                        "protocol": j["protocol"],
                        "setting": setting,
                        "model": model,
                        "flr": flr,
                        "contention": j["contention"],
                        "replication": r["replication"],
                        "throughput_bps": r["flow0.throughput_bps"],
                        "media_delay_s": r.get("flow1.delay_mean_s"),
                        "tcp_timeouts": r["flow0.tcp_timeouts"],
                        "arq_timeouts": r["down.arq_timeouts"],
                        "retransmissions": r["down.frames_retransmitted"],
                        "frames_lost": r["down.frames_lost"],
                        "sdu_discards": r["down.sdu_discards"],
                        "down_flr": r["down.flr"],
                    }
                )
        frames.append(pl.DataFrame(rows, infer_schema_length=None))
    return pl.concat(frames, how="diagonal_relaxed")


def _parse_channel(text: str) -> dict:
    import tomllib

    return tomllib.loads(f"v = {text}")["v"]


def summarize(df):
    """Mean, standard deviation, count and 95 % CI half-width per point, for File
    Transfer / Web Browsing throughput and (with contention) media packet delay."""
    import polars as pl

    from ...stats import ci95_expr

    keys = ["mux", "app", "protocol", "setting", "model", "flr", "contention"]
    aggs = []
    for m, p in (("throughput_bps", ""), ("media_delay_s", "delay_")):
        aggs += [pl.col(m).mean().alias(f"{p}mean"), pl.col(m).std().alias(f"{p}sd"), pl.col(m).count().alias(f"{p}n")]
    # What the "why" of a failed claim cites: timeouts per run at each point.
    aggs += [
        pl.col(m).mean().alias(m)
        for m in ("arq_timeouts", "tcp_timeouts", "retransmissions", "frames_lost", "sdu_discards")
    ]
    s = df.group_by(keys, maintain_order=True).agg(aggs)
    return s.with_columns(
        ci95_expr("sd", "n", single=0.0).alias("ci95"), ci95_expr("delay_sd", "delay_n", single=0.0).alias("delay_ci95")
    ).sort(["mux", "app", "protocol", "model", "contention", "setting", "flr"])


def _figure(out: Path, stem: str, title: str, ylabel: str, lines: list) -> list[Path]:
    """One figure, `stem`.png and .pdf in `out`: `lines` = [(label, flrs, means,
    cis)], x = FLR in percent. Module-level and of plain arguments, so that
    `render_all` can draw it in a worker process."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=150)
    for i, (label, xs, ys, cs) in enumerate(lines):
        dodge = (i - (len(lines) - 1) / 2) * 0.06  # spread overlapping error bars
        ax.errorbar(
            [x * 100 + dodge for x in xs], ys, yerr=cs, marker="os^vD"[i % 5], ms=4, capsize=3, lw=1.2, label=label
        )
    ax.set_xlabel("Frame loss rate (%)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    ax.set_xticks([f * 100 for f in FLRS])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    tidy(fig)
    written = [save(fig, out / f"{stem}.{ext}") for ext in ("png", "pdf")]
    plt.close(fig)
    return written


def _errors(model: str) -> str:
    return "Uniform" if model == "uniform" else "Two State"


def _line(sub, label: str, delay: bool = False):
    """A figure line: throughput in kbit/s, or media delay in ms."""
    g = sub.sort("flr")
    m, c, k = ("delay_mean", "delay_ci95", 1e3) if delay else ("mean", "ci95", 1e-3)
    return (label, list(g["flr"]), [v * k for v in g[m]], [v * k for v in g[c]])


def plot(summary, out: Path, workers: int | None = None) -> list[Path]:
    """Every figure per structure run: the paper's (`shared-queue`) in `out`, the
    others in `out/STRUCTURE/`; drawn over `workers` processes (`render_all`)."""
    specs: list[tuple] = []
    for mux in MUXES:
        sub = select(summary, mux=mux)
        if sub.height:
            d = out if mux == MUXES[0] else out / mux
            d.mkdir(parents=True, exist_ok=True)
            specs += _structure_figures(sub, d, mux)
    return render_all(_figure, specs, workers)


def _structure_figures(summary, out: Path, mux: str) -> list[tuple]:
    """The figures of one structure, as `_figure`'s arguments."""
    specs: list[tuple] = []
    tag = f" [{mux}]"
    for (app, protocol, model, contention), fig_no in FIGS.items():
        sub = select(summary, app=app, protocol=protocol, model=model, contention=contention)
        lines = [
            _line(select(sub, setting=st), f"{NAMES[protocol]} {st}{' retx' if protocol == 'rlc' else ''}")
            for st in SETTINGS[protocol][1]
        ]
        label = f"Fig. {fig_no}" if fig_no else "(no figure in the paper)"
        stem = (
            f"fig{fig_no:02d}" if fig_no else "extra"
        ) + f"_{app}_{protocol}_{model}_{'contention' if contention else 'alone'}"
        specs.append(
            (
                out,
                stem,
                f"{label}: {APPS[app]}, {NAMES[protocol]}, {_errors(model)} errors, {'Contention' if contention else 'no Contention'}"
                + tag,
                f"{APPS[app]} throughput (kbit/s)",
                lines,
            )
        )
    for (app, model, contention), fig_no in COMPARE_FIGS.items():
        lines = [
            _line(
                select(summary, app=app, protocol=p, model=model, contention=contention, setting=TUNED[p][model]),
                NAMES[p] + ("" if p == "raw" else f" {TUNED[p][model]}"),
            )
            for p in ("raw", "sr", "asr", "rlc")
        ]
        stem = f"fig{fig_no:02d}_{app}_compare_{model}_{'contention' if contention else 'alone'}"
        specs.append(
            (
                out,
                stem,
                f"Fig. {fig_no}: {APPS[app]}, tuned protocols, {_errors(model)} errors, {'Contention' if contention else 'no Contention'}"
                + tag,
                f"{APPS[app]} throughput (kbit/s)",
                lines,
            )
        )
    for (app, model), fig_no in DELAY_FIGS.items():
        lines = [
            _line(
                select(summary, app=app, protocol=p, model=model, contention=True, setting=TUNED[p][model]),
                NAMES[p] + ("" if p == "raw" else f" {TUNED[p][model]}"),
                delay=True,
            )
            for p in ("raw", "sr", "asr", "rlc")
        ]
        stem = (f"fig{fig_no:02d}" if fig_no else "extra") + f"_{app}_media_delay_{model}"
        label = f"Fig. {fig_no}" if fig_no else "(no figure in the paper)"
        specs.append(
            (
                out,
                stem,
                f"{label}: Media Distribution delay against {APPS[app]}, {_errors(model)} errors" + tag,
                "Media packet delay (ms)",
                lines,
            )
        )
    return specs


def _write_claims(out: Path, cl: list[dict]) -> None:
    import json

    from ...outputs import write_text

    write_text(out / "claims.json", json.dumps(cl, indent=2) + "\n")
    write_text(out / "claims.md", claims_markdown(cl))


def _tables(_df, summary, out: Path) -> None:
    from ...outputs import write_parquet, write_text

    write_parquet(summary, out / "summary.parquet")
    write_text(out / "summary.csv", summary.write_csv())


STUDY = Study(
    run=lambda out, quick, scheduler, workers, progress, reps, mux="both": run_all(
        out, quick, scheduler, workers, progress, structures(mux), reps
    ),
    reduce=summarize,
    tables=_tables,
    figures=lambda _df, summary, out, quick, workers: plot(summary, out, workers),
    claims=lambda _df, summary: check_claims(summary),
    write_claims=_write_claims,
    timed=False,
    replications=(3, 30),
)
reproduce = STUDY.reproduce
