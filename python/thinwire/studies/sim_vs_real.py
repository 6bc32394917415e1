"""Study `sim-vs-real`: the same link scenarios run twice, once with real Linux TCP
over the emulator (`thinwire emulate`: cubic and Reno, SACK on and off) and once
with thinwire's simulated `linux` TCP profile over the simulator, to validate the
TCP model against the kernel's (issue "thinwire emulate", part 6; seed 000 §4 for
why measurements of real stacks matter).

Links (download, server → mobile; the scenario's links, its flows replaced):
- `gprs`: scenarios/gprs-download.toml without outages (seeds 003/004);
- `gsm-rlp-vj`: scenarios/gsm-csd-upload.toml, GSM RLP with VJ header compression
  (seed 000), a download;
- `rlc-384k`: UMTS RLC at 384 kbit/s with 5 % uniform frame losses (seed 002).

Real hosts are set up like the model's `linux` profile where the kernel lets us
(timestamps, no window scaling, 64 KB receive buffer, initial window 2 segments,
no metrics cache); the congestion control and SACK vary. The simulated flow uses
the `linux` profile with `sack` (for real SACK runs) or `newreno` (Linux without
SACK recovers with NewReno). thinwire has no CUBIC: real cubic runs are compared
with the same simulated Reno-family flow, and the difference is part of the
result. Needs root (network namespaces); the real runs take real time (about 4
minutes; `--quick`: Reno with SACK only, about 1 minute).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..api import ScenarioError
from .report import write_claims

ROOT = Path(__file__).resolve().parents[3]

LINKS = {
    "gprs": ("gprs-download.toml", [], 60_000),
    "gsm-rlp-vj": ("gsm-csd-upload.toml", ["wireless.arq.header_compression=true"], 15_000),
    "rlc-384k": (
        "bulk-10mbps-raw.toml",
        [
            'wireless.rate="384kbps"',
            'wireless.delay="40ms"',
            'wireless.frame="40B"',
            'wireless.header="2B"',
            'wireless.arq={protocol="rlc"}',
            'wireless.channel={model="uniform", p=0.05}',
        ],
        200_000,
    ),
}
CONFIGS = [("cubic", True), ("reno", True), ("reno", False), ("cubic", False)]

# The congestion control is set on the route to the other host: a namespace's
# default may only be one of the host's `tcp_allowed_congestion_control`, a route
# may use any available one.
TUNE = (
    "sysctl -qw net.ipv4.tcp_sack={sack} net.ipv4.tcp_timestamps=1 "
    "net.ipv4.tcp_window_scaling=0 'net.ipv4.tcp_rmem=4096 65535 65535' net.ipv4.tcp_no_metrics_save=1 && "
    "ip route change $THINWIRE_PEER dev $THINWIRE_DEV initcwnd 2 initrwnd 4 congctl {cc}"
)
CURL = (
    "for i in $(seq 100); do curl -sf -o /dev/null http://$THINWIRE_PEER:8000/f.bin && exit 0; sleep 0.1; done; exit 1"
)


def _scenario_text(name: str) -> tuple[str, list[str], int]:
    file, overrides, size = LINKS[name]
    text = (ROOT / "scenarios" / file).read_text()
    # Outages make single runs incomparable (their timing is random per run).
    text = "\n".join(x for x in text.splitlines() if not x.strip().startswith("outage_every"))
    return text, overrides, size


def real_run(name: str, cc: str, sack: bool, work: Path) -> dict:
    from ..emulate import emulate

    text, overrides, size = _scenario_text(name)
    www = work / "www"
    www.mkdir(exist_ok=True)
    (www / "f.bin").write_bytes(bytes(range(256)) * (size // 256) + bytes(size % 256))
    tune = TUNE.format(cc=cc, sack=int(sack))
    out = work / f"{name}-{cc}-{int(sack)}"
    s = emulate(
        text,
        set=overrides,
        mobile=f"{tune} && {CURL}",
        server=f"{tune} && exec python3 -m http.server 8000 --bind $THINWIRE_ADDR --directory {www} 2>/dev/null",
        out=out,
        commands_to_stderr=True,
    )
    if s.get("mobile_status") != 0:
        raise ScenarioError(f"sim-vs-real: the real download over {name} failed (status {s.get('mobile_status')})")
    f, done = download_time(s, out)
    return {
        "completion_s": done,
        "goodput_bps": 8 * f["bytes_delivered"] / done,
        "rtt_avg_s": f["rtt_avg_s"],
        "retransmits": f["tcp_retransmits"],
        "timeouts": f["tcp_timeouts"],
    }


def download_time(summary: dict, out: Path) -> tuple[dict, float]:
    """The emulated run's download flow and its time from the SYN to the last data
    byte at the mobile (from the run's trace in `out`)."""
    import polars as pl

    f = max(summary["flows"], key=lambda r: r["bytes_delivered"])
    t = pl.read_parquet(out / "trace.parquet")
    rcv = t.filter(
        (pl.col("layer") == "tcp")
        & (pl.col("flow") == f["id"])
        & (pl.col("event") == "recv")
        & (pl.col("len") > 0)
        & (pl.col("node") == "mobile")
    )
    return f, float(rcv["time_s"].max()) - f["start_s"]


def sim_run(name: str, sack: bool) -> dict:
    import thinwire

    text, overrides, size = _scenario_text(name)
    variant = "sack" if sack else "newreno"
    flow = ["flow.0.app=bulk", f"flow.0.bytes={size}B", "flow.0.direction=down", "flow.0.start=0s"]
    flow += [f'flow.0.tcp={{profile="linux-2.4", variant="{variant}"}}']
    # Keep only the first flow of the scenario.
    text = _first_flow_only(text)
    r = thinwire.run(text, set=overrides + flow + ['stop="end"']).flows.row(0, named=True)
    return {
        "completion_s": r["completion_s"],
        "goodput_bps": 8 * r["bytes_delivered"] / r["completion_s"],
        "rtt_avg_s": r["rtt_avg_s"],
        "retransmits": r["tcp_retransmits"],
        "timeouts": r["tcp_timeouts"],
    }


def _first_flow_only(text: str) -> str:
    import tomllib

    doc = tomllib.loads(text)
    n = len(doc.get("flow", []))
    if n <= 1:
        return text
    # Cut the text at the second [[flow]] header.
    lines = text.splitlines()
    idx = [i for i, x in enumerate(lines) if x.strip() == "[[flow]]"]
    return "\n".join(lines[: idx[1]]) + "\n"


def reproduce(out: Path, quick: bool = False, scheduler=None, workers=None, progress=True) -> list[dict]:
    from ..emulate import available

    why = available()
    if why:
        raise ScenarioError(f"sim-vs-real runs real TCP in the emulator: {why}")
    out.mkdir(parents=True, exist_ok=True)
    configs = [("reno", True)] if quick else CONFIGS
    rows = []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        for name in LINKS:
            sims = {sack: sim_run(name, sack) for sack in {s for _, s in configs}}
            for cc, sack in configs:
                if progress:
                    print(f"sim-vs-real: {name}, real {cc} SACK {'on' if sack else 'off'} ...", flush=True)
                real = real_run(name, cc, sack, work)
                sim = sims[sack]
                row = {"link": name, "real_cc": cc, "sack": sack, "sim_variant": "sack" if sack else "newreno"}
                for k in ("completion_s", "goodput_bps", "rtt_avg_s", "retransmits", "timeouts"):
                    row[f"real_{k}"] = real[k]
                    row[f"sim_{k}"] = sim[k]
                rows.append(row)
    (out / "runs.json").write_text(json.dumps(rows, indent=2) + "\n")
    _table(rows, out)
    claims = []
    for r in rows:
        if r["real_cc"] != "reno" or not r["sack"]:
            continue
        ratio = r["sim_completion_s"] / r["real_completion_s"]
        claims.append(
            {
                "section": r["link"],
                "claim": "simulated linux/SACK download time within 25 % of real Reno+SACK",
                "expected": "ratio 0.75–1.25",
                "measured": f"sim {r['sim_completion_s']:.2f} s, real {r['real_completion_s']:.2f} s (ratio {ratio:.2f})",
                "pass": 0.75 <= ratio <= 1.25,
            }
        )
        rr = r["sim_rtt_avg_s"] / r["real_rtt_avg_s"] if r["real_rtt_avg_s"] else float("nan")
        claims.append(
            {
                "section": r["link"],
                "claim": "simulated mean RTT within 30 % of real Reno+SACK",
                "expected": "ratio 0.7–1.3",
                "measured": f"sim {r['sim_rtt_avg_s']:.3f} s, real {r['real_rtt_avg_s']:.3f} s (ratio {rr:.2f})",
                "pass": 0.7 <= rr <= 1.3,
            }
        )
    write_claims(out, claims)
    return claims


def _table(rows: list[dict], out: Path) -> None:
    head = "| link | real TCP | SACK | time real / sim (s) | goodput real / sim (kbit/s) | mean RTT real / sim (s) | retransmissions real / sim | timeouts real / sim |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['link']} | {r['real_cc']} | {'on' if r['sack'] else 'off'} "
            f"| {r['real_completion_s']:.2f} / {r['sim_completion_s']:.2f} "
            f"| {r['real_goodput_bps'] / 1e3:.1f} / {r['sim_goodput_bps'] / 1e3:.1f} "
            f"| {r['real_rtt_avg_s']:.3f} / {r['sim_rtt_avg_s']:.3f} "
            f"| {r['real_retransmits']} / {r['sim_retransmits']} | {_n(r['real_timeouts'])} / {_n(r['sim_timeouts'])} |"
        )
    (out / "table.md").write_text("\n".join(lines) + "\n")


def _n(v) -> str:
    """A count, or – where the packets do not tell it (a real sender's timeouts)."""
    return "–" if v is None else str(v)
