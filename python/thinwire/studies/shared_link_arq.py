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
while a frame waits there behind media frames. (thinwire's default `pull`
multiplexer gives the link layer the radio only when it is free; with it the
reversal of §IV does not appear — see docs/studies/shared-link-arq.md.) The TCP
window is ns-2's default of 20 segments (the paper used ns-2 and does not say
otherwise). §VII uses SR 1.1 s, ASR 3+2 (uniform) / 4+0 (two-state) and RLC 2 / 1
retransmissions, as the paper does. Claims are checked at FLR 5.4 %, as the paper's
"5.4 % performance gaps" are, unless the paper names another FLR.
"""

from __future__ import annotations

from pathlib import Path

from ..figures import tidy
from ..outputs import atomic_path

FLRS = [0.0, 0.015, 0.025, 0.054, 0.098]
BAD_MEAN = {0.015: "100ms", 0.025: "200ms", 0.054: "500ms", 0.098: "1000ms"}
MODELS = ("uniform", "two-state")
SR_TIMEOUTS = ["0.9s", "1.0s", "1.1s", "1.2s", "1.3s"]
ASR_POLICIES = ["1+4", "2+4", "3+2", "4+0", "4+2"]
RLC_RETX = [1, 2, 3, 4, 5]
# protocol -> (swept scenario field, settings as labelled in figures and tables)
SETTINGS = {
    "sr": ("wireless.arq.timeout", SR_TIMEOUTS),
    "asr": ("wireless.arq.policy", ASR_POLICIES),
    "rlc": ("wireless.arq.max_retransmissions", [str(x) for x in RLC_RETX]),
    "raw": (None, ["-"]),
}
# §VII's tuned settings per error model.
TUNED = {
    "raw": {"uniform": "-", "two-state": "-"},
    "sr": {"uniform": "1.1s", "two-state": "1.1s"},
    "asr": {"uniform": "3+2", "two-state": "4+0"},
    "rlc": {"uniform": "2", "two-state": "1"},
}
NAMES = {"raw": "Raw Link", "sr": "SR", "asr": "ASR", "rlc": "RLC"}
FIGS = {  # (application, protocol, model, contention) -> seed figure number (None: not in the paper)
    ("ft", "sr", "uniform", False): 2,
    ("ft", "sr", "uniform", True): 3,
    ("ft", "sr", "two-state", False): 4,
    ("ft", "sr", "two-state", True): 5,
    ("web", "sr", "uniform", False): 6,
    ("web", "sr", "uniform", True): 7,
    ("web", "sr", "two-state", False): 8,
    ("web", "sr", "two-state", True): 9,
    ("ft", "asr", "uniform", False): 10,
    ("ft", "asr", "uniform", True): 11,
    ("ft", "asr", "two-state", False): 12,
    ("ft", "asr", "two-state", True): 13,
    ("web", "asr", "uniform", False): None,
    ("web", "asr", "uniform", True): None,
    ("web", "asr", "two-state", False): None,
    ("web", "asr", "two-state", True): None,
    ("ft", "rlc", "uniform", False): 14,
    ("ft", "rlc", "uniform", True): 15,
    ("ft", "rlc", "two-state", False): 16,
    ("ft", "rlc", "two-state", True): 17,
    ("web", "rlc", "uniform", False): None,
    ("web", "rlc", "uniform", True): None,
    ("web", "rlc", "two-state", False): None,
    ("web", "rlc", "two-state", True): None,
}
COMPARE_FIGS = {
    ("ft", "uniform", False): 18,
    ("ft", "uniform", True): 19,
    ("ft", "two-state", False): 20,
    ("ft", "two-state", True): 21,
    ("web", "uniform", False): 22,
    ("web", "uniform", True): 23,
    ("web", "two-state", False): 24,
    ("web", "two-state", True): 25,
}
DELAY_FIGS = {("ft", "uniform"): 26, ("ft", "two-state"): 27, ("web", "uniform"): None, ("web", "two-state"): None}
APPS = {"ft": "File Transfer", "web": "Web Browsing"}
ARQ = {
    "raw": 'protocol = "raw"',
    "sr": 'protocol = "sr"\nwindow = 127\nack_delay = "500ms"\ntimeout = "1.1s"',
    "asr": 'protocol = "asr"\nwindow = 127\nack_delay = "500ms"\ninitial_srtt = "1.1s"',
    "rlc": 'protocol = "rlc"\npreset = "{preset}"',
}

BASE = """
seed = 1
[wired]
rate = "10Mbps"
delay = "1ms"
[wireless]
rate = "64kbps"
delay = "50ms"
frame = "250B"
header = "4B"
queue = {{ limit = "50pkt" }}
mux = "shared-queue"
frame_queue = 50
[wireless.arq]
{arq}
{flow}
tcp = {{ variant = "reno", mss = 210, timer_granularity = "10ms", rcv_buf = "4200B" }}
"""

MEDIA = """
[[flow]]
app = "media"
direction = "down"
"""


def channel(model: str, flr: float) -> dict:
    if flr == 0:
        return {"model": "none"}
    if model == "uniform":
        return {"model": "uniform", "p": flr}
    return {"model": "two-state", "good": {"ber": 1e-6, "mean": "10s"}, "bad": {"ber": 1e-2, "mean": BAD_MEAN[flr]}}


def channels(models=MODELS) -> list[dict]:
    out = [channel("uniform", 0.0)]
    for m in models:
        out += [channel(m, f) for f in FLRS[1:]]
    return out


def _model_flr(ch: dict) -> list[tuple[str, float]]:
    """Which (model, FLR) points a channel value stands for (no errors: both)."""
    if ch["model"] == "none":
        return [("uniform", 0.0), ("two-state", 0.0)]
    if ch["model"] == "uniform":
        return [("uniform", ch["p"])]
    return [("two-state", {v: k for k, v in BAD_MEAN.items()}[ch["bad"]["mean"]])]


def jobs(quick: bool) -> list[dict]:
    """Every sweep of the study: per application, contention and protocol (RLC once
    per error model, since its Table I preset follows the model)."""
    setup = {
        "ft": (
            'stop = "end"\n',
            f'[[flow]]\napp = "bulk"\nbytes = "{"300KB" if quick else "10MB"}"\ndirection = "down"',
        ),
        "web": (f'stop = "{"300s" if quick else "2000s"}"\n', '[[flow]]\napp = "web"'),
    }
    out = []
    for app in ("ft", "web"):
        for contention in (False, True):
            stop, flow = setup[app]
            for protocol in ("raw", "sr", "asr", "rlc"):
                for models in (MODELS,) if protocol != "rlc" else (("uniform",), ("two-state",)):
                    arq = ARQ[protocol].format(preset=models[0])
                    text = stop + BASE.format(arq=arq, flow=flow) + (MEDIA if contention else "")
                    name = f"{app}-{protocol}{'-' + models[0] if protocol == 'rlc' else ''}-{'contention' if contention else 'alone'}"
                    out.append(
                        {
                            "app": app,
                            "protocol": protocol,
                            "contention": contention,
                            "models": models,
                            "text": text,
                            "name": name,
                        }
                    )
    return out


def run_all(out: Path, quick: bool, scheduler, workers, progress):
    import polars as pl

    from ..sweep import Sweep, execute_sweeps

    reps = 3 if quick else 30
    js = jobs(quick)
    sweeps = []
    for j in js:
        axis, settings = SETTINGS[j["protocol"]]
        axes = {axis: [int(x) for x in settings] if j["protocol"] == "rlc" else settings} if axis else {}
        axes["wireless.channel"] = channels(j["models"])
        sweeps.append((Sweep(j["text"], j["protocol"], [], axes, reps, True), out / "data" / j["name"]))
    results = execute_sweeps(sweeps, scheduler, workers, progress, desc="shared-link-arq", keep_foreign=True)
    frames = []
    for j, (runs, _) in zip(js, results):
        axis = SETTINGS[j["protocol"]][0]
        rows = []
        for r in runs.to_dicts():
            ch = _parse_channel(r["axis:wireless.channel"])
            setting = "-" if axis is None else r[f"axis:{axis}"]
            if j["protocol"] == "rlc":
                setting = str(int(setting))
            for model, flr in _model_flr(ch):
                if model not in j["models"]:
                    continue
                rows.append(
                    {
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

    from ..stats import ci95_expr

    keys = ["app", "protocol", "setting", "model", "flr", "contention"]
    aggs = []
    for m, p in (("throughput_bps", ""), ("media_delay_s", "delay_")):
        aggs += [pl.col(m).mean().alias(f"{p}mean"), pl.col(m).std().alias(f"{p}sd"), pl.col(m).count().alias(f"{p}n")]
    s = df.group_by(keys, maintain_order=True).agg(aggs)
    return s.with_columns(
        ci95_expr("sd", "n", single=0.0).alias("ci95"), ci95_expr("delay_sd", "delay_n", single=0.0).alias("delay_ci95")
    ).sort(["app", "protocol", "model", "contention", "setting", "flr"])


def _sel(summary, **kw):
    import polars as pl

    cond = pl.lit(True)
    for k, v in kw.items():
        cond = cond & (pl.col(k) == v)
    return summary.filter(cond)


def _figure(out: Path, stem: str, title: str, ylabel: str, lines: list, written: list):
    """One figure: `lines` = [(label, flrs, means, cis)], x = FLR in percent."""
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
    for ext in ("png", "pdf"):
        p = out / f"{stem}.{ext}"
        with atomic_path(p) as tmp:
            fig.savefig(tmp, format=ext)
        written.append(p)
    plt.close(fig)


def _errors(model: str) -> str:
    return "Uniform" if model == "uniform" else "Two State"


def _line(sub, label: str, delay: bool = False):
    """A figure line: throughput in kbit/s, or media delay in ms."""
    g = sub.sort("flr")
    m, c, k = ("delay_mean", "delay_ci95", 1e3) if delay else ("mean", "ci95", 1e-3)
    return (label, list(g["flr"]), [v * k for v in g[m]], [v * k for v in g[c]])


def plot(summary, out: Path) -> list[Path]:
    written: list[Path] = []
    for (app, protocol, model, contention), fig_no in FIGS.items():
        sub = _sel(summary, app=app, protocol=protocol, model=model, contention=contention)
        lines = [
            _line(_sel(sub, setting=st), f"{NAMES[protocol]} {st}{' retx' if protocol == 'rlc' else ''}")
            for st in SETTINGS[protocol][1]
        ]
        label = f"Fig. {fig_no}" if fig_no else "(no figure in the paper)"
        stem = (
            f"fig{fig_no:02d}" if fig_no else "extra"
        ) + f"_{app}_{protocol}_{model}_{'contention' if contention else 'alone'}"
        _figure(
            out,
            stem,
            f"{label}: {APPS[app]}, {NAMES[protocol]}, {_errors(model)} errors, {'Contention' if contention else 'no Contention'}",
            f"{APPS[app]} throughput (kbit/s)",
            lines,
            written,
        )
    for (app, model, contention), fig_no in COMPARE_FIGS.items():
        lines = [
            _line(
                _sel(summary, app=app, protocol=p, model=model, contention=contention, setting=TUNED[p][model]),
                NAMES[p] + ("" if p == "raw" else f" {TUNED[p][model]}"),
            )
            for p in ("raw", "sr", "asr", "rlc")
        ]
        stem = f"fig{fig_no:02d}_{app}_compare_{model}_{'contention' if contention else 'alone'}"
        _figure(
            out,
            stem,
            f"Fig. {fig_no}: {APPS[app]}, tuned protocols, {_errors(model)} errors, {'Contention' if contention else 'no Contention'}",
            f"{APPS[app]} throughput (kbit/s)",
            lines,
            written,
        )
    for (app, model), fig_no in DELAY_FIGS.items():
        lines = [
            _line(
                _sel(summary, app=app, protocol=p, model=model, contention=True, setting=TUNED[p][model]),
                NAMES[p] + ("" if p == "raw" else f" {TUNED[p][model]}"),
                delay=True,
            )
            for p in ("raw", "sr", "asr", "rlc")
        ]
        stem = (f"fig{fig_no:02d}" if fig_no else "extra") + f"_{app}_media_delay_{model}"
        label = f"Fig. {fig_no}" if fig_no else "(no figure in the paper)"
        _figure(
            out,
            stem,
            f"{label}: Media Distribution delay against {APPS[app]}, {_errors(model)} errors",
            "Media packet delay (ms)",
            lines,
            written,
        )
    return written


def _at(summary, app, protocol, model, contention, flr=0.054, delay=False):
    m, c = ("delay_mean", "delay_ci95") if delay else ("mean", "ci95")
    return {
        r["setting"]: (r[m], r[c])
        for r in _sel(summary, app=app, protocol=protocol, model=model, contention=contention, flr=flr).to_dicts()
    }


def _tuned(summary, app, model, contention, flr=0.054, delay=False) -> dict:
    """§VII: protocol -> (mean, ci) of its tuned setting."""
    return {
        p: _at(summary, app, p, model, contention, flr, delay)[TUNED[p][model]] for p in ("raw", "sr", "asr", "rlc")
    }


def _fmt(vals: dict, delay=False) -> str:
    if delay:
        return ", ".join(f"{k}: {m * 1e3:.0f}±{c * 1e3:.0f}" for k, (m, c) in vals.items()) + " ms"
    return ", ".join(f"{k}: {m / 1e3:.2f}±{c / 1e3:.2f}" for k, (m, c) in vals.items()) + " kbit/s"


def _named(vals: dict) -> dict:
    return {NAMES[p]: v for p, v in vals.items()}


def _ctx(contention: bool) -> str:
    return "contention" if contention else "no contention"


def _setting_points(summary, protocol: str, section: str):
    """Per application, error model and contention (the order of the claims): the
    per-setting results at FLR 5.4 % and where the paper shows them."""
    for app in ("ft", "web"):
        for model in MODELS:
            for contention in (False, True):
                fig = FIGS[(app, protocol, model, contention)]
                where = f"Fig. {fig}" if fig else f"stated in §{section} without a figure"
                yield app, model, contention, _at(summary, app, protocol, model, contention), where


def claims(summary) -> list[dict]:
    out = []
    best = lambda v: max(v, key=lambda k: v[k][0])
    worst = lambda v: min(v, key=lambda k: v[k][0])
    for app, model, contention, v, where in _setting_points(summary, "sr", "IV"):
        want = SR_TIMEOUTS[-1] if contention else SR_TIMEOUTS[0]
        out.append(
            {
                "claim": f"SR, {model} errors, {_ctx(contention)}: the {'highest' if contention else 'lowest'} timeout "
                f"({want}) gives the best {APPS[app]} throughput at FLR 5.4% ({where})",
                "section": "IV",
                "expected": f"best = {want}",
                "measured": f"best = {best(v)} ({_fmt(v)})",
                "pass": best(v) == want,
            }
        )
    for app, model, contention, v, where in _setting_points(summary, "asr", "V"):
        want = TUNED["asr"][model]
        out.append(
            {
                "claim": f"ASR, {APPS[app]}, {model} errors, {_ctx(contention)}: ASR {want} is the best policy "
                f"and ASR 1+4 the worst at FLR 5.4% ({where})",
                "section": "V",
                "expected": f"best = {want}, worst = 1+4",
                "measured": f"best = {best(v)}, worst = {worst(v)} ({_fmt(v)})",
                "pass": best(v) == want and worst(v) == "1+4",
            }
        )
    for app, model, contention, v, where in _setting_points(summary, "rlc", "VI"):
        want = TUNED["rlc"][model]
        out.append(
            {
                "claim": f"RLC, {APPS[app]}, {model} errors, {_ctx(contention)}: {want} retransmission{'s give' if want != '1' else ' gives'} "
                f"the best throughput at FLR 5.4% ({where})",
                "section": "VI",
                "expected": f"best = {want}",
                "measured": f"best = {best(v)} ({_fmt(v)})",
                "pass": best(v) == want,
            }
        )
    out += _comparison_claims(summary)
    return out


def _comparison_claims(summary) -> list[dict]:
    out = []

    def add(fig, claim, expected, vals, ok, delay=False):
        out.append(
            {
                "claim": f"{claim} (Fig. {fig})" if fig else claim,
                "section": "VII",
                "expected": expected,
                "measured": _fmt(_named(vals), delay),
                "pass": bool(ok),
            }
        )

    m = lambda v, p: v[p][0]
    for app in ("ft", "web"):
        for model in MODELS:
            for contention in (False, True):
                fig = COMPARE_FIGS[(app, model, contention)]
                v = _tuned(summary, app, model, contention)
                hi = _tuned(summary, app, model, contention, flr=0.098)
                head = f"{APPS[app]}, {model} errors, {_ctx(contention)}, FLR 5.4%"
                if app == "ft" and model == "uniform":
                    if not contention:
                        add(
                            fig,
                            f"{head}: SR, ASR and RLC all beat the Raw Link",
                            "SR, ASR, RLC > Raw Link",
                            v,
                            all(m(v, p) > m(v, "raw") for p in ("sr", "asr", "rlc")),
                        )
                    add(fig, f"{head}: ASR beats SR", "ASR > SR", v, m(v, "asr") > m(v, "sr"))
                    add(
                        fig,
                        f"{APPS[app]}, {model} errors, {_ctx(contention)}, FLR 9.8%: RLC beats ASR at the highest FLR",
                        "RLC > ASR",
                        hi,
                        m(hi, "rlc") > m(hi, "asr"),
                    )
                elif app == "ft":
                    add(fig, f"{head}: ASR beats RLC", "ASR > RLC", v, m(v, "asr") > m(v, "rlc"))
                    if contention:
                        add(fig, f"{head}: SR falls below the Raw Link", "SR < Raw Link", v, m(v, "sr") < m(v, "raw"))
                    else:
                        add(
                            fig,
                            f"{head}: SR performs slightly better than ASR",
                            "SR > ASR",
                            v,
                            m(v, "sr") > m(v, "asr"),
                        )
                elif model == "uniform":
                    add(
                        fig,
                        f"{head}: ASR beats SR, and SR beats RLC",
                        "ASR > SR > RLC",
                        v,
                        m(v, "asr") > m(v, "sr") > m(v, "rlc"),
                    )
                else:
                    closer = abs(m(v, "rlc") - m(v, "raw")) < abs(m(v, "asr") - m(v, "rlc"))
                    add(
                        fig,
                        f"{head}: RLC is closer to the Raw Link than to ASR",
                        "|RLC − Raw| < |ASR − RLC|",
                        v,
                        closer,
                    )
    for app in ("ft", "web"):
        for model in MODELS:
            fig = DELAY_FIGS[(app, model)]
            v = _tuned(summary, app, model, True, delay=True)
            order = "RLC > ASR" if model == "uniform" else "ASR > RLC"
            ok = min(v, key=lambda p: v[p][0]) == "raw" and max(v, key=lambda p: v[p][0]) == "sr"
            ok = ok and ((m(v, "rlc") > m(v, "asr")) if model == "uniform" else (m(v, "asr") > m(v, "rlc")))
            claim = f"Media Distribution delay against {APPS[app]}, {model} errors, FLR 5.4%: the Raw Link lowest, SR highest, {order}"
            add(
                fig,
                claim if fig else claim + " (stated in §VII without a figure)",
                f"lowest = Raw Link, highest = SR, {order}",
                v,
                ok,
                delay=True,
            )
        for p in ("asr", "rlc"):
            worst = []
            ok = True
            for model in MODELS:
                base = _tuned(summary, app, model, True, flr=0.0, delay=True)[p]
                for flr in FLRS[1:]:
                    d = _tuned(summary, app, model, True, flr=flr, delay=True)[p]
                    ok = ok and d[0] - d[1] <= base[0] + base[1]
                    worst.append((d[0] - base[0], f"{model} {flr * 100:.1f}%"))
            inc, where = max(worst)
            out.append(
                {
                    "claim": f"{NAMES[p]} never increases Media Distribution delay (against {APPS[app]}) above the no-loss case, at any FLR",
                    "section": "VII",
                    "expected": "delay(FLR) ≤ delay(0) within 95% CIs",
                    "measured": f"largest increase {inc * 1e3:+.0f} ms ({where})",
                    "pass": ok,
                }
            )
    return out


def reproduce(out: Path, quick: bool = False, scheduler=None, workers=None, progress=True) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    df = run_all(out, quick, scheduler, workers, progress)
    summary = summarize(df)
    summary.write_parquet(out / "summary.parquet")
    summary.write_csv(out / "summary.csv")
    plot(summary, out)
    cl = claims(summary)
    from .report import write_claims

    write_claims(out, cl)
    return cl
