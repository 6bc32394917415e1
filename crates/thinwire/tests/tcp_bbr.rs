//! BBR v1 (`tcp/cc/bbr.rs`, as Linux's `tcp_bbr.c`) and the pacing it needs, over
//! the scripted 2 Mbit/s, 100 ms RTT path of the test harness (an unlimited FIFO:
//! a window beyond the BDP only queues).
use thinwire::tcp::rtt::RtoKind;
use thinwire::tcp::{CcKind, RecoveryKind, TcpConfig, TcpVar};
use thinwire::testkit::{DropFn, TcpPair};
use thinwire::time::{Duration, Instant};

fn cfg() -> TcpConfig {
    TcpConfig { mss: 1000, initial_window: 10, sack: true, rcv_buf: 4 << 20, snd_buf: 4 << 20, ..Default::default() }
}
fn linux(cc: CcKind) -> TcpConfig {
    TcpConfig { cc, recovery: RecoveryKind::Rack, rto: RtoKind::Linux, min_rto: Duration::from_millis(200), ..cfg() }
}
fn pair(server: TcpConfig, bytes: u64, drop: DropFn) -> TcpPair {
    TcpPair::new(cfg(), server, Some(bytes), 2_000_000, Duration::from_millis(50), drop)
}
/// Payload bytes per second through the 2 Mbit/s path (1000 of every 1040 bytes).
const BOTTLENECK: f64 = 2e6 / 8.0 * 1000.0 / 1040.0;

/// Startup finds the bottleneck, drains the queue it made, and BBR settles in
/// PROBE_BW with its estimate within 5 % of the path's rate and the RTT near the
/// propagation delay (little queue), where CUBIC keeps the FIFO full.
#[test]
fn bbr_finds_the_bottleneck_and_keeps_the_queue_short() {
    let run = |cc| {
        let mut p = pair(linux(cc), 3_000_000, TcpPair::drop_none());
        p.ep[1].enable_trace();
        p.run(Duration::from_secs(8));
        let srtt = p.ep[1].rtt.srtt.unwrap().as_secs_f64();
        let state = p.ep[1].bbr_state();
        p.run(Duration::from_secs(60));
        assert_eq!(p.ep[0].delivered(), 3_000_000);
        (srtt, state)
    };
    let (srtt, state) = run(CcKind::Bbr);
    let (bw, mode) = state.unwrap();
    assert_eq!(mode, "probe_bw");
    assert!((bw as f64 / BOTTLENECK - 1.0).abs() < 0.05, "estimate {bw} B/s against {BOTTLENECK:.0}");
    // Propagation 100 ms plus a segment's serialization; BBR's probing adds a little.
    assert!(srtt < 0.150, "BBR's smoothed RTT {srtt}");
    let (srtt_cubic, _) = run(CcKind::Cubic);
    assert!(srtt_cubic > 2.0 * srtt, "CUBIC fills the FIFO: {srtt_cubic} against {srtt}");
}

/// Pacing: once BBR is out of STARTUP its data segments leave spaced by about
/// their length at the pacing rate — no back-to-back bursts as an ACK frees the
/// window — where CUBIC sends bursts.
#[test]
fn bbr_paces_its_segments() {
    let gaps = |cc| {
        let mut p = pair(linux(cc), 2_000_000, TcpPair::drop_none());
        p.run(Duration::from_secs(60));
        let sends: Vec<Instant> = p.log[1].iter().filter(|s| s.2 > 0 && s.0.as_secs_f64() > 3.0).map(|s| s.0).collect();
        let g: Vec<f64> = sends.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        g.iter().filter(|&&x| x < 0.0005).count() as f64 / g.len() as f64
    };
    let bbr = gaps(CcKind::Bbr);
    let cubic = gaps(CcKind::Cubic);
    assert!(bbr < 0.05, "BBR: {bbr:.2} of its gaps are back to back");
    assert!(cubic > 0.3, "CUBIC: {cubic:.2}");
    assert!(pair(linux(CcKind::Cubic), 1000, TcpPair::drop_none()).ep[1].pacing_rate().is_none());
}

/// PROBE_RTT: after 10 s without a lower RTT sample BBR holds its window at 4
/// segments for at least 200 ms and a round trip, then restores it.
#[test]
fn bbr_probes_the_rtt_every_ten_seconds() {
    let mut p = pair(linux(CcKind::Bbr), 6_000_000, TcpPair::drop_none());
    p.ep[1].enable_trace();
    p.run(Duration::from_secs(16));
    let vars = std::iter::from_fn(|| p.ep[1].poll_event()).collect::<Vec<_>>();
    let cwnd: Vec<(f64, i64)> =
        vars.iter().filter(|v| v.var == TcpVar::Cwnd).map(|v| (v.at.as_secs_f64(), v.value)).collect();
    // The trace holds changes: the window drops to 4 segments, stays, then rises.
    let i = cwnd.iter().position(|c| c.0 > 5.0 && c.1 <= 4000).expect("no PROBE_RTT");
    let first = cwnd[i].0;
    let (last, after) = cwnd[i..].iter().find(|c| c.1 > 4000).copied().expect("the window never came back");
    assert!((9.0..12.5).contains(&first), "PROBE_RTT began at {first}");
    assert!(last - first >= 0.2, "held for {:.3} s", last - first);
    assert!(last - first < 0.6, "held for {:.3} s", last - first);
    assert!(after > 20_000, "the window comes back: {after}");
}

/// BBR v1 does not take random loss for congestion: with 1 % of the data
/// segments lost it keeps most of the path's rate, where CUBIC's reductions cost
/// it far more.
#[test]
fn bbr_keeps_its_rate_through_random_loss() {
    let rate = |cc| {
        let mut lcg = 12345u64;
        let drop: DropFn = Box::new(move |from, _, _| {
            lcg = lcg.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            from == 1 && (lcg >> 33).is_multiple_of(100)
        });
        let mut p = pair(linux(cc), 4_000_000, drop);
        let end = p.run(Duration::from_secs(300));
        assert_eq!(p.ep[0].delivered(), 4_000_000);
        4e6 / end.as_secs_f64()
    };
    let (bbr, cubic) = (rate(CcKind::Bbr), rate(CcKind::Cubic));
    assert!(bbr > 0.8 * BOTTLENECK, "BBR {bbr:.0} B/s");
    assert!(bbr > 1.3 * cubic, "BBR {bbr:.0} against CUBIC {cubic:.0} B/s");
}
