//! TCP endpoint behaviour over a scripted wire (RFC 5681/6582/6675/6298/7323).
use thinwire::tcp::{TcpConfig, Variant};
use thinwire::testkit::{DropFn, TcpPair};
use thinwire::time::Duration;

const BYTES: u64 = 200_000;

fn cfg(v: Variant) -> TcpConfig {
    TcpConfig { mss: 1000, initial_window: 2, ..Default::default() }.with_variant(v)
}
fn pair(v: Variant, bytes: u64, drop: DropFn) -> TcpPair {
    TcpPair::new(cfg(v), cfg(v), Some(bytes), 2_000_000, Duration::from_millis(50), drop)
}
fn finish(p: &mut TcpPair) -> f64 {
    let end = p.run(Duration::from_secs(600));
    assert_eq!(p.ep[0].delivered(), p.ep[1].acked_bytes(), "receiver and sender disagree");
    end.as_secs_f64()
}

#[test]
fn handshake_transfer_and_close_without_loss() {
    for v in [Variant::Tahoe, Variant::Reno, Variant::NewReno, Variant::Sack] {
        let mut p = pair(v, BYTES, TcpPair::drop_none());
        finish(&mut p);
        assert_eq!(p.ep[0].delivered(), BYTES, "{v:?}");
        assert!(p.ep[0].is_closed() && p.ep[1].is_closed(), "{v:?}: both ends should complete the FIN exchange");
        let s = &p.ep[1].stats();
        assert_eq!((s.retransmits, s.timeouts, s.fast_retransmits), (0, 0, 0), "{v:?}");
        assert_eq!(p.ep[1].smss(), 1000);
        // Slow start with no loss: cwnd only grows.
        assert!(p.ep[1].cwnd() > 20 * 1000, "{v:?} cwnd {}", p.ep[1].cwnd());
    }
}

#[test]
fn single_loss_is_repaired_by_fast_retransmit() {
    for v in [Variant::Reno, Variant::NewReno, Variant::Sack] {
        let mut p = pair(v, BYTES, TcpPair::drop_data(&[30]));
        finish(&mut p);
        let s = &p.ep[1].stats();
        assert_eq!(p.ep[0].delivered(), BYTES);
        assert_eq!((s.fast_retransmits, s.timeouts, s.retransmits), (1, 0, 1), "{v:?}");
        // Window halved: ssthresh is about half the flight at the loss.
        assert!(p.ep[1].ssthresh() < 64_000, "{v:?}");
    }
}

#[test]
fn tahoe_restarts_from_one_segment_after_fast_retransmit() {
    let mut p = pair(Variant::Tahoe, BYTES, TcpPair::drop_data(&[30]));
    p.ep[1].enable_trace();
    finish(&mut p);
    let s = &p.ep[1].stats();
    assert_eq!((s.fast_retransmits, s.timeouts), (1, 0));
    let cw: Vec<i64> = std::iter::from_fn(|| p.ep[1].poll_event())
        .filter(|e| e.var == thinwire::tcp::TcpVar::Cwnd)
        .map(|e| e.value)
        .collect();
    assert!(cw.contains(&1000), "Tahoe must drop cwnd to one segment: {cw:?}");
}

#[test]
fn several_losses_in_one_window() {
    let drops = [30, 32, 34, 36];
    let run = |v| {
        let mut p = pair(v, BYTES, TcpPair::drop_data(&drops));
        let t = finish(&mut p);
        (p.ep[1].stats().clone(), t)
    };
    let (nr, t_nr) = run(Variant::NewReno);
    assert_eq!(nr.timeouts, 0, "NewReno recovers from partial ACKs without a timeout");
    assert_eq!(nr.fast_retransmits, 1);
    assert_eq!(nr.retransmits, 4);
    let (sk, t_sk) = run(Variant::Sack);
    assert_eq!(sk.timeouts, 0);
    assert_eq!(sk.retransmits, 4, "SACK retransmits exactly the lost segments");
    assert!(t_sk <= t_nr + 1e-9, "SACK repairs several holes per RTT: {t_sk} vs {t_nr}");
    let (rn, _) = run(Variant::Reno);
    assert!(rn.timeouts + rn.fast_retransmits > 1, "Reno needs several recoveries or a timeout: {rn:?}");
}

#[test]
fn lost_retransmission_needs_a_timeout_and_backs_off() {
    // Lose segment 30 and its first two retransmissions.
    let mut count = 0;
    let drop: DropFn = Box::new(move |from, i, retx| {
        if from != 1 {
            return false;
        }
        if i == 30 {
            return true;
        }
        if retx && count < 2 {
            count += 1;
            return true;
        }
        false
    });
    let mut p = pair(Variant::NewReno, BYTES, drop);
    finish(&mut p);
    assert_eq!(p.ep[0].delivered(), BYTES);
    assert!(p.ep[1].stats().timeouts >= 1);
    // The same sequence number was sent 4 times; the gaps between the timeout-driven
    // retransmissions double (RFC 6298 §5.5).
    let seq = p.log[1].iter().filter(|x| x.3).map(|x| x.1).next().unwrap();
    let times: Vec<f64> = p.log[1].iter().filter(|x| x.1 == seq && x.2 > 0).map(|x| x.0.as_secs_f64()).collect();
    assert_eq!(times.len(), 4, "{times:?}");
    let g1 = times[2] - times[1];
    let g2 = times[3] - times[2];
    assert!((g2 / g1 - 2.0).abs() < 0.05, "backoff should double: {times:?}");
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    let mut p = pair(Variant::NewReno, BYTES, TcpPair::drop_none());
    finish(&mut p);
    let data = p.ep[1].stats().data_segments_sent as f64;
    let acks = p.ep[0].stats().acks_sent as f64;
    assert!(acks > 0.45 * data && acks < 0.65 * data, "acks {acks} for {data} segments");
    let mut c = cfg(Variant::NewReno);
    c.delack_count = 1;
    let mut p =
        TcpPair::new(c, cfg(Variant::NewReno), Some(BYTES), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
    finish(&mut p);
    assert!(p.ep[0].stats().acks_sent as f64 >= 0.95 * p.ep[1].stats().data_segments_sent as f64);
}

#[test]
fn timestamps_sample_every_ack_and_shrink_payload() {
    let mut c = cfg(Variant::NewReno);
    c.timestamps = true;
    let mut p = TcpPair::new(c, c, Some(BYTES), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
    finish(&mut p);
    assert_eq!(p.ep[1].smss(), 988, "12 bytes of timestamp option come out of the MSS");
    let with_ts = p.ep[1].stats().rtt_samples;
    let mut p2 = pair(Variant::NewReno, BYTES, TcpPair::drop_none());
    finish(&mut p2);
    let without = p2.ep[1].stats().rtt_samples;
    assert!(with_ts > 5 * without, "RTTM samples most ACKs: {with_ts} vs {without}");
    let srtt = p.ep[1].rtt.srtt.unwrap().as_secs_f64();
    // Between the base RTT (100 ms) and the base RTT plus a full 64 KiB window
    // queued at the 2 Mbit/s sender (262 ms).
    assert!(srtt > 0.1 && srtt < 0.1 + 65536.0 * 8.0 / 2e6 + 0.01, "srtt {srtt}");
}

#[test]
fn window_scaling_lifts_the_64k_limit() {
    let big = |ws: bool| {
        let mut c =
            TcpConfig { mss: 1460, rcv_buf: 1 << 20, snd_buf: 1 << 20, window_scaling: ws, ..Default::default() };
        c.initial_window = 4;
        let mut p = TcpPair::new(c, c, Some(5_000_000), 20_000_000, Duration::from_millis(50), TcpPair::drop_none());
        p.run(Duration::from_secs(100)).as_secs_f64()
    };
    let (with, without) = (big(true), big(false));
    // Without scaling the window is 64 KiB per 100 ms RTT ≈ 5 Mbit/s; with it, 20 Mbit/s.
    assert!(without > 2.5 * with, "with {with} s, without {without} s");
}

#[test]
fn sequence_numbers_wrap() {
    // The server's ISS is 2^32 − 7296, so a 200 kB transfer crosses the wrap.
    let mut p = pair(Variant::Sack, BYTES, TcpPair::drop_data(&[10, 11]));
    finish(&mut p);
    assert_eq!(p.ep[0].delivered(), BYTES);
}

#[test]
fn lost_syn_and_syn_ack_are_retransmitted_after_the_initial_rto() {
    for from in [0usize, 1] {
        let drop: DropFn = Box::new(move |f, i, _| f == from && i == 0);
        let mut p = pair(Variant::NewReno, 10_000, drop);
        finish(&mut p);
        assert_eq!(p.ep[0].delivered(), 10_000);
        // The first data segment leaves only after the 1 s initial RTO fired.
        let first_data = p.log[1].iter().find(|x| x.2 > 0).unwrap().0.as_secs_f64();
        assert!(first_data > 1.0 && first_data < 1.4, "from {from}: {first_data}");
        assert_eq!(p.ep[from].stats().timeouts, 1);
    }
}

#[test]
fn fin_arriving_beyond_a_hole_is_kept_until_the_hole_fills() {
    // 20 segments; segment 17 is lost, and 18, 19, 20 and the FIN arrive beyond the
    // hole. Fast retransmit repairs it; the FIN held by the receiver is then
    // acknowledged, so it never needs to be sent again.
    let bytes = 20_000;
    for v in [Variant::NewReno, Variant::Sack] {
        let mut p = pair(v, bytes, TcpPair::drop_data(&[17]));
        finish(&mut p);
        assert_eq!(p.ep[0].delivered(), bytes);
        assert!(p.ep[0].is_closed() && p.ep[1].is_closed());
        assert_eq!((p.ep[1].stats().fast_retransmits, p.ep[1].stats().timeouts), (1, 0), "{v:?}");
        let fins = p.log[1].iter().filter(|x| x.1 == bytes as u32 + 1 && x.2 == 0).count();
        assert_eq!(fins, 1, "{v:?}: {:?}", p.log[1]);
    }
}

#[test]
fn sack_sender_retransmits_at_once_on_entering_recovery_without_sack_blocks() {
    // RFC 6675 §5 (4.3): entering recovery on three duplicate ACKs retransmits the
    // first unacknowledged segment at once, even when the duplicates carry no SACK
    // blocks (here the receiver does not do SACK), instead of waiting for the RTO.
    let server = cfg(Variant::Sack);
    let client = TcpConfig { sack: false, ..cfg(Variant::Reno) };
    let mut p =
        TcpPair::new(client, server, Some(BYTES), 2_000_000, Duration::from_millis(50), TcpPair::drop_data(&[30]));
    finish(&mut p);
    let s = &p.ep[1].stats();
    assert_eq!(p.ep[0].delivered(), BYTES);
    assert_eq!((s.fast_retransmits, s.timeouts, s.retransmits), (1, 0, 1));
}

/// Segments the server sent at the instant of its `k`-th data send burst (the first
/// data segments of a flight leave together).
fn burst_at(p: &TcpPair, from: usize) -> usize {
    let data: Vec<_> = p.log[1].iter().filter(|s| s.2 > 0).skip(from).collect();
    let t0 = data[0].0;
    data.iter().take_while(|s| s.0 == t0).count()
}

#[test]
fn a_small_initial_receive_window_limits_the_first_flight_and_grows() {
    // Linux-like receiver (seed 003): 5392 bytes offered at first, two segments more
    // per data segment received. A sender allowed 10 segments sends only 5.
    let server = TcpConfig { mss: 1000, initial_window: 10, ..Default::default() };
    for (initial, first) in [(Some(5392), 5), (None, 10)] {
        let client = TcpConfig { mss: 1000, rcv_wnd_initial: initial, ..Default::default() };
        let mut p =
            TcpPair::new(client, server, Some(100_000), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
        finish(&mut p);
        assert_eq!(burst_at(&p, 0), first, "initial window {initial:?}");
        assert_eq!(p.ep[0].delivered(), 100_000);
    }
}

#[test]
fn slow_start_restarts_after_an_idle_period_longer_than_the_rto() {
    use thinwire::tcp::IdleRestart;
    for (ssr, how, restart) in
        [(true, IdleRestart::Rfc5681, 2usize), (true, IdleRestart::Linux, 2), (false, IdleRestart::Rfc5681, 0)]
    {
        let c = TcpConfig {
            mss: 1000,
            initial_window: 2,
            slow_start_after_idle: ssr,
            idle_restart: how,
            ..Default::default()
        };
        let mut p = TcpPair::new(c, c, Some(60_000), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
        p.ep[1].set_app_data(Some(60_000), false);
        p.run(Duration::from_secs(20));
        assert_eq!(p.ep[0].delivered(), 60_000);
        let before = p.ep[1].cwnd();
        let sent = p.log[1].iter().filter(|s| s.2 > 0).count();
        p.ep[1].set_app_data(Some(120_000), false);
        p.kick_at(1, thinwire::time::Instant::ZERO + Duration::from_secs(20));
        p.run(Duration::from_secs(40));
        assert_eq!(p.ep[0].delivered(), 120_000);
        let burst = burst_at(&p, sent);
        if restart > 0 {
            assert_eq!(burst, restart, "restart window");
        } else {
            assert!(burst as u64 > 2 && before > 4_000, "burst {burst}, cwnd {before}");
        }
    }
}

/// `idle_restart = "linux"`, Linux `tcp_cwnd_restart` (RFC 2861 §3, the same in
/// Linux 2.4; RFC 5681's immediate restart is the test above): after an idle
/// period longer than the RTO the window halves once per RTO of idleness, down to
/// the restart window min(IW, cwnd), and ssthresh keeps three quarters of the
/// window (`tcp_current_ssthresh`). An idle period between one and two RTOs
/// (1.5 s against the 1 s minimum RTO) halves it once; twenty seconds take it
/// down to the restart window.
#[test]
fn an_idle_period_halves_the_window_once_per_rto_down_to_the_restart_window() {
    let mss = 1000u64;
    for idle in [1_500, 2_500, 20_000] {
        let c = TcpConfig {
            mss: mss as u32,
            initial_window: 2,
            slow_start_after_idle: true,
            idle_restart: thinwire::tcp::IdleRestart::Linux,
            ..Default::default()
        };
        let mut p = TcpPair::new(c, c, Some(60_000), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
        p.ep[1].set_app_data(Some(60_000), false);
        p.run(Duration::from_secs(20));
        assert_eq!(p.ep[0].delivered(), 60_000);
        let before = p.ep[1].cwnd() / mss;
        let last = p.log[1].iter().rfind(|s| s.2 > 0).unwrap().0;
        let sent = p.log[1].iter().filter(|s| s.2 > 0).count();
        p.ep[1].set_app_data(Some(120_000), false);
        p.kick_at(1, last + Duration::from_millis(idle));
        p.run(Duration::from_secs(40));
        assert_eq!(p.ep[0].delivered(), 120_000);
        let want = match idle {
            1_500 => before / 2,
            2_500 => before / 4,
            _ => 2,
        };
        assert!(before >= 16, "a window to halve: {before} segments");
        assert_eq!(burst_at(&p, sent) as u64, want, "idle {idle} ms, window before {before}");
        assert!(p.ep[1].ssthresh() >= (before / 2 + before / 4) * mss, "idle {idle} ms");
    }
}

/// A controller that sets the window itself on every ACK (BBR: the kernel's
/// `cong_control` hook) gets no restart after idle: `tcp_slow_start_after_idle_check`
/// skips it. CUBIC's window after the same idle period is the restart window.
#[test]
fn bbr_keeps_its_window_through_an_idle_period() {
    use thinwire::tcp::CcKind;
    let mss = 1000u64;
    for (cc, restarts) in [(CcKind::Cubic, true), (CcKind::Bbr, false)] {
        let c = TcpConfig { mss: mss as u32, initial_window: 2, slow_start_after_idle: true, cc, ..Default::default() };
        let mut p = TcpPair::new(c, c, Some(60_000), 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
        p.ep[1].set_app_data(Some(60_000), false);
        p.run(Duration::from_secs(20));
        let (before, ss) = (p.ep[1].cwnd(), p.ep[1].ssthresh());
        assert!(before > 2 * mss, "{cc:?}: {before}");
        let last = p.log[1].iter().rfind(|s| s.2 > 0).unwrap().0;
        p.ep[1].set_app_data(Some(120_000), false);
        let at = last + Duration::from_secs(20);
        p.kick_at(1, at);
        // Just after the new data's first segments, before any ACK of them.
        p.run(at - thinwire::time::Instant::ZERO + Duration::from_millis(1));
        let sent_now = p.log[1].iter().filter(|s| s.2 > 0 && s.0 >= at).count();
        assert!(sent_now > 0, "{cc:?}: the new data has started");
        let after = p.ep[1].cwnd();
        assert_eq!(after, if restarts { 2 * mss } else { before }, "{cc:?}");
        if !restarts {
            assert_eq!(p.ep[1].ssthresh(), ss, "{cc:?}: no restart at all");
        }
    }
}

/// A BBR sender (segments of `mss`) that has sent `first` bytes over 2 Mbit/s
/// with 50 ms each way, run for `secs`: the pair and the time it stopped at.
fn bbr_transfer(mss: u64, bytes: Option<u64>, first: u64, secs: i64) -> (TcpPair, thinwire::time::Instant) {
    let c = TcpConfig { mss: mss as u32, cc: thinwire::tcp::CcKind::Bbr, ..Default::default() };
    let mut p = TcpPair::new(c, c, bytes, 2_000_000, Duration::from_millis(50), TcpPair::drop_none());
    p.ep[1].set_app_data(Some(first), false);
    let end = p.run(Duration::from_secs(secs));
    (p, end)
}

/// Linux `bbr_cwnd_event(CA_EVENT_TX_START)`: a BBR sender whose application ran
/// dry (`tcp_rate_check_app_limited` at its write) restarts after idle pacing at
/// its bandwidth estimate itself (gain 1, not PROBE_BW's cycle), and an idle
/// period longer than the minimum RTT's 10 s window does not send it into
/// PROBE_RTT (window 4): not on the request that arrives with nothing
/// outstanding (`tcp_ack`'s `no_queue`), nor on the first ACK of the new data
/// (that waits until data is delivered).
#[test]
fn bbr_restarts_from_idle_at_its_estimate_and_not_in_probe_rtt() {
    let mss = 1000u64;
    // Transfers that end in different phases of PROBE_BW's gain cycle.
    let mut probing = 0;
    for first in (1_000_000..1_500_000).step_by(50_000) {
        let (mut p, _) = bbr_transfer(mss, Some(2_000_000), first, 30);
        let (bw, mode) = p.ep[1].bbr_state().unwrap();
        assert_eq!(mode, "probe_bw", "settled before the idle period");
        probing += (p.ep[1].pacing_rate() != Some(bw)) as u32;
        let last = p.log[1].iter().rfind(|s| s.2 > 0).unwrap().0;
        let at = last + Duration::from_secs(20);
        // A request reaches the idle sender first (an ACK with nothing
        // outstanding: no rate sample, no `cong_control`), then it writes.
        p.ep[0].set_app_data(Some(100), false);
        p.kick_at(0, at - Duration::from_millis(200));
        p.run(at - thinwire::time::Instant::ZERO);
        assert_eq!(p.ep[1].bbr_state().unwrap().1, "probe_bw", "{first}: the request did not start PROBE_RTT");
        p.ep[1].set_app_data(Some(first + 100_000), false);
        p.kick_at(1, at);
        p.run(at - thinwire::time::Instant::ZERO + Duration::from_millis(1));
        assert!(p.log[1].iter().any(|s| s.2 > 0 && s.0 >= at), "the new data has started");
        assert_eq!(p.ep[1].pacing_rate(), Some(bw), "{first}: paced at the estimate, gain 1");
        // One round trip later: the first ACKs of the new data came back.
        p.run(at - thinwire::time::Instant::ZERO + Duration::from_millis(160));
        assert!(p.log[0].iter().any(|s| s.0 > at), "the receiver acknowledged the new data");
        let (_, mode) = p.ep[1].bbr_state().unwrap();
        assert_ne!(mode, "probe_rtt", "{first}: an idle restart does not probe the RTT");
        assert!(p.ep[1].cwnd() > 4 * mss, "{first}: {}", p.ep[1].cwnd());
    }
    assert!(probing > 0, "some transfers end while probing (gain 5/4 or 3/4)");
}

/// `bbr_cwnd_event` in PROBE_RTT: a sender whose application ran dry while it
/// probed the RTT (window 4 segments) and writes again after the probe's 200 ms
/// leaves PROBE_RTT at once with its window before the probe
/// (`bbr_check_probe_rtt_done`), before the new data goes out.
#[test]
fn bbr_leaves_probe_rtt_when_it_restarts_from_idle() {
    let mss = 1000u64;
    let mut found = 0;
    for first in (2_000_000..2_500_000).step_by(10_000) {
        let (mut p, end) = bbr_transfer(mss, Some(4_000_000), first, 40);
        if p.ep[1].bbr_state().unwrap().1 != "probe_rtt" {
            continue;
        }
        found += 1;
        assert_eq!(p.ep[1].cwnd(), 4 * mss, "{first}: probing the RTT");
        let last = p.log[1].iter().rfind(|s| s.2 > 0).unwrap().0;
        let at = (last + Duration::from_secs(1)).max(end);
        p.ep[1].set_app_data(Some(first + 100_000), false);
        p.kick_at(1, at);
        p.run(at - thinwire::time::Instant::ZERO + Duration::from_millis(1));
        assert_ne!(p.ep[1].bbr_state().unwrap().1, "probe_rtt", "{first}");
        assert!(p.ep[1].cwnd() > 4 * mss, "{first}: the window before the probe, {}", p.ep[1].cwnd());
        // Paced, but not held to the probe's 4 segments until the first ACK.
        p.run(at - thinwire::time::Instant::ZERO + Duration::from_millis(90));
        let sent = p.log[1].iter().filter(|s| s.2 > 0 && s.0 >= at).count();
        assert!(sent > 4, "{first}: more than the probe's 4 segments before the first ACK: {sent}");
    }
    assert!(found > 0, "some transfer ends while probing the RTT");
}

#[test]
fn a_clamped_window_is_used_from_the_start_and_kept_through_losses() {
    // Seed 003's "TCP clamp": 10 segments at once, no slow start, and neither fast
    // retransmit nor a timeout reduces the window.
    let mut c = cfg(Variant::Reno);
    c.cwnd_clamp = Some(10_000);
    let client = cfg(Variant::Reno);
    let mut p = TcpPair::new(
        client,
        c,
        Some(BYTES),
        2_000_000,
        Duration::from_millis(50),
        TcpPair::drop_data(&[30, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69]),
    );
    finish(&mut p);
    assert_eq!(burst_at(&p, 0), 10);
    assert_eq!(p.ep[1].cwnd(), 10_000);
    assert!(p.ep[1].stats().retransmits >= 11);
    assert_eq!(p.ep[0].delivered(), BYTES);
}

/// Real bytes through the endpoint's byte buffers: both ends write (the server
/// 300 KB through a 16 KB send buffer, the client 50 KB), segments are lost in both
/// directions, and each side reads exactly the other's bytes, then both close.
#[test]
fn byte_buffers_carry_real_data_both_ways_through_losses() {
    for v in [Variant::NewReno, Variant::Sack] {
        let mut rng = thinwire::rng::Rng::stream(5, 0, "tcp.bytes");
        let down: Vec<u8> = (0..300_000).map(|_| rng.next_u64() as u8).collect();
        let up: Vec<u8> = (0..50_000).map(|_| rng.next_u64() as u8).collect();
        let c = TcpConfig { snd_buf: 16_000, ..cfg(v) };
        let drop: DropFn = Box::new(|from, i, _| (from == 1 && i % 37 == 5) || (from == 0 && i % 23 == 3));
        let mut p = TcpPair::new(c, c, None, 2_000_000, Duration::from_millis(50), drop);
        p.send_bytes(1, &down, true);
        p.send_bytes(0, &up, true);
        p.run(Duration::from_secs(600));
        assert!(p.dropped[0] > 0 && p.dropped[1] > 0);
        assert!(p.received[0] == down, "{v:?}: client got {} of {} bytes, or others", p.received[0].len(), down.len());
        assert!(p.received[1] == up, "{v:?}: server got {} of {} bytes, or others", p.received[1].len(), up.len());
        assert!(p.ep[0].is_closed() && p.ep[1].is_closed(), "{v:?}");
        assert_eq!((p.ep[0].unacked(), p.ep[1].unacked()), (0, 0), "everything acknowledged is released");
    }
}

/// Every congestion controller with every loss recovery (the registries' `ALL`):
/// a transfer with losses completes, its losses repaired, both ends closed.
#[test]
fn every_controller_with_every_recovery_repairs_losses() {
    use thinwire::tcp::{CcKind, RecoveryKind};
    for &cc in CcKind::ALL {
        for &recovery in RecoveryKind::ALL {
            let c = TcpConfig { mss: 1000, cc, recovery, sack: recovery.uses_sack(), ..Default::default() };
            let drop = TcpPair::drop_data(&[30, 31, 90, 160]);
            let mut p = TcpPair::new(c, c, Some(BYTES), 2_000_000, Duration::from_millis(50), drop);
            finish(&mut p);
            let what = format!("{} + {}", cc.name(), recovery.name());
            assert_eq!(p.ep[0].delivered(), BYTES, "{what}");
            assert!(p.ep[0].is_closed() && p.ep[1].is_closed(), "{what}");
            assert!(p.ep[1].stats().retransmits >= 4, "{what}: {:?}", p.ep[1].stats());
            assert_eq!((p.ep[1].cc_kind(), p.ep[1].recovery_kind()), (cc, recovery));
        }
    }
}

/// CUBIC's reduction at a fast retransmit: ssthresh = ⌊cwnd·717/1024⌋ packets
/// (β ≈ 0.7, the kernel's integers), where Reno halves the flight.
#[test]
fn cubic_reduces_to_seven_tenths_at_a_fast_retransmit() {
    use thinwire::tcp::{CcKind, TcpVar};
    let c = TcpConfig { mss: 1000, cc: CcKind::Cubic, ..Default::default() };
    let mut p = TcpPair::new(c, c, Some(BYTES), 2_000_000, Duration::from_millis(50), TcpPair::drop_data(&[60]));
    p.ep[1].enable_trace();
    finish(&mut p);
    let vars = std::iter::from_fn(|| p.ep[1].poll_event()).collect::<Vec<_>>();
    let fr = vars.iter().position(|e| e.var == TcpVar::FastRetransmit).expect("a fast retransmit");
    let cwnd_before = vars[..fr].iter().rev().find(|e| e.var == TcpVar::Cwnd).unwrap().value;
    let ssthresh = vars[fr..].iter().find(|e| e.var == TcpVar::Ssthresh).unwrap().value;
    assert_eq!(ssthresh, (cwnd_before / 1000 * 717 / 1024) * 1000, "cwnd before {cwnd_before}");
}
