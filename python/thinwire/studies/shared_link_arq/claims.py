"""The claims of study `shared-link-arq` (seed 002 §IV–VII), checked under each
link-sharing structure run, each failure with its `why`.

A claim is a dict: `id` (stable across structures and runs), `section`, `claim`,
`expected`, `structure` (`shared-queue` or `pull`), `measured`, `pass`, and `why`
(empty when it passes): what the paper says or does not say that bears on it, the
mechanism thinwire measured, and the figures (timeouts per run, and whether the
means compared lie within each other's 95 % confidence intervals). Explanations are
written from the full study's results (docs/studies/shared-link-arq.md); none
changes a claim or a model.
"""

from __future__ import annotations

from ..report import counts, verdict
from .design import (
    APPS,
    COMPARE_FIGS,
    DELAY_FIGS,
    FIGS,
    FLRS,
    MODELS,
    MUXES,
    NAMES,
    SR_TIMEOUTS,
    TUNED,
    select,
)
from .why import WHY


def _at(summary, app, protocol, model, contention, flr=0.054, delay=False):
    m, c = ("delay_mean", "delay_ci95") if delay else ("mean", "ci95")
    return {
        r["setting"]: (r[m], r[c])
        for r in select(summary, app=app, protocol=protocol, model=model, contention=contention, flr=flr).to_dicts()
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


def _claims_one(summary, mux: str) -> list[dict]:
    out = []
    best = lambda v: max(v, key=lambda k: v[k][0])
    worst = lambda v: min(v, key=lambda k: v[k][0])
    for app, model, contention, v, where in _setting_points(summary, "sr", "IV"):
        want = SR_TIMEOUTS[-1] if contention else SR_TIMEOUTS[0]
        ok = best(v) == want
        tied = _rank_tied(v, want, best(v), best)
        out.append(
            {
                "id": f"IV-{_tag(app, model, contention)}",
                "claim": f"SR, {model} errors, {_ctx(contention)}: the {'highest' if contention else 'lowest'} timeout "
                f"({want}) gives the best {APPS[app]} throughput at FLR 5.4% ({where})",
                "section": "IV",
                "expected": f"best = {want}",
                "measured": f"best = {best(v)} ({_fmt(v)})",
                "pass": ok,
                "inconclusive": tied,
                "why": "" if ok else _why_rank(summary, mux, "IV", "sr", app, model, contention, want, best(v), v),
            }
        )
    for app, model, contention, v, where in _setting_points(summary, "asr", "V"):
        want = TUNED["asr"][model]
        ok = best(v) == want and worst(v) == "1+4"
        tied = _rank_tied(v, want, best(v), best) or _rank_tied(v, "1+4", worst(v), worst)
        out.append(
            {
                "id": f"V-{_tag(app, model, contention)}",
                "claim": f"ASR, {APPS[app]}, {model} errors, {_ctx(contention)}: ASR {want} is the best policy "
                f"and ASR 1+4 the worst at FLR 5.4% ({where})",
                "section": "V",
                "expected": f"best = {want}, worst = 1+4",
                "measured": f"best = {best(v)}, worst = {worst(v)} ({_fmt(v)})",
                "pass": ok,
                "inconclusive": tied,
                "why": ""
                if ok
                else _why_rank(summary, mux, "V", "asr", app, model, contention, want, best(v), v, worst(v)),
            }
        )
    for app, model, contention, v, where in _setting_points(summary, "rlc", "VI"):
        want = TUNED["rlc"][model]
        ok = best(v) == want
        tied = _rank_tied(v, want, best(v), best)
        out.append(
            {
                "id": f"VI-{_tag(app, model, contention)}",
                "claim": f"RLC, {APPS[app]}, {model} errors, {_ctx(contention)}: {want} retransmission{'s give' if want != '1' else ' gives'} "
                f"the best throughput at FLR 5.4% ({where})",
                "section": "VI",
                "expected": f"best = {want}",
                "measured": f"best = {best(v)} ({_fmt(v)})",
                "pass": ok,
                "inconclusive": tied,
                "why": "" if ok else _why_rank(summary, mux, "VI", "rlc", app, model, contention, want, best(v), v),
            }
        )
    out += _comparison_claims(summary, mux)
    return out


def _comparison_claims(summary, mux: str) -> list[dict]:
    out = []

    def add(key, fig, claim, expected, vals, ok, delay=False, pairs=()):
        """`pairs`: the (a, b) whose ordering the verdict rests on; any two within
        each other's 95 % CIs make it inconclusive."""
        out.append(
            {
                "id": f"VII-{key}",
                "claim": f"{claim} (Fig. {fig})" if fig else claim,
                "section": "VII",
                "expected": expected,
                "measured": _fmt(_named(vals), delay),
                "pass": bool(ok),
                "inconclusive": any(_overlap(vals[a], vals[b]) for a, b in pairs),
                "why": "" if ok else _why(f"VII-{key}", mux, _ties(_named(vals), delay)),
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
                tag = _tag(app, model, contention)
                if app == "ft" and model == "uniform":
                    if not contention:
                        add(
                            f"all-beat-raw-{tag}",
                            fig,
                            f"{head}: SR, ASR and RLC all beat the Raw Link",
                            "SR, ASR, RLC > Raw Link",
                            v,
                            all(m(v, p) > m(v, "raw") for p in ("sr", "asr", "rlc")),
                            pairs=[(p, "raw") for p in ("sr", "asr", "rlc")],
                        )
                    add(
                        f"asr-beats-sr-{tag}",
                        fig,
                        f"{head}: ASR beats SR",
                        "ASR > SR",
                        v,
                        m(v, "asr") > m(v, "sr"),
                        pairs=[("asr", "sr")],
                    )
                    add(
                        f"rlc-beats-asr-9.8-{tag}",
                        fig,
                        f"{APPS[app]}, {model} errors, {_ctx(contention)}, FLR 9.8%: RLC beats ASR at the highest FLR",
                        "RLC > ASR",
                        hi,
                        m(hi, "rlc") > m(hi, "asr"),
                        pairs=[("rlc", "asr")],
                    )
                elif app == "ft":
                    add(
                        f"asr-beats-rlc-{tag}",
                        fig,
                        f"{head}: ASR beats RLC",
                        "ASR > RLC",
                        v,
                        m(v, "asr") > m(v, "rlc"),
                        pairs=[("asr", "rlc")],
                    )
                    if contention:
                        add(
                            f"sr-below-raw-{tag}",
                            fig,
                            f"{head}: SR falls below the Raw Link",
                            "SR < Raw Link",
                            v,
                            m(v, "sr") < m(v, "raw"),
                            pairs=[("sr", "raw")],
                        )
                    else:
                        add(
                            f"sr-beats-asr-{tag}",
                            fig,
                            f"{head}: SR performs slightly better than ASR",
                            "SR > ASR",
                            v,
                            m(v, "sr") > m(v, "asr"),
                            pairs=[("sr", "asr")],
                        )
                elif model == "uniform":
                    add(
                        f"asr-sr-rlc-{tag}",
                        fig,
                        f"{head}: ASR beats SR, and SR beats RLC",
                        "ASR > SR > RLC",
                        v,
                        m(v, "asr") > m(v, "sr") > m(v, "rlc"),
                        pairs=[("asr", "sr"), ("sr", "rlc")],
                    )
                else:
                    closer = abs(m(v, "rlc") - m(v, "raw")) < abs(m(v, "asr") - m(v, "rlc"))
                    add(
                        f"rlc-near-raw-{tag}",
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
            lo2 = min((p for p in v if p != "raw"), key=lambda p: v[p][0])
            hi2 = max((p for p in v if p != "sr"), key=lambda p: v[p][0])
            delay_pairs = [("raw", lo2), ("sr", hi2), ("rlc", "asr")]
            claim = f"Media Distribution delay against {APPS[app]}, {model} errors, FLR 5.4%: the Raw Link lowest, SR highest, {order}"
            add(
                f"delay-order-{app}-{model}",
                fig,
                claim if fig else claim + " (stated in §VII without a figure)",
                f"lowest = Raw Link, highest = SR, {order}",
                v,
                ok,
                delay=True,
                pairs=delay_pairs,
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
            key = f"VII-delay-never-up-{p}-{app}"
            out.append(
                {
                    "id": key,
                    "claim": f"{NAMES[p]} never increases Media Distribution delay (against {APPS[app]}) above the no-loss case, at any FLR",
                    "section": "VII",
                    "expected": "delay(FLR) ≤ delay(0) within 95% CIs",
                    "measured": f"largest increase {inc * 1e3:+.0f} ms ({where})",
                    "pass": ok,
                    "inconclusive": False,
                    "why": "" if ok else _why(key, mux, ""),
                }
            )
    return out


def _overlap(a: tuple, b: tuple) -> bool:
    """Two (mean, 95 % CI half-width) that lie within each other's intervals."""
    return abs(a[0] - b[0]) <= a[1] + b[1]


def _rank_tied(v: dict, want: str, got: str, pick) -> bool:
    """Whether a ranking's verdict rests on a statistical tie: the expected
    setting against the one found in its place (or, when they agree, against the
    runner-up)."""
    if got != want:
        return _overlap(v[want], v[got])
    rest = {k: x for k, x in v.items() if k != want}
    return bool(rest) and _overlap(v[want], v[pick(rest)])


def _tag(app: str, model: str, contention: bool) -> str:
    """The case part of a claim id, e.g. `ft-uniform-alone`."""
    return f"{app}-{model}-{'contention' if contention else 'alone'}"


def _why(key: str, mux: str, measured: str) -> str:
    """The recorded explanation of claim `key` failing under `mux`, then what was
    measured; a failure nobody has examined says so."""
    text = WHY.get((key, mux)) or WHY.get((key, "*"))
    if text is None:
        text = "Not yet examined: no explanation recorded for this claim in this structure."
    return f"{text} {measured}".strip()


def _ties(vals: dict, delay: bool = False) -> str:
    """Pairs of compared means that lie within each other's 95 % CIs."""
    names = list(vals)
    k, unit = (1e3, "ms") if delay else (1e-3, "kbit/s")
    tied = [
        f"{a} {vals[a][0] * k:.{0 if delay else 2}f} and {b} {vals[b][0] * k:.{0 if delay else 2}f} {unit}"
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if abs(vals[a][0] - vals[b][0]) <= vals[a][1] + vals[b][1]
    ]
    return f"Within each other's 95 % CIs: {'; '.join(tied)}." if tied else ""


def _why_rank(summary, mux, section, protocol, app, model, contention, want, best, v, worst=None) -> str:
    """Why the expected setting is not the best (or 1+4 not the worst): the recorded
    explanation, whether the two are a statistical tie, and the timeouts per run."""
    pts = {
        r["setting"]: r
        for r in select(summary, app=app, protocol=protocol, model=model, contention=contention, flr=0.054).to_dicts()
    }
    shown = [s for s in dict.fromkeys([want, best] + (["1+4", worst] if worst else [])) if s in pts]
    notes = []
    (mw, cw), (mb, cb) = v[want], v[best]
    if best != want and mw + cw >= mb - cb:
        notes.append(
            f"{want} ({mw / 1e3:.2f}±{cw / 1e3:.2f}) and {best} ({mb / 1e3:.2f}±{cb / 1e3:.2f} kbit/s) lie within each other's 95 % CIs."
        )
    per = lambda col, fmt: ", ".join(f"{s} {pts[s][col]:{fmt}}" for s in shown)
    if protocol == "rlc":
        counts = f"PDUs lost {per('frames_lost', '.0f')}; retransmissions {per('retransmissions', '.0f')}; SDU discards {per('sdu_discards', '.1f')}"
    else:
        counts = f"link timeouts {per('arq_timeouts', '.0f')}"
    notes.append(f"Per run at FLR 5.4%: {counts}; TCP timeouts {per('tcp_timeouts', '.1f')}.")
    key = f"{section}-{_tag(app, model, contention)}"
    return _why(key, mux, " ".join(notes))


def claims(summary) -> list[dict]:
    """Every claim under each structure in `summary` (the paper's first)."""
    out = []
    for mux in MUXES:
        sub = select(summary, mux=mux)
        if sub.height == 0:
            continue
        for c in _claims_one(sub, mux):
            out.append({"id": c.pop("id"), "section": c.pop("section"), **c, "structure": mux})
    return out


def claims_markdown(claims: list[dict]) -> str:
    """One row per claim, a result column per structure, and the why of each failure."""
    muxes = list(dict.fromkeys(c["structure"] for c in claims))
    rows: dict = {}
    for c in claims:
        rows.setdefault(c["id"], {"c": c})[c["structure"]] = c
    head = "| section | claim | expected | " + " | ".join(f"{m}: measured | {m}" for m in muxes) + " | why (failures) |"
    lines = [head, "|" + "---|" * (4 + 2 * len(muxes))]
    for r in rows.values():
        c = r["c"]
        cells = [c["section"], c["claim"], c["expected"]]
        whys = []
        for m in muxes:
            x = r.get(m)
            cells += [x["measured"], verdict(x)] if x else ["—", "—"]
            if x and not x["pass"] and not x.get("inconclusive"):
                whys.append(f"**{m}**: {x['why']}")
        cells.append("<br>".join(whys))
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")

    def told(m):
        ok, inc, _ = counts([c for c in claims if c["structure"] == m])
        return f"{m}: {ok} of {sum(c['structure'] == m for c in claims)} ({inc} inconclusive: within 95 % CIs)"

    counts_line = ", ".join(told(m) for m in muxes)
    return f"Claims reproduced — {counts_line}.\n\n" + "\n".join(lines) + "\n"
