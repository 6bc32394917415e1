"""Study `gprs-proxy` (seeds 003_3bf669faf9a1612a.txt §V–VI and
004_e0bd93b9360847dc.txt §IV–VI): the split-TCP proxy (src/proxy) at the GPRS
gateway, against plain end-to-end TCP on the same link (studies/gprs_common.py).

Experiments:
- fixed windows (seed 003 Fig. 7, seed 004 Fig. 11): 600 KB with the proxy's clamp
  at 4, 8, 10, 16 and 32 KB, estimated on line, and without a proxy: transfer time,
  the wireless leg's RTT, the gateway queue;
- short downloads (seed 003 Fig. 8, seed 004 Fig. 9): ttcp of 5–30 KB, 25 each (5
  with --quick), a new connection each, 4 s apart, with and without the proxy, with
  Linux's 5392-byte initial receive window and with an open (64 KB) one;
- fairness (seed 004 Fig. 10): a second 600 KB download 20 s after the first;
- a stall (seed 004 Fig. 12, seed 003 Fig. 9): a 25 s outage 60 s into a download;
- web pages (seed 004 §VI-A, seed 003 §VI-B): 5 objects of 8 KB per page, 300-byte
  requests, 3 s before each further object, 5 s between pages, HTTP/1.0 and HTTP/1.1 (persistent, with and without
  the server's slow-start restart), with and without the proxy;
- priority (seed 004 §IV-B): a telnet-like flow (40-byte messages every second to
  port 23, the proxy's priority class 0) next to a 600 KB download, and a heavy one
  (1500 bytes every 0.5 s), each also with equal tickets instead of priority.
The proxy runs with its defaults (clamp 9.7 KB from 4.15 KB/s × 1.8 s + 30 %).
"""

from __future__ import annotations

from pathlib import Path

from .gprs_common import LINK_BPS, add_claim, delivered, flow, recovery_s, scenario
from .gprs_tcp import OUTAGE, second_flow
from .report import finish_figure, label
from .study import Study

WINDOWS = [4, 8, 10, 16, 32]
SIZES = [5, 10, 15, 20, 25, 30]
OPEN = 'profile = "linux-2.4", rcv_wnd_initial = "64KB"'
# Pause before each further object of a page (the browser parsing). With none,
# the connection idles only for the request's round trip, never longer than the
# RTO (RFC 6298: RTO > SRTT), so the restart could not fire; see docs.
GAP = "3s"


def window_run(kb) -> dict:
    """kb: a fixed window in KB, None (no proxy) or "est" (estimated on line)."""
    import polars as pl

    import thinwire

    proxy = None if kb is None else "estimate_clamp = true" if kb == "est" else f'clamp = "{kb}KB"'
    res = thinwire.run(scenario(flow(bytes="600KB"), proxy=proxy), trace=["tcp", "proxy"])
    tr = res.trace
    f = res.summary["flows"][0]
    if kb is None:
        rtt = tr.filter((pl.col("layer") == "tcp") & (pl.col("node") == "server") & (pl.col("event") == "srtt"))
    else:
        rtt = tr.filter((pl.col("layer") == "proxy") & (pl.col("event") == "rtt"))
    return {
        "window_kb": kb,
        "completion_s": f["completion_s"],
        "rtt_mean_s": float(rtt["value"].mean() / 1e9),
        "rtt_max_s": float(rtt["value"].max() / 1e9),
        "queue_max_pkts": res.summary["link"]["down"]["queue_max"],
        "clamp": (res.summary["proxy"] or {}).get("clamp"),
        "rtt_t": (rtt["time_ns"] / 1e9).to_list(),
        "rtt_v": (rtt["value"] / 1e9).to_list(),
    }


RECEIVERS = {"linux": 'profile = "linux-2.4"', "open": OPEN}


def short_run(rcv: str, proxy: bool, kb: int, reps: int) -> dict:
    """`reps` ttcp downloads of `kb` KB (seed 003 Fig. 8 / 004 Fig. 9)."""
    import thinwire

    res = thinwire.run(
        scenario(
            flow("ttcp", tcp=RECEIVERS[rcv], bytes=f"{kb}KB", repeat=reps, think="4s"), proxy="" if proxy else None
        )
    )
    d = res.summary["flows"][0]["durations_s"]
    return {"receiver": rcv, "proxy": proxy, "size_kb": kb, "mean_s": sum(d) / len(d), "durations_s": d}


WEB = [(False, "1.0", False, True), (False, "1.1", True, True), (False, "1.1", True, False)]
WEB += [(True, h, p, r) for _, h, p, r in WEB if r]


def web_run(proxy: bool, http: str, persistent: bool, ssr: bool, pages: int) -> dict:
    """Pages of 5 objects of 8 KB, HTTP/1.0 or 1.1, with or without slow-start restart."""
    import thinwire

    # The restart as the seeds describe it (003 §VI-B, 004 §VI-A: the idle
    # connection's window "set back to its initial two segment value"), not the
    # Linux kernel's halving per idle RTO that the profile has.
    tcp = f'profile = "linux-2.4", slow_start_after_idle = {str(ssr).lower()}, idle_restart = "rfc5681"'
    res = thinwire.run(
        scenario(
            flow(
                "http", tcp=tcp, bytes="8KB", objects=5, transactions=pages, think="5s", gap=GAP, persistent=persistent
            ),
            proxy="" if proxy else None,
        )
    )
    d = res.summary["flows"][0]["durations_s"]
    return {"proxy": proxy, "http": http, "restart": ssr, "page_s": sum(d) / len(d)}


PRIORITY = [("light", {}), ("heavy", {"packet": "1500B", "interval": "0.5s"})]
PRIORITY_PROXY = [("none", None), ("priority", ""), ("equal", "classes = []")]


def priority_run(kind: str, name: str) -> dict:
    """Message latency of an interactive flow beside a 600 KB download: a light one
    (40 B every second) or a heavy one (1500 B every 0.5 s, 72 % of the link);
    without a proxy, with it, and with it but no priority class (equal tickets)."""
    import thinwire

    extra, proxy = dict(PRIORITY)[kind], dict(PRIORITY_PROXY)[name]
    text = scenario(flow(bytes="600KB") + flow("interactive", start=10.0, messages=60, **extra), proxy=proxy)
    f = thinwire.run(text).summary["flows"][1]
    return {"mean_s": f["delay_mean_s"], "p95_s": f["delay_p95_s"], "received": f["packets_received"]}


def stall_run(proxy: bool, seed: int) -> dict:
    """A 600 KB download through a 25 s outage (seed 004 Fig. 12)."""
    import thinwire

    res = thinwire.run(
        scenario(flow(bytes="600KB"), outage=OUTAGE, proxy="" if proxy else None), seed=seed, trace=["tcp"]
    )
    f = res.summary["flows"][0]
    px = res.summary["proxy"] or {}
    return {
        "proxy": proxy,
        "seed": seed,
        "recovery_s": recovery_s(res.trace, sum(OUTAGE)),
        "completion_s": f["completion_s"],
        "proxy_timeouts": px.get("timeouts"),
        "proxy_retransmits": px.get("retransmits"),
    }


def _task(t: list):
    """One task of the study on a worker: [experiment, arguments...]."""
    kind, *args = t
    fn = {
        "window": window_run,
        "short": short_run,
        "fair": lambda p: second_flow(proxy="" if p else None, gap=20.0),
        "stall": stall_run,
        "web": web_run,
        "priority": priority_run,
    }[kind]
    return fn(*args)


def run_all(out: Path, quick: bool, scheduler, workers, progress) -> dict:
    """Every run of the study on the sweep runner (resumable: data/runs.jsonl)."""
    from ..runner import run_tasks

    reps, pages = (5, 3) if quick else (25, 10)
    seeds = range(1, 3) if quick else range(1, 6)
    tasks = [["window", kb] for kb in WINDOWS + [None, "est"]]
    tasks += [["short", rcv, p, kb, reps] for rcv in RECEIVERS for p in (False, True) for kb in SIZES]
    tasks += [["fair", p] for p in (False, True)]
    tasks += [["stall", p, s] for p in (False, True) for s in seeds]
    tasks += [["web", p, h, pers, ssr, pages] for p, h, pers, ssr in WEB]
    tasks += [["priority", k, n] for k, _ in PRIORITY for n, _ in PRIORITY_PROXY]
    res = run_tasks(_task, tasks, out / "data" / "runs.jsonl", scheduler, workers, progress, desc="gprs-proxy")
    by = {}
    for t, r in zip(tasks, res):
        by.setdefault(t[0], []).append((t[1:], r))
    return {
        "windows": [r for _, r in by["window"]],
        "short": [r for _, r in by["short"]],
        "fair": {a[0]: r for a, r in by["fair"]},
        "stall": [r for _, r in by["stall"]],
        "web": [r for _, r in by["web"]],
        "priority": {(a[0], a[1]): r for a, r in by["priority"]},
    }


def plot(data: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import thinwire

    written: list[Path] = []
    w = [r for r in data["windows"] if r["window_kb"] != "est"]
    fig, ax = plt.subplots(1, 2, figsize=(9.5, 3.8))
    for r in w:
        lab = "no proxy" if r["window_kb"] is None else f"{r['window_kb']} KB"
        ax[0].plot(r["rtt_t"], r["rtt_v"], lw=0.8, label=lab)
    ax[0].set_xlabel("time (s)")
    ax[0].set_ylabel("RTT over the wireless leg (s)")
    ax[0].set_title("RTT samples (no proxy: the sender's SRTT)", fontsize=9)
    ax[0].legend(fontsize=7)
    ax[0].grid(alpha=0.3)
    xs = [str(r["window_kb"]) if r["window_kb"] else "none" for r in w]
    ax[1].bar(xs, [r["completion_s"] for r in w], color="#1f4e9c")
    ax[1].set_xlabel("fixed window (KB)")
    ax[1].set_ylabel("600 KB transfer time (s)")
    ax[1].grid(alpha=0.3, axis="y")
    fig.suptitle("Seed 003 Fig. 7 / seed 004 Fig. 11: clamped windows", fontsize=10)
    finish_figure(fig, out, "fig004-11_windows", written)

    fig, axs = plt.subplots(1, 2, figsize=(9.5, 3.8), sharey=True)
    for ax, rcv in zip(axs, ("linux", "open")):
        for proxy, c in ((False, "#b22222"), (True, "#1f4e9c")):
            rows = [r for r in data["short"] if r["receiver"] == rcv and r["proxy"] == proxy]
            ax.errorbar(
                [r["size_kb"] for r in rows],
                [r["mean_s"] for r in rows],
                yerr=[np.std(r["durations_s"]) for r in rows],
                color=c,
                marker="o",
                capsize=3,
                label="proxy" if proxy else "end to end",
            )
        ax.set_title(
            "Linux receiver (initial window 5392 B)" if rcv == "linux" else "open receive window (64 KB)", fontsize=9
        )
        label(ax, "download size (KB)")
    axs[0].set_ylabel("transfer time incl. set-up and close (s)")
    fig.suptitle("Seed 003 Fig. 8 / seed 004 Fig. 9: short downloads", fontsize=10)
    finish_figure(fig, out, "fig004-09_short_downloads", written)

    fig, axs = plt.subplots(1, 2, figsize=(9.5, 3.8), sharey=True)
    for ax, proxy in zip(axs, (False, True)):
        for f, c in ((0, "#1f4e9c"), (1, "#b22222")):
            d = data["fair"][proxy]["delivered"][f]
            ax.plot(d["t_s"], [b / 1000 for b in d["bytes"]], color=c, label=f"flow {f + 1}")
        ax.set_title("with the proxy" if proxy else "without a proxy", fontsize=9)
        label(ax, "time (s)")
    axs[0].set_ylabel("bytes received in order (KB)")
    fig.suptitle("Seed 004 Fig. 10: a second download 20 s after the first", fontsize=10)
    finish_figure(fig, out, "fig004-10_fairness", written)

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for proxy, c in ((False, "#b22222"), (True, "#1f4e9c")):
        res = thinwire.run(
            scenario(flow(bytes="600KB"), outage=OUTAGE, proxy="" if proxy else None), seed=1, trace=["tcp"]
        )
        d = delivered(res.trace)
        ax.plot(d["t_s"], d["bytes"] / 1000, color=c, label="with the proxy" if proxy else "without a proxy")
    ax.axvspan(OUTAGE[0], sum(OUTAGE), color="grey", alpha=0.25, label="outage")
    label(ax, "time (s)", "bytes received in order (KB)", "Seed 004 Fig. 12 / seed 003 Fig. 9: recovery after a stall")
    finish_figure(fig, out, "fig004-12_stall_recovery", written)
    return written


def claims(data: dict) -> list[dict]:
    import numpy as np

    out: list[dict] = []
    w = {r["window_kb"]: r for r in data["windows"]}
    t = {k: r["completion_s"] for k, r in w.items()}
    big = [t[10], t[16], t[32], t[None]]
    add_claim(
        out,
        "003 §VI-A, Fig. 7; 004 Fig. 11a",
        "from 10 KB up the transfer time is flat at the link rate",
        "10, 16, 32 KB and no proxy within 3 % of each other (seed: 155 s)",
        f"{t[10]:.0f}, {t[16]:.0f}, {t[32]:.0f} s; no proxy {t[None]:.0f} s",
        max(big) <= 1.03 * min(big),
    )
    add_claim(
        out,
        "003 §VI-A; 004 §VI-C",
        "a 4 KB window under-uses the link",
        "4 KB ≥ 20 % slower than 10 KB",
        f"4 KB {t[4]:.0f} s, 8 KB {t[8]:.0f} s, 10 KB {t[10]:.0f} s",
        t[4] >= 1.2 * t[10],
    )
    r = {k: v["rtt_mean_s"] for k, v in w.items()}
    add_claim(
        out,
        "003 §VI-A, Fig. 7; 004 Fig. 11b",
        "larger windows, longer RTTs",
        "mean RTT rises 10 < 16 < 32 KB < no proxy",
        ", ".join(f"{k or 'none'}: {v:.1f} s" for k, v in r.items() if k != "est"),
        r[10] < r[16] < r[32] < r[None],
    )
    est = w["est"]
    add_claim(
        out,
        "003 §V (C_clamp estimated)",
        "a window estimated on line from the minimum RTT fills the link",
        "transfer time within 3 % of the 10 KB window's",
        f"estimated {est['clamp'] / 1000:.1f} KB, {est['completion_s']:.0f} s vs {t[10]:.0f} s",
        est["completion_s"] <= 1.03 * t[10],
    )
    q = {k: v["queue_max_pkts"] for k, v in w.items()}
    add_claim(
        out,
        "004 §VI-C",
        "the proxy removes the excess queue at the gateway",
        "gateway queue ≤ 10 packets at 10 KB vs tens without",
        f"{q[10]} vs {q[None]} packets",
        q[10] <= 10 and q[None] >= 30,
    )
    sh = data["short"]
    mean = lambda rcv, p, kb: next(
        x["mean_s"] for x in sh if x["receiver"] == rcv and x["proxy"] == p and x["size_kb"] == kb
    )
    gains = {rcv: [mean(rcv, False, kb) - mean(rcv, True, kb) for kb in SIZES] for rcv in ("linux", "open")}
    add_claim(
        out,
        "003 §VI-B, Fig. 8; 004 §VI-A, Fig. 9",
        "the proxy shortens every short download (Linux receiver)",
        "mean time lower with the proxy for each of 5–30 KB",
        ", ".join(f"{kb} KB {mean('linux', False, kb):.1f}→{mean('linux', True, kb):.1f} s" for kb in SIZES),
        min(gains["linux"]) > 0,
    )
    gl, go = np.mean(gains["linux"]), np.mean(gains["open"])
    add_claim(
        out,
        "004 §VI-A",
        "Linux's 5392-byte initial receive window limits the gain",
        "mean gain smaller with the Linux receiver than with an open window",
        f"{gl:.2f} s vs {go:.2f} s",
        gl < go,
    )
    e2e10 = 10_000 / mean("linux", False, 10)
    add_claim(
        out,
        "003 §IV-A",
        "end to end, transfers under ~16 KB cannot use the link",
        "a 10 KB download gets < 50 % of 4.15 KB/s",
        f"{e2e10 / 1000:.2f} KB/s ({e2e10 / LINK_BPS * 100:.0f} %)",
        e2e10 < 0.5 * LINK_BPS,
    )
    fair = data["fair"]
    add_claim(
        out,
        "004 §VI-B, Fig. 10",
        "with the proxy a second flow connects at once and gets a fair share",
        "SYN sent once; 40–60 % of the bytes in its first 50 s",
        f"SYN sent {fair[True]['syn_sends']}×, share {fair[True]['share_50s'] * 100:.0f} % (without a proxy: SYN sent {fair[False]['syn_sends']}×, share {fair[False]['share_50s'] * 100:.0f} %)",
        fair[True]["syn_sends"] == 1 and 0.4 <= fair[True]["share_50s"] <= 0.6,
    )
    st = data["stall"]
    rec = lambda p: [x["recovery_s"] for x in st if x["proxy"] == p and x["recovery_s"] is not None]
    rp, rn = rec(True), rec(False)
    add_claim(
        out,
        "004 §VI-D, Fig. 12; 003 §VI-C",
        "after a stall the proxy recovers swiftly",
        "median recovery ≤ 5 s and under half of that without a proxy",
        f"{np.median(rp):.1f} s vs {np.median(rn):.1f} s",
        len(rp) > 0 and len(rn) > 0 and np.median(rp) <= 5 and np.median(rp) < 0.5 * np.median(rn),
    )
    web = {(x["proxy"], x["http"], x["restart"]): x["page_s"] for x in data["web"]}
    add_claim(
        out,
        "004 §VI-A; 003 §VI-B",
        "slow-start restart slows persistent connections",
        "HTTP/1.1 pages slower with restart than without (no proxy)",
        f"{web[(False, '1.1', True)]:.1f} s vs {web[(False, '1.1', False)]:.1f} s",
        web[(False, "1.1", True)] > web[(False, "1.1", False)],
    )
    g10 = 1 - web[(True, "1.0", True)] / web[(False, "1.0", True)]
    g11 = 1 - web[(True, "1.1", True)] / web[(False, "1.1", True)]
    add_claim(
        out,
        "004 §VI-A; 003 §VI-B",
        "the proxy's benefit holds, even grows, with HTTP/1.1",
        "relative page-time gain with HTTP/1.1 ≥ with HTTP/1.0",
        f"HTTP/1.1 {web[(False, '1.1', True)]:.1f}→{web[(True, '1.1', True)]:.1f} s ({g11 * 100:.0f} %), HTTP/1.0 {web[(False, '1.0', True)]:.1f}→{web[(True, '1.0', True)]:.1f} s ({g10 * 100:.0f} %)",
        g11 >= g10,
    )
    pr = data["priority"]
    m = lambda k, n: pr[(k, n)]["mean_s"]
    add_claim(
        out,
        "004 §IV-B",
        "a telnet-like flow stays responsive beside a bulk download",
        "mean message latency < 3 s with the proxy; over 3× that without",
        f"{m('light', 'priority'):.1f} s vs {m('light', 'none'):.1f} s (equal tickets instead of priority: {m('light', 'equal'):.1f} s)",
        m("light", "priority") < 3 and m("light", "none") > 3 * m("light", "priority"),
    )
    add_claim(
        out,
        "004 §IV-B",
        "strict priority matters once the interactive flow is heavy",
        "latency with the priority class under half that with equal tickets (3 KB/s of messages)",
        f"{m('heavy', 'priority'):.1f} s vs {m('heavy', 'equal'):.1f} s (no proxy: {m('heavy', 'none'):.1f} s)",
        m("heavy", "priority") < 0.5 * m("heavy", "equal"),
    )
    return out


def _tables(data: dict, _summary, out: Path) -> None:
    import polars as pl

    pl.DataFrame([{k: v for k, v in r.items() if k not in ("rtt_t", "rtt_v")} for r in data["windows"]]).write_csv(
        out / "windows.csv"
    )
    pl.DataFrame([{k: v for k, v in r.items() if k != "durations_s"} for r in data["short"]]).write_csv(
        out / "short_downloads.csv"
    )
    pl.DataFrame(data["stall"]).write_csv(out / "stalls.csv")
    pl.DataFrame(data["web"]).write_csv(out / "web.csv")


STUDY = Study(
    run=run_all,
    tables=_tables,
    figures=lambda data, _s, out, quick, workers: plot(data, out),
    claims=lambda data, _s: claims(data),
)
reproduce = STUDY.reproduce
