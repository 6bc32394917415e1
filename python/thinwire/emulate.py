"""Real hosts over thinwire's link models in real time (`thinwire emulate`), and the
replay of an emulation through the same path (`thinwire simulate-log`).

The emulator (Rust, crates/thinwire-emu) needs root: it makes a network namespace
each for the mobile host (10.0.1.2, fd00:1::2) and the server (10.0.0.1, fd00::1),
joins them through TUN devices to the scenario's wireless and wired links, runs
the commands given in them, and removes everything when the mobile command ends
(or on Ctrl-C, SIGTERM, or after `duration`).

With `out`, the directory holds what a simulation directory holds (summary.json,
flows.parquet, trace.parquet, mobile.pcap, server.pcap: `thinwire analyze` and
`thinwire plot` read it the same way) plus capture.pcapng (one interface per
host), inputs.pcapng and schedule.log (the replay's input and the decisions it
must reproduce) and emulation.json (the scenario, so the run can be replayed).

With `mobiles=N` there are N mobile hosts (10.0.1.2, 10.0.1.3, …), each in its own
namespace running the `mobile` command (with $THINWIRE_MOBILE = 0, 1, …), each over
its own copy of the path (`cell="separate"`) or all over one (`cell="shared"`);
`out` then also holds `mobile-<k>/` per mobile (its own pcaps; with separate links
its trace, schedule log, flows and summary too), and the flows table has a
`mobile` column.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import _core
from .api import ScenarioError, _overrides, load_scenario_text, path_overrides
from .traces import syn_fin_retransmits

MAX_MOBILES = 250
CELLS = ("separate", "shared")


class EmulateError(ScenarioError):
    """The emulator cannot run here (privileges, iproute2, /dev/net/tun, --out)."""


def missing_capabilities() -> list[str]:
    """CAP_NET_ADMIN and CAP_SYS_ADMIN if absent from this process's effective set."""
    eff = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                eff = int(line.split()[1], 16)
    except OSError:
        pass
    return [name for bit, name in ((12, "CAP_NET_ADMIN"), (21, "CAP_SYS_ADMIN")) if not eff >> bit & 1]


def available() -> str | None:
    """None if emulation can run here, else why not (one line)."""
    if not hasattr(_core, "emulate"):
        return "emulation needs Linux"
    missing = missing_capabilities()
    if missing:
        return (
            f"emulation needs root: {' and '.join(missing)} missing "
            "(network namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN); run it with sudo"
        )
    if not Path("/dev/net/tun").exists():
        return "emulation needs /dev/net/tun"
    return None


def emulate(
    scenario,
    seed: int | None = None,
    set=None,
    mobile: str | None = None,
    server: str | None = None,
    duration: float | None = None,
    out: str | os.PathLike | None = None,
    late_after_ms: float = 1.0,
    commands_to_stderr: bool = False,
    gateway: str | None = None,
    server_ready: int | None = None,
    mobiles: int = 1,
    cell: str = "separate",
    udp_bypass: bool = False,
    offload: bool = True,
) -> dict:
    """Runs an emulation; returns its summary (and writes `out` if given).
    `commands_to_stderr`: the commands' standard output goes to standard error.
    `gateway`: a third namespace between the link and the server (a veth pair to
    the server replaces the scenario's wired link), running this command ("" for
    none), e.g. a proxy. `server_ready`: start the mobile command only once
    something listens on this TCP port in the server's namespace (30 s at most).
    `mobiles`: how many mobile hosts run `mobile` (1 to 250); `cell`: "separate"
    (each over a link of its own) or "shared" (all over one). `udp_bypass`: UDP
    packets take the link's bypass session (no ARQ; seed 002's media session), as
    the simulator's media flows do; by default every packet takes its ARQ.
    `offload`: the TUN devices take segmentation offload, so hosts hand over TCP
    super-packets (cut into segments before the link sees them) and segments of
    one flow due at one moment are written as one, as a NIC's GRO would merge
    them; False: one packet per system call both ways (every segment reaches the
    receiving stack on its own, at a lower ceiling)."""
    if not (isinstance(mobiles, int) and not isinstance(mobiles, bool) and 1 <= mobiles <= MAX_MOBILES):
        raise ScenarioError(f"--mobiles: {mobiles!r} is not a number of mobile hosts (1 to {MAX_MOBILES})")
    if cell not in CELLS:
        raise ScenarioError(f"--cell: {cell!r} is not one of {', '.join(CELLS)}")
    if mobiles > 1 and mobile is None:
        raise ScenarioError(
            f"--mobiles {mobiles}: give the mobiles a command (--mobile CMD, run on each with "
            "$THINWIRE_MOBILE = 0, 1, …); an interactive shell opens with one mobile only"
        )
    if server_ready is not None and not (
        isinstance(server_ready, int) and not isinstance(server_ready, bool) and 1 <= server_ready <= 65535
    ):
        raise ScenarioError(f"--server-ready: {server_ready!r} is not a TCP port (1 to 65535)")
    text, name = load_scenario_text(scenario)
    overrides = path_overrides(scenario, text) + _overrides(set, seed, None, None, False)
    _core.check(text, overrides, links_only=True)
    outp = Path(out) if out else None
    if outp is not None:
        from .outputs import EMULATE_OUTPUTS, clear_outputs

        clear_outputs(outp, EMULATE_OUTPUTS)
        for sub in outp.glob("mobile-*"):
            if sub.is_dir() and sub.name[len("mobile-") :].isdigit():
                clear_outputs(sub, EMULATE_OUTPUTS)
                try:
                    sub.rmdir()
                except OSError:
                    pass  # the user's own files are kept
    try:
        rep = _core.emulate(
            text,
            overrides,
            mobile,
            server,
            duration,
            str(outp) if outp else None,
            late_after_ms,
            commands_to_stderr,
            gateway,
            server_ready,
            mobiles,
            cell,
            bool(udp_bypass),
            bool(offload),
        )
    except _core.EmulateError as e:
        raise EmulateError(str(e)) from None
    rep.pop("trace")  # empty: with --out the rows went to trace.parquet as they came
    flow_mobiles = rep.pop("flow_mobiles")
    conns = rep.pop("conns")
    summary = {"scenario": name, "kind": "emulation", **rep}
    if mobiles > 1:
        summary["mobiles"] = mobiles
        summary["cell"] = cell
    else:
        del summary["mobile_statuses"]
    if outp is not None:
        import polars as pl

        from .outputs import write_parquet, write_text

        if mobiles > 1 and cell == "separate":
            # Each mobile's path streamed its own trace into mobile-<k>/: a
            # flows table and a summary there, and one table of all at the top.
            tables = []
            for k in range(mobiles):
                sub = outp / f"mobile-{k}"
                fk = conn_frame(conns[k])
                write_parquet(fk, sub / "flows.parquet")
                own = {
                    "scenario": name,
                    "kind": "emulation",
                    "mobile": k,
                    "mobile_status": rep["mobile_statuses"][k],
                    **{key: rep[key] for key in ("duration_s", "start_unix_s", "ended")},
                    "link": rep["link"][k],
                    "flows": fk.to_dicts(),
                }
                write_text(sub / "summary.json", json.dumps(own, indent=2, sort_keys=True) + "\n")
                tables.append(fk.with_columns(pl.lit(k, pl.Int64).alias("mobile")))
            flows = pl.concat(tables).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("id"))
        else:
            # With --out the emulator streamed the trace into trace.parquet as it
            # ran, and accumulated the flows table from the same segments
            # (bounded memory: nothing is read back).
            flows = conn_frame(conns[0])
            if mobiles > 1:
                owner = flow_mobiles[0]
                flows = flows.with_columns(
                    pl.col("id").map_elements(lambda i: owner[i] if i < len(owner) else None, pl.Int64).alias("mobile")
                )
        summary["flows"] = flows.to_dicts()

        write_text(
            outp / "emulation.json",
            json.dumps(
                {
                    "scenario_text": text,
                    "overrides": overrides,
                    "end_ns": int(rep["duration_s"] * 1e9),
                    "name": name,
                    "gateway": gateway is not None,
                    "mobiles": mobiles,
                    "cell": cell,
                    "udp_bypass": bool(udp_bypass),
                },
                indent=2,
            )
            + "\n",
        )
        write_parquet(flows, outp / "flows.parquet")
        write_text(outp / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


CONN_COLUMNS = {
    "id": "Int64",
    "app": "Utf8",
    "direction": "Utf8",
    "variant": "Utf8",
    "start_s": "Float64",
    "bytes_delivered": "Int64",
    "throughput_bps": "Float64",
    "completion_s": "Float64",
    "tcp_retransmits": "Int64",
    "tcp_syn_retransmits": "Int64",
    "tcp_fin_retransmits": "Int64",
    "tcp_timeouts": "Int64",
    "tcp_fast_retransmits": "Int64",
    "rtt_avg_s": "Float64",
    "packets_sent": "Int64",
}


def _schema():
    import polars as pl

    return {k: getattr(pl, v) for k, v in CONN_COLUMNS.items()}


def conn_frame(rows: list[dict]):
    """The emulator's per-conversation rows (accumulated while it ran,
    crates/thinwire/src/trace/conn_table.rs) as `connection_table`'s frame."""
    import polars as pl

    full = [
        {**r, "app": "tcp", "variant": "real", "completion_s": None, "tcp_timeouts": None, "tcp_fast_retransmits": None}
        for r in rows
    ]
    return pl.DataFrame(full, schema=_schema())


def connection_table(trace, duration_s: float):
    """One row per TCP conversation seen (flow ids as numbered by the path): the
    direction that carried more data, bytes delivered in order at its receiver,
    goodput over the time from its first to its last delivered byte, the sender's
    packets and data retransmissions in that direction, SYN and FIN retransmissions
    by either end, and its mean RTT (Karn's rule: every data segment not sent
    again before the first ACK covering it arrived, to that ACK, at the sender's
    own interface; the simulator's rtt_avg_s is its estimator's samples). The
    emulator accumulates the same table while it runs (`conn_frame`). Timeouts
    and fast retransmits are not seen by a tap: None."""
    import polars as pl

    cols = _schema()
    if trace.height == 0:
        return pl.DataFrame(schema=cols)
    tcp = trace.filter(pl.col("layer") == "tcp")
    rows = []
    for (fid,), f in tcp.group_by(["flow"], maintain_order=True):
        sent = f.filter(pl.col("event").is_in(["send", "retransmit"]))
        syn, fin = syn_fin_retransmits(f)
        by_dir = dict(sent.group_by("dir").agg(pl.col("len").sum().alias("b")).iter_rows())
        # The direction that carried more data bytes; a tie goes to "down".
        d = "down" if by_dir.get("down", 0) >= by_dir.get("up", 0) else "up"
        sent = sent.filter(pl.col("dir") == d)
        rcv = f.filter((pl.col("event") == "recv") & (pl.col("dir") == d) & (pl.col("len") > 0))
        end = (rcv["seq"] + rcv["len"]).cum_max() if rcv.height else None
        delivered = int(end.max() - 1) if end is not None else 0
        t0 = f["time_s"].min()
        t1 = rcv["time_s"].max() if rcv.height else t0
        span = (t1 - t0) if t1 is not None and t0 is not None else 0.0
        rows.append(
            {
                "id": int(fid),
                "app": "tcp",
                "direction": str(d),
                "variant": "real",
                "start_s": float(t0),
                "bytes_delivered": max(delivered, 0),
                "throughput_bps": max(delivered, 0) * 8 / span if span and span > 0 else 0.0,
                "completion_s": None,
                # As the simulator counts them (thinwire.fields): data segments
                # the sender sent again; SYNs, SYN-ACKs and FINs by either end.
                "tcp_retransmits": int(((sent["event"] == "retransmit") & (sent["len"] > 0)).sum()),
                "tcp_syn_retransmits": syn,
                "tcp_fin_retransmits": fin,
                "tcp_timeouts": None,
                "tcp_fast_retransmits": None,
                "rtt_avg_s": _rtt_avg(f, str(d)),
                "packets_sent": sent.height,
            }
        )
    return pl.DataFrame(rows, schema=cols)


def _rtt_avg(f, d: str) -> float | None:
    """Mean RTT seen by the sender of direction `d`: from sending a data segment to
    receiving the first ACK covering it, both at the sender's own interface; a
    segment sent again before that ACK arrived is left out (Karn)."""
    import numpy as np
    import polars as pl

    sender = "server" if d == "down" else "mobile"
    at = f.filter(pl.col("node") == sender)
    data = at.filter((pl.col("dir") == d) & (pl.col("len") > 0))
    acks = at.filter((pl.col("event") == "recv") & (pl.col("dir") != d) & pl.col("ack").is_not_null())
    if data.height == 0 or acks.height == 0:
        return None
    again = dict(data.filter(pl.col("event") == "retransmit").group_by("seq").agg(pl.col("time_ns").min()).iter_rows())
    first = data.filter(pl.col("event") == "send")
    ack_t = acks["time_ns"].to_numpy()
    ack_hi = np.maximum.accumulate(acks["ack"].to_numpy())
    ends = (first["seq"] + first["len"]).to_numpy()
    sent = first["time_ns"].to_numpy()
    i = np.maximum(np.searchsorted(ack_hi, ends, side="left"), np.searchsorted(ack_t, sent, side="right"))
    ok = i < len(ack_t)
    # Karn: no sample from a segment sent again before its covering ACK arrived.
    resent = np.array([again.get(q, np.iinfo(np.int64).max) for q in first["seq"].to_list()], dtype=np.int64)
    ok &= ~(resent <= np.where(ok, ack_t[np.minimum(i, len(ack_t) - 1)], 0))
    if not ok.any():
        return None
    return float(np.mean(ack_t[i[ok]] - sent[ok]) / 1e9)


def simulate_log(directory: str | os.PathLike) -> dict:
    """Replays an emulation directory's inputs through the same path and compares
    the decisions with its schedule.log: {"identical", "decisions", "first_difference"}."""
    d = Path(directory)
    meta_path = d / "emulation.json"
    if not meta_path.is_file():
        raise ScenarioError(
            f"{d}: not an emulation directory (no emulation.json; make one with 'thinwire emulate --out DIR')"
        )
    try:
        meta = json.loads(meta_path.read_text())
        text, overrides, end_ns = meta["scenario_text"], meta["overrides"], int(meta["end_ns"])
        # An emulation lasts at most as long as any duration (1,000,000 s).
        if not 0 <= end_ns <= 10**15:
            raise ValueError("end_ns")
    except (ValueError, KeyError, TypeError) as e:
        raise ScenarioError(
            f"{meta_path}: damaged ({e.__class__.__name__}); it is written by 'thinwire emulate'"
        ) from None
    if not hasattr(_core, "replay"):
        raise ScenarioError("simulate-log needs the Linux build of thinwire")
    if not (d / "inputs.pcapng").is_file():
        raise ScenarioError(f"{d}: inputs.pcapng is missing")
    mobiles, cell = meta.get("mobiles", 1), meta.get("cell", "separate")
    if not (isinstance(mobiles, int) and 1 <= mobiles <= MAX_MOBILES) or cell not in CELLS:
        raise ScenarioError(f"{meta_path}: damaged (mobiles, cell); it is written by 'thinwire emulate'")
    logs = (
        [d / f"mobile-{k}" / "schedule.log" for k in range(mobiles)]
        if mobiles > 1 and cell == "separate"
        else [d / "schedule.log"]
    )
    for f in logs:
        if not f.is_file():
            raise ScenarioError(f"{d}: {f.relative_to(d)} is missing")
    try:
        gw = bool(meta.get("gateway", False))
        bypass = bool(meta.get("udp_bypass", False))
        paths = _core.replay(text, overrides, str(d / "inputs.pcapng"), end_ns, gw, mobiles, cell, bypass)
    except _core.EmulateError as e:
        raise ScenarioError(str(e)) from None
    total, diff = 0, None
    for f, got in zip(logs, paths):
        # Lines that are not UTF-8 (a damaged log) compare as different, not as a traceback.
        want = f.read_text(encoding="utf-8", errors="replace").splitlines()
        total += len(want)
        first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), None)
        if first is None and len(want) != len(got):
            first = min(len(want), len(got))
        if first is not None and diff is None:
            diff = {
                "log": str(f.relative_to(d)),
                "line": first + 1,
                "emulated": want[first] if first < len(want) else None,
                "replayed": got[first] if first < len(got) else None,
            }
    return {"identical": diff is None, "decisions": total, "first_difference": diff}
