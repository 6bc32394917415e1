"""What the two GPRS studies share: the link (seeds 003/004's "3+1" CS-2 phone on
Vodafone UK) and measurements taken from traces.

The link is `scenarios/gprs-download.toml`: 4.15 KB/s down, 1.4 KB/s up, 300 ms
one-way delay plus a temporary-block-flow set-up delay for the first packet after
1 s of idle (0.3–2 s down, 0.1–0.6 s up), ACK bunching (60 ms uplink periods), a
120 KB gateway buffer, RLC ARQ underneath (no residual loss); hosts run the Linux
2.4-like profile (SACK, initial window 2, initial receive window 5392 B, 64 KB
window, slow-start restart). Radio conditions: "good" has none of the poor-radio
periods; "fair" and "poor" add them (see RADIO).
"""

from __future__ import annotations

LINK = """
seed = 1
stop = "{stop}"
[wired]
rate = "10Mbps"
delay = "20ms"
[wireless]
rate = "33200bps"
delay = "300ms"
header = "0B"
frame = "1500B"
queue = {{ limit = "120KB" }}
[wireless.up]
rate = "11200bps"
[wireless.arq]
protocol = "gprs"
uplink_period = "60ms"
{arq}
"""

# Varying bandwidth (seed 003 Fig. 3/4): poor-radio periods leave a share of the rate.
RADIO = {
    "good": "",
    "fair": 'poor_every = "60s"\npoor_duration = ["10s", "40s"]\npoor_share = 0.6',
    "poor": 'poor_every = "30s"\npoor_duration = ["20s", "60s"]\npoor_share = 0.4',
}
LINK_BPS = 4150.0
BDP = 10_000  # seeds 003/004: "approximately 10KB"


def scenario(
    flows: str, radio: str = "good", outage: tuple[int, int] | None = None, proxy: str | None = None, stop: str = "end"
) -> str:
    """A GPRS scenario with `flows` (TOML [[flow]] tables); `outage` = (start s,
    length s) of one fixed outage; `proxy` = the [proxy] table's body (None: no proxy)."""
    arq = RADIO[radio]
    if outage:
        arq += f'\noutages = [["{outage[0]}s", "{outage[1]}s"]]'
    text = LINK.format(stop=stop, arq=arq)
    if proxy is not None:
        text += "[proxy]\n" + proxy + "\n"
    return text + flows


def flow(app: str = "bulk", start: float = 0.0, tcp: str | None = 'profile = "linux-2.4"', **kw) -> str:
    """A [[flow]] table; `tcp` is the inline table's body (None for UDP apps)."""
    lines = ["[[flow]]", f'app = "{app}"', f'start = "{start}s"'] + ([f"tcp = {{ {tcp} }}"] if tcp is not None else [])
    for k, v in kw.items():
        lines.append(
            f"{k} = " + (f'"{v}"' if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v))
        )
    return "\n".join(lines) + "\n"


def tcp_rows(trace, node: str, flow: int):
    import polars as pl

    return trace.filter((pl.col("layer") == "tcp") & (pl.col("node") == node) & (pl.col("flow") == flow)).sort(
        "time_ns"
    )


def outstanding(trace, flow: int = 0):
    """The server's outstanding data over time: DataFrame (t_s, bytes) at each of its
    sends and ACK arrivals (highest byte sent minus highest byte acknowledged)."""
    import polars as pl

    s = tcp_rows(trace, "server", flow)
    sent = pl.when(pl.col("event").is_in(["send", "retransmit"]) & (pl.col("len") > 0)).then(
        pl.col("seq") + pl.col("len")
    )
    acked = pl.when((pl.col("event") == "recv") & (pl.col("ack") >= 0)).then(pl.col("ack"))
    s = s.filter(pl.col("event").is_in(["send", "retransmit", "recv"])).with_columns(
        sent.alias("hi"), acked.alias("ak")
    )
    s = s.with_columns(
        pl.col("hi").cum_max().forward_fill().fill_null(0), pl.col("ak").cum_max().forward_fill().fill_null(0)
    )
    return s.select(
        (pl.col("time_ns") / 1e9).alias("t_s"), (pl.col("hi") - pl.col("ak")).clip(lower_bound=0).alias("bytes")
    )


def srtt(trace, node: str = "server", flow: int = 0):
    """The sender's smoothed RTT over time: DataFrame (t_s, srtt_s)."""
    import polars as pl

    s = tcp_rows(trace, node, flow).filter(pl.col("event") == "srtt")
    return s.select((pl.col("time_ns") / 1e9).alias("t_s"), (pl.col("value") / 1e9).alias("srtt_s"))


def delivered(trace, flow: int = 0):
    """In-order bytes at the mobile over time, from its cumulative ACKs: (t_s, bytes)."""
    import polars as pl

    m = tcp_rows(trace, "mobile", flow).filter(pl.col("event").is_in(["send", "retransmit"]) & (pl.col("ack") > 0))
    return m.select(
        (pl.col("time_ns") / 1e9).alias("t_s"), (pl.col("ack").cum_max() - 1).clip(lower_bound=0).alias("bytes")
    )


def recovery_s(trace, end_s: float, flow: int = 0) -> float | None:
    """Time from `end_s` (an outage's end) until the mobile's in-order data advances
    again (its cumulative ACK passes the value it had at `end_s`)."""
    d = delivered(trace, flow)
    before = d.filter(d["t_s"] <= end_s)
    base = before["bytes"].max() if before.height else 0
    after = d.filter((d["t_s"] > end_s) & (d["bytes"] > base))
    return float(after["t_s"][0] - end_s) if after.height else None


def syn_sends(trace, flow: int) -> int:
    """How many times the mobile sent the SYN of `flow`."""
    import polars as pl

    m = tcp_rows(trace, "mobile", flow).filter(
        pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 2) == 2)
    )
    return m.height


def share_between(trace, t0: float, t1: float, flows=(0, 1)) -> list[int]:
    """Bytes each flow's receiver got (data segments arriving at the mobile) in [t0, t1)."""
    import polars as pl

    r = trace.filter(
        (pl.col("layer") == "tcp")
        & (pl.col("node") == "mobile")
        & (pl.col("event") == "recv")
        & (pl.col("time_ns") >= t0 * 1e9)
        & (pl.col("time_ns") < t1 * 1e9)
    )
    return [int(r.filter(pl.col("flow") == f)["len"].sum()) for f in flows]


def add_claim(out: list, section: str, claim: str, expected: str, measured: str, ok) -> None:
    out.append({"section": section, "claim": claim, "expected": expected, "measured": measured, "pass": bool(ok)})


def pct(v, q):
    import numpy as np

    return float(np.percentile(v, q)) if len(v) else float("nan")
