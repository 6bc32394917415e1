//! ECN in the TCP model (RFC 3168 §6.1, as Linux 6.x's `tcp_ecn_*` and
//! `tcp_enter_cwr`): the handshake, ECT on new data, the receiver's echo until
//! CWR, one reduction per window of data, and a loss in that window taken as part
//! of the same reduction. Marks come from the test harness's scripted AQM
//! (`TcpPair::mark_ce`).
use thinwire::tcp::rtt::RtoKind;
use thinwire::tcp::{Ecn, RecoveryKind, TcpConfig};
use thinwire::testkit::{DropFn, TcpPair};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{TcpFlags, TcpRepr};

fn cfg(ecn: Ecn) -> TcpConfig {
    TcpConfig { mss: 1000, initial_window: 2, ecn, ..Default::default() }
}
fn pair(client: TcpConfig, server: TcpConfig, bytes: u64, drop: DropFn) -> TcpPair {
    TcpPair::new(client, server, Some(bytes), 2_000_000, Duration::from_millis(50), drop)
}
/// Marks the server's segments with these indices (0 is the SYN-ACK).
fn marks(list: &'static [u64]) -> DropFn {
    Box::new(move |from, i, _| from == 1 && list.contains(&i))
}

/// RFC 3168 §6.1.1 with Linux's `tcp_ecn` settings: ECN is used when the
/// connecting side asks (1, `On`) and the other accepts (1 or 2, `Accept`); a
/// side that only accepts never asks. Only then is data sent ECT, so only then
/// can a queue mark it.
#[test]
fn ecn_is_used_when_the_client_asks_and_the_server_accepts() {
    for (client, server, used) in [
        (Ecn::On, Ecn::On, true),
        (Ecn::On, Ecn::Accept, true),
        (Ecn::On, Ecn::Off, false),
        (Ecn::Accept, Ecn::On, false),
        (Ecn::Off, Ecn::Accept, false),
    ] {
        let mut p = pair(cfg(client), cfg(server), 20_000, TcpPair::drop_none());
        p.mark_ce(Box::new(|from, _, _| from == 1));
        p.run(Duration::from_secs(30));
        assert_eq!(p.ep[0].delivered(), 20_000);
        assert_eq!((p.ep[0].ecn_ok(), p.ep[1].ecn_ok()), (used, used), "{client:?} / {server:?}");
        assert_eq!(p.ep[0].stats().ce_received > 0, used, "{client:?} / {server:?}");
    }
}

/// The last ACK's flags from the client after the server's segment at `offset`.
fn ack_flags(p: &mut TcpPair, now: Instant, offset: u32, flags: u8, ce: bool) -> TcpFlags {
    let seg = TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq: p.ep[1].iss().wrapping_add(1 + offset),
        ack: p.ep[0].iss().wrapping_add(1),
        flags: TcpFlags(TcpFlags::ACK | flags),
        window: 1000,
        ..Default::default()
    };
    p.ep[0].on_segment_ecn(now, &seg, 1000, ce);
    let mut last = None;
    while let Some(s) = p.ep[0].poll_transmit(now) {
        last = Some(s.repr.flags);
    }
    last.unwrap_or_default()
}

/// RFC 3168 §6.1.3: after a CE mark the receiver sets ECE on every ACK, not just
/// one, until a data segment with CWR arrives; the first mark is acknowledged at
/// once.
#[test]
fn the_receiver_echoes_ce_until_cwr() {
    let mut p = pair(cfg(Ecn::On), cfg(Ecn::On), 10_000, TcpPair::drop_none());
    p.run(Duration::from_secs(5));
    assert_eq!(p.ep[0].delivered(), 10_000);
    let now = Instant::ZERO + Duration::from_secs(5);
    let ece = |f: TcpFlags| f.has(TcpFlags::ECE);
    // Beyond the data (out of order: each is acknowledged at once).
    assert!(!ece(ack_flags(&mut p, now, 20_000, 0, false)));
    assert!(ece(ack_flags(&mut p, now, 21_000, 0, true)), "the mark is echoed");
    assert!(ece(ack_flags(&mut p, now, 22_000, 0, false)), "and again, until CWR");
    assert!(ece(ack_flags(&mut p, now, 23_000, 0, false)));
    assert!(!ece(ack_flags(&mut p, now, 24_000, TcpFlags::CWR, false)), "CWR ends it");
    assert!(!ece(ack_flags(&mut p, now, 25_000, 0, false)));
    assert_eq!(p.ep[0].stats().ce_received, 1);
}

fn linux_rack(c: TcpConfig) -> TcpConfig {
    TcpConfig { recovery: RecoveryKind::Rack, sack: true, rto: RtoKind::Linux, ..c }
}

/// A burst of marks within one window: one reduction (RFC 3168 §6.1.2, "at
/// most once per window of data"), nothing resent, the threshold the
/// controller's, and the window at the threshold when the reduction ends — at
/// once with RFC 6582 recovery, through PRR's proportional steps with RACK.
/// Returns (reductions, retransmissions, ssthresh, the largest cwnd before).
fn one_burst(server: TcpConfig, client: TcpConfig, list: &'static [u64], drop: DropFn) -> (u64, u64, u64, u64) {
    let mut p = pair(client, server, 300_000, drop);
    p.mark_ce(marks(list));
    p.ep[1].enable_trace();
    p.run(Duration::from_secs(60));
    assert_eq!(p.ep[0].delivered(), 300_000);
    let s = p.ep[1].stats().clone();
    let vars = std::iter::from_fn(|| p.ep[1].poll_event()).collect::<Vec<_>>();
    let at = vars.iter().find(|v| v.var == thinwire::tcp::TcpVar::EcnReduction).map(|v| v.at);
    let before = vars
        .iter()
        .filter(|v| v.var == thinwire::tcp::TcpVar::Cwnd && at.is_some_and(|t| v.at < t))
        .map(|v| v.value as u64)
        .max()
        .unwrap_or(0);
    (s.ecn_reductions, s.retransmits, p.ep[1].ssthresh(), before)
}

#[test]
fn a_burst_of_marks_reduces_once_without_retransmitting() {
    let burst: &[u64] = &[30, 31, 32, 33, 34, 35];
    for server in [cfg(Ecn::On), linux_rack(cfg(Ecn::On))] {
        let (reductions, rexmits, ssthresh, before) = one_burst(server, cfg(Ecn::On), burst, TcpPair::drop_none());
        assert_eq!((reductions, rexmits), (1, 0), "{:?}", server.recovery);
        assert!(ssthresh >= before / 2 - 2000 && ssthresh <= before / 2 + 1000, "{ssthresh} of {before}");
    }
    // Without ECN the same marks are nothing (the packets are not ECT).
    let (reductions, _, ssthresh, _) = one_burst(cfg(Ecn::Off), cfg(Ecn::Off), burst, TcpPair::drop_none());
    assert_eq!(reductions, 0);
    assert!(ssthresh > 1 << 30);
}

/// A mark, then a loss in the same window: the loss's recovery takes the ECN
/// reduction's threshold (Linux `tcp_enter_recovery` in `TCP_CA_CWR`), so the
/// window is halved once, not twice.
#[test]
fn a_loss_in_the_marked_window_does_not_reduce_again() {
    for server in [cfg(Ecn::On), linux_rack(cfg(Ecn::On))] {
        let client = TcpConfig { sack: server.sack, ..cfg(Ecn::On) };
        let (_, _, marked, _) = one_burst(server, client, &[30], TcpPair::drop_none());
        let (reductions, rexmits, both, _) = one_burst(server, client, &[30], TcpPair::drop_data(&[32]));
        assert_eq!((reductions, rexmits), (1, 1), "{:?}", server.recovery);
        assert_eq!(both, marked, "{:?}: one reduction", server.recovery);
    }
}

/// Marks a window apart each reduce: a steady mark rate holds the window down
/// without a single retransmission, where drops at the same places cost
/// retransmissions.
#[test]
fn marks_in_successive_windows_each_reduce() {
    let spaced: &[u64] = &[40, 80, 120, 160];
    let (reductions, rexmits, _, _) = one_burst(linux_rack(cfg(Ecn::On)), cfg(Ecn::On), spaced, TcpPair::drop_none());
    assert_eq!((reductions, rexmits), (4, 0));
    let (_, rexmits, _, _) = one_burst(linux_rack(cfg(Ecn::Off)), cfg(Ecn::Off), &[], TcpPair::drop_data(spaced));
    assert!(rexmits >= 4);
}

/// Linux `tcp_ecn_clear_syn` (with `tcp_ecn_fallback`): a SYN sent again no longer
/// asks for ECN, so a connection whose first SYN was lost runs without it.
#[test]
fn a_retransmitted_syn_does_not_ask_for_ecn() {
    for (lost, used) in [(false, true), (true, false)] {
        let drop: DropFn = Box::new(move |from, i, _| lost && from == 0 && i == 0);
        let mut p = pair(cfg(Ecn::On), cfg(Ecn::On), 20_000, drop);
        p.run(Duration::from_secs(30));
        assert_eq!(p.ep[0].delivered(), 20_000);
        assert_eq!((p.ep[0].ecn_ok(), p.ep[1].ecn_ok()), (used, used), "first SYN lost: {lost}");
    }
}
