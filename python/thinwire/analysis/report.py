"""Text and JSON reports of `thinwire analyze`."""

from __future__ import annotations

import sys

from ..fields import plural

# (label, key, format) rows of the per-connection report, tcptrace's order.
ROWS = [
    ("total packets", "packets", "d"),
    ("ack pkts sent", "ack_packets", "d"),
    ("pure acks sent", "pure_acks", "d"),
    ("sack pkts sent", "sack_packets", "d"),
    ("dsack pkts sent", "dsack_packets", "d"),
    ("max sack blks/ack", "max_sack_blocks", "d"),
    ("unique bytes sent", "unique_bytes", "d"),
    ("actual data pkts", "data_packets", "d"),
    ("actual data bytes", "data_bytes", "d"),
    ("rexmt data pkts", "retransmitted_packets", "d"),
    ("rexmt data bytes", "retransmitted_bytes", "d"),
    ("  of which SYN pkts", "retransmitted_syn_packets", "d"),
    ("  of which FIN pkts", "retransmitted_fin_packets", "d"),
    ("zwnd probe pkts", "zero_window_probes", "d"),
    ("outoforder pkts", "out_of_order_packets", "d"),
    ("max segm size", "max_segment", "d"),
    ("min segm size", "min_segment", "d"),
    ("max win adv", "max_window", "d"),
    ("min win adv", "min_window", "d"),
    ("zero win adv", "zero_windows", "d"),
    ("idletime max (ms)", "idle_max_s", "ms"),
    ("throughput (B/s)", "throughput_Bps", ".0f"),
    ("RTT samples", "rtt_samples", "d"),
    ("RTT min (ms)", "rtt_min_ms", ".1f"),
    ("RTT max (ms)", "rtt_max_ms", ".1f"),
    ("RTT avg (ms)", "rtt_avg_ms", ".1f"),
    ("RTT stdev (ms)", "rtt_stdev_ms", ".1f"),
    ("duplicate acks", "duplicate_acks", "d"),
    ("triple dupacks", "triple_duplicate_acks", "d"),
    ("fast retransmits", "fast_retransmits", "d"),
    ("timeouts", "timeouts", "d"),
    ("spurious timeouts", "spurious_timeouts", "d"),
]
# What a capture's rows mean where tcptrace's names do not say it.
CAPTURE_NOTES = (
    "rexmt data pkts: segments that resent sequence space (tcptrace), SYNs and FINs included; "
    "RTT: every data segment sent once, to the first ACK covering it (Karn); "
    "timeouts and spurious timeouts (Eifel, by timestamps) as a capture shows them"
)


def _f(v, f):
    if v is None:
        return "-"
    if f == "ms":
        return f"{v * 1e3:.1f}"
    return format(v, f)


def print_capture(cap, out=sys.stdout, limit: int | None = None) -> None:
    w = out.write
    r = cap.raw
    w(
        f"{cap.path}: {r['format']}, {r['packets']:,} packets, {r['tcp_packets']:,} TCP, {plural(len(r['connections']), 'connection')} "
        f"(analysed in {r['wall_s'] * 1e3:.1f} ms)\n"
    )
    for m in cap.warnings:
        w(f"warning: {m}\n")
    conns = r["connections"] if limit is None else r["connections"][:limit]
    for c in conns:
        w(
            f"\nconnection {c['id']}: {c['host_a']}:{c['port_a']} (a) <-> {c['host_b']}:{c['port_b']} (b), "
            f"{c['duration_s']:.3f} s, {'complete' if c['complete'] else 'incomplete'}\n"
        )
        w(f"  {'':<22}{'a->b':>14}{'b->a':>14}\n")
        for label, k, f in ROWS:
            w(f"  {label:<22}{_f(c['a2b'][k], f):>14}{_f(c['b2a'][k], f):>14}\n")
    if limit is not None and len(r["connections"]) > limit:
        w(f"\n... {len(r['connections']) - limit} more connections (use --json for all)\n")
    if r["connections"]:
        w(f"\n({CAPTURE_NOTES})\n")


def print_run(run, metrics, caps: dict, out=sys.stdout) -> None:
    w = out.write
    s = run.summary
    if s.get("kind") in ("emulation", "proxy"):
        span = f"{s.get('duration_s', 0):.3f} s real time ({s['kind']})"
    else:
        span = f"{s.get('sim_time_s', 0):.3f} s simulated"
    w(f"run {run.path}: scenario {s.get('scenario')}, {span}\n\n")
    head = (
        f"{'flow':>4} {'dir':<4} {'sent B':>10} {'TCP rexmit':>10} {'SYN rexmit':>10} {'FIN rexmit':>10} {'RTOs':>5} "
        f"{'FR':>4} {'needless':>8} {'competing':>9} {'link rexmit':>11} {'utilization':>11}"
    )
    w(head + "\n" + "-" * len(head) + "\n")
    for m in metrics.iter_rows(named=True):
        u = "-" if m["utilization"] is None else f"{m['utilization'] * 100:.1f}%"
        w(
            f"{m['flow']:>4} {m['direction']:<4} {m['data_bytes_sent']:>10,} {m['tcp_retransmits']:>10} "
            f"{m['tcp_syn_retransmits']:>10} {m['tcp_fin_retransmits']:>10} {_f(m['tcp_timeouts'], 'd'):>5} "
            f"{_f(m['tcp_fast_retransmits'], 'd'):>4} {_f(m['needless_timeouts'], 'd'):>8} {m['competing_retransmissions']:>9} "
            f"{m['link_retransmitted_frames']:>11} {u:>11}\n"
        )
    if metrics.height:
        w(
            "(TCP rexmit: data segments sent again; SYN/FIN rexmit: SYNs, SYN-ACKs and FINs without data sent again, "
            "by either end; needless: timeouts whose segment had reached the receiver before; "
            "'-': the trace does not hold the sender's state, as in an emulation)\n"
        )
    for name, cap in caps.items():
        w(f"\n--- {name}.pcap (seen at the {name}) ---\n")
        print_capture(cap, out, limit=5)
