"""Study `shared-link-arq` (seed 002_7c10a20fa5911126.txt): link-layer ARQ designs on
a shared 64 kbit/s wireless link.

Implemented so far: File Transfer and Web Browsing over fixed-timeout SR (§IV,
Figs. 2–9) and over adaptive SR (§V, Figs. 10–13 and the web results §V states
without figures), uniform and two-state errors, with and without contention from
Media Distribution. Not yet: UMTS RLC (§VI) and the overall comparison (§VII).
Web Browsing runs for 2000 s (seed 002 §III); its metric is the bytes of completed
transactions over the time at the end of the last one.

Setup (seed 002 §III): server — 10 Mbit/s, 1 ms — access point — 64 kbit/s, 50 ms —
client; 250-byte frames plus a 4-byte header; TCP Reno with 10 ms timers, MSS 210
(250-byte packets); 10 MB files; SR window 127 frames, ACK delay 0.5 s; ASR initial
srtt 1.1 s. The two-state model's bad-state means 100/200/500/1000 ms are the ones
the paper lists for FLRs 1.5/2.5/5.4/9.8 %; the uniform model uses those FLRs.
Contention: the Media Distribution UDP source bypassing ARQ. Link-layer frames of
both sessions go through one 50-frame drop-tail interface queue below the link
layer (`mux = "shared-queue"`), the structure of the ns-2 simulator the paper used:
ARQ timers run while a frame waits there behind media frames. (thinwire's default
`pull` multiplexer gives the link layer the radio only when it is free; with it the
reversal of §IV does not appear — see docs/studies/shared-link-arq.md.) The TCP window is ns-2's default of 20 segments (the paper
used ns-2 and does not say otherwise). Claims are checked at FLR 5.4 %, as the
paper's "5.4 % performance gaps" are.
"""
from __future__ import annotations

import json
from pathlib import Path

FLRS = [0.0, 0.015, 0.025, 0.054, 0.098]
BAD_MEAN = {0.015: "100ms", 0.025: "200ms", 0.054: "500ms", 0.098: "1000ms"}
SR_TIMEOUTS = ["0.9s", "1.0s", "1.1s", "1.2s", "1.3s"]
ASR_POLICIES = ["1+4", "2+4", "3+2", "4+0", "4+2"]
FIGS = {  # (application, protocol, model, contention) -> seed figure number (None: not in the paper)
    ("ft", "sr", "uniform", False): 2, ("ft", "sr", "uniform", True): 3, ("ft", "sr", "two-state", False): 4, ("ft", "sr", "two-state", True): 5,
    ("web", "sr", "uniform", False): 6, ("web", "sr", "uniform", True): 7, ("web", "sr", "two-state", False): 8, ("web", "sr", "two-state", True): 9,
    ("ft", "asr", "uniform", False): 10, ("ft", "asr", "uniform", True): 11, ("ft", "asr", "two-state", False): 12, ("ft", "asr", "two-state", True): 13,
    ("web", "asr", "uniform", False): None, ("web", "asr", "uniform", True): None, ("web", "asr", "two-state", False): None, ("web", "asr", "two-state", True): None,
}
APPS = {"ft": "File Transfer", "web": "Web Browsing"}

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
protocol = "{protocol}"
window = 127
ack_delay = "500ms"
timeout = "1.1s"
initial_srtt = "1.1s"
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


def channels() -> list[dict]:
    out = [channel("uniform", 0.0)]
    for m in ("uniform", "two-state"):
        out += [channel(m, f) for f in FLRS[1:]]
    return out


def _model_flr(ch: dict) -> list[tuple[str, float]]:
    """Which (model, FLR) points a channel value stands for (no errors: both)."""
    if ch["model"] == "none":
        return [("uniform", 0.0), ("two-state", 0.0)]
    if ch["model"] == "uniform":
        return [("uniform", ch["p"])]
    return [("two-state", {v: k for k, v in BAD_MEAN.items()}[ch["bad"]["mean"]])]


def run_all(out: Path, quick: bool, scheduler, workers, progress):
    import polars as pl
    from ..sweep import Sweep, execute_sweep
    reps = 3 if quick else 30
    # Per application: the stop condition (a top-level key, so it leads the text) and the flow.
    setup = {"ft": ('stop = "end"\n', f'[[flow]]\napp = "bulk"\nbytes = "{"300KB" if quick else "10MB"}"\ndirection = "down"'),
             "web": (f'stop = "{"300s" if quick else "2000s"}"\n', '[[flow]]\napp = "web"')}
    ch_values = channels()
    frames = []
    for app, protocol, axis, settings, contention in [(a, p, ax, st, c) for a in ("ft", "web")
                                                      for p, ax, st in (("sr", "wireless.arq.timeout", SR_TIMEOUTS), ("asr", "wireless.arq.policy", ASR_POLICIES))
                                                      for c in (False, True)]:
            stop, flow = setup[app]
            text = stop + BASE.format(protocol=protocol, flow=flow) + (MEDIA if contention else "")
            sw = Sweep(text, f"{protocol}", [], {axis: settings, "wireless.channel": ch_values}, reps, True)
            runs, _ = execute_sweep(sw, out / "data" / f"{app}-{protocol}-{'contention' if contention else 'alone'}", scheduler, workers, progress)
            rows = []
            for r in runs.to_dicts():
                ch = _parse_channel(r["axis:wireless.channel"])
                for model, flr in _model_flr(ch):
                    rows.append({"app": app, "protocol": protocol, "setting": r[f"axis:{axis}"], "model": model, "flr": flr, "contention": contention,
                                 "replication": r["replication"], "throughput_bps": r["flow0.throughput_bps"],
                                 "media_delay_s": r.get("flow1.delay_mean_s"), "tcp_timeouts": r["flow0.tcp_timeouts"],
                                 "arq_timeouts": r["down.arq_timeouts"], "down_flr": r["down.flr"]})
            frames.append(pl.DataFrame(rows, infer_schema_length=None))
    return pl.concat(frames, how="diagonal_relaxed")


def _parse_channel(text: str) -> dict:
    import tomllib
    return tomllib.loads(f"v = {text}")["v"]


def summarize(df):
    import polars as pl
    from ..stats import t975
    s = (df.group_by(["app", "protocol", "setting", "model", "flr", "contention"], maintain_order=True)
           .agg(pl.col("throughput_bps").mean().alias("mean"), pl.col("throughput_bps").std().alias("sd"), pl.len().alias("n")))
    return s.with_columns(pl.struct(["sd", "n"]).map_elements(lambda x: t975(x["n"] - 1) * (x["sd"] or 0) / x["n"] ** 0.5 if x["n"] > 1 else 0.0,
                                                              return_dtype=pl.Float64).alias("ci95")).sort(["app", "protocol", "model", "contention", "setting", "flr"])


def plot(summary, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl
    written = []
    for (app, protocol, model, contention), fig_no in FIGS.items():
        sub = summary.filter((pl.col("app") == app) & (pl.col("protocol") == protocol) & (pl.col("model") == model) & (pl.col("contention") == contention))
        fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=150)
        settings = SR_TIMEOUTS if protocol == "sr" else ASR_POLICIES
        for i, st in enumerate(settings):
            g = sub.filter(pl.col("setting") == st).sort("flr")
            label = f"SR {st}" if protocol == "sr" else f"ASR {st}"
            dodge = (i - (len(settings) - 1) / 2) * 0.06  # spread overlapping error bars
            ax.errorbar([f * 100 + dodge for f in g["flr"]], [m / 1e3 for m in g["mean"]], yerr=[c / 1e3 for c in g["ci95"]],
                        marker="os^vD"[i], ms=4, capsize=3, lw=1.2, label=label)
        ax.set_xlabel("Frame loss rate (%)")
        ax.set_ylabel(f"{APPS[app]} throughput (kbit/s)")
        label = f"Fig. {fig_no}" if fig_no else "(no figure in the paper)"
        ax.set_title(f"{label}: {APPS[app]}, {protocol.upper()}, {'Uniform' if model == 'uniform' else 'Two State'} errors, "
                     f"{'Contention' if contention else 'no Contention'}", fontsize=8)
        ax.set_xticks([f * 100 for f in FLRS])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
        fig.tight_layout()
        for ext in ("png", "pdf"):
            stem = f"fig{fig_no:02d}" if fig_no else "extra"
            p = out / f"{stem}_{app}_{protocol}_{model}_{'contention' if contention else 'alone'}.{ext}"
            fig.savefig(p)
            written.append(p)
        plt.close(fig)
    return written


def _at(summary, app, protocol, model, contention, flr=0.054):
    import polars as pl
    sub = summary.filter((pl.col("app") == app) & (pl.col("protocol") == protocol) & (pl.col("model") == model) & (pl.col("contention") == contention) & (pl.col("flr") == flr))
    return {r["setting"]: (r["mean"], r["ci95"]) for r in sub.to_dicts()}


def _fmt(vals: dict) -> str:
    return ", ".join(f"{k}: {m / 1e3:.2f}±{c / 1e3:.2f}" for k, (m, c) in vals.items()) + " kbit/s"


def claims(summary) -> list[dict]:
    out = []
    best = lambda v: max(v, key=lambda k: v[k][0])
    worst = lambda v: min(v, key=lambda k: v[k][0])
    for app in ("ft", "web"):
        for model in ("uniform", "two-state"):
            for contention, want in ((False, SR_TIMEOUTS[0]), (True, SR_TIMEOUTS[-1])):
                fig = FIGS[(app, "sr", model, contention)]
                v = _at(summary, app, "sr", model, contention)
                out.append({"claim": f"SR, {model} errors, {'contention' if contention else 'no contention'}: the {'highest' if contention else 'lowest'} timeout "
                                     f"({want}) gives the best {APPS[app]} throughput at FLR 5.4% (Fig. {fig})",
                            "section": "IV", "expected": f"best = {want}", "measured": f"best = {best(v)} ({_fmt(v)})", "pass": best(v) == want})
    for app in ("ft", "web"):
        for model, want in (("uniform", "3+2"), ("two-state", "4+0")):
            for contention in (False, True):
                fig = FIGS[(app, "asr", model, contention)]
                v = _at(summary, app, "asr", model, contention)
                where = f"Fig. {fig}" if fig else "stated in §V without a figure"
                out.append({"claim": f"ASR, {APPS[app]}, {model} errors, {'contention' if contention else 'no contention'}: ASR {want} is the best policy "
                                     f"and ASR 1+4 the worst at FLR 5.4% ({where})",
                            "section": "V", "expected": f"best = {want}, worst = 1+4", "measured": f"best = {best(v)}, worst = {worst(v)} ({_fmt(v)})",
                            "pass": best(v) == want and worst(v) == "1+4"})
    return out


def reproduce(out: Path, quick: bool = False, scheduler=None, workers=None, progress=True) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    df = run_all(out, quick, scheduler, workers, progress)
    summary = summarize(df)
    summary.write_parquet(out / "summary.parquet")
    summary.write_csv(out / "summary.csv")
    plot(summary, out)
    cl = claims(summary)
    (out / "claims.json").write_text(json.dumps(cl, indent=2) + "\n")
    lines = ["| section | claim | expected | measured | result |", "|---|---|---|---|---|"]
    lines += [f"| {c['section']} | {c['claim']} | {c['expected']} | {c['measured']} | {'PASS' if c['pass'] else 'FAIL'} |" for c in cl]
    (out / "claims.md").write_text("\n".join(lines) + "\n")
    return cl
