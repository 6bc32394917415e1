"""Study `aqm-wireless` (seed 000_5756ad45abc8c63f.txt §5.2, seed
003_3bf669faf9a1612a.txt §IV-B, RFC 7567): the remedy seed 000 argues for —
"active queue management at both sides of the bottleneck link … combining AQM
with an explicit congestion notification mechanism … we regard it as
imperative" — tried on the two over-buffered links of the seeds.

Links:
- `gsm`: seed 000's GSM circuit-switched upload (`gsm-multilayer`'s link: RLP
  with 24-byte frames, L2R relaying at 960 B/s, good radio with 1 % frame
  loss); the mobile's interface buffer of 50 packets (BSD's) is the bottleneck.
  Traffic: a bulk upload from 0 s (BSD stack: Reno, 8 KiB buffers, MSS 460,
  6 s initial RTO), and a second connection opened by the mobile at 60 s (a
  3 KB upload: its SYN joins the backlog in the mobile's queue).
- `gprs`: seeds 003/004's GPRS download (4.15 KB/s down, 300 ms, 120 KB
  gateway buffer, RLC underneath; Linux 2.4-like hosts, 64 KB windows): the
  gateway's downlink queue is the bottleneck. Traffic: a bulk download from 0 s;
  an interactive flow (telnet-like 100-byte messages every 2 s from 5 s); a
  second download of 10 KB opened at 60 s (its SYN-ACK joins the backlog in the
  gateway's queue). A second scenario aborts a download after 40 s (the mobile's
  RST, a user giving up) and opens the next one (10 KB) at once: the stale data
  queued for the first must drain before the second gets through.

Queues (each at both ends of the wireless link): `droptail` (the seeds'
buffers), `droptail-bdp` (seed 000's "simple solution": the buffer sized to the
link's bandwidth-delay product: 3 packets on GSM, 8 KB on GPRS), `red`, `codel`,
`fq_codel`, `pie`, each without and with ECN (both TCPs ask for ECN in the ECN
runs: `tcp.ecn = true`); and for GPRS the split-TCP proxy of seeds 003/004 over
the drop-tail buffer (its wireless leg holds a fixed window of ~10 KB).

The AQMs' delay targets are made for fast links (CoDel 5 ms, PIE 15 ms): here one
packet takes 0.5 s (GSM, 480 bytes at 960 B/s) or 0.36 s (GPRS, 1500 bytes at
4.15 KB/s), so every queue would look standing. As RFC 8289 §4.3 advises, the
target is one MTU's transmission time on the bottleneck and CoDel's interval the
path's round trip (GSM 0.5 s / 2 s, GPRS 0.4 s / 2 s); PIE's reference delay the
same target; RED's thresholds 1 and 3 BDPs (GSM 2 and 6 packets, GPRS 8 KB and
24 KB), max_p 0.1. Each configuration runs 30 seeds (6 with --quick).

Metrics (per run; medians and 95 % bootstrap intervals over the seeds):
bulk goodput (bytes delivered per second, and the link's utilization), the bulk
flow's RTT samples (p50, p95; TCP `srtt`, the sender's smoothed estimate), the
bottleneck queue's sojourn (p50, p95), the second connection's SYN (GSM) or
SYN-ACK (GPRS) transmissions and set-up time, the interactive messages' latency
(p50, p95), and after the abort the time the stale data kept the link busy and
the next download's completion time.
"""

from __future__ import annotations

import json
from pathlib import Path

from .report import finish_figure, label
from .study import Study

# ---------------------------------------------------------------------------
# Links and queues


def gsm_link(queue: str) -> str:
    """`gsm-multilayer`'s link (its flows left out) with `queue`, for 150 s."""
    from .gsm_multilayer import BASE, GOOD

    text = BASE.split("[[flow]]")[0].format(queue="50pkt", channel=GOOD, n2=6, hc="false")
    return _swap(_swap(text, 'queue = { limit = "50pkt" }', f"queue = {queue}"), 'stop = "end"', 'stop = "150s"')


def gprs_link(queue: str, ll: int | None, proxy: bool) -> str:
    """`gprs_common`'s link with `queue`, an RLC buffer of `ll` packets (None:
    the default 10), the proxy, for 150 s."""
    from .gprs_common import scenario as gprs_scenario

    text = _swap(
        gprs_scenario("", proxy="" if proxy else None, stop="150s"), 'queue = { limit = "120KB" }', f"queue = {queue}"
    )
    if ll:
        text = _swap(text, 'uplink_period = "60ms"', f'uplink_period = "60ms"\nrlc_buffer = {ll}')
    return text


def _swap(text: str, old: str, new: str) -> str:
    assert old in text, f"the shared link no longer has {old!r}"
    return text.replace(old, new, 1)


# One MTU's transmission on the bottleneck, and the path's round trip.
TARGET = {"gsm": "500ms", "gprs": "400ms"}
INTERVAL = {"gsm": "2s", "gprs": "2s"}
LIMIT = {"gsm": '"50pkt"', "gprs": '"120KB"'}
BDP_LIMIT = {"gsm": '"3pkt"', "gprs": '"8KB"'}
RED = {"gsm": ('"2pkt"', '"6pkt"'), "gprs": ('"8KB"', '"24KB"')}

DISCIPLINES = ("droptail", "droptail-bdp", "red", "codel", "fq_codel", "pie")


def configs(link: str) -> list[dict]:
    """Every configuration of a link: (queue, ecn) pairs; for GPRS also CoDel with
    ECN over a link layer that holds 2 packets instead of 10 (`ll`: the RLC
    buffer below the IP queue, out of the AQM's reach), and the proxy."""
    out = [{"queue": "droptail", "ecn": False}, {"queue": "droptail-bdp", "ecn": False}]
    for q in ("red", "codel", "fq_codel", "pie"):
        out += [{"queue": q, "ecn": False}, {"queue": q, "ecn": True}]
    if link == "gprs":
        out.append({"queue": "codel", "ecn": True, "ll": 2})
        out.append({"queue": "proxy", "ecn": False})
    return out


def name(c: dict) -> str:
    return c["queue"] + ("+ecn" if c["ecn"] else "") + (f"+ll{c['ll']}" if c.get("ll") else "")


def queue_table(link: str, queue: str, ecn: bool) -> str:
    """The `[wireless] queue` inline table of a configuration."""
    e = "true" if ecn else "false"
    t, i = TARGET[link], INTERVAL[link]
    if queue in ("droptail", "proxy"):
        return f"{{ limit = {LIMIT[link]} }}"
    if queue == "droptail-bdp":
        return f"{{ limit = {BDP_LIMIT[link]} }}"
    if queue == "red":
        lo, hi = RED[link]
        return f'{{ discipline = "red", limit = {LIMIT[link]}, min = {lo}, max = {hi}, probability = 0.1, ecn = {e} }}'
    if queue in ("codel", "fq_codel"):
        return f'{{ discipline = "{queue}", limit = {LIMIT[link]}, target = "{t}", interval = "{i}", ecn = {e} }}'
    if queue == "pie":
        return f'{{ discipline = "pie", limit = {LIMIT[link]}, target = "{t}", ecn = {e} }}'
    raise ValueError(queue)


def tcp(link: str, ecn: bool) -> str:
    """The hosts' TCP: seed 000's BSD stack (GSM), seeds 003/004's Linux 2.4 (GPRS)."""
    base = 'profile = "bsd", mss = 460' if link == "gsm" else 'profile = "linux-2.4"'
    return base + (", ecn = true" if ecn else "")


def scenario(link: str, c: dict, kind: str = "main") -> str:
    """The run of configuration `c` on `link`: `main` (bulk, second connection,
    interactive) or `abort` (GPRS: a download aborted, the next one at once)."""
    q = queue_table(link, c["queue"], c["ecn"])
    t = tcp(link, c["ecn"])
    if link == "gsm":
        text = gsm_link(q)
        text += f'[[flow]]\napp = "bulk"\nbytes = "unlimited"\ndirection = "up"\ntcp = {{ {t} }}\n'
        text += f'[[flow]]\napp = "bulk"\nbytes = "3KB"\ndirection = "up"\nstart = "60s"\ntcp = {{ {t} }}\n'
        return text
    text = gprs_link(q, c.get("ll"), c["queue"] == "proxy")
    if kind == "main":
        text += f'[[flow]]\napp = "bulk"\nbytes = "unlimited"\ntcp = {{ {t} }}\n'
        text += (
            f'[[flow]]\napp = "interactive"\nstart = "5s"\npacket = "100B"\ninterval = "2s"\nmessages = 60\n'
            f"tcp = {{ {t} }}\n"
        )
        text += f'[[flow]]\napp = "bulk"\nbytes = "10KB"\nstart = "60s"\ntcp = {{ {t} }}\n'
    else:
        text += f'[[flow]]\napp = "bulk"\nbytes = "400KB"\nabort = "{ABORT_AT}s"\ntcp = {{ {t} }}\n'
        text += f'[[flow]]\napp = "bulk"\nbytes = "10KB"\nstart = "{ABORT_AT}s"\ntcp = {{ {t} }}\n'
    return text


ABORT_AT = 40
SECOND_AT = 60


# ---------------------------------------------------------------------------
# One run


def _pcts(values, qs=(50, 95)) -> list[float | None]:
    import numpy as np

    v = np.asarray(values, dtype=float)
    return [float(np.percentile(v, q)) if v.size else None for q in qs]


def _setup_time(tcp_rows, flow: int) -> tuple[float | None, int]:
    """A connection's set-up time at the mobile (its first SYN to the SYN-ACK it
    accepted), and how many SYN-ACKs the server sent."""
    import polars as pl

    f = tcp_rows.filter(pl.col("flow") == flow)
    syn = f.filter(
        (pl.col("node") == "mobile") & pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 2) == 2)
    )
    synack = f.filter((pl.col("node") == "mobile") & (pl.col("event") == "recv") & ((pl.col("value") & 18) == 18))
    sa_sent = f.filter(
        (pl.col("node") == "server") & pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 18) == 18)
    ).height
    if syn.height == 0 or synack.height == 0:
        return None, sa_sent
    return float(synack["time_s"].min() - syn["time_s"].min()), sa_sent


def one(t: dict) -> dict:
    """Runs one configuration and seed and reduces it to its metrics."""
    import polars as pl

    import thinwire

    link, kind, seed = t["link"], t["kind"], t["seed"]
    c = {"queue": t["queue"], "ecn": t["ecn"], "ll": t.get("ll")}
    res = thinwire.run(scenario(link, c, kind), seed=seed, trace=["tcp", "sojourn", "link"])
    s = res.summary
    tr = res.trace
    tcp_rows = tr.filter(pl.col("layer") == "tcp")
    up = link == "gsm"
    bottleneck = "up" if up else "down"
    node = "mobile" if up else "gateway"
    soj = tr.filter((pl.col("layer") == "sojourn") & (pl.col("dir") == bottleneck) & (pl.col("node") == node))
    row: dict = {"link": link, "config": name(c), "kind": kind, "seed": seed}
    lk = s["link"][bottleneck]
    row["utilization"] = lk["utilization"]
    row["queue_drops"] = lk["queue_drops"]
    row["aqm_drops"] = lk["queue_aqm_drops"]
    row["marks"] = lk["queue_marks"]
    flows = s["flows"]
    if kind == "main":
        bulk = flows[0]
        row["goodput_Bps"] = bulk["bytes_delivered"] / s["sim_time_s"]
        row["retransmits"] = bulk["tcp_retransmits"]
        row["timeouts"] = bulk["tcp_timeouts"]
        sender = "mobile" if up else "server"
        srtt = tcp_rows.filter((pl.col("flow") == 0) & (pl.col("node") == sender) & (pl.col("event") == "srtt"))
        # Behind the proxy the server's RTT is to the proxy: not the path's.
        rtt = _pcts(srtt["value"].to_numpy() / 1e9) if c["queue"] != "proxy" else [None, None]
        row["rtt_p50_s"], row["rtt_p95_s"] = rtt
        row["sojourn_p50_s"], row["sojourn_p95_s"] = _pcts(soj["value"].to_numpy() / 1e9)
        second = 1 if up else 2
        row["second_setup_s"], row["second_synack_sent"] = _setup_time(tcp_rows, second)
        syns = tcp_rows.filter(
            (pl.col("flow") == second)
            & (pl.col("node") == "mobile")
            & pl.col("event").is_in(["send", "retransmit"])
            & ((pl.col("value") & 18) == 2)
        )
        row["second_syn_sent"] = syns.height
        row["second_completion_s"] = flows[second]["completion_s"]
        if not up:
            it = flows[1]
            row["interactive_p50_s"] = it["delay_p50_s"]
            row["interactive_p95_s"] = it["delay_p95_s"]
    else:
        # The stale data: the aborted flow's packets still delivered at the mobile
        # after the abort, and when the last one arrived.
        lk_rows = tr.filter(
            (pl.col("layer") == "link") & (pl.col("event") == "packet_deliver") & (pl.col("dir") == "down")
        )
        stale = lk_rows.filter((pl.col("flow") == 0) & (pl.col("time_s") > ABORT_AT))
        row["stale_packets"] = stale.height
        row["stale_drain_s"] = float(stale["time_s"].max() - ABORT_AT) if stale.height else 0.0
        row["next_completion_s"] = flows[1]["completion_s"]
        row["next_setup_s"], row["next_synack_sent"] = _setup_time(tcp_rows, 1)
    return row


def _task(t: dict) -> dict:
    return one(t)


# ---------------------------------------------------------------------------
# The study


def tasks(quick: bool) -> list[dict]:
    seeds = range(1, 7) if quick else range(1, 31)
    out = []
    for link in ("gsm", "gprs"):
        kinds = ("main",) if link == "gsm" else ("main", "abort")
        for c in configs(link):
            for kind in kinds:
                for s in seeds:
                    out.append({"link": link, **c, "kind": kind, "seed": s})
    return out


def run_all(out: Path, quick: bool, scheduler, workers, progress) -> list[dict]:
    from ..runner import run_tasks

    return run_tasks(
        _task, tasks(quick), out / "data" / "runs.jsonl", scheduler, workers, progress, desc="aqm-wireless"
    )


def _median_ci(values: list[float], n_boot: int = 2000) -> tuple[float, float, float] | None:
    """Median and a 95 % bootstrap interval (fixed seed)."""
    import numpy as np

    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return None
    rng = np.random.default_rng(12345)
    meds = np.median(rng.choice(v, size=(n_boot, v.size), replace=True), axis=1)
    return float(np.median(v)), float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


# The columns both links' tables start with.
_METRICS_LINK = [
    ("goodput_Bps", "goodput B/s"),
    ("utilization", "utilization"),
    ("rtt_p50_s", "RTT p50 s"),
    ("rtt_p95_s", "RTT p95 s"),
    ("sojourn_p50_s", "queue p50 s"),
    ("sojourn_p95_s", "queue p95 s"),
]
METRICS_MAIN = {
    "gsm": [
        *_METRICS_LINK,
        ("second_syn_sent", "2nd SYNs"),
        ("second_setup_s", "2nd set-up s"),
        ("retransmits", "retransmits"),
        ("marks", "CE marks"),
    ],
    "gprs": [
        *_METRICS_LINK,
        ("second_synack_sent", "2nd SYN-ACKs"),
        ("second_setup_s", "2nd set-up s"),
        ("interactive_p50_s", "interactive p50 s"),
        ("interactive_p95_s", "interactive p95 s"),
        ("retransmits", "retransmits"),
        ("marks", "CE marks"),
    ],
}
METRICS_ABORT = [
    ("stale_drain_s", "stale drain s"),
    ("stale_packets", "stale packets"),
    ("next_setup_s", "next set-up s"),
    ("next_completion_s", "next download s"),
]


def summarize(rows: list[dict]) -> dict:
    """{link: {kind: {config: {metric: (median, lo, hi)}}}}."""
    out: dict = {}
    for r in rows:
        out.setdefault(r["link"], {}).setdefault(r["kind"], {}).setdefault(r["config"], []).append(r)
    summ: dict = {}
    for link, kinds in out.items():
        for kind, by_conf in kinds.items():
            metrics = METRICS_MAIN[link] if kind == "main" else METRICS_ABORT
            for conf, rs in by_conf.items():
                d = summ.setdefault(link, {}).setdefault(kind, {}).setdefault(conf, {})
                for m, _ in metrics:
                    d[m] = _median_ci([x.get(m) for x in rs])
                d["n"] = len(rs)
    return summ


def table(summ: dict, link: str, kind: str) -> str:
    metrics = METRICS_MAIN[link] if kind == "main" else METRICS_ABORT
    lines = ["| queue | " + " | ".join(lab for _, lab in metrics) + " |", "|---" * (len(metrics) + 1) + "|"]

    def fmt(v):
        if v is None:
            return "—"
        med = v[0]
        return f"{med:.3g}" if abs(med) < 1000 else f"{med:,.0f}"

    for conf, d in summ.get(link, {}).get(kind, {}).items():
        lines.append(f"| {conf} | " + " | ".join(fmt(d.get(m)) for m, _ in metrics) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Claims


def _m(summ, link, kind, conf, metric):
    v = summ.get(link, {}).get(kind, {}).get(conf, {}).get(metric)
    return v[0] if v else None


def _ci(summ, link, kind, conf, metric) -> str:
    v = summ.get(link, {}).get(kind, {}).get(conf, {}).get(metric)
    return "—" if not v else f"{v[0]:.3g} [{v[1]:.3g}, {v[2]:.3g}]"


def _share(rows, link, kind, conf, pred) -> float:
    rs = [r for r in rows if r["link"] == link and r["kind"] == kind and r["config"] == conf]
    return sum(1 for r in rs if pred(r)) / len(rs) if rs else float("nan")


AQM_ECN = ("red+ecn", "codel+ecn", "fq_codel+ecn", "pie+ecn")


def claims(rows: list[dict], summ: dict) -> list[dict]:
    out: list[dict] = []

    def add(section, claim, expected, measured, ok, why=None):
        c = {"section": section, "claim": claim, "expected": expected, "measured": measured, "pass": bool(ok)}
        if why and not ok:
            c["why"] = why
        out.append(c)

    m = lambda link, conf, metric, kind="main": _m(summ, link, kind, conf, metric)  # noqa: E731
    ci = lambda link, conf, metric, kind="main": _ci(summ, link, kind, conf, metric)  # noqa: E731

    # --- GSM upload, seed 000 §5.2
    add(
        "000 §5.2",
        "GSM: the 50-packet interface buffer inflates the RTT (queueing far above the link's own round trip)",
        "drop-tail RTT p50 >= 3 x that of a buffer of the bit rate's order (3 packets)",
        f"{ci('gsm', 'droptail', 'rtt_p50_s')} s against {ci('gsm', 'droptail-bdp', 'rtt_p50_s')} s",
        m("gsm", "droptail", "rtt_p50_s") >= 3 * m("gsm", "droptail-bdp", "rtt_p50_s"),
    )
    syn_to = _share(rows, "gsm", "main", "droptail", lambda r: r["second_syn_sent"] >= 2)
    add(
        "000 §5.2",
        "GSM: a second connection's connect request suffers a timeout (6 s initial RTO behind the backlog)",
        "its SYN sent again in most runs (share >= 0.5)",
        f"share {syn_to:.2f}; set-up {ci('gsm', 'droptail', 'second_setup_s')} s",
        syn_to >= 0.5,
    )
    for conf in AQM_ECN:
        r_aqm, r_bdp = m("gsm", conf, "rtt_p50_s"), m("gsm", "droptail-bdp", "rtt_p50_s")
        add(
            "000 §5.2",
            f"GSM, {conf} at both ends: no RTT inflation",
            "RTT p50 <= 2 x the 3-packet buffer's, and <= 0.5 x drop-tail's",
            f"{ci('gsm', conf, 'rtt_p50_s')} s (3-packet {r_bdp:.3g} s, drop-tail {m('gsm', 'droptail', 'rtt_p50_s'):.3g} s)",
            r_aqm <= 2 * r_bdp and r_aqm <= 0.5 * m("gsm", "droptail", "rtt_p50_s"),
        )
        share = _share(rows, "gsm", "main", conf, lambda r: r["second_syn_sent"] >= 2)
        add(
            "000 §5.2",
            f"GSM, {conf}: no SYN timeout for the second connection",
            "SYN sent again in at most 10 % of runs",
            f"share {share:.2f}; set-up {ci('gsm', conf, 'second_setup_s')} s",
            share <= 0.1,
        )
        g, g0 = m("gsm", conf, "goodput_Bps"), m("gsm", "droptail", "goodput_Bps")
        add(
            "000 §5.2",
            f"GSM, {conf}: the bulk upload keeps its throughput",
            "goodput >= 0.95 x drop-tail's",
            f"{ci('gsm', conf, 'goodput_Bps')} B/s against {g0:.4g} B/s",
            g >= 0.95 * g0,
            why="PIE marks only while its drop probability is at most 10 % (RFC 8033 §5.1); on this link it passes that at once and drops instead, and each drop costs the BSD stack a recovery"
            if conf == "pie+ecn"
            else None,
        )
    pie_why = (
        "PIE marks only while its drop probability is at most 10 % (RFC 8033 §5.1); on a link this slow the "
        "controller passes 10 % within a few updates and drops instead, so ECN-capable packets are dropped as others"
    )
    for link in ("gsm", "gprs"):
        for q in ("red", "codel", "fq_codel", "pie"):
            a, b = m(link, q, "retransmits"), m(link, q + "+ecn", "retransmits")
            add(
                "000 §5.2",
                f"{link.upper()}, {q}: with ECN fewer packets are dropped and sent again",
                "median retransmissions with ECN < without",
                f"{b:.3g} with ECN, {a:.3g} without (CE marks {m(link, q + '+ecn', 'marks'):.3g})",
                b < a,
                why=pie_why if q == "pie" else None,
            )
    rb, gb = m("gsm", "droptail-bdp", "rtt_p50_s"), m("gsm", "droptail-bdp", "goodput_Bps")
    g0 = m("gsm", "droptail", "goodput_Bps")
    add(
        "000 §5.2",
        "GSM: the 'simple solution', a buffer of the bit rate's order, removes the RTT inflation without losing throughput",
        "RTT p50 <= 0.5 x drop-tail's and goodput >= 0.95 x drop-tail's",
        f"RTT {rb:.3g} s ({m('gsm', 'droptail', 'rtt_p50_s'):.3g}), goodput {ci('gsm', 'droptail-bdp', 'goodput_Bps')} B/s ({g0:.4g})",
        rb <= 0.5 * m("gsm", "droptail", "rtt_p50_s") and gb >= 0.95 * g0,
        why="three packets are less than a BSD window's worth in flight; every overflow costs a loss recovery, and with 500 ms ticks and a 6 s initial RTO a timeout now and then: the link idles",
    )

    # --- GPRS download, seed 003 §IV-B, seed 000 §5.2
    add(
        "003 §IV-B",
        "GPRS: the 120 KB gateway buffer gives round trips of tens of seconds",
        "drop-tail RTT p50 >= 10 s",
        f"{ci('gprs', 'droptail', 'rtt_p50_s')} s",
        m("gprs", "droptail", "rtt_p50_s") >= 10,
    )
    sa = _share(rows, "gprs", "main", "droptail", lambda r: r["second_synack_sent"] >= 2)
    add(
        "000 §5.2",
        "GPRS: a second connection's SYN-ACK waits behind the backlog and is sent again",
        "SYN-ACK sent again in most runs (share >= 0.5)",
        f"share {sa:.2f}; set-up {ci('gprs', 'droptail', 'second_setup_s')} s",
        sa >= 0.5,
    )
    add(
        "000 §5.2",
        "GPRS: after an aborted download the stale data drains for several seconds",
        "drop-tail: stale data keeps arriving for >= 5 s after the abort",
        f"{ci('gprs', 'droptail', 'stale_drain_s', 'abort')} s",
        m("gprs", "droptail", "stale_drain_s", "abort") >= 5,
    )
    for conf in AQM_ECN + ("codel+ecn+ll2",):
        r = m("gprs", conf, "rtt_p50_s")
        add(
            "000 §5.2",
            f"GPRS, {conf} at both ends: no RTT inflation",
            "RTT p50 <= 0.5 x drop-tail's",
            f"{ci('gprs', conf, 'rtt_p50_s')} s against {m('gprs', 'droptail', 'rtt_p50_s'):.3g} s",
            r <= 0.5 * m("gprs", "droptail", "rtt_p50_s"),
        )
        share = _share(rows, "gprs", "main", conf, lambda x: x["second_synack_sent"] >= 2)
        add(
            "000 §5.2",
            f"GPRS, {conf}: the second connection's SYN-ACK is not sent again",
            "SYN-ACK sent again in at most 10 % of runs",
            f"share {share:.2f}; set-up {ci('gprs', conf, 'second_setup_s')} s",
            share <= 0.1,
            why="the GPRS link layer holds 10 packets below the IP queue (rlc_buffer: 15 KB, 3.6 s at 4.15 KB/s), out of the AQM's reach; behind them the SYN-ACK outlasts the 3 s initial RTO. With a 2-packet link-layer buffer (codel+ecn+ll2) the AQM's queue is the queue"
            if conf != "codel+ecn+ll2"
            else None,
        )
        g, g0 = m("gprs", conf, "goodput_Bps"), m("gprs", "droptail", "goodput_Bps")
        add(
            "000 §5.2",
            f"GPRS, {conf}: the bulk download keeps its throughput",
            "goodput >= 0.95 x drop-tail's",
            f"{ci('gprs', conf, 'goodput_Bps')} B/s against {g0:.4g} B/s",
            g >= 0.95 * g0,
        )
        d, d0 = m("gprs", conf, "stale_drain_s", "abort"), m("gprs", "droptail", "stale_drain_s", "abort")
        add(
            "000 §5.2",
            f"GPRS, {conf}: the stale data of an aborted download drains quickly",
            "stale data arrives for <= 0.3 x drop-tail's time",
            f"{ci('gprs', conf, 'stale_drain_s', 'abort')} s against {d0:.3g} s",
            d <= 0.3 * d0,
            why=(
                "RED judges the average queue in bytes, and with ECN it marks where it dropped: the sender halves "
                "once per round trip (5 s here), so between reductions the queue grows into RED's gentle region "
                "(up to 2 x max = 48 KB, 11.6 s at 4.15 KB/s), where marking is still all it does; the stale data "
                f"behind the abort is that queue (p95 {m('gprs', conf, 'sojourn_p95_s'):.3g} s in the main runs). "
                "CoDel and PIE judge the delay itself"
            )
            if conf == "red+ecn"
            else None,
        )
    fq, cd, dt = (m("gprs", c, "interactive_p95_s") for c in ("fq_codel+ecn", "codel+ecn", "droptail"))
    add(
        "RFC 8290",
        "GPRS: FQ-CoDel keeps an interactive flow's latency near the path's beside a bulk download",
        "interactive p95 <= 0.3 x drop-tail's and <= CoDel's",
        f"{ci('gprs', 'fq_codel+ecn', 'interactive_p95_s')} s (CoDel {cd:.3g} s, drop-tail {dt:.3g} s)",
        fq <= 0.3 * dt and fq <= cd,
    )
    px = m("gprs", "proxy", "sojourn_p95_s")
    add(
        "004 §IV",
        "GPRS: the split proxy's clamp keeps the gateway queue short too",
        "gateway queue p95 <= 1 s and interactive p50 <= 0.2 x drop-tail's",
        f"queue p95 {ci('gprs', 'proxy', 'sojourn_p95_s')} s, interactive p50 {ci('gprs', 'proxy', 'interactive_p50_s')} s "
        f"(drop-tail {m('gprs', 'droptail', 'interactive_p50_s'):.3g} s)",
        px <= 1 and m("gprs", "proxy", "interactive_p50_s") <= 0.2 * m("gprs", "droptail", "interactive_p50_s"),
    )
    return out


# ---------------------------------------------------------------------------
# Figures


def plot(summ: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def bars(ax, link, kind, metric, ylabel, title, log=False):
        confs = list(summ.get(link, {}).get(kind, {}))
        vals = [summ[link][kind][c].get(metric) for c in confs]
        xs = list(range(len(confs)))
        med = [v[0] if v else 0 for v in vals]
        err = [[(v[0] - v[1]) if v else 0 for v in vals], [(v[2] - v[0]) if v else 0 for v in vals]]
        colors = [
            "#7f7f7f"
            if c.startswith("droptail")
            else "#2ca02c"
            if c == "proxy"
            else "#1f77b4"
            if "ecn" in c
            else "#ff7f0e"
            for c in confs
        ]
        ax.bar(xs, med, yerr=err, color=colors, capsize=3)
        for x, v in zip(xs, vals):
            if v is None:
                ax.annotate("n/a", (x, 0), ha="center", va="bottom", fontsize=7, color="#555555")
        ax.set_xticks(xs)
        ax.set_xticklabels(confs, rotation=45, ha="right", fontsize=8)
        if log:
            ax.set_yscale("log")
        label(ax, "", ylabel, title, legend=False)

    for metric, ylabel, stem in (
        ("rtt_p50_s", "RTT p50 (s)", "fig1_rtt"),
        ("second_setup_s", "second connection's set-up (s)", "fig2_second_setup"),
        ("goodput_Bps", "bulk goodput (B/s)", "fig3_goodput"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        bars(axes[0], "gsm", "main", metric, ylabel, "GSM CSD upload (seed 000): mobile's interface queue")
        bars(axes[1], "gprs", "main", metric, ylabel, "GPRS download (seed 003): gateway queue")
        fig.suptitle(
            "medians over the seeds, 95 % bootstrap intervals; grey drop-tail, orange AQM, blue AQM + ECN, green split proxy",
            fontsize=8,
        )
        finish_figure(fig, out, stem, written)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    bars(
        axes[0],
        "gprs",
        "main",
        "interactive_p95_s",
        "interactive message latency p95 (s)",
        "GPRS: telnet-like flow beside the download",
        log=True,
    )
    bars(axes[1], "gprs", "abort", "stale_drain_s", "stale data after the abort (s)", "GPRS: download aborted at 40 s")
    finish_figure(fig, out, "fig4_interactive_abort", written)
    return written


def write_tables(summ: dict, out: Path) -> None:
    from ..outputs import write_text

    text = "## GSM upload\n\n" + table(summ, "gsm", "main")
    text += "\n## GPRS download\n\n" + table(summ, "gprs", "main")
    text += "\n## GPRS: aborted download, then the next\n\n" + table(summ, "gprs", "abort")
    write_text(out / "tables.md", text)


def _tables(rows: list[dict], summ: dict, out: Path) -> None:
    import polars as pl

    from ..outputs import write_text

    pl.DataFrame(rows, infer_schema_length=None).write_csv(out / "runs.csv")
    write_text(out / "summary.json", json.dumps(summ, indent=2) + "\n")
    write_tables(summ, out)


STUDY = Study(
    run=run_all,
    reduce=summarize,
    tables=_tables,
    figures=lambda rows, summ, out, quick, workers: plot(summ, out),
    claims=claims,
    count=len,
)
reproduce = STUDY.reproduce
