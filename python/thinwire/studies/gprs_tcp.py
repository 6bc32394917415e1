"""Study `gprs-tcp` (seeds 003_3bf669faf9a1612a.txt §III–IV and
004_e0bd93b9360847dc.txt §II–III): TCP over a GPRS link without a proxy.

Link and hosts: studies/gprs_common.py. Experiments:
- latency (seed 003 Fig. 2): 64-byte UDP datagrams alone, spaced 5–10 s at random,
  1000 per direction (200 with --quick); then bursts of 5 to see that only a
  burst's first packet pays the set-up jitter;
- a 600 KB download under good, fair and poor radio (seed 003 Fig. 4), 5 seeds each
  (2 with --quick): transfer time; slow start's time to reach the ~10 KB
  bandwidth-delay product (Fig. 5); outstanding data and the RTT as the gateway
  buffer fills (Fig. 6, seed 004 Fig. 3b);
- a second 600 KB download started 10 s after the first (seed 004 Fig. 4): its SYN
  and its share;
- a 25 s outage 60 s into a 600 KB download (seed 004 Fig. 3a, seed 003 Fig. 6):
  packets held past the 20 s PDU lifetime are lost; the recovery time is how long
  after the outage the receiver's in-order data starts advancing again.
"""

from __future__ import annotations

from pathlib import Path

from .gprs_common import (
    BDP,
    LINK_BPS,
    add_claim,
    delivered,
    flow,
    outstanding,
    pct,
    recovery_s,
    scenario,
    share_between,
    srtt,
    syn_sends,
)
from .report import finish_figure, label
from .study import Study

OUTAGE = (60, 25)


LATENCY = (("down", {}), ("up", {"direction": "up"}), ("burst", {"burst": 5}))


def latency(name: str, quick: bool) -> list:
    """One-way delays of probe datagrams (seed 003 Fig. 2): alone down, up, or in bursts of 5."""
    import thinwire

    n = 200 if quick else 1000
    stop = f"{int(n * 7.5 + 60)}s"
    extra = dict(LATENCY)[name]
    msgs = n // 5 if name == "burst" else n
    res = thinwire.run(scenario(flow("probe", tcp=None, messages=msgs, **extra), stop=stop))
    return res.media_delays(0)["delay_s"].to_list()


def download(radio: str, seed: int, outage=None) -> dict:
    import polars as pl

    import thinwire

    res = thinwire.run(scenario(flow(bytes="600KB"), radio, outage), seed=seed, trace=["tcp"])
    tr = res.trace
    f = res.summary["flows"][0]
    cw = tr.filter(
        (pl.col("layer") == "tcp")
        & (pl.col("node") == "server")
        & (pl.col("event") == "cwnd")
        & (pl.col("value") >= BDP)
    )
    o = outstanding(tr)
    r = srtt(tr)
    row = {
        "radio": radio,
        "seed": seed,
        "completion_s": f["completion_s"],
        "throughput_Bps": f["throughput_bps"] / 8,
        "retransmits": f["tcp_retransmits"],
        "timeouts": f["tcp_timeouts"],
        "cwnd_bdp_s": float(cw["time_ns"][0] / 1e9) if cw.height else None,
        "max_outstanding": int(o["bytes"].max()),
        "max_srtt_s": float(r["srtt_s"].max()) if r.height else None,
        "rtt_avg_s": f["rtt_avg_s"],
    }
    if outage:
        row["recovery_s"] = recovery_s(tr, outage[0] + outage[1])
    return row


def second_flow(seed: int = 1, proxy: str | None = None, gap: float = 10.0) -> dict:
    import thinwire

    res = thinwire.run(
        scenario(flow(bytes="600KB") + flow(bytes="600KB", start=gap), proxy=proxy), seed=seed, trace=["tcp"]
    )
    tr = res.trace
    f0, f1 = res.summary["flows"]
    end0 = f0["completion_s"]
    got = share_between(tr, gap + 5, end0)
    # The seed's figures (004 Figs. 4 and 10) span about 50 s of overlap.
    early = share_between(tr, gap, gap + 50)
    return {
        "syn_sends": syn_sends(tr, 1),
        "share": got[1] / max(sum(got), 1),
        "share_50s": early[1] / max(sum(early), 1),
        "first_done_s": end0,
        "second_done_s": (f1["completion_s"] or 0) + gap,
        "second_rtt_s": f1["rtt_avg_s"],
        # Bytes received in order over time, per flow (for the figures).
        "delivered": [delivered(tr, f).to_dict(as_series=False) for f in (0, 1)],
    }


def _task(t: dict):
    """One task of the study on a worker."""
    if t["kind"] == "latency":
        return latency(t["name"], t["quick"])
    if t["kind"] == "second":
        return second_flow()
    row = download(t["radio"], t["seed"], OUTAGE if t["kind"] == "stall" else None)
    row["kind"] = t["kind"]
    return row


def run_all(out: Path, quick: bool, scheduler, workers, progress) -> dict:
    """Every run of the study on the sweep runner (resumable: data/runs.jsonl)."""
    from ..runner import run_tasks

    seeds = range(1, 3) if quick else range(1, 6)
    dl = [{"kind": "dl", "radio": r, "seed": s} for r in ("good", "fair", "poor") for s in seeds]
    dl += [{"kind": "stall", "radio": "good", "seed": s} for s in seeds]
    lat = [{"kind": "latency", "name": n, "quick": quick} for n, _ in LATENCY]
    res = run_tasks(
        _task,
        dl + lat + [{"kind": "second"}],
        out / "data" / "runs.jsonl",
        scheduler,
        workers,
        progress,
        desc="gprs-tcp",
    )
    latencies = {t["name"]: r for t, r in zip(lat, res[len(dl) :])}
    return {"rows": res[: len(dl)], "latency": latencies, "second": res[-1]}


def plot(data: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    import thinwire

    written: list[Path] = []
    lat = data["latency"]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for a, k, c in ((ax[0], "up", "#b5651d"), (ax[1], "down", "#1f4e9c")):
        a.hist(lat[k], bins=40, color=c)
        a.set_title(f"{k}link: {len(lat[k])} lone 64-byte datagrams", fontsize=9)
        a.set_xlabel("one-way latency (s)")
        a.grid(alpha=0.3)
    ax[0].set_ylabel("packets")
    fig.suptitle("Seed 003 Fig. 2: latency of small packets sent alone", fontsize=10)
    finish_figure(fig, out, "fig003-02_latency", written)

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for radio, c in (("good", "#1f4e9c"), ("fair", "#2e8b57"), ("poor", "#b22222")):
        res = thinwire.run(scenario(flow(bytes="600KB"), radio), seed=1, trace=["tcp"])
        d = delivered(res.trace)
        ax.plot(d["t_s"], d["bytes"] / 1000, color=c, label=f"{radio} radio")
    label(
        ax,
        "time (s)",
        "bytes received in order (KB)",
        "Seed 003 Fig. 4: a 600 KB download under three radio conditions",
    )
    finish_figure(fig, out, "fig003-04_progress", written)

    res = thinwire.run(scenario(flow(bytes="600KB")), seed=1, trace=["tcp"])
    tr = res.trace
    cw = tr.filter(
        (pl.col("layer") == "tcp") & (pl.col("node") == "server") & (pl.col("event") == "cwnd") & (pl.col("flow") == 0)
    )
    o = outstanding(tr)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.step(cw["time_ns"] / 1e9, cw["value"] / 1000, where="post", label="cwnd", color="#1f4e9c")
    ax.plot(o["t_s"], o["bytes"] / 1000, label="outstanding data", color="#b5651d", lw=0.8)
    ax.axhline(BDP / 1000, ls="--", color="grey", label="BDP ≈ 10 KB")
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 70)
    label(ax, "time from the SYN (s)", "KB", "Seed 003 Fig. 5: slow start over GPRS")
    finish_figure(fig, out, "fig003-05_slow_start", written)

    r = srtt(tr)
    fig, ax = plt.subplots(2, 1, figsize=(6.4, 5), sharex=True)
    ax[0].plot(o["t_s"], o["bytes"] / 1000, color="#b5651d", lw=0.8)
    ax[0].set_ylabel("outstanding (KB)")
    ax[1].plot(r["t_s"], r["srtt_s"], color="#1f4e9c")
    ax[1].set_ylabel("sender's SRTT (s)")
    ax[1].set_xlabel("time (s)")
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle("Seed 003 Fig. 6 / seed 004 Fig. 3b: the gateway buffer fills, the RTT follows", fontsize=9)
    finish_figure(fig, out, "fig003-06_outstanding_rtt", written)

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for f, c in ((0, "#1f4e9c"), (1, "#b22222")):
        d = data["second"]["delivered"][f]
        ax.plot(
            d["t_s"],
            [b / 1000 for b in d["bytes"]],
            color=c,
            label=f"flow {f + 1}" + (" (starts at 10 s)" if f else ""),
        )
    label(ax, "time (s)", "bytes received in order (KB)", "Seed 004 Fig. 4: a second flow starves behind the first")
    finish_figure(fig, out, "fig004-04_second_flow", written)

    res = thinwire.run(scenario(flow(bytes="600KB"), outage=OUTAGE), seed=1, trace=["tcp"])
    d = delivered(res.trace)
    o = outstanding(res.trace)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(d["t_s"], d["bytes"] / 1000, color="#1f4e9c", label="received in order")
    ax.plot(o["t_s"], o["bytes"] / 1000, color="#b5651d", lw=0.8, label="outstanding")
    ax.axvspan(OUTAGE[0], sum(OUTAGE), color="grey", alpha=0.25, label="outage")
    label(ax, "time (s)", "KB", "Seed 004 Fig. 3a: recovery after a 25 s outage without a proxy")
    finish_figure(fig, out, "fig004-03_recovery", written)
    return written


def claims(data: dict) -> list[dict]:
    import numpy as np
    import polars as pl

    out: list[dict] = []
    lat = data["latency"]
    down, up = np.array(lat["down"]), np.array(lat["up"])
    add_claim(
        out,
        "003 §III",
        "lone small packets see large, variable downlink latency",
        "median ≥ 0.6 s and 5–95 % spread ≥ 1 s (seed: 600–3000 ms)",
        f"median {np.median(down):.2f} s, 5–95 % {pct(down, 5):.2f}–{pct(down, 95):.2f} s",
        np.median(down) >= 0.6 and pct(down, 95) - pct(down, 5) >= 1.0,
    )
    add_claim(
        out,
        "003 §III",
        "the uplink is faster and steadier",
        "median and spread below the downlink's (seed: 400–1300 ms)",
        f"median {np.median(up):.2f} s, 5–95 % {pct(up, 5):.2f}–{pct(up, 95):.2f} s",
        np.median(up) < np.median(down) and pct(up, 95) - pct(up, 5) < pct(down, 95) - pct(down, 5),
    )
    add_claim(
        out,
        "003 §III",
        "round trips of about a second are commonplace",
        "median down + median up ≥ 1 s",
        f"{np.median(down) + np.median(up):.2f} s",
        np.median(down) + np.median(up) >= 1.0,
    )
    b = np.array(lat["burst"])
    first, gaps = b[0::5], np.array([b[i + 1] - b[i] for i in range(0, len(b) - 4, 5)])
    add_claim(
        out,
        "003 §III",
        "in a burst only the first packet pays the jitter",
        "spread of followers' spacing < 10 % of the first packets' spread",
        f"first packets 5–95 % spread {pct(first, 95) - pct(first, 5):.2f} s; follower spacing spread {pct(gaps, 95) - pct(gaps, 5):.3f} s",
        pct(gaps, 95) - pct(gaps, 5) < 0.1 * (pct(first, 95) - pct(first, 5)),
    )
    df = pl.DataFrame([{k: v for k, v in r.items()} for r in data["rows"]])
    dl = df.filter(pl.col("kind") == "dl")
    t = {r: dl.filter(pl.col("radio") == r)["completion_s"].mean() for r in ("good", "fair", "poor")}
    good = dl.filter(pl.col("radio") == "good")
    thr = good["throughput_Bps"].mean()
    add_claim(
        out,
        "003 §IV, Fig. 4",
        "a 600 KB download runs at about the link rate with good radio",
        "≥ 90 % of 4.15 KB/s (seed: ~155 s)",
        f"{thr / 1000:.2f} KB/s, {t['good']:.0f} s",
        thr >= 0.9 * LINK_BPS,
    )
    add_claim(
        out,
        "003 §IV, Fig. 4",
        "poorer radio, longer transfers",
        "good < fair < poor (mean times)",
        f"{t['good']:.0f} s < {t['fair']:.0f} s < {t['poor']:.0f} s",
        t["good"] < t["fair"] < t["poor"],
    )
    ss = good["cwnd_bdp_s"].drop_nulls()
    add_claim(
        out,
        "003 §IV-A, Fig. 5",
        "slow start takes seconds to reach the ~10 KB bandwidth-delay product",
        "≥ 3 s from the SYN (seed: ~6 s with good radio)",
        f"{ss.mean():.1f} s (range {ss.min():.1f}–{ss.max():.1f})",
        ss.len() > 0 and ss.min() >= 3.0,
    )
    add_claim(
        out,
        "003 §IV-A",
        "slow start ends at the receive window, not by loss",
        "no retransmissions with good radio; outstanding data peaks near the 64 KB window",
        f"{int(good['retransmits'].sum())} retransmissions; max outstanding {good['max_outstanding'].min() / 1000:.0f}–{good['max_outstanding'].max() / 1000:.0f} KB",
        good["retransmits"].sum() == 0 and good["max_outstanding"].min() >= 40_000,
    )
    add_claim(
        out,
        "003 §IV-B, Fig. 6; 004 Fig. 3b",
        "the gateway buffer fills and the RTT inflates to tens of seconds",
        "sender's SRTT ≥ 10 s with ≥ 40 KB outstanding",
        f"max SRTT {good['max_srtt_s'].min():.1f}–{good['max_srtt_s'].max():.1f} s",
        good["max_srtt_s"].min() >= 10,
    )
    s2 = data["second"]
    add_claim(
        out,
        "004 §III, Fig. 4",
        "a second flow started 10 s later times out on its SYN",
        "SYN sent more than once (seed: twice)",
        f"SYN sent {s2['syn_sends']} times; its RTT {s2['second_rtt_s']:.1f} s",
        s2["syn_sends"] >= 2,
    )
    add_claim(
        out,
        "004 §III, Fig. 4",
        "and starves while the first runs",
        "< 20 % of the bytes in its first 50 s (the seed's horizon)",
        f"{s2['share_50s'] * 100:.0f} % (over the whole overlap of two 600 KB transfers: {s2['share'] * 100:.0f} %)",
        s2["share_50s"] < 0.2,
    )
    st = df.filter(pl.col("kind") == "stall")["recovery_s"].drop_nulls()
    add_claim(
        out,
        "004 §III, Fig. 3a; 003 §IV-B",
        "recovery after a loss burst (25 s outage) takes tens of seconds",
        "in-order data resumes ≥ 10 s after the outage (median)",
        f"median {st.median():.1f} s (range {st.min():.1f}–{st.max():.1f}) over {st.len()} runs",
        st.len() > 0 and st.median() >= 10,
    )
    return out


def _tables(data: dict, _summary, out: Path) -> None:
    import polars as pl

    pl.DataFrame(data["rows"]).write_csv(out / "runs.csv")


STUDY = Study(
    run=run_all,
    tables=_tables,
    figures=lambda data, _s, out, quick, workers: plot(data, out),
    claims=lambda data, _s: claims(data),
    count=lambda data: len(data["rows"]),
)
reproduce = STUDY.reproduce
