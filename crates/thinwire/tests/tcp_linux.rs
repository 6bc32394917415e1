//! Linux 6.x behaviours of the TCP model over a scripted wire: the SYN timer
//! (`tcp_syn_linear_timeouts`), `rto = "linux"` (`tcp_rtt_estimator`, `tcp_set_rto`,
//! `tcp_init_metrics`, `tcp_init_transfer`, `tcp_enter_loss`, the timer restart in
//! `tcp_xmit_retransmit_queue`), RFC 3042 limited transmit and Linux's Reno
//! (`tcp_cong.c`). Each test runs the behaviour on and off, so it fails when the
//! switch stops mattering.
use thinwire::tcp::rtt::RtoKind;
use thinwire::tcp::{CcKind, RecoveryKind, State, TcpConfig, TcpVar};
use thinwire::testkit::{DropFn, TcpPair};
use thinwire::time::{Duration, Instant};

fn cfg() -> TcpConfig {
    TcpConfig { mss: 1000, initial_window: 2, ..Default::default() }
}
fn linux(c: TcpConfig) -> TcpConfig {
    TcpConfig { rto: RtoKind::Linux, ..c }
}
fn sack(c: TcpConfig) -> TcpConfig {
    TcpConfig { recovery: RecoveryKind::Sack, sack: true, ..c }
}
fn pair(client: TcpConfig, server: TcpConfig, bytes: u64, drop: DropFn) -> TcpPair {
    TcpPair::new(client, server, Some(bytes), 2_000_000, Duration::from_millis(50), drop)
}
/// The server's data segments with these indices are lost, and so are its first
/// `retransmissions` retransmissions.
fn drop_with_retransmissions(originals: &'static [u64], retransmissions: usize) -> DropFn {
    let mut rx = 0;
    Box::new(move |from, i, retx| {
        if from != 1 {
            return false;
        }
        if retx {
            rx += 1;
            return rx <= retransmissions;
        }
        originals.contains(&i)
    })
}
/// Runs in 1 ms steps until `stop` holds (at most `limit`).
fn run_until(p: &mut TcpPair, limit: Duration, stop: impl Fn(&TcpPair) -> bool) {
    let mut t = Duration::ZERO;
    while t < limit && !stop(p) {
        t += Duration::from_millis(1);
        p.run(t);
    }
}
fn secs(i: Instant) -> f64 {
    i.as_secs_f64()
}

/// Linux 6.5+ (`tcp_syn_linear_timeouts` = 4): the first four SYN timeouts keep
/// the 1 s RTO, so SYNs leave at 0, 1, 2, 3, 4, 5 s, then back off (7, 11 s) —
/// as a capture of Linux 6.12 connecting to a black hole shows. Without it the
/// timer doubles at once.
#[test]
fn syn_timeouts_are_linear_then_back_off() {
    for (n, want) in [(4, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 11.0]), (0, vec![0.0, 1.0, 3.0, 7.0, 15.0])] {
        let client = TcpConfig { syn_linear_timeouts: n, ..cfg() };
        let k = want.len() as u64 - 1;
        let mut p = pair(client, cfg(), 10_000, Box::new(move |from, i, _| from == 0 && i < k));
        p.run(Duration::from_secs(60));
        let syns: Vec<f64> =
            p.log[0].iter().filter(|s| s.1 == 0 && s.2 == 0).map(|s| (secs(s.0) * 1e3).round() / 1e3).collect();
        assert_eq!(syns, want, "syn_linear_timeouts = {n}");
        assert_eq!(p.ep[0].delivered(), 10_000);
    }
}

/// Linux's timer wheel (`timer_wheel`, `tcp/wheel.rs`): a 1 s SYN timer is 250
/// jiffies of 4 ms, in level 1 of the wheel, whose 8-jiffy buckets make it fire
/// at the next 32 ms boundary after the expiry — SYNs 1.024 s apart, as captures
/// of Linux connecting to a black hole show them (1.02–1.03 s) — and the backed-off
/// 4 s timer (level 2, 256 ms buckets) fires at 11.264 s instead of 11.
#[test]
fn on_the_timer_wheel_syn_timers_fire_at_bucket_boundaries() {
    for (wheel, want) in [
        (true, vec![0.0, 1.024, 2.048, 3.072, 4.096, 5.12, 7.136, 11.264]),
        (false, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 11.0]),
    ] {
        let client = TcpConfig {
            syn_linear_timeouts: 4,
            timer_wheel: wheel,
            timer_granularity: Duration::from_millis(4),
            ..cfg()
        };
        let mut p = pair(client, cfg(), 10_000, Box::new(move |from, i, _| from == 0 && i < 7));
        p.run(Duration::from_secs(60));
        let syns: Vec<f64> =
            p.log[0].iter().filter(|s| s.1 == 0 && s.2 == 0).map(|s| (secs(s.0) * 1e3).round() / 1e3).collect();
        assert_eq!(syns, want, "timer_wheel = {wheel}");
        assert_eq!(p.ep[0].delivered(), 10_000);
    }
}

/// `tcp_init_metrics` (RFC 6298 §5.7): a handshake whose SYN-ACK was sent again
/// gives no RTT sample (Karn), and Linux then starts with a 3 s RTO, where RFC
/// 6298 keeps the backed-off 2 s. Two SYN-ACKs sent again start the window at one
/// segment (`tcp_init_transfer`).
#[test]
fn handshake_without_a_sample_falls_back_to_3s_and_lost_syn_acks_shrink_the_window() {
    for (rto, want_rto) in [(RtoKind::Linux, 3.0), (RtoKind::Rfc6298, 2.0)] {
        let server = TcpConfig { rto, ..cfg() };
        let mut p = pair(cfg(), server, 10_000, Box::new(|from, i, _| from == 1 && i == 0));
        run_until(&mut p, Duration::from_secs(10), |p| p.ep[1].state == State::Established);
        assert!(p.ep[1].rtt.srtt.is_none());
        assert_eq!(p.ep[1].rtt.rto().as_secs_f64(), want_rto, "{rto:?}");
    }
    for (rto, want) in [(RtoKind::Linux, 1000), (RtoKind::Rfc6298, 2000)] {
        let server = TcpConfig { rto, ..cfg() };
        let mut p = pair(cfg(), server, 10_000, Box::new(|from, i, _| from == 1 && i < 2));
        run_until(&mut p, Duration::from_secs(20), |p| p.ep[1].state == State::Established);
        assert_eq!(p.ep[1].cwnd(), want, "{rto:?}");
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 10_000);
    }
}

/// Linux restarts the retransmission timer when it resends the first
/// unacknowledged segment (a fast retransmission), so the timer cannot expire
/// before that retransmission's ACK could be back; RFC 6298 leaves it running from
/// the last new ACK.
#[test]
fn a_fast_retransmission_restarts_the_timer() {
    for rto in [RtoKind::Linux, RtoKind::Rfc6298] {
        // At 200 kbit/s the duplicate ACKs come 42 ms apart: the third is 125 ms
        // after the last new ACK started the timer.
        let server = TcpConfig { rto, ..cfg() };
        let client = TcpConfig { delack_count: 1, ..cfg() };
        let mut p =
            TcpPair::new(client, server, Some(100_000), 200_000, Duration::from_millis(50), TcpPair::drop_data(&[30]));
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[1].stats().fast_retransmits > 0);
        let rx = p.log[1].iter().rev().find(|s| s.3).unwrap().0;
        let deadline = p.ep[1].poll_timeout().unwrap();
        let restarted = secs(rx) + p.ep[1].rtt.rto().as_secs_f64();
        if rto == RtoKind::Linux {
            assert!((secs(deadline) - restarted).abs() < 0.011, "{rto:?}: {deadline:?} vs {restarted}");
        } else {
            assert!(secs(deadline) < restarted - 0.1, "{rto:?}: {deadline:?} vs {restarted}");
        }
    }
}

/// Linux samples the RTT on every ACK of data never retransmitted (the oldest
/// segment it covers); RFC 6298 without timestamps times one segment per RTT.
#[test]
fn linux_samples_every_ack() {
    let run = |c: TcpConfig| {
        let mut p = pair(cfg(), c, 200_000, TcpPair::drop_data(&[40]));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 200_000);
        (p.ep[1].stats().rtt_samples, p.ep[0].stats().acks_sent)
    };
    let (linux_samples, acks) = run(linux(cfg()));
    let (rfc_samples, _) = run(cfg());
    assert!(linux_samples as f64 > 0.8 * acks as f64, "{linux_samples} samples for {acks} ACKs");
    assert!(linux_samples > 3 * rfc_samples, "{linux_samples} vs {rfc_samples}");
}

/// At a timeout Linux keeps what was SACKed and resends only the holes
/// (`tcp_enter_loss`); RFC 2018 §8 clears the scoreboard, and with more holes than
/// one ACK's SACK blocks can name (three with timestamps) the sender then resends
/// data the receiver holds.
#[test]
fn a_timeout_keeps_the_sack_scoreboard() {
    const HOLES: &[u64] = &[30, 33, 36, 39, 42, 45];
    let run = |c: TcpConfig| {
        // Six holes, and their first retransmissions are lost too: a timeout.
        let drop = drop_with_retransmissions(HOLES, HOLES.len());
        let ts = |c: TcpConfig| TcpConfig { timestamps: true, ..c };
        let mut p = pair(ts(sack(cfg())), ts(c), 200_000, drop);
        p.run(Duration::from_secs(120));
        assert_eq!(p.ep[0].delivered(), 200_000);
        assert_eq!(p.ep[1].stats().timeouts, 1);
        p.ep[1].stats().retransmits
    };
    let (kept, cleared) = (run(linux(sack(cfg()))), run(sack(cfg())));
    assert!(kept <= 2 * HOLES.len() as u64 + 1, "only the holes, twice: {kept}");
    assert!(cleared > kept, "{cleared} vs {kept}");
}

/// `tcp_enter_loss` reduces ssthresh once per loss episode: a timeout during fast
/// recovery, or a repeated timeout, leaves it; RFC 5681 takes a new ssthresh at
/// each (with Linux's Reno, half the window: 2 segments after a timeout).
#[test]
fn ssthresh_is_reduced_once_per_loss_episode() {
    let run = |rto| {
        let c = TcpConfig { cc: CcKind::Reno, rto, ..cfg() };
        let mut p = pair(cfg(), c, 200_000, drop_with_retransmissions(&[30], 2));
        p.ep[1].enable_trace();
        p.run(Duration::from_secs(120));
        assert_eq!(p.ep[0].delivered(), 200_000);
        assert_eq!(p.ep[1].stats().timeouts, 2, "{rto:?}");
        let ss: Vec<i64> = std::iter::from_fn(|| p.ep[1].poll_event())
            .filter(|e| e.var == TcpVar::Ssthresh)
            .map(|e| e.value)
            .collect();
        ss
    };
    let l = run(RtoKind::Linux);
    assert_eq!(l.len(), 1, "one reduction: {l:?}");
    let r = run(RtoKind::Rfc6298);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[2], 2000, "half of a one-segment window, at least two: {r:?}");
}

/// RFC 3042: with three segments in flight and the first lost, only two duplicate
/// ACKs come back — not enough for fast retransmit, so the timer repairs it. With
/// limited transmit each duplicate lets a new segment out, whose ACKs are the
/// third and fourth duplicates.
#[test]
fn limited_transmit_turns_a_timeout_into_a_fast_retransmit() {
    for lt in [true, false] {
        let server = TcpConfig { initial_window: 3, limited_transmit: lt, ..cfg() };
        let client = TcpConfig { delack_count: 1, ..cfg() };
        let mut p = pair(client, server, 20_000, TcpPair::drop_data(&[1]));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 20_000);
        let s = p.ep[1].stats();
        let got = (s.fast_retransmits, s.timeouts);
        assert_eq!(got, if lt { (1, 0) } else { (0, 1) }, "limited transmit {lt}");
    }
}

/// Linux's Reno counts packets: with delayed ACKs (one ACK per two segments) slow
/// start still doubles the window per RTT, where RFC 5681's per-ACK growth gives
/// 1.5×; a window the receiver limits stops growing.
#[test]
fn linux_reno_counts_packets_and_stops_at_the_receiver_window() {
    let run = |cc| {
        let c = TcpConfig { cc, ..cfg() };
        let mut p = pair(cfg(), c, 400_000, TcpPair::drop_none());
        let t = p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 400_000);
        (secs(t), p.ep[1].cwnd())
    };
    let (t_linux, cwnd_linux) = run(CcKind::Reno);
    let (t_rfc, cwnd_rfc) = run(CcKind::Rfc5681);
    assert!(t_linux < t_rfc, "{t_linux} vs {t_rfc}");
    // The receiver's 64 KiB window is the limit: Linux's window stays within twice
    // of it, RFC 5681's grows on.
    assert!(cwnd_linux <= 2 * 65_536 + 2_000, "{cwnd_linux}");
    assert!(cwnd_rfc > cwnd_linux, "{cwnd_rfc} vs {cwnd_linux}");
}

/// RFC 6937 (PRR, Linux's `tcp_cwnd_reduction`) against RFC 6675: one loss in a
/// window of 20 segments, ssthresh 10. RFC 6675 sets cwnd to ssthresh at once and
/// sends nothing new until half the window's ACKs have drained the pipe; PRR sends
/// about one segment per two delivered from the start.
#[test]
fn prr_spreads_the_reduction_over_the_recovery() {
    let run = |recovery| {
        let server = TcpConfig { initial_window: 20, recovery, sack: true, ..cfg() };
        let client = TcpConfig { delack_count: 1, ..sack(cfg()) };
        // The first data segment is lost (index 0 is the SYN-ACK).
        let mut p = pair(client, server, 60_000, TcpPair::drop_data(&[1]));
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[1].stats().fast_retransmits > 0);
        let ssthresh = p.ep[1].ssthresh();
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[1].acked_bytes() >= 20_000);
        let log = &p.log[1];
        let fr = log.iter().position(|s| s.3).unwrap();
        // New data after the fast retransmission, until its ACK came back (the
        // first segment beyond the first window, 20 segments, is new data).
        let new: Vec<f64> =
            log[fr..].iter().filter(|s| s.1 > 20_000 && !s.3).map(|s| secs(s.0) - secs(log[fr].0)).collect();
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 60_000);
        (ssthresh, new)
    };
    let (ss_prr, prr) = run(RecoveryKind::Prr);
    let (ss_sack, sack) = run(RecoveryKind::Sack);
    assert_eq!((ss_prr, ss_sack), (10_000, 10_000));
    // An ACK every 4.16 ms (a 1040-byte segment at 2 Mbit/s). PRR: the entering
    // ACK delivered one segment, ⌈10·1/20⌉ = 1 — the fast retransmission; then a
    // new segment every second ACK.
    let gaps = |v: &[f64]| v.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
    assert!((0.007..0.009).contains(&prr[0]), "PRR: two ACKs after the retransmission: {prr:?}");
    assert!(gaps(&prr[..5]).iter().all(|g| (0.007..0.009).contains(g)), "one per two ACKs: {prr:?}");
    // RFC 6675: nothing until the pipe is below ssthresh (half the ACKs), then one
    // per ACK.
    assert!(sack[0] > 0.030, "RFC 6675 waits for the pipe to drain: {sack:?}");
    assert!(gaps(&sack[..5]).iter().all(|g| *g < 0.005), "then one per ACK: {sack:?}");
    // The same number of new segments in recovery (ssthresh's worth, less the
    // retransmission).
    assert_eq!(prr.len(), sack.len());
}

fn rack(c: TcpConfig) -> TcpConfig {
    TcpConfig { recovery: RecoveryKind::Rack, sack: true, ..c }
}

/// RFC 8985 §6: a lost retransmission is found by time — the segments sent after
/// it are SACKed while it is not — and sent again without waiting for the
/// retransmission timer, which RFC 6675 (and PRR on it) needs.
#[test]
fn rack_finds_a_lost_retransmission_without_a_timeout() {
    let run = |c: TcpConfig| {
        let mut p = pair(sack(cfg()), c, 200_000, drop_with_retransmissions(&[30], 1));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 200_000);
        let s = p.ep[1].stats();
        (s.timeouts, s.retransmits, s.fast_retransmits)
    };
    assert_eq!(run(rack(cfg())), (0, 2, 1), "RACK");
    assert_eq!(run(TcpConfig { recovery: RecoveryKind::Prr, sack: true, ..cfg() }).0, 1, "PRR on RFC 6675");
}

/// RFC 8985 §6.2: with fewer than three segments SACKed above a hole, RACK waits
/// a quarter of the minimum RTT more and then deems it lost (its timer), where
/// RFC 6675 has too few duplicate ACKs and waits for the retransmission timer.
#[test]
fn rack_timer_repairs_a_loss_with_two_segments_after_it() {
    for (c, timeouts) in [(rack(cfg()), 0), (TcpConfig { recovery: RecoveryKind::Prr, sack: true, ..cfg() }, 1)] {
        let server = TcpConfig { initial_window: 3, ..c };
        let mut p = pair(sack(cfg()), server, 20_000, TcpPair::drop_data(&[1]));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 20_000);
        let s = p.ep[1].stats();
        assert_eq!((s.timeouts, s.retransmits), (timeouts, 1), "{:?}", c.recovery);
    }
}

/// Several losses in one window, each repaired once, no timeout; the window ends
/// recovery at ssthresh.
#[test]
fn rack_repairs_several_losses_in_a_window() {
    let mut p = pair(sack(cfg()), rack(cfg()), 200_000, TcpPair::drop_data(&[30, 32, 34, 36]));
    p.run(Duration::from_secs(60));
    assert_eq!(p.ep[0].delivered(), 200_000);
    let s = p.ep[1].stats();
    assert_eq!((s.timeouts, s.retransmits, s.fast_retransmits), (0, 4, 1));
}

/// RFC 8985 §7: losses at the tail of a transfer leave no later segment to be
/// SACKed and no duplicate ACKs; without a probe only the retransmission timer
/// repairs them. The tail loss probe resends the last segment after about two
/// RTTs; its SACK lets RACK find the rest, so no timeout is needed.
#[test]
fn a_tail_loss_probe_repairs_tail_losses_without_a_timeout() {
    // 30 segments; the last one, or the last three, are lost.
    for drops in [vec![30], vec![28, 29, 30]] {
        let run = |c: TcpConfig| {
            let mut p = pair(sack(cfg()), TcpConfig { initial_window: 10, ..c }, 30_000, TcpPair::drop_data(&drops));
            let end = p.run(Duration::from_secs(60));
            assert_eq!(p.ep[0].delivered(), 30_000);
            let s = p.ep[1].stats().clone();
            (s.timeouts, s.loss_probes, s.retransmits, secs(end))
        };
        let (rto, probes, rx, t_rack) = run(rack(cfg()));
        assert_eq!((rto, probes, rx), (0, 1, drops.len() as u64), "RACK-TLP, drops {drops:?}");
        let (rto, probes, _, t_prr) = run(TcpConfig { recovery: RecoveryKind::Prr, sack: true, ..cfg() });
        assert_eq!((rto, probes), (1, 0), "PRR on RFC 6675, drops {drops:?}");
        assert!(t_rack < t_prr, "{t_rack} vs {t_prr}");
    }
}

/// RFC 3522 (Eifel) as Linux's `tcp_try_undo_loss`: for a second the path's delay
/// is 1.05 s instead of 50 ms, the sender times out (twice) though nothing was lost, and
/// the first ACK after the timeout echoes a timestamp older than the
/// retransmission: the timeout was spurious and is undone — window and threshold
/// back, nothing more resent. RFC 6298's timer has no undo: the sender goes back
/// and resends from `snd_una` with a window of one segment.
#[test]
fn a_spurious_timeout_is_undone_by_the_timestamps() {
    let run = |c: TcpConfig| {
        let ts = |c: TcpConfig| TcpConfig { timestamps: true, min_rto: Duration::from_millis(200), ..c };
        let mut p = pair(ts(sack(cfg())), ts(c), 400_000, TcpPair::drop_none());
        p.run(Duration::from_secs(1));
        p.delay = Duration::from_millis(1050);
        p.run(Duration::from_secs(2));
        p.delay = Duration::from_millis(50);
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 400_000);
        let s = p.ep[1].stats().clone();
        (s.timeouts, s.undos, s.retransmits, p.ep[1].ssthresh())
    };
    // RFC 6675 recovery: no tail loss probe goes out before the timer.
    let (timeouts, undos, rexmits, ssthresh) = run(linux(sack(cfg())));
    // The timer (about 330 ms) fires twice in the second's silence, backing off.
    assert_eq!((timeouts, undos, rexmits), (2, 1, 2), "only the timeouts' own retransmissions");
    assert!(ssthresh > 1 << 30, "ssthresh back to its value before: {ssthresh}");
    let (timeouts, undos, resent, _) = run(sack(cfg()));
    assert_eq!((timeouts, undos), (2, 0));
    assert!(resent > 5, "without the undo the sender goes back: {resent} segments resent");
}

/// Linux's receiver (`quickack`, `tcp/delack.rs`): the first 16 data segments of a
/// connection are each acknowledged at once (`TCP_MAX_QUICKACKS`), after that
/// every second one; without it every second one from the start: 8 ACKs more
/// over a 32-segment initial window.
#[test]
fn quick_acks_for_the_first_segments() {
    let acks = |quickack| {
        let client = TcpConfig { quickack, delack_timeout: Duration::from_millis(40), ..cfg() };
        // A Linux sender: PSH on every second segment, where every second
        // segment is acknowledged anyway.
        let server = TcpConfig { initial_window: 32, push: thinwire::tcp::Push::Chunk, ..cfg() };
        let mut p = pair(client, server, 32_000, TcpPair::drop_none());
        p.run(Duration::from_secs(10));
        assert_eq!(p.ep[0].delivered(), 32_000);
        // When the first ACKs go: the first 16 in step with the segments.
        let t: Vec<f64> = p.log[0].iter().filter(|s| s.2 == 0 && s.1 == 1).map(|s| secs(s.0)).collect();
        (t.len(), t[1..].windows(2).take(15).all(|w| w[1] - w[0] < 0.005))
    };
    let (with, each) = acks(true);
    let (without, each_without) = acks(false);
    assert_eq!(with - without, 8);
    assert!(each && !each_without);
}

/// Lone segments without a push mark (one every 500 ms, after the quick ACKs:
/// the first of a two-segment write that a one-segment window lets out alone,
/// without the PSH its chunk ends with): each time the timer fires with an ACK
/// owed Linux doubles `ato` (up to the RTO), so the wait grows from 40 ms to
/// the receiver's SRTT (100 ms here, the bound); the fixed timer keeps waiting
/// 40 ms.
#[test]
fn the_delayed_ack_timer_grows_when_it_fires() {
    for (quickack, want) in [(true, 0.100), (false, 0.040)] {
        let client = TcpConfig { quickack, delack_timeout: Duration::from_millis(40), ..cfg() };
        let server = TcpConfig { cc: CcKind::Clamp, cwnd_clamp: Some(1000), push: thinwire::tcp::Push::Chunk, ..cfg() };
        let mut p = pair(client, server, 0, TcpPair::drop_none());
        p.ep[1].set_app_data(Some(0), false);
        p.run(Duration::from_millis(200));
        let mut at = Duration::from_millis(200);
        let mut delay = 0.0;
        for k in 1..=30u64 {
            p.ep[1].set_app_data(Some(k * 2000), false);
            p.kick_at(1, Instant::ZERO + at);
            let n = p.log[1].len();
            p.run(at + Duration::from_millis(499));
            // The ACK of the write's first segment: sent, 4.16 ms on the wire,
            // 50 ms delay; it carries no PSH.
            let first = p.log[1][n..].iter().position(|s| s.2 > 0).unwrap() + n;
            assert_eq!(p.flags[1][first] & 0x08, 0, "the chunk's first segment");
            let arrived = p.log[1][first].0 + Duration::from_millis(50) + Duration::from_micros(4160);
            let got = p.log[0].iter().find(|s| s.0 >= arrived).unwrap().0;
            delay = secs(got) - secs(arrived);
            at += Duration::from_millis(500);
        }
        assert!((delay - want).abs() < 0.002, "quickack {quickack}: {delay}");
    }
}

/// The FIN rides on the last data segment (`fin_with_data`, as Linux's
/// `tcp_send_fin` when data is still queued), and on its retransmission by the
/// loss probe when that segment is lost; otherwise a FIN segment of its own
/// follows the data.
#[test]
fn the_fin_rides_on_the_last_segment() {
    for fin_with_data in [true, false] {
        let server = TcpConfig { initial_window: 10, fin_with_data, ..rack(linux(cfg())) };
        let mut p = pair(sack(cfg()), server, 40_000, TcpPair::drop_data(&[40]));
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 40_000);
        assert!(p.ep[0].fin_received() && p.ep[1].fin_acked());
        let s = p.ep[1].stats();
        assert_eq!((s.timeouts, s.loss_probes), (0, 1), "fin_with_data {fin_with_data}");
        let fins = p.log[1].iter().filter(|s| s.2 == 0 && s.1 == 40_001).count();
        assert_eq!(fins, if fin_with_data { 0 } else { 1 });
    }
}

/// Linux `tcp_schedule_loss_probe`: the probe never waits longer than the
/// retransmission timer would. With an RTT of 300 ms, 2·SRTT (600 ms) is more
/// than the RTO (SRTT + 200 ms once the variance has settled, here at the end
/// of a 300-segment transfer), so the probe goes at the RTO's time in its place
/// and repairs the lost last segment without a timeout.
#[test]
fn the_loss_probe_comes_no_later_than_the_timer() {
    let server = TcpConfig { initial_window: 10, min_rto: Duration::from_millis(200), ..rack(linux(cfg())) };
    // A 20-segment receive window keeps the path's queue empty: the RTT stays at
    // 300 ms and the RTO settles at SRTT + 200 ms.
    let client = TcpConfig { rcv_buf: 20_000, ..sack(cfg()) };
    let drop = TcpPair::drop_data(&[300]);
    let mut p = TcpPair::new(client, server, Some(300_000), 2_000_000, Duration::from_millis(150), drop);
    run_until(&mut p, Duration::from_secs(60), |p| p.ep[1].acked_bytes() >= 290_000);
    let (rto, srtt) = (p.ep[1].rtt.rto().as_secs_f64(), p.ep[1].rtt.srtt.unwrap().as_secs_f64());
    assert!(2.0 * srtt > rto, "the premise: 2·SRTT {srtt} beyond the RTO {rto}");
    p.run(Duration::from_secs(60));
    assert_eq!(p.ep[0].delivered(), 300_000);
    let s = p.ep[1].stats();
    assert_eq!((s.timeouts, s.loss_probes, s.retransmits), (0, 1, 1), "{s:?}");
}

/// Linux takes an RTT sample from a SACK when nothing is cumulatively
/// acknowledged (`tcp_ack_update_rtt`'s `sack_rtt_us`). In a long recovery behind
/// a growing queue (the unlimited FIFO of the harness at 1.5 Mbit/s) the timer
/// thereby keeps pace with the RTT, and RACK finds the lost retransmission
/// before the timer would fire; the retransmission of a retransmission is then a
/// RACK loss, not a timeout.
#[test]
fn sack_rtt_samples_keep_the_timer_behind_a_growing_queue() {
    let l = TcpConfig::profile("linux").unwrap();
    let mut p =
        TcpPair::new(l, l, Some(300_000), 1_500_000, Duration::from_millis(50), drop_with_retransmissions(&[60], 1));
    p.run(Duration::from_secs(60));
    assert_eq!(p.ep[0].delivered(), 300_000);
    let s = p.ep[1].stats();
    assert_eq!((s.timeouts, s.fast_retransmits, s.lost_retransmits, s.retransmits), (0, 1, 1, 2), "{s:?}");
}

/// Linux schedules the loss probe after every burst it sends (`tcp_write_xmit`
/// ends with `tcp_schedule_loss_probe`), not only on ACKs. On a 9.6 kbit/s link
/// the first flight of ten segments takes about 13 s to drain: 2·SRTT after it
/// was sent, with no ACK yet, the probe goes — new data — and restarts the timer
/// (on seed 000's GSM link the timer would otherwise fire first: sim-vs-real's
/// `gsm-rlp-vj` cell). Scheduled only on ACKs, no probe goes at all.
#[test]
fn the_first_flight_is_probed_before_the_timer() {
    let server = TcpConfig { initial_window: 10, min_rto: Duration::from_millis(200), ..rack(linux(cfg())) };
    let mut p =
        TcpPair::new(sack(cfg()), server, Some(15_000), 9_600, Duration::from_millis(250), TcpPair::drop_none());
    p.run(Duration::from_secs(120));
    assert_eq!(p.ep[0].delivered(), 15_000);
    let s = p.ep[1].stats();
    assert_eq!((s.timeouts, s.loss_probes, s.retransmits), (0, 1, 0), "{s:?}");
}

/// `cc = "clamp"` (seed 003 §V): the fixed window from the first flight, kept
/// through a loss; CUBIC starts at the initial window and reduces at the loss.
#[test]
fn the_clamp_controller_keeps_its_window_through_a_loss() {
    for cc in [CcKind::Clamp, CcKind::Cubic] {
        let server = TcpConfig { cc, cwnd_clamp: (cc == CcKind::Clamp).then_some(6000), ..rack(linux(cfg())) };
        let client = TcpConfig { sack: true, ..cfg() };
        let mut p = pair(client, server, 100_000, Box::new(|from, i, retx| from == 1 && i == 20 && !retx));
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[0].delivered() == 100_000);
        let s = p.ep[1].stats();
        assert_eq!((s.fast_retransmits, s.timeouts), (1, 0), "{cc:?}");
        if cc == CcKind::Clamp {
            assert_eq!(p.ep[1].cwnd(), 6000);
            // The first flight is the clamp: six segments at once.
            let t0 = p.log[1].iter().find(|s| s.2 > 0).unwrap().0;
            let first: Vec<_> = p.log[1].iter().filter(|s| s.2 > 0 && s.0 == t0).collect();
            assert_eq!(first.len(), 6);
        } else {
            assert!(p.ep[1].ssthresh() < 100_000, "cubic reduced at the loss");
        }
    }
}

/// Linux runs RACK only with SACK (`tcp_is_rack`); with a peer that does not
/// offer it, the third duplicate ACK starts the recovery (`tcp_add_reno_sack`,
/// `tcp_mark_head_lost`) and each partial ACK resends the next hole — two losses
/// in one window, no timeout.
#[test]
fn rack_without_sack_recovers_by_duplicate_acks() {
    for sack in [true, false] {
        let client = TcpConfig { sack, ..cfg() };
        let server = TcpConfig { initial_window: 10, ..rack(linux(cfg())) };
        let mut p = pair(client, server, 100_000, Box::new(|from, i, retx| from == 1 && (i == 20 || i == 22) && !retx));
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[0].delivered() == 100_000);
        let s = p.ep[1].stats();
        assert_eq!((s.fast_retransmits, s.timeouts, s.retransmits), (1, 0, 2), "sack {sack}");
    }
}

/// Without SACK the kernel runs no RACK detection on ACKs (`tcp_identify_packet_loss`:
/// `tcp_newreno_mark_lost` for a Reno connection, RACK only for a SACK one): six
/// holes in one window are repaired one per partial ACK, six retransmissions in one
/// recovery. RACK on cumulative ACKs would take a retransmission's ACK as proof
/// that every segment sent before it and still unacknowledged is lost, and resend
/// them all (a clean 20 Mbit/s link's slow start: 2,069 retransmissions where the
/// kernel sent 208).
#[test]
fn without_sack_partial_acks_resend_one_hole_each() {
    for sack in [true, false] {
        let client = TcpConfig { sack, ..cfg() };
        let server = TcpConfig { initial_window: 10, ..rack(linux(cfg())) };
        let holes: &[u64] = &[20, 22, 24, 26, 28, 30];
        let mut p =
            pair(client, server, 100_000, Box::new(move |from, i, retx| from == 1 && holes.contains(&i) && !retx));
        run_until(&mut p, Duration::from_secs(30), |p| p.ep[0].delivered() == 100_000);
        let s = p.ep[1].stats();
        assert_eq!((s.fast_retransmits, s.timeouts, s.retransmits), (1, 0, 6), "sack {sack}");
    }
}

/// Without SACK the duplicate ACKs of a recovery stand for segments delivered
/// (`sacked_out`), and a timeout forgets them (`tcp_timeout_mark_lost`:
/// `tcp_reset_reno_sack`): the timeout's window is what is in flight plus one, so
/// one segment leaves at the timeout. Kept across it, they shrank the pipe by a
/// window's worth and a burst of go-back-N retransmissions left at once (a raw
/// 1.5 Mbit/s link with 1.5 % loss: 54 retransmissions where the kernel sent 16).
#[test]
fn without_sack_a_timeout_sends_one_segment() {
    let client = TcpConfig { sack: false, ..cfg() };
    let server = TcpConfig { initial_window: 10, ..rack(linux(cfg())) };
    let mut p = pair(client, server, 100_000, drop_with_retransmissions(&[20], 1));
    run_until(&mut p, Duration::from_secs(30), |p| p.ep[0].delivered() == 100_000);
    assert_eq!(p.ep[1].stats().timeouts, 1);
    let retx: Vec<_> = p.log[1].iter().filter(|e| e.3).collect();
    let rto = retx.iter().enumerate().find(|(i, e)| retx[..*i].iter().any(|f| f.1 == e.1)).map(|(_, e)| e.0);
    let at = rto.expect("the head sent again at the timeout");
    assert_eq!(retx.iter().filter(|e| e.0 == at).count(), 1);
}

/// Linux's client acknowledges the SYN-ACK at once and alone
/// (`tcp_rcv_synsent_state_process` → `tcp_send_ack`); the application's first
/// data follows in a segment of its own (curl's GET in the GSM cell's capture:
/// the ACK, then the request 80 ms later). Without Linux's receiver the ACK rides
/// on the first data segment. The server's handshake RTT sample then excludes the
/// request's transmission time.
#[test]
fn the_handshake_ack_goes_out_alone() {
    for quickack in [true, false] {
        let client = TcpConfig { quickack, ..rack(linux(cfg())) };
        let mut p = pair(client, rack(linux(cfg())), 1, TcpPair::drop_none());
        p.ep[0].set_app_data(Some(500), false);
        p.ep[1].set_app_data(Some(0), false);
        p.run(Duration::from_secs(10));
        let lens: Vec<u32> = p.log[0].iter().take(3).map(|e| e.2).collect();
        let want: &[u32] = if quickack { &[0, 0, 500] } else { &[0, 500] };
        assert_eq!(&lens[..want.len()], want, "quickack {quickack}");
    }
}

/// The kernel acknowledges a request in the softirq, before the server process
/// writes its reply: with Linux's receiver (`quickack`) the request's ACK goes
/// out alone and the reply follows; without, the reply's first segment carries
/// the ACK (a capture over the GSM cell shows the kernel's pure ACK 0.1 ms after
/// curl's GET, python's reply 9 ms later).
#[test]
fn a_request_is_acknowledged_before_the_reply() {
    use thinwire::tcp::Tcp;
    for quickack in [true, false] {
        let t = Instant::ZERO;
        let mut c = Tcp::new(cfg(), 40000, 80, 1000);
        let mut s = Tcp::new(TcpConfig { quickack, ..linux(cfg()) }, 80, 40000, 5000);
        c.set_app_data(Some(100), false);
        s.set_app_data(Some(0), false);
        s.listen();
        c.connect(t);
        let syn = c.poll_transmit(t).unwrap();
        s.on_segment(t, &syn.repr, syn.len);
        let syn_ack = s.poll_transmit(t).unwrap();
        c.on_segment(t, &syn_ack.repr, syn_ack.len);
        while let Some(seg) = c.poll_transmit(t) {
            s.on_segment(t, &seg.repr, seg.len);
        }
        assert_eq!(s.delivered(), 100, "the request arrived");
        // The application answers at once.
        s.set_app_data(Some(3000), true);
        let first = s.poll_transmit(t).unwrap();
        assert_eq!(first.len == 0, quickack, "quickack {quickack}");
        let next = s.poll_transmit(t).unwrap();
        assert!(next.len > 0, "then the reply");
    }
}

/// Segments both ways at `t` until both ends are quiet: (from, payload length)
/// of each, 0 the client, 1 the server.
fn exchange(c: &mut thinwire::tcp::Tcp, s: &mut thinwire::tcp::Tcp, t: Instant) -> Vec<(u8, u32)> {
    let mut log = Vec::new();
    loop {
        let mut quiet = true;
        while let Some(seg) = c.poll_transmit(t) {
            log.push((0, seg.len));
            s.on_segment(t, &seg.repr, seg.len);
            quiet = false;
        }
        while let Some(seg) = s.poll_transmit(t) {
            log.push((1, seg.len));
            c.on_segment(t, &seg.repr, seg.len);
            quiet = false;
        }
        if quiet {
            return log;
        }
    }
}

/// Linux's ping-pong mode (`tcp_event_data_sent`: data sent within `ato` of data
/// received; `tcp_in_quickack_mode` is false in it; `tcp_delack_timer_handler`
/// leaves it): a server that answered the first request at once does not
/// acknowledge the next request alone — the reply carries the ACK (a capture of
/// Linux 6.18 over the emulator: a pure ACK for the first of two requests on
/// one connection, none for the second) — while one that answered the first
/// request later than `ato` after it acknowledges the next at once too.
#[test]
fn a_server_in_ping_pong_mode_acknowledges_the_next_request_with_its_reply() {
    use thinwire::tcp::Tcp;
    let ms = Duration::from_millis;
    for late in [false, true] {
        let mut t = Instant::ZERO;
        let mut c = Tcp::new(cfg(), 40000, 80, 1000);
        let mut s = Tcp::new(TcpConfig { quickack: true, ..linux(cfg()) }, 80, 40000, 5000);
        c.set_app_data(Some(100), false);
        s.set_app_data(Some(0), false);
        s.listen();
        c.connect(t);
        exchange(&mut c, &mut s, t);
        assert_eq!(s.delivered(), 100);
        if late {
            // The first reply is written 300 ms after the request.
            t += ms(300);
            s.handle_timeout(t);
            exchange(&mut c, &mut s, t);
        }
        s.set_app_data(Some(3000), false);
        exchange(&mut c, &mut s, t);
        // The second request, 0.5 s later; the server answers at once.
        t += ms(500);
        c.set_app_data(Some(200), false);
        let req: Vec<_> = exchange(&mut c, &mut s, t);
        assert_eq!(s.delivered(), 200);
        s.set_app_data(Some(6000), false);
        let reply = exchange(&mut c, &mut s, t);
        let alone = req.iter().chain(&reply).filter(|&&(from, len)| from == 1 && len == 0).count();
        let first = reply.iter().find(|x| x.0 == 1).unwrap();
        if late {
            assert_eq!(alone, 1, "not in ping-pong mode: the request's ACK goes alone ({req:?} {reply:?})");
        } else {
            assert_eq!(alone, 0, "ping-pong: the reply carries the ACK ({req:?} {reply:?})");
            assert!(first.1 > 0);
        }
    }
}

/// Linux `tcp_fastretrans_alert`: in the Loss state that a timeout starts, a
/// retransmission that RACK finds lost again (`FLAG_LOST_RETRANS`) starts a fast
/// recovery (`tcp_enter_recovery`, counted in `TCPSackRecovery`), and its
/// reduction takes the controller's threshold from the window the timeout left
/// (`tcp_init_cwnd_reduction`): the threshold falls to its floor. A window of
/// originals is lost (a timeout), then the second retransmission after it.
/// Before this rule: no recovery, and the threshold stayed at the timeout's
/// 21,000 B.
#[test]
fn a_lost_retransmission_after_a_timeout_starts_a_fast_recovery() {
    let run = || {
        let mut rx = 0;
        let drop: DropFn = Box::new(move |from, i, retx| {
            if from != 1 {
                return false;
            }
            if retx {
                rx += 1;
                return rx == 2;
            }
            (30..62).contains(&i)
        });
        let server = linux(rack(TcpConfig { cc: CcKind::Cubic, ..cfg() }));
        let mut p = pair(sack(cfg()), server, 200_000, drop);
        let mut low = u64::MAX;
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(60) && p.ep[0].delivered() < 200_000 {
            t += Duration::from_millis(1);
            p.run(t);
            if p.ep[1].stats().timeouts > 0 {
                low = low.min(p.ep[1].ssthresh());
            }
        }
        assert_eq!(p.ep[0].delivered(), 200_000);
        let s = p.ep[1].stats();
        (s.timeouts, s.fast_retransmits, s.lost_retransmits, low)
    };
    let (timeouts, recoveries, lost, low) = run();
    assert_eq!((timeouts, lost), (1, 1));
    assert_eq!(recoveries, 1, "the lost retransmission starts a recovery");
    assert_eq!(low, 2 * 1000, "cubic's floor, from the window after the timeout");
}

/// RFC 9293 §3.10.7.4 as Linux applies it (`tcp_sequence` against `rcv_wup`,
/// `tcp_send_dupack`, `tcp_oow_rate_limited`): an empty segment one byte below the
/// window — a zero-window probe or a keep-alive — is answered with an ACK at once,
/// at most once per 500 ms; a pure ACK at the window's edge is not answered.
#[test]
fn a_zero_window_probe_is_answered_at_once_and_rate_limited() {
    use thinwire::wire::{TcpFlags, TcpRepr};
    // The server's data stops after 20 segments (everything later is lost), so
    // the client is open, has acknowledged all it got, and has no FIN.
    let mut p = pair(linux(cfg()), linux(cfg()), 100_000, Box::new(|from, i, _| from == 1 && i >= 20));
    p.run(Duration::from_secs(5));
    let got = p.ep[0].delivered() as u32;
    assert!(got >= 10_000, "{got}");
    let edge = p.ep[1].iss().wrapping_add(1 + got);
    let seg = |seq: u32| TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq,
        ack: p.ep[0].iss().wrapping_add(1),
        flags: TcpFlags(TcpFlags::ACK),
        window: 1000,
        ..Default::default()
    };
    let (at_edge, probe) = (seg(edge), seg(edge.wrapping_sub(1)));
    let t = |ms: i64| Instant::ZERO + Duration::from_millis(5_000 + ms);
    let answered = |p: &mut TcpPair, ms: i64, s: &TcpRepr| {
        p.ep[0].on_segment(t(ms), s, 0);
        let a = p.ep[0].poll_transmit(t(ms));
        a.map(|a| (a.repr.ack.wrapping_sub(p.ep[1].iss()), a.repr.flags.has(TcpFlags::ACK)))
    };
    assert_eq!(answered(&mut p, 0, &at_edge), None, "a pure ACK at the edge is acceptable");
    assert_eq!(answered(&mut p, 0, &probe), Some((got + 1, true)), "the probe is answered");
    assert_eq!(answered(&mut p, 300, &probe), None, "within 500 ms: rate limited");
    assert_eq!(answered(&mut p, 600, &probe), Some((got + 1, true)));
}

/// Linux `tcp_try_undo_spurious_syn` (net/ipv4/tcp_input.c, with
/// `tcp_create_openreq_child` and `tcp_init_transfer`): a passive opener whose
/// SYN-ACK timed out and went out twice more starts with one segment — unless
/// the ACK completing the handshake echoes the first SYN-ACK's timestamp: that
/// SYN-ACK was only delayed, the timeout was spurious, and the window starts
/// at the initial window. Found in the sim-vs-real captures of `rlc-uniform`
/// (seed 7): the first SYN-ACK reached the mobile late through RLC's
/// retransmissions, the kernel then sent ten segments, the model one.
#[test]
fn a_late_first_syn_ack_undoes_the_one_segment_window() {
    use thinwire::tcp::Tcp;
    for echo_first in [true, false] {
        let ts = TcpConfig { timestamps: true, initial_window: 10, ..linux(cfg()) };
        let mut c = Tcp::new(ts, 40000, 80, 1000);
        let mut s = Tcp::new(ts, 80, 40000, 5000);
        c.set_app_data(Some(100), false);
        s.set_app_data(Some(20_000), false);
        s.listen();
        let t0 = Instant::ZERO + Duration::from_millis(7);
        c.connect(t0);
        let syn = c.poll_transmit(t0).unwrap();
        s.on_segment(t0, &syn.repr, syn.len);
        let first = s.poll_transmit(t0).unwrap();
        // The SYN-ACK timer fires; then the client's SYN comes again and is
        // answered: two SYN-ACKs sent again.
        let t1 = s.poll_timeout().unwrap();
        s.handle_timeout(t1);
        let second = s.poll_transmit(t1).unwrap();
        let t2 = t1 + Duration::from_millis(10);
        c.handle_timeout(c.poll_timeout().unwrap().max(t2));
        let syn2 = c.poll_transmit(t2).unwrap();
        s.on_segment(t2, &syn2.repr, syn2.len);
        assert!(s.poll_transmit(t2).is_some(), "a third SYN-ACK");
        assert_eq!(s.stats().syn_retransmits, 2);
        // The client takes the first SYN-ACK (late) or the second.
        let t3 = t2 + Duration::from_millis(150);
        let got = if echo_first { &first } else { &second };
        c.on_segment(t3, &got.repr, got.len);
        let ack = c.poll_transmit(t3).unwrap();
        s.on_segment(t3 + Duration::from_millis(40), &ack.repr, ack.len);
        assert_eq!(s.state, State::Established);
        let want = if echo_first { 10 * s.smss() } else { s.smss() };
        assert_eq!(s.cwnd(), want, "the ACK echoes the first SYN-ACK: {echo_first}");
    }
}

/// Linux's receiver spends a quick ACK on every ACK it owed received data —
/// out-of-order data's duplicate ACKs too (`tcp_dec_quickack_mode` counts an ACK
/// when `inet_csk_ack_scheduled`, which `tcp_data_queue_ofo` sets). The first
/// data grants 16; segment 1 of a 32-segment window is lost, and the 30
/// duplicate ACKs that follow use the rest: once the hole is filled, every second
/// segment is acknowledged (as a real Linux mobile over the emulator does,
/// `docs/studies/sim-vs-real.md`), not each for 15 more.
#[test]
fn duplicate_acks_use_up_the_quick_acks() {
    let client = TcpConfig { quickack: true, delack_timeout: Duration::from_millis(40), ..sack(linux(cfg())) };
    let server = TcpConfig { initial_window: 32, push: thinwire::tcp::Push::Chunk, ..sack(linux(cfg())) };
    let drop: DropFn = Box::new(|from, i, retx| from == 1 && i == 2 && !retx);
    let mut p = pair(client, server, 80_000, drop);
    p.run(Duration::from_secs(20));
    assert_eq!(p.ep[0].delivered(), 80_000);
    // The first 16 new segments sent after the hole's retransmission, and the
    // client's ACKs while they arrive (50 ms and a transmission time later).
    let filled = p.log[1].iter().find(|s| s.3).map(|s| s.0).unwrap();
    let new: Vec<Instant> = p.log[1].iter().filter(|s| s.0 > filled && !s.3 && s.2 > 0).map(|s| s.0).take(16).collect();
    assert_eq!(new.len(), 16);
    let (from, to) = (new[0] + Duration::from_millis(50), new[15] + Duration::from_millis(56));
    let acks = p.log[0].iter().filter(|s| s.2 == 0 && s.0 > from && s.0 <= to).count();
    // One per two segments (and perhaps one by the timer).
    assert!(acks <= 9, "{acks} ACKs for the first 16 segments after the hole: quick ACKs left over");
}

/// Linux's receive window when a retransmission fills a hole: the segments
/// held out of order move to the receive queue in the same softirq
/// (`tcp_ofo_queue`) and the ACK leaves before the application reads them, so
/// the window it offers counts all their memory (a real mobile over the
/// emulator offered 55 units of 1,024 B there, after 80). 25 segments behind
/// the hole: after the fill 26 segments of 2,304 B are held in the 131,072-B
/// buffer, and the window is the rest at the 160/256 payload ratio, 44,480 B,
/// rounded up to the scale unit: 45,056 B (the right edge offered before, 43,248
/// B ahead, is kept); received in order, the window stays at 80,896 B.
#[test]
fn the_window_after_a_hole_is_filled_counts_the_segments_it_released() {
    use thinwire::wire::{TcpFlags, TcpRepr};
    let window_after = |hole: bool| {
        // (Without autotuning, which these 20 ms of data would trigger.)
        let cfg = TcpConfig { autotune: false, ..TcpConfig::profile("linux").unwrap() };
        let mut c = thinwire::tcp::Tcp::new(cfg, 40000, 8000, 1000);
        let t = |ms: i64| Instant::ZERO + Duration::from_millis(ms);
        c.connect(t(0));
        while c.poll_transmit(t(0)).is_some() {}
        let mut synack = TcpRepr {
            src_port: 8000,
            dst_port: 40000,
            seq: 5000,
            ack: 1001,
            flags: TcpFlags(TcpFlags::SYN | TcpFlags::ACK),
            window: 65_160,
            ..TcpRepr::default()
        };
        (synack.opts.mss, synack.opts.wscale, synack.opts.sack_permitted) = (Some(1460), Some(7), true);
        c.on_segment(t(100), &synack, 0);
        while c.poll_transmit(t(100)).is_some() {}
        let seg = |k: u32| TcpRepr {
            src_port: 8000,
            dst_port: 40000,
            seq: 5001 + 1448 * k,
            ack: 1001,
            flags: TcpFlags(TcpFlags::ACK),
            window: 500,
            ..TcpRepr::default()
        };
        // 20 segments in order (past the quick ACKs' growth), then segment 20 late.
        let mut last = 0;
        let order: Vec<u32> = if hole { (0..20).chain(21..46).chain([20]).collect() } else { (0..46).collect() };
        for (i, k) in order.into_iter().enumerate() {
            let now = t(200 + i as i64);
            c.on_segment(now, &seg(k), 1448);
            while let Some(s) = c.poll_transmit(now) {
                last = (s.repr.window as u64) << 10;
            }
        }
        assert_eq!(c.delivered(), 46 * 1448);
        last
    };
    let (filled, in_order) = (window_after(true), window_after(false));
    assert_eq!((filled, in_order), (45_056, 80_896));
}

fn linux_profile() -> TcpConfig {
    TcpConfig::profile("linux").unwrap()
}

/// The server's data segments of the first `n` (sent once), as (len, PSH).
fn first_data(p: &TcpPair, n: usize) -> Vec<(u32, bool)> {
    let (log, flags) = (&p.log[1], &p.flags[1]);
    log.iter().zip(flags).filter(|(l, _)| l.2 > 0 && !l.3).take(n).map(|(l, f)| (l.2, f & 0x08 != 0)).collect()
}

/// `push = "chunk"` (Linux): PSH on the last segment of each TSO/GSO chunk,
/// about 1 ms of data at the kernel's pacing rate and at least two segments —
/// so the initial window of ten goes as five pairs, PSH on every second, as a
/// capture of Linux 6.18 over the emulator shows (`sim-vs-real` micro-cells).
/// On a short RTT the rate makes a chunk larger than the window, whose part
/// sent goes without PSH (`tso_fragment` leaves it on the rest). `segment`:
/// PSH on all.
#[test]
fn psh_marks_the_end_of_each_chunk() {
    for (push, delay_ms, want) in [
        (thinwire::tcp::Push::Chunk, 50, vec![false, true, false, true, false, true, false, true, false, true]),
        (thinwire::tcp::Push::Chunk, 0, vec![false; 10]),
        (thinwire::tcp::Push::Segment, 50, vec![true; 10]),
    ] {
        let server = TcpConfig { push, ..linux_profile() };
        let mut p =
            TcpPair::new(linux_profile(), server, Some(100_000), 20_000_000, Duration::from_millis(delay_ms), {
                Box::new(|_, _, _| false)
            });
        p.run(Duration::from_secs(10));
        let psh: Vec<bool> = first_data(&p, 10).iter().map(|x| x.1).collect();
        assert_eq!(psh, want, "{push:?}, {delay_ms} ms");
        // The last segment of the data carries PSH whatever the chunk.
        assert_eq!(p.flags[1][p.log[1].iter().rposition(|l| l.2 > 0).unwrap()] & 0x08, 0x08);
    }
}

/// Linux 6.6+ (`tcp_measure_rcv_mss`: a full-sized segment with PSH sets
/// `ICSK_ACK_PUSHED`; `tcp_cleanup_rbuf` then acknowledges when the
/// application has read everything): a receiver past its quick ACKs
/// acknowledges a lone full-sized segment that ends a write at once, where it
/// otherwise waits for the delayed-ACK timer — unless in ping-pong mode.
#[test]
fn a_pushed_full_segment_is_acknowledged_when_read() {
    for push in [thinwire::tcp::Push::Chunk, thinwire::tcp::Push::Segment] {
        let server = TcpConfig { push, ..linux_profile() };
        // A receive buffer that stops growing, so no segment asks for a
        // quick ACK by growing the window (`tcp_grow_window`).
        let client = TcpConfig { rcv_buf: 65_535, rcv_buf_max: 65_535, autotune: false, ..linux_profile() };
        let mut p = TcpPair::new(client, server, Some(100 * 1448), 20_000_000, Duration::from_millis(20), {
            Box::new(|_, _, _| false)
        });
        p.ep[1].set_app_data(Some(100 * 1448), false);
        // The transfer ends by 0.3 s; one more full segment, written alone at
        // 0.35 s, less than an RTO after the last data (no quick ACKs for data
        // after a silence).
        p.run(Duration::from_millis(340));
        assert_eq!(p.ep[0].delivered(), 100 * 1448);
        assert!(p.log[1].last().unwrap().0 < Instant::ZERO + Duration::from_millis(300));
        let t = Instant::ZERO + Duration::from_millis(350);
        p.ep[1].set_app_data(Some(101 * 1448), false);
        p.kick_at(1, t);
        let acks_before = p.log[0].len();
        p.run(Duration::from_secs(8));
        let seg = p.log[1].iter().rev().find(|l| l.2 > 0).unwrap().0;
        let ack = p.log[0][acks_before..].first().expect("the client acknowledged").0;
        let arrival = seg + Duration::from_millis(20) + Duration::transmission(1500, 20_000_000);
        let waited = ack - arrival;
        // Chunk: the lone segment ends its chunk (PSH) and the data; segment: PSH too.
        assert!(waited < Duration::from_millis(1), "{push:?}: acknowledged {waited:?} after it arrived");
    }
    // Without PSH on it (a lone segment in the middle of a chunk is rare: the
    // unit test in `delack.rs` covers the flag), the receiver's delayed ACK:
    // checked there.
}

/// Linux's compressed SACKs: with a hole, the first three duplicate ACKs go at
/// once (the sender's fast retransmit still sees three), later ones are held
/// up to min(1 ms, RTT/20) and sent as one; the receiver counts the ACKs it
/// never sent alone (`TCPAckCompressed`). Off, every out-of-order segment is
/// acknowledged at once.
#[test]
fn compressed_sacks_hold_the_later_duplicate_acks() {
    let mut counts = vec![];
    for nr in [44, 0] {
        let client = TcpConfig { comp_sack_nr: nr, ..linux_profile() };
        let drop: thinwire::testkit::DropFn = Box::new(|from, i, retx| from == 1 && !retx && i == 60);
        let mut p =
            TcpPair::new(client, linux_profile(), Some(400 * 1448), 100_000_000, Duration::from_millis(10), drop);
        p.run(Duration::from_secs(10));
        assert_eq!(p.ep[0].delivered(), 400 * 1448);
        let st = p.ep[0].stats();
        assert_eq!(p.ep[1].stats().timeouts, 0, "recovered without a timeout");
        counts.push((st.acks_compressed, st.acks_sent));
    }
    let ((comp, acks), (off, acks_off)) = (counts[0], counts[1]);
    assert_eq!(off, 0);
    assert!(comp > 0, "some ACKs were compressed");
    assert!(acks < acks_off, "fewer ACKs: {acks} against {acks_off}");
}
