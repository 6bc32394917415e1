"""Study `gsm-multilayer` (seed 000_5756ad45abc8c63f.txt): multi-layer tracing of
TCP over GSM circuit-switched data (RLP, PPP, VJ header compression, L2R).

Setup (seed 000 §4–5): a BSD laptop (`profile = "bsd"`: Reno, 500 ms ticks,
timestamps, 6 s initial RTO, 8 KiB socket buffers, source quench on local drops)
uploads bulk data of 230 KB to 1.5 MB with MSS 460 over one GSM hop: RLP with 30-byte
frames (24 user bytes, one per 20 ms, round trip about 400 ms), PPP, and L2R relaying
at 960 bytes/s at the network side; the mobile's interface buffer holds 50 packets.

Radio. The seed traced real radio ("good" and "poor" signal) and gives no channel
model; thinwire uses, as documented choices: good radio = independent frame losses
of 1 % (GSM's FEC leaves a few per cent of residual frame errors at most); poor
radio = a two-state channel whose fades (BER 10^-2: nine frames in ten lost) last
1 s on average every 20 s, long enough now and then to exceed N2 = 6. A fade long
enough to defeat the SABM exchange too drops the call; as in the seed (§4.1), such
transfers are left out of the claims (their number is reported).

Header compression. RFC 1144 compresses only segments whose TCP options equal the
previous ones, so with timestamps nothing is compressed; runs "with compression"
turn timestamps off (the seed's traces with compression must have had deltas to
lose, §5.3), runs without keep them (the seed's 59 bytes of overhead per segment).

The receiving PPP does not tell the decompressor about damaged frames
(`vj_toss_on_error = false`): the seed saw the decompressor go "off by 5 segments"
and the TCP receiver discard segments by checksum (§5.3), which is what a stale base
does; with RFC 1144's toss the same window is lost, to the decompressor instead.

Figures (seed 000 numbering): 5 a typical multi-layer time/sequence plot; 6 the
utilization distribution; 7 local buffer overflow with a small interface buffer
(source quench); 8 receiver ACKs and RLP resets with header compression; 9 its zoom;
10 the RTO after a reset (exponential back-off); 11 the first seconds of a poor-radio
run (RLP retransmission bursts); 12 RLP/L2R flow control (the sender's pauses).
"""

from __future__ import annotations

from pathlib import Path

from ..figures import tidy
from .report import save_figure
from .study import Study

BASE = """
seed = 1
stop = "end"
[wired]
rate = "10Mbps"
delay = "5ms"
[wireless]
rate = "12000bps"
delay = "180ms"
frame = "24B"
header = "6B"
queue = {{ limit = "{queue}" }}
[wireless.channel]
{channel}
[wireless.arq]
protocol = "rlp-gsm"
n2 = {n2}
header_compression = {hc}
vj_toss_on_error = false
l2r_rate = "7680bps"
[[flow]]
app = "bulk"
bytes = "{size}"
direction = "up"
tcp = {{ profile = "bsd", mss = 460, timestamps = {ts} }}
"""

GOOD = 'model = "uniform"\np = 0.01'
POOR = 'model = "two-state"\ngood = { ber = 5e-5, mean = "20s" }\nbad = { ber = 1e-2, mean = "1s" }'
L2R_BPS = 960.0
MSS = 460


def scenario(size="230KB", channel=GOOD, hc=False, n2=6, queue="50pkt", extra="") -> str:
    return (
        BASE.format(size=size, channel=channel, hc=str(hc).lower(), ts=str(not hc).lower(), n2=n2, queue=queue) + extra
    )


def _runs(quick: bool) -> list[dict]:
    sizes = ["230KB", "500KB"] if quick else ["230KB", "500KB", "1MB", "1.5MB"]
    seeds = range(1, 3) if quick else range(1, 6)
    poor_seeds = range(1, 9) if quick else range(1, 31)
    poor_size = "230KB" if quick else "500KB"
    out = []
    for hc in (False, True):
        for size in sizes:
            for s in seeds:
                out.append({"radio": "good", "hc": hc, "n2": 6, "size": size, "seed": s})
        for n2 in (6, 20):
            for s in poor_seeds:
                out.append({"radio": "poor", "hc": hc, "n2": n2, "size": poor_size, "seed": s})
    return out


def _one(r: dict) -> dict:
    import polars as pl

    import thinwire
    from thinwire.analysis import SimRun

    text = scenario(r["size"], GOOD if r["radio"] == "good" else POOR, r["hc"], r["n2"])
    res = thinwire.run(text, seed=r["seed"], trace=["tcp", "link"])
    run = SimRun.from_result(res)
    m = run.flow_metrics().row(0, named=True)
    link = res.summary["link"]["up"]
    f = res.summary["flows"][0]
    t = run.trace
    resets = t.filter((pl.col("event") == "reset") & (pl.col("node") == "mobile") & (pl.col("dir") == "up")).sort(
        "time_ns"
    )
    # SABMs only (UA and DISC are resets too in the trace): the poll bit is not in the
    # trace, so count distinct reset episodes: resets more than 3 s apart.
    times = resets["time_ns"].to_list()
    episodes = [x for i, x in enumerate(times) if i == 0 or x - times[i - 1] > 3e9]
    # Receiver stall around each reset: the gap between correctly received data
    # segments (any order) that contains the reset — "no data is received correctly"
    # (seed 000 §5.3, Fig. 8).
    adv = t.filter(
        (pl.col("layer") == "tcp") & (pl.col("node") == "server") & (pl.col("event") == "recv") & (pl.col("len") > 0)
    )["time_ns"].to_list()
    stalls, at = [], []
    import bisect

    t0 = t["time_ns"].min()
    for x in episodes:
        i = bisect.bisect_right(adv, x)
        if 0 < i < len(adv):
            stalls.append((adv[i] - adv[i - 1]) / 1e9)
            at.append((x - t0) / 1e9)
    share = min(1.0, L2R_BPS / (24 / 0.020))
    util = m["utilization"] / share if m["utilization"] is not None else None
    return {
        **r,
        "throughput_Bps": f["throughput_bps"] / 8,
        "completion_s": f["completion_s"],
        "utilization": min(util, 1.0) if util is not None else None,
        "tcp_retransmitted_packets": m["tcp_retransmits"],
        "timeouts": m["tcp_timeouts"],
        "spurious_timeouts": m["needless_timeouts"],
        "competing_retransmissions": m["competing_retransmissions"],
        "resets": len(episodes),
        "link_resets": link["link_resets"] + res.summary["link"]["down"]["link_resets"],
        "flushed_bytes": link["flushed_bytes"],
        "checksum_drops": link["checksum_drops"],
        "vj_tossed": link["vj_tossed"],
        "ppp_damaged": link["ppp_damaged"],
        "call_dropped": link["call_dropped"],
        "stalls_s": stalls,
        "stall_at_s": at,
        "rtt_avg_s": f["rtt_avg_s"],
    }


def _task(t: dict) -> dict:
    """One task of the study on a worker: a transfer's reduction, or the second-connection experiment."""
    if t["kind"] == "second":
        return second_connection()
    return _one({k: v for k, v in t.items() if k != "kind"})


def run_all(out: Path, quick: bool, scheduler, workers, progress):
    """Every run of the study on the sweep runner (resumable: data/runs.jsonl).
    Returns (per-run table, second-connection result)."""
    import polars as pl

    from ..runner import run_tasks

    tasks = [{"kind": "run", **r} for r in _runs(quick)] + [{"kind": "second"}]
    res = run_tasks(_task, tasks, out / "data" / "runs.jsonl", scheduler, workers, progress, desc="gsm-multilayer")
    return pl.DataFrame(res[:-1]), res[-1]


def second_connection() -> dict:
    """A second connection opened while a bulk upload fills the interface buffer."""
    import polars as pl

    import thinwire
    from thinwire.analysis import SimRun

    extra = (
        '[[flow]]\napp = "bulk"\nbytes = "5KB"\ndirection = "up"\nstart = "60s"\ntcp = { profile = "bsd", mss = 460 }\n'
    )
    res = thinwire.run(scenario("230KB", extra=extra), seed=1, trace=["tcp"])
    t = SimRun.from_result(res).trace.filter((pl.col("flow") == 1) & (pl.col("node") == "mobile"))
    syn = t.filter(pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 2) == 2))
    first = res.summary["flows"][0]
    return {
        "syn_sent": syn.height,
        "syn_retransmitted": int((syn["event"] == "retransmit").sum()),
        "flow1_timeouts": res.summary["flows"][1]["tcp_timeouts"],
        "flow0_rtt_avg_s": first["rtt_avg_s"],
        "flow1_completion_s": res.summary["flows"][1]["completion_s"],
    }


def plot(df, out: Path, quick: bool) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import polars as pl

    import thinwire
    from thinwire.analysis import SimRun
    from thinwire.analysis.plots import plot as mt_plot

    written: list[Path] = []
    layers = ["TcpSnd_data", "TcpSnd_ack", "TcpRcv_data", "TcpRcv_ack", "RlpSnd_data", "RlpSnd_rexmt", "RlpSnd_rst"]
    # Fig. 5 and its zooms 11 (first 10 s, poor radio) and 12 (L2R pauses).
    good = SimRun.from_result(thinwire.run(scenario("230KB"), seed=1, trace=["tcp", "link"]))
    written.append(
        mt_plot(
            good,
            "tsq",
            [out / "fig05_tsq-good-radio.png", out / "fig05_tsq-good-radio.pdf"],
            layers=layers,
            title="Fig. 5: a typical multi-layer trace (good radio, no compression)",
        )
    )
    written.append(
        mt_plot(
            good,
            "tsq",
            [out / "fig12_tsq-l2r-flow-control.png", out / "fig12_tsq-l2r-flow-control.pdf"],
            layers=["TcpSnd_data", "RlpSnd_data"],
            xlim=(100, 110),
            title="Fig. 12: RLP/L2R flow control: the RLP sender pauses (zoom of Fig. 5)",
        )
    )
    poor = SimRun.from_result(thinwire.run(scenario("230KB", POOR), seed=3, trace=["tcp", "link"]))
    written.append(
        mt_plot(
            poor,
            "tsq",
            [out / "fig11_tsq-rlp-retransmissions.png", out / "fig11_tsq-rlp-retransmissions.pdf"],
            layers=layers,
            xlim=(0, 12),
            title="Fig. 11: first seconds of a poor-radio run: RLP retransmission bursts",
        )
    )
    # Fig. 7: an interface buffer smaller than the 8 KiB window overflows.
    small = SimRun.from_result(thinwire.run(scenario("230KB", queue="6pkt"), seed=1, trace=["tcp", "link", "queue"]))
    written.append(
        mt_plot(
            small,
            "tsq",
            [out / "fig07_tsq-local-overflow.png", out / "fig07_tsq-local-overflow.pdf"],
            layers=["TcpSnd_data", "TcpSnd_rexmt", "TcpSnd_ack", "TcpSnd_cwnd", "TcpRcv_ack"],
            xlim=(20, 60),
            title="Fig. 7: local buffer overflow (6-packet interface buffer): source quench, then fast retransmit",
        )
    )
    # Figs. 8-10: a poor-radio run with compression that had a reset.
    # The reset with the longest receiver stall among poor-radio runs with compression
    # (away from the end of the transfer, so that what follows it shows).
    cand = [
        (s, a, r)
        for r in df.filter(
            (pl.col("radio") == "poor") & pl.col("hc") & (pl.col("n2") == 6) & ~pl.col("call_dropped")
        ).iter_rows(named=True)
        for s, a in zip(r["stalls_s"], r["stall_at_s"])
        if r["completion_s"] and a + 60 < r["completion_s"]
    ]
    if cand:
        _, x, r = max(cand, key=lambda c: (c[0], -c[2]["seed"]))
        run = SimRun.from_result(
            thinwire.run(scenario(r["size"], POOR, True, 6), seed=r["seed"], trace=["tcp", "link"])
        )
        written.append(
            mt_plot(
                run,
                "tsq",
                [out / "fig08_tsq-decompressor-failures.png", out / "fig08_tsq-decompressor-failures.pdf"],
                layers=["TcpRcv_ack", "RlpSnd_rst"],
                xlim=(max(0, x - 40), x + 60),
                title=f"Fig. 8: receiver ACKs and RLP resets with header compression (seed {r['seed']})",
            )
        )
        written.append(
            mt_plot(
                run,
                "tsq",
                [out / "fig09_tsq-decompressor-zoom.png", out / "fig09_tsq-decompressor-zoom.pdf"],
                layers=["TcpSnd_data", "TcpSnd_rexmt", "TcpRcv_data", "TcpRcv_ack", "RlpSnd_rst"],
                xlim=(max(0, x - 5), x + 30),
                title="Fig. 9: zoom of Fig. 8: segments after the reset fail the checksum until a retransmission",
            )
        )
        written.append(
            mt_plot(
                run,
                "rtt",
                [out / "fig10_rto-backoff.png", out / "fig10_rto-backoff.pdf"],
                xlim=(max(0, x - 20), x + 90),
                title="Fig. 10: RTO after a reset: inflated by queueing, then backed off",
            )
        )
    # Fig. 6: utilization distribution (rounded down to whole per cent, as the seed).
    # The seed's population: default N2, calls that were not dropped.
    pop = df.filter((pl.col("n2") == 6) & ~pl.col("call_dropped"))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    u = np.floor(np.clip(pop["utilization"].fill_null(0).to_numpy(), 0, 1) * 100)
    bins = np.arange(85, 102) - 0.5
    ax.hist(np.clip(u, 85, 100), bins=bins, weights=np.full(len(u), 100 / max(len(u), 1)), color="#1f4e9c")
    ax.set_xlabel("utilization (%)")
    ax.set_ylabel("share of transfers (%)")
    ax.set_title(
        f"Fig. 6: TCP channel utilization ({len(u)} transfers, N2 = 6, good and poor radio; ≤85 % pooled at 85)",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    tidy(fig)
    save_figure(fig, out, "fig06_utilization", written)
    plt.close(fig)
    # Every MultiTracer figure went out as PNG and PDF (plot() returns the first).
    written += [p.with_suffix(".pdf") for p in written if p.suffix == ".png" and p.with_suffix(".pdf") not in written]
    return written


def claims(df, second: dict) -> list[dict]:
    import numpy as np
    import polars as pl

    out = []

    def add(section, claim, expected, measured, ok):
        out.append({"section": section, "claim": claim, "expected": expected, "measured": measured, "pass": bool(ok)})

    g = df.filter((pl.col("radio") == "good") & ~pl.col("hc"))
    u = g["utilization"].to_numpy()
    add(
        "5.1",
        "with good radio TCP fully uses the link",
        "utilization ≥ 98 % in most good-radio transfers",
        f"{np.mean(u >= 0.98) * 100:.0f} % of {len(u)} transfers ≥ 98 % (min {u.min() * 100:.1f} %)",
        np.mean(u >= 0.98) >= 0.8,
    )
    thr = g["throughput_Bps"].to_numpy()
    add(
        "4.4",
        "receiver throughput near 848 bytes/s (MSS 460, no compression, 960 bytes/s)",
        "mean within 3 % of 848 bytes/s",
        f"{thr.mean():.0f} bytes/s (range {thr.min():.0f}–{thr.max():.0f})",
        abs(thr.mean() - 848) <= 0.03 * 848,
    )
    good_all = df.filter(pl.col("radio") == "good")
    comp = int(good_all["competing_retransmissions"].sum())
    add(
        "5.4",
        "no competing retransmissions between TCP and RLP in bulk transfers (good radio)",
        "0",
        f"{comp} in {good_all.height} transfers",
        comp == 0,
    )
    quiet = df.filter((pl.col("radio") == "poor") & (pl.col("resets") == 0) & ~pl.col("call_dropped"))
    sp = quiet["spurious_timeouts"].to_numpy()
    add(
        "5.4",
        "spurious timeouts are rare even with poor radio",
        "at most 1 per transfer on average (poor radio, no link reset)",
        f"{sp.mean():.2f} per transfer over {len(sp)} transfers ({int(quiet['competing_retransmissions'].sum())} competing retransmissions)",
        len(sp) > 0 and sp.mean() <= 1.0,
    )
    dropped = int(df["call_dropped"].sum())
    df = df.filter(~pl.col("call_dropped"))
    poor6 = df.filter((pl.col("radio") == "poor") & (pl.col("n2") == 6))
    hc, nohc = poor6.filter(pl.col("hc")), poor6.filter(~pl.col("hc"))
    st_hc = [s for l in hc["stalls_s"].to_list() for s in l]
    st_no = [s for l in nohc["stalls_s"].to_list() for s in l]
    med = lambda v: float(np.median(v)) if v else float("nan")
    add(
        "5.3",
        "a reset with header compression stalls the receiver for many seconds",
        "median gap in correctly received data around a reset ≥ 10 s with compression",
        f"median {med(st_hc):.1f} s over {len(st_hc)} resets ({dropped} transfers with a dropped call left out)",
        len(st_hc) > 0 and med(st_hc) >= 10,
    )
    add(
        "5.3",
        "without compression a reset does not",
        "median stall without compression less than half of that with it",
        f"median {med(st_no):.1f} s over {len(st_no)} resets vs {med(st_hc):.1f} s",
        len(st_no) > 0 and len(st_hc) > 0 and med(st_no) < 0.5 * med(st_hc),
    )
    ck_hc, ck_no = (
        int(hc["checksum_drops"].sum() + hc["vj_tossed"].sum()),
        int(nohc["checksum_drops"].sum() + nohc["vj_tossed"].sum()),
    )
    rex = lambda d: (
        float(d.filter(pl.col("resets") > 0)["tcp_retransmitted_packets"].sum()) / max(int(d["resets"].sum()), 1)
    )
    add(
        "5.3",
        "with compression a reset loses a window of data",
        "segments dropped by the decompressor only with compression; more TCP retransmissions per reset",
        f"checksum/toss drops {ck_hc} vs {ck_no}; TCP retransmissions per reset {rex(hc):.1f} vs {rex(nohc):.1f}",
        ck_hc > 0 and ck_no == 0 and rex(hc) > rex(nohc),
    )
    r6 = int(df.filter((pl.col("radio") == "poor") & (pl.col("n2") == 6))["resets"].sum())
    r20 = int(df.filter((pl.col("radio") == "poor") & (pl.col("n2") == 20))["resets"].sum())
    add(
        "5.3",
        "a larger N2 avoids most resets",
        "resets with N2 = 20 ≤ 30 % of those with N2 = 6 (same channels)",
        f"{r20} vs {r6}",
        r6 > 0 and r20 <= 0.3 * r6,
    )
    add(
        "5.2",
        "the over-buffered interface makes a second connection's SYN time out",
        "the SYN is retransmitted (initial RTO 6 s)",
        f"SYN sent {second['syn_sent']} times; first connection's mean RTT {second['flow0_rtt_avg_s']:.1f} s",
        second["syn_retransmitted"] >= 1,
    )
    return out


STUDY = Study(
    run=run_all,
    tables=lambda runs, _s, out: runs[0].drop("stalls_s", "stall_at_s").write_csv(out / "runs.csv"),
    figures=lambda runs, _s, out, quick, workers: plot(runs[0], out, quick),
    claims=lambda runs, _s: claims(*runs),
    count=lambda runs: runs[0].height,
)
reproduce = STUDY.reproduce
