"""`thinwire emulate`: real hosts over the scenario's links in real time."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .._core import ScenarioError
from .common import check_command, die, parse_seconds, print_warnings, with_path


def add(sub) -> None:
    em = sub.add_parser("emulate", help="real hosts over the scenario's links in real time (Linux, root)")
    em.add_argument(
        "scenario", type=Path, help="scenario TOML file (its [wired] and [wireless] links; flows are ignored)"
    )
    em.add_argument("--seed", type=int, help="root seed for the link models' randomness")
    em.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field")
    em.add_argument("--out", help="directory for captures, trace, schedule log and summary")
    em.add_argument(
        "--mobile",
        help="command to run on the mobile host (default: an interactive shell); the emulation ends when it exits",
    )
    em.add_argument("--server", help="command to run on the server for the whole emulation")
    em.add_argument(
        "--gateway",
        nargs="?",
        const="",
        metavar="CMD",
        help="a gateway namespace between the link and the server (joined to the server by a veth pair, which replaces [wired]), running CMD if given (e.g. a proxy)",
    )
    em.add_argument(
        "--server-ready",
        type=int,
        metavar="PORT",
        help="start the mobile command once the server listens on this TCP port (waits up to 30 s)",
    )
    em.add_argument(
        "--mobiles",
        type=int,
        default=1,
        metavar="N",
        help="N mobile hosts (10.0.1.2, 10.0.1.3, …), each in its own namespace running --mobile with $THINWIRE_MOBILE = 0..N-1; the emulation ends when all have exited",
    )
    em.add_argument(
        "--cell",
        choices=("separate", "shared"),
        default="separate",
        help="with --mobiles: each mobile over its own copy of the path (separate, the default) or all over one wireless link, each with its own link-layer session and queues on the one radio (shared; not GSM RLP or IS-707)",
    )
    em.add_argument(
        "--udp-bypass",
        action="store_true",
        help="UDP packets take the link's bypass session (no ARQ; seed 002's media), as the simulator's media flows do; by default every packet takes ARQ",
    )
    em.add_argument(
        "--no-offload",
        dest="offload",
        action="store_false",
        help="no segmentation offload on the TUN devices: hosts send MTU-sized packets, one per read, and every packet is written on its own (by default TCP super-packets are cut into segments before the link, and segments of one flow due at one moment are written as one, as a NIC's GRO would)",
    )
    em.add_argument("--duration", help="end after this long (e.g. 60s)")
    em.add_argument(
        "--json", action="store_true", help="print the summary as JSON (the commands' own output then goes to stderr)"
    )
    em.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..api import load_scenario_text, path_overrides
    from ..emulate import EmulateError, available, emulate

    try:
        text, _ = load_scenario_text(a.scenario)
        from .. import _core

        ws = _core.check(text, path_overrides(a.scenario, text) + (a.set or []), links_only=True)
    except ScenarioError as e:
        die(with_path(a.scenario, e))
    print_warnings(ws)
    if re.search(r"^\s*\[\[\s*flow\s*\]\]", text, re.M):
        print(
            "note: the scenario's [[flow]] sections are not run: the --mobile and --server commands are the traffic",
            file=sys.stderr,
        )
    duration = parse_seconds(a.duration, "--duration") if a.duration else None
    for cmd, what in ((a.mobile, "--mobile"), (a.server, "--server"), (a.gateway or None, "--gateway")):
        if cmd is not None:
            check_command(cmd, what)
    if a.server_ready is not None:
        if not a.server:
            die("--server-ready: give the --server command whose port to wait for")
        if not 1 <= a.server_ready <= 65535:
            die(f"--server-ready: {a.server_ready} is not a TCP port (1 to 65535)")
    if not 1 <= a.mobiles <= 250:
        die(f"--mobiles: {a.mobiles} is not a number of mobile hosts (1 to 250)")
    if a.mobiles > 1 and a.mobile is None:
        die(
            f"--mobiles {a.mobiles}: give the mobiles a command (--mobile CMD, run on each with "
            "$THINWIRE_MOBILE = 0, 1, …); an interactive shell opens with one mobile only"
        )
    why = available()
    if why:
        die(why)
    try:
        s = emulate(
            a.scenario,
            seed=a.seed,
            set=a.set,
            mobile=a.mobile,
            server=a.server,
            duration=duration,
            out=a.out,
            commands_to_stderr=a.json,
            gateway=a.gateway,
            server_ready=a.server_ready,
            mobiles=a.mobiles,
            cell=a.cell,
            udp_bypass=a.udp_bypass,
            offload=a.offload,
        )
    except EmulateError as e:
        die(str(e))
    except ScenarioError as e:
        die(with_path(a.scenario, e))
    except (RuntimeError, OSError) as e:
        # A failure on the way (a full disk for --out, a device that vanished):
        # one line, what was written so far stays.
        die(f"the emulation failed: {e}")
    if a.json:
        json.dump(s, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_emulation(s)
        if a.out:
            per = ""
            if a.mobiles > 1:
                own = "mobile.pcap, server.pcap" + (
                    ", trace.parquet, flows.parquet, summary.json, schedule.log, mm-down.log, mm-up.log"
                    if a.cell == "separate"
                    else ""
                )
                per = f"; mobile-0/ to mobile-{a.mobiles - 1}/ ({own})"
            top = (
                "summary.json, flows.parquet, mobile.pcap, server.pcap, capture.pcapng, inputs.pcapng"
                if a.mobiles > 1 and a.cell == "separate"
                else "summary.json, trace.parquet, mobile.pcap, server.pcap, capture.pcapng, inputs.pcapng, schedule.log, mm-down.log, mm-up.log"
            )
            print(f"\nwrote {a.out}/ ({top}{per})")
    if s.get("server_status") == 127:
        die(f"--server {a.server!r}: the command was not found in the server's namespace")
    status = s.get("mobile_status")
    if status == 127:
        die(f"--mobile {a.mobile!r}: the command was not found in the mobile host's namespace")
    if s["ended"].startswith("server command"):
        print(f"thinwire: --server {a.server!r}: {s['ended']}; the emulation ended early", file=sys.stderr)
        return 1
    if s["ended"].startswith("signal "):
        return 128 + int(s["ended"].split()[1])
    return 0 if status is None else int(status)


def print_emulation(s: dict, out=sys.stdout) -> None:
    from ..fields import columns, table

    w = out.write
    p, lat = s["packets"], s["lateness"]
    st = s.get("mobile_status")
    n = s.get("mobiles", 1)
    many = f"{n} mobiles ({s.get('cell')} {'links' if s.get('cell') == 'separate' else 'cell'}), " if n > 1 else ""
    w(
        f"emulation {s['scenario']}: {many}{s['duration_s']:.3f} s ({s['ended']}"
        + (f", status {st}" if st is not None else "")
        + (
            f"; the gateway command finished {s['gateway_wind_down_s']:.1f} s later, the link still running"
            if s.get("gateway_wind_down_s") is not None
            else ""
        )
        + f"); {p['from_mobile']:,} packets from the {'mobiles' if n > 1 else 'mobile'}, {p['from_server']:,} from the server; "
        f"dropped: {p['link_drops']:,} wireless queue, {p['wired_drops']:,} wired queue\n"
        f"lateness of {lat['packets']:,} packets written: p50 {lat['p50_ms']:.3f} ms, p99 {lat['p99_ms']:.3f} ms, "
        f"max {lat['max_ms']:.3f} ms ({lat['late']:,} later than {lat['late_after_ms']:g} ms)\n"
    )
    if lat.get("read_wait_packets"):
        w(
            f"waited in the TUN queues before being read, {lat['read_wait_packets']:,} packets: "
            f"p50 {lat['read_wait_p50_ms']:.3f} ms, p99 {lat['read_wait_p99_ms']:.3f} ms, max {lat['read_wait_max_ms']:.3f} ms\n"
        )
        if lat["read_wait_p99_ms"] > lat["late_after_ms"]:
            w(
                f"warning: p99 wait before reading {lat['read_wait_p99_ms']:.3f} ms exceeds {lat['late_after_ms']:g} ms: "
                "packets reached the link model late (the host is too busy for this rate)\n"
            )
    lost = [
        (n, who)
        for n, who in (
            (p.get("from_mobile_queue_drops", 0), "mobiles" if n > 1 else "mobile"),
            (p.get("from_server_queue_drops", 0), "far end"),
        )
        if n
    ]
    if lost or p.get("write_drops"):
        parts = [f"{n:,} from the {who} (its TUN queue full before the emulator read them)" for n, who in lost]
        if p.get("write_drops"):
            parts.append(f"{p['write_drops']:,} to the hosts (a TUN queue full when the emulator wrote)")
        w("warning: packets lost outside the model: " + "; ".join(parts) + "\n")
    if p.get("unroutable"):
        w(f"warning: {p['unroutable']:,} packets were addressed to no mobile host and dropped\n")
    if n > 1:
        st = s.get("mobile_statuses") or []
        bad = [f"mobile {k}: {v}" for k, v in enumerate(st) if v not in (0, None)]
        if bad:
            w("mobile commands that failed: " + ", ".join(bad) + "\n")
    # p99 over a handful of packets is their maximum: warn when late packets are
    # more than 1 % of at least 5.
    if lat["late"] >= 5 and lat["p99_ms"] > lat["late_after_ms"]:
        w(
            f"warning: p99 lateness {lat['p99_ms']:.3f} ms exceeds {lat['late_after_ms']:g} ms: the host is too busy for this rate\n"
        )
    flows = s.get("flows") or []
    if flows:
        first = ("mobile", "mobile") if n > 1 else None
        w("\n" + "\n".join(table(flows, columns("flow", "tcp"), first=first)) + "\n")
    per_link = s["link"] if isinstance(s["link"], list) else [s["link"]]
    if len(per_link) > 1:
        links = [dict(lk[d], link=f"{k} {d}") for k, lk in enumerate(per_link) for d in ("down", "up")]
        first = ("mobile link", "link")
    else:
        links = [dict(per_link[0][d], link=d) for d in ("down", "up")]
        first = ("link", "link")
    w("\n" + "\n".join(table(links, columns("link"), first=first)) + "\n")
