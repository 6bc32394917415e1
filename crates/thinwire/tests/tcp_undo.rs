//! Spurious retransmissions found and undone, as Linux 6.x does it: the
//! receiver's DSACK (RFC 2883, `tcp_dsack_set`), the sender's DSACK check and
//! undo (`tcp_check_dsack`, `tcp_try_undo_dsack`, `tcp_try_undo_recovery`) and
//! F-RTO (RFC 5682 §3.1 as `tcp_process_loss`). Each test runs the behaviour on
//! and off, so it fails when the switch stops mattering.
use thinwire::tcp::rtt::RtoKind;
use thinwire::tcp::{RecoveryKind, TcpConfig};
use thinwire::testkit::{DropFn, TcpPair};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{TcpFlags, TcpRepr};

fn cfg() -> TcpConfig {
    TcpConfig { mss: 1000, initial_window: 2, sack: true, ..Default::default() }
}
/// Linux's timeout handling (and undo) with RFC 6675 recovery, or with RACK.
fn linux(c: TcpConfig) -> TcpConfig {
    TcpConfig { rto: RtoKind::Linux, recovery: RecoveryKind::Sack, min_rto: Duration::from_millis(200), ..c }
}
fn pair(client: TcpConfig, server: TcpConfig, bytes: u64, drop: DropFn) -> TcpPair {
    TcpPair::new(client, server, Some(bytes), 2_000_000, Duration::from_millis(50), drop)
}

/// A data segment from the server (offset from the first data byte), as the
/// client would receive it.
fn data(p: &TcpPair, offset: u32, len: u32) -> (TcpRepr, u32) {
    let repr = TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq: p.ep[1].iss().wrapping_add(1 + offset),
        ack: p.ep[0].iss().wrapping_add(1),
        flags: TcpFlags(TcpFlags::ACK),
        window: 1000,
        ..Default::default()
    };
    (repr, len)
}

/// The client's SACK blocks in its next ACK after the server's segment at
/// `offset`, as offsets from the first data byte.
fn sack_after(p: &mut TcpPair, now: Instant, offset: u32) -> Vec<(u32, u32)> {
    let seg = data(p, offset, 1000);
    p.ep[0].on_segment(now, &seg.0, seg.1);
    let ack = p.ep[0].poll_transmit(now).expect("an ACK at once");
    let base = p.ep[1].iss().wrapping_add(1);
    ack.repr.sack_blocks().iter().map(|&(l, r)| (l.wrapping_sub(base), r.wrapping_sub(base))).collect()
}

/// RFC 2883 §4: a segment received twice is reported in the first SACK block of
/// the ACK it causes — below the cumulative ACK for data already delivered;
/// inside the second block for out-of-order data held already. Only once. Without
/// `dsack` the receiver reports nothing of it.
#[test]
fn the_receiver_reports_a_duplicate_in_the_first_block() {
    for dsack in [true, false] {
        let client = TcpConfig { dsack, ..cfg() };
        let mut p = pair(client, cfg(), 1_000_000, TcpPair::drop_none());
        p.run(Duration::from_millis(600));
        let now = Instant::ZERO + Duration::from_millis(600);
        assert!(p.ep[0].delivered() > 5000);
        // Old data: the third segment again.
        let old = sack_after(&mut p, now, 2000);
        assert_eq!(old, if dsack { vec![(2000, 3000)] } else { vec![] }, "dsack {dsack}");
        // Out of order, twice, beyond what has arrived.
        let far = (p.ep[0].delivered() as u32 / 1000 + 20) * 1000;
        assert_eq!(sack_after(&mut p, now, far), vec![(far, far + 1000)]);
        let again = sack_after(&mut p, now, far);
        let want = if dsack { vec![(far, far + 1000), (far, far + 1000)] } else { vec![(far, far + 1000)] };
        assert_eq!(again, want, "dsack {dsack}");
        assert_eq!(p.ep[0].stats().dsacks_sent, if dsack { 2 } else { 0 });
        // The next ACK reports only the out-of-order block.
        assert_eq!(sack_after(&mut p, now, far + 2000), vec![(far + 2000, far + 3000), (far, far + 1000)]);
    }
}

/// For a second the path's delay is 1.05 s instead of 50 ms: the sender times out
/// twice though nothing is lost, and resends the first unacknowledged segment
/// each time. Returns the sender's (timeouts, spurious timeouts, undos,
/// retransmissions, DSACKs received, ssthresh) after the transfer.
fn delay_spike(client: TcpConfig, server: TcpConfig) -> (u64, u64, u64, u64, u64, u64) {
    let mut p = pair(client, server, 400_000, TcpPair::drop_none());
    p.run(Duration::from_secs(1));
    p.delay = Duration::from_millis(1050);
    p.run(Duration::from_secs(2));
    p.delay = Duration::from_millis(50);
    p.run(Duration::from_secs(60));
    assert_eq!(p.ep[0].delivered(), 400_000);
    let s = p.ep[1].stats().clone();
    eprintln!("{s:?} ssthresh {}", p.ep[1].ssthresh());
    (s.timeouts, s.spurious_timeouts, s.undos, s.retransmits, s.dsacks_received, p.ep[1].ssthresh())
}

/// Without timestamps, the receiver's DSACKs of the two needless retransmissions
/// show the timeouts spurious, and Linux undoes them once both are reported
/// (`undo_retrans` back to 0): ssthresh and cwnd come back. Without DSACK nothing
/// tells the sender, and the threshold stays reduced.
#[test]
fn dsacks_of_every_retransmission_undo_the_timeouts() {
    let (timeouts, spurious, undos, rexmits, dsacks, ssthresh) =
        delay_spike(TcpConfig { dsack: true, ..cfg() }, linux(cfg()));
    assert_eq!((timeouts, dsacks, undos, spurious), (2, rexmits, 1, 2), "DSACK");
    assert!(ssthresh > 1 << 30, "ssthresh back to its value before: {ssthresh}");
    let (timeouts, spurious, undos, _, dsacks, ssthresh) = delay_spike(cfg(), linux(cfg()));
    assert_eq!((timeouts, dsacks, undos, spurious), (2, 0, 0, 0), "no DSACK");
    assert!(ssthresh < 1 << 20, "{ssthresh}");
    // RFC 6298's timer (the seeds' stacks) never undoes, DSACK or not.
    let (_, _, undos, _, dsacks, _) = delay_spike(TcpConfig { dsack: true, ..cfg() }, cfg());
    assert_eq!((undos, dsacks > 0), (0, true));
}

fn rack(c: TcpConfig) -> TcpConfig {
    TcpConfig { recovery: RecoveryKind::Rack, ..linux(c) }
}

/// RFC 5682 step 3.b: without timestamps or DSACK, F-RTO finds the same timeout
/// spurious at the first ACK after it, which acknowledges data that was never
/// retransmitted, and undoes it there. Without F-RTO the threshold stays reduced
/// and RACK goes on resending what the timeout deemed lost.
///
/// (Later in this run RACK, like Linux without timestamps, credits that ACK to
/// the timeout's retransmission and starts a needless fast recovery; with
/// timestamps it does not: the next test.)
#[test]
fn frto_finds_a_spurious_timeout_without_timestamps_or_dsack() {
    for frto in [true, false] {
        let server = TcpConfig { frto, ..rack(cfg()) };
        let mut p = pair(cfg(), server, 400_000, TcpPair::drop_none());
        p.run(Duration::from_secs(1));
        p.delay = Duration::from_millis(1050);
        p.run(Duration::from_secs(2));
        p.delay = Duration::from_millis(50);
        // The first ACKs after the spike arrive at 2.06 s.
        p.run(Duration::from_millis(2100));
        let s = p.ep[1].stats().clone();
        assert!(s.timeouts >= 1, "{s:?}");
        if frto {
            assert_eq!((s.undos, s.spurious_timeouts, s.fast_retransmits), (1, s.timeouts, 0), "{s:?}");
            assert!(p.ep[1].ssthresh() > 1 << 30, "ssthresh back: {}", p.ep[1].ssthresh());
        } else {
            assert_eq!(s.undos, 0, "{s:?}");
            assert!(p.ep[1].ssthresh() < 1 << 20);
            assert!(s.retransmits > 10, "RACK resends what the timeout marked: {s:?}");
        }
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 400_000);
    }
}

/// With timestamps, the ACK of an original that the timeout had sent again
/// echoes a timestamp older than the retransmission: the timeout is undone
/// (Eifel), and RACK does not take that ACK for the retransmission's (Linux
/// `tcp_skb_spurious_retrans`), so nothing else is deemed lost — no fast recovery
/// follows, and the threshold ends where it began.
#[test]
fn with_timestamps_rack_is_not_misled_by_a_spurious_timeout() {
    let ts = |c: TcpConfig| TcpConfig { timestamps: true, ..c };
    let (timeouts, spurious, undos, rexmits, _, ssthresh) = delay_spike(ts(cfg()), ts(rack(cfg())));
    assert_eq!((undos, spurious), (1, timeouts));
    assert!(rexmits <= timeouts + 1, "the timeouts' (and the probe's) segments only: {rexmits}");
    assert!(ssthresh > 1 << 30, "{ssthresh}");
}

/// A real outage: the ten segments the receiver's window allows and the loss
/// probe after them (a retransmission of the last: the window allows no new
/// data) are lost. Linux sends the probe with `__tcp_retransmit_skb`, which sets
/// neither `TCPCB_SACKED_RETRANS` nor `retrans_out`: the probe's transmission is
/// an ordinary one, deemed lost by the timeout like the rest — no lost
/// retransmission, no recovery started by it — and the segment is resent in
/// order after those before it (a real GSM run's capture: the probe's segment
/// resent last in the go-back-N, `TCPLostRetransmit` 0). With F-RTO the first ACK
/// after the timeout lets out new data (step 2.b, the window has opened by
/// one) and the loss is real; without, the next lost segment goes next.
/// Nothing is undone and the threshold stays reduced.
#[test]
fn a_lost_probe_is_resent_in_order_after_a_timeout() {
    for frto in [true, false] {
        let server = TcpConfig { frto, ..rack(cfg()) };
        let client = TcpConfig { rcv_buf: 10_000, ..cfg() };
        let mut p = pair(client, server, 300_000, Box::new(|from, i, _| from == 1 && (40..51).contains(&i)));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 300_000, "F-RTO {frto}");
        let s = p.ep[1].stats();
        assert_eq!((s.timeouts, s.undos, s.spurious_timeouts), (1, 0, 0), "F-RTO {frto}: {s:?}");
        assert_eq!(s.lost_retransmits, 0, "the probe's transmission is no counted retransmission: {s:?}");
        assert!(p.ep[1].ssthresh() < 1 << 20);
        // Segment 50 is the probe, 51 the timeout's retransmission (0 is the
        // SYN-ACK).
        let log = &p.log[1];
        let high = log[..50].iter().map(|s| s.1 + s.2).max().unwrap();
        let probe = log[50];
        assert!(probe.3 && probe.1 + probe.2 == high, "{probe:?}");
        assert!(log[51].3, "{:?}", log[51]);
        let next = log[52];
        if frto {
            assert!(!next.3 && next.1 >= high, "new data after the first ACK: {next:?}");
        } else {
            assert!(next.3 && next.1 == log[51].1 + log[51].2, "the next lost segment: {next:?}");
        }
        // The probe's segment goes again once, right after the one before it.
        let again: Vec<usize> = (51..log.len()).filter(|&i| log[i].1 == probe.1).collect();
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(log[again[0] - 1].1 + log[again[0] - 1].2, probe.1, "in order: {:?}", &log[again[0] - 1..=again[0]]);
    }
}

/// F-RTO's step 2.b (RFC 5682 §3.1, `tcp_process_loss`): the first flight and
/// the loss probe after it (new data: the window allows it; a lost new segment
/// is no lost retransmission) are lost. After the
/// timeout's retransmission is acknowledged F-RTO sends new data instead of the
/// next lost segment; its SACK shows the loss real (step 3.a), recovery resends
/// the rest, nothing is undone. Without F-RTO the next lost segment goes at once.
#[test]
fn frto_sends_new_data_after_a_timeout_and_keeps_a_real_loss() {
    for frto in [true, false] {
        let server = TcpConfig { frto, ..rack(cfg()) };
        let mut p = pair(cfg(), server, 100_000, Box::new(|from, i, _| from == 1 && (1..4).contains(&i)));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 100_000, "F-RTO {frto}");
        let s = p.ep[1].stats();
        assert_eq!((s.timeouts, s.undos, s.spurious_timeouts, s.lost_retransmits), (1, 0, 0, 0), "F-RTO {frto}: {s:?}");
        assert!(p.ep[1].ssthresh() < 1 << 20);
        // Segments 1 and 2 are the first flight (two segments), 3 the probe (new
        // data), 4 the timeout's retransmission (0 is the SYN-ACK).
        let log = &p.log[1];
        assert!(!log[3].3 && log[3].1 == log[2].1 + log[2].2, "the probe: {:?}", log[3]);
        assert!(log[4].3 && log[4].1 == log[1].1, "{:?}", log[4]);
        let high = log[..4].iter().map(|s| s.1 + s.2).max().unwrap();
        let next = log[5];
        if frto {
            assert!(!next.3 && next.1 >= high, "new data after the first ACK: {next:?}");
        } else {
            assert!(next.3 && next.1 == log[2].1, "the next lost segment: {next:?}");
        }
    }
}

/// RFC 7323 §4.3 and Linux `tcp_replace_ts_recent` (`ts_recent_at_ack_point`):
/// TS.Recent comes only from a segment that reaches the last ACK sent. A
/// duplicate wholly below it (a retransmission whose original arrived, with more
/// data after it) refreshes nothing, so its DSACK echoes the older TSval — the sender's RTT sample then spans both
/// transmissions, as the kernel's does after a lost ACK. Under delayed ACKs the
/// first unacknowledged segment's TSval is echoed. Without the rule every
/// segment at or below rcv_nxt refreshes it.
#[test]
fn ts_recent_comes_from_the_segment_at_the_last_ack_sent() {
    for at_ack_point in [true, false] {
        let ts = TcpConfig { timestamps: true, ..cfg() };
        let client = TcpConfig { dsack: true, ts_recent_at_ack_point: at_ack_point, ..ts };
        let mut p = pair(client, ts, 1_000_000, TcpPair::drop_none());
        p.run(Duration::from_millis(600));
        let now = Instant::ZERO + Duration::from_millis(600);
        // Everything that arrived is acknowledged: the server stops sending.
        let base = p.ep[0].delivered() as u32;
        let with_ts = |p: &TcpPair, offset: u32, tsval: u32| {
            let (mut r, len) = data(p, offset, 1000);
            r.opts.timestamps = Some((tsval, 1));
            (r, len)
        };
        let echo = |p: &mut TcpPair| p.ep[0].poll_transmit(now).expect("an ACK").repr.opts.timestamps.unwrap().1;
        // In order: TSval 5000, then 6000; the ACK after the second echoes the first.
        let (a, la) = with_ts(&p, base, 5000);
        p.ep[0].on_segment(now, &a, la);
        assert!(p.ep[0].poll_transmit(now).is_none(), "a delayed ACK");
        let (b, lb) = with_ts(&p, base + 1000, 6000);
        p.ep[0].on_segment(now, &b, lb);
        assert_eq!(echo(&mut p), if at_ack_point { 5000 } else { 6000 }, "at_ack_point {at_ack_point}");
        // The first segment again (TSval 9000): a DSACK echoing what was echoed.
        let (c, lc) = with_ts(&p, base, 9000);
        p.ep[0].on_segment(now, &c, lc);
        assert_eq!(echo(&mut p), if at_ack_point { 5000 } else { 9000 }, "at_ack_point {at_ack_point}");
        // A duplicate that ends at the last ACK sent is still acceptable to Linux
        // (`tcp_sequence`: end_seq not before rcv_wup) and refreshes it.
        let (d, ld) = with_ts(&p, base + 1000, 9500);
        p.ep[0].on_segment(now, &d, ld);
        assert_eq!(echo(&mut p), 9500, "at_ack_point {at_ack_point}");
    }
}
