"""Study `shared-link-arq`'s design: the seed's settings (error models and
FLRs, protocols and their swept settings, §VII's tuned ones), the figures they map
to, the scenarios of every sweep (`jobs`), and `select` over the summary. Shared by
the runs (`__init__.py`) and the claims (`claims.py`), which import this and not
each other.
"""

from __future__ import annotations

FLRS = [0.0, 0.015, 0.025, 0.054, 0.098]
BAD_MEAN = {0.015: "100ms", 0.025: "200ms", 0.054: "500ms", 0.098: "1000ms"}
MODELS = ("uniform", "two-state")
# Link-sharing structures, the paper's (ns-2's interface queue) first.
MUXES = ("shared-queue", "pull")
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
mux = "{mux}"
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


def jobs(quick: bool, muxes=MUXES) -> list[dict]:
    """Every sweep of the study: per link-sharing structure, application, contention
    and protocol (RLC once per error model, since its Table I preset follows the
    model)."""
    setup = {
        "ft": (
            'stop = "end"\n',
            f'[[flow]]\napp = "bulk"\nbytes = "{"300KB" if quick else "10MB"}"\ndirection = "down"',
        ),
        "web": (f'stop = "{"300s" if quick else "2000s"}"\n', '[[flow]]\napp = "web"'),
    }
    out = []
    for mux in muxes:
        for app in ("ft", "web"):
            for contention in (False, True):
                stop, flow = setup[app]
                for protocol in ("raw", "sr", "asr", "rlc"):
                    for models in (MODELS,) if protocol != "rlc" else (("uniform",), ("two-state",)):
                        arq = ARQ[protocol].format(preset=models[0])
                        text = stop + BASE.format(arq=arq, flow=flow, mux=mux) + (MEDIA if contention else "")
                        name = f"{app}-{protocol}{'-' + models[0] if protocol == 'rlc' else ''}-{'contention' if contention else 'alone'}"
                        out.append(
                            {
                                "mux": mux,
                                "app": app,
                                "protocol": protocol,
                                "contention": contention,
                                "models": models,
                                "text": text,
                                "name": name if mux == MUXES[0] else f"{mux}/{name}",
                            }
                        )
    return out


def structures(mux: str) -> tuple[str, ...]:
    """The structures `--mux` names: one of MUXES, or "both"."""
    if mux == "both":
        return MUXES
    if mux not in MUXES:
        raise ValueError(f"--mux: {mux!r} is not a link-sharing structure; accepted: both, {', '.join(MUXES)}")
    return (mux,)


def select(summary, **kw):
    """The summary's rows whose columns equal the given values."""
    import polars as pl

    cond = pl.lit(True)
    for k, v in kw.items():
        cond = cond & (pl.col(k) == v)
    return summary.filter(cond)
