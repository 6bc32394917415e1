"""Seed 004's fairness (Fig. 10) and stall-recovery (Fig. 12) claims rerun over real
Linux end hosts through the real `thinwire proxy` daemon, beside the simulator's
numbers for the same experiments (study `gprs-proxy`, studies/gprs_proxy.py).

Topology (`thinwire emulate --gateway`): mobile namespace — the study's GPRS link
(studies/gprs_common.py: 33.2 kbit/s down, 11.2 kbit/s up, 300 ms, TBF set-up,
60 ms uplink periods, 120 KB buffer, RLC ARQ) in real time — gateway namespace,
running the daemon with the study's `[proxy]` defaults (clamp 9.7 KB) or nothing
(plain forwarding) — veth — server namespace. The end hosts are this machine's
Linux kernel (not the simulator's Linux 2.4-like profile), with Reno congestion
control set in both namespaces (`CC`; the seeds' Linux 2.4 senders were loss
based: a machine default such as BBR keeps the GPRS buffer far emptier and
changes the no-proxy baseline).

- fairness: a 600 KB download, a second one 20 s later; the second's SYN count,
  its set-up time (first SYN to the SYN-ACK reaching the mobile) and its share of
  the bytes reaching the mobile over the 50 s after it starts;
- stall: a 600 KB download through a 25 s outage 60 s in; the time from the
  outage's end until the mobile's in-order data advances;
- mobiles: seed 004's deployment, two mobiles each over its own GPRS link
  (`--mobiles 2`), through one daemon or none; the second mobile starts its 600 KB
  download 20 s after the first: its set-up time and its share of the two
  mobiles' bytes over the next 50 s. Links of their own do not contend, so a
  proxy that keeps one aggregate per mobile must leave the second mobile exactly
  as it would be alone (share about one half, set-up as on an idle link). The
  simulator has one link per scenario: its numbers are two lone downloads, one
  from 0 s and one from 20 s, each over its own run of the link.

`python -m thinwire.studies.gprs_proxy_real [--out DIR]` runs the six emulations
at once (about 3.5 minutes; root, /dev/net/tun, nftables), writes
`real_hosts.csv` and prints the table of docs/studies/gprs-proxy.md.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from .gprs_common import recovery_s, scenario, share_between, syn_sends
from .gprs_proxy import stall_run
from .gprs_tcp import OUTAGE

GAP = 20.0
CC = "reno"
SHARE_SPAN = 50.0
# The outage's end plus this long, at most: recovery without a proxy takes tens of seconds.
STALL_TAIL = 90.0
SIZE = 600_000
PROXY = """[proxy]
link_rate = "33200bps"
[daemon]
mobile_interface = "set-by-the-command-line"
drain_timeout = "2s"
"""
SERVE = """
import socket, threading
data = bytes(range(256)) * ({size} // 256 + 1)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(16)
def one(c):
    try:
        c.sendall(data[:{size}])
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=one, args=(c,), daemon=True).start()
"""
FETCH = """
import socket, sys
c = socket.create_connection(("10.0.0.1", 8000), timeout=300)
while c.recv(65536):
    pass
"""


def _emulation(d: Path, kind: str, proxy: bool) -> subprocess.Popen:
    """Starts one emulation in `d` (its own directory); returns the process."""
    d.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    (d / "serve.py").write_text(SERVE.format(size=SIZE))
    (d / "fetch.py").write_text(FETCH)
    fetch = f"{py} {d / 'fetch.py'}"
    cc = f"sysctl -qw net.ipv4.tcp_congestion_control={CC}; "
    log = d / "proxy.log"
    wait = ""
    gateway = ""
    if proxy:
        (d / "proxy.toml").write_text(PROXY)
        gw = d / "gateway.sh"
        gw.write_text(
            "#!/bin/bash\n"
            f"exec {py} -m thinwire.cli proxy --config {d / 'proxy.toml'} "
            f"--set daemon.mobile_interface=$THINWIRE_DEV --out {d / 'proxy'} > {log} 2>&1\n"
        )
        gw.chmod(0o755)
        gateway = str(gw)
        wait = f"for i in $(seq 100); do grep -q started {log} 2>/dev/null && break; sleep 0.1; done; "
    extra = []
    if kind == "fairness":
        mobile = f"{cc}{wait}{fetch} & sleep {GAP:g}; {fetch} & sleep {SHARE_SPAN + 2:g}"
        text = scenario("", stop="1000s")
    elif kind == "mobiles":
        # Mobile 0 downloads through mobile 1's whole window; mobile 1 starts later.
        mobile = (
            f"{cc}{wait}if [ $THINWIRE_MOBILE = 0 ]; then timeout {GAP + SHARE_SPAN + 2:g} {fetch}; "
            f"else sleep {GAP:g}; timeout {SHARE_SPAN + 2:g} {fetch}; fi; true"
        )
        text = scenario("", stop="1000s")
        extra = ["--mobiles", "2"]
    else:
        end = sum(OUTAGE) + STALL_TAIL
        mobile = f"{cc}{wait}timeout {end:g} {fetch}; true"
        text = scenario("", outage=OUTAGE, stop="1000s")
    (d / "link.toml").write_text(text)
    cmd = [py, "-m", "thinwire.cli", "emulate", str(d / "link.toml"), "--out", str(d / "emu")]
    cmd += ["--mobile", mobile, "--server", f"{cc}exec {py} {d / 'serve.py'}", "--json", "--gateway", gateway]
    cmd += extra
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def connect_s(tr, flow: int) -> float | None:
    """From the mobile's first SYN of `flow` to the SYN-ACK reaching it."""
    import polars as pl

    m = tr.filter((pl.col("layer") == "tcp") & (pl.col("node") == "mobile") & (pl.col("flow") == flow))
    syn = m.filter(pl.col("event").is_in(["send", "retransmit"]) & ((pl.col("value") & 18) == 2))
    synack = m.filter((pl.col("event") == "recv") & ((pl.col("value") & 18) == 18))
    if syn.height == 0 or synack.height == 0:
        return None
    return float(synack["time_s"].min() - syn["time_s"].min())


def _sim_fairness(proxy: bool) -> dict:
    import thinwire

    from .gprs_common import flow

    # The run of studies/gprs_tcp.py's second_flow (seed 1), measured as the real one.
    text = scenario(flow(bytes="600KB") + flow(bytes="600KB", start=GAP), proxy="" if proxy else None)
    tr = thinwire.run(text, seed=1, trace=["tcp"]).trace
    got = share_between(tr, GAP, GAP + SHARE_SPAN)
    return {"syn_sends": syn_sends(tr, 1), "connect_s": connect_s(tr, 1), "share_50s": got[1] / max(sum(got), 1)}


def _sim_mobiles(proxy: bool) -> dict:
    """Two lone downloads, each over its own run of the link (seed 1): one from 0 s,
    one from GAP; the second's set-up time and share of both over the window."""
    import thinwire

    from .gprs_common import flow

    def lone(start: float):
        text = scenario(flow(bytes="600KB", start=start), proxy="" if proxy else None)
        return thinwire.run(text, seed=1, trace=["tcp"]).trace

    first, second = lone(0.0), lone(GAP)
    a = share_between(first, GAP, GAP + SHARE_SPAN, flows=(0,))[0]
    b = share_between(second, GAP, GAP + SHARE_SPAN, flows=(0,))[0]
    return {"syn_sends": syn_sends(second, 0), "connect_s": connect_s(second, 0), "share_50s": b / max(a + b, 1)}


def _first_syn_s(tr, flow: int) -> float:
    import polars as pl

    syns = tr.filter(
        (pl.col("layer") == "tcp")
        & (pl.col("node") == "mobile")
        & (pl.col("flow") == flow)
        & ((pl.col("value") & 2) == 2)
        & pl.col("event").is_in(["send", "retransmit"])
    )
    return float(syns["time_s"].min())


def _measure(d: Path, kind: str) -> dict:
    import polars as pl

    if kind == "mobiles":
        # One trace per mobile's path (emu/mobile-<k>/): mobile 1's flows renumbered.
        trs = [pl.read_parquet(d / "emu" / f"mobile-{k}" / "trace.parquet") for k in (0, 1)]
        tcp = [t.filter(pl.col("layer") == "tcp") for t in trs]
        first = min(tcp[0]["flow"].drop_nulls().to_list())
        second = min(tcp[1]["flow"].drop_nulls().to_list())
        tr = pl.concat([tcp[0], tcp[1].with_columns(pl.col("flow") + 1000)])
        t2 = _first_syn_s(tr, second + 1000)
        got = share_between(tr, t2, t2 + SHARE_SPAN, flows=(first, second + 1000))
        return {
            "syn_sends": syn_sends(tr, second + 1000),
            "connect_s": connect_s(tr, second + 1000),
            "share_50s": got[1] / max(sum(got), 1),
        }
    tr = pl.read_parquet(d / "emu" / "trace.parquet")
    # The emulator numbers conversations from 1, in the order they begin.
    flows = sorted(tr.filter(pl.col("layer") == "tcp")["flow"].drop_nulls().unique().to_list())
    if kind == "fairness":
        first, second = flows[0], flows[1]
        t2 = _first_syn_s(tr, second)
        got = share_between(tr, t2, t2 + SHARE_SPAN, flows=(first, second))
        return {
            "syn_sends": syn_sends(tr, second),
            "connect_s": connect_s(tr, second),
            "share_50s": got[1] / max(sum(got), 1),
        }
    return {"recovery_s": recovery_s(tr, float(sum(OUTAGE)), flow=flows[0])}


def run_real(out: Path) -> list[dict]:
    """The six emulations at once; one row per experiment and proxy setting, with
    the simulator's number for the same experiment."""
    out.mkdir(parents=True, exist_ok=True)
    runs = {
        (k, p): _emulation(out / f"{k}-{'proxy' if p else 'none'}", k, p)
        for k in ("fairness", "stall", "mobiles")
        for p in (True, False)
    }
    rows = []
    for (kind, proxy), proc in runs.items():
        so, se = proc.communicate()
        d = out / f"{kind}-{'proxy' if proxy else 'none'}"
        if proc.returncode != 0:
            raise RuntimeError(f"{d}: emulation failed ({proc.returncode}): {se.strip()[-500:]}")
        real = _measure(d, kind)
        if kind == "fairness":
            sim = _sim_fairness(proxy)
        elif kind == "mobiles":
            sim = _sim_mobiles(proxy)
        else:
            sim = {"recovery_s": stall_run(proxy, 1)["recovery_s"]}
        events = (
            [json.loads(x) for x in (d / "proxy.log").read_text().splitlines() if x.startswith("{")] if proxy else []
        )
        stopped = next((e for e in reversed(events) if e["event"] == "stopped"), {})
        for k, v in real.items():
            rows.append(
                {
                    "experiment": kind,
                    "proxy": proxy,
                    "measure": k,
                    "real": v,
                    "simulated": sim[k],
                    "proxy_retransmits": stopped.get("retransmits"),
                    "proxy_timeouts": stopped.get("aggregate_timeouts"),
                }
            )
    with open(out / "real_hosts.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def table(rows: list[dict]) -> str:
    def fmt(m, v):
        if v is None:
            return "none"
        return f"{v * 100:.0f} %" if m == "share_50s" else f"{v:.1f} s" if m.endswith("_s") else str(v)

    lines = ["| experiment | measure | proxy | real hosts | simulated |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['experiment']} | {r['measure']} | {'yes' if r['proxy'] else 'no'} | "
            f"{fmt(r['measure'], r['real'])} | {fmt(r['measure'], r['simulated'])} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="gprs-proxy-real", help="directory for the emulations and real_hosts.csv")
    a = ap.parse_args()
    print(table(run_real(Path(a.out))))
