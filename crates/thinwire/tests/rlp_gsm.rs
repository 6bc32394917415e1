//! GSM RLP (seed 000 §3.2, GSM 04.22): SREJ and checkpoint recovery, N2 resets that
//! lose exactly the flushed data, dropping the call; and the PPP/VJ/L2R layer above
//! it (seed 000 §5.3, §5.5).
use std::collections::VecDeque;
use thinwire::link::frame::{Frame, FrameKind};
use thinwire::link::gsm_csd::{CsdConfig, GsmCsd};
use thinwire::link::rlp_gsm::{OnN2, Rlp, RlpConfig};
use thinwire::link::Arq;
use thinwire::testkit::ArqPair;
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, TcpFlags, TcpRepr, L4};

const SLOT: Duration = Duration::from_millis(20);
const DELAY: Duration = Duration::from_millis(180);

/// Two RLP ends, one frame per 20 ms slot each way, 180 ms propagation: an RLP
/// round trip of 400 ms as in seed 000 §5.4.
struct Wire {
    rlp: [Rlp; 2],
    flight: VecDeque<(Instant, usize, Frame)>,
    t: Instant,
    idx: [u64; 2],
    log: [Vec<Frame>; 2],
    got: Vec<u8>,
}

impl Wire {
    fn new(cfg: RlpConfig) -> Wire {
        Wire {
            rlp: [Rlp::new(cfg.clone()), Rlp::new(cfg)],
            flight: VecDeque::new(),
            t: Instant::ZERO,
            idx: [0; 2],
            log: [vec![], vec![]],
            got: vec![],
        }
    }
    fn step(&mut self, lose: &mut dyn FnMut(usize, u64, Instant) -> bool) {
        while self.flight.front().is_some_and(|x| x.0 <= self.t) {
            let (at, to, f) = self.flight.pop_front().unwrap();
            self.rlp[to].on_frame(at, f);
        }
        for s in 0..2 {
            if self.rlp[s].poll_timeout().is_some_and(|x| x <= self.t) {
                self.rlp[s].handle_timeout(self.t);
            }
        }
        for s in 0..2 {
            if let Some(f) = self.rlp[s].poll_transmit(self.t) {
                let i = self.idx[s];
                self.idx[s] += 1;
                self.log[s].push(f.clone());
                if !lose(s, i, self.t) {
                    self.flight.push_back((self.t + SLOT + DELAY, 1 - s, f));
                }
            }
        }
        while let Some(c) = self.rlp[1].read() {
            self.got.extend_from_slice(&c.bytes);
        }
        self.t += SLOT;
    }
    fn run(&mut self, secs: i64, lose: &mut dyn FnMut(usize, u64, Instant) -> bool) {
        let end = self.t + Duration::from_secs(secs);
        while self.t < end {
            self.step(lose);
        }
    }
    fn count(&self, s: usize, kind: FrameKind) -> usize {
        self.log[s].iter().filter(|f| f.kind == kind).count()
    }
}

/// A stream whose every 4-byte group is its own offset / 4, so a delivered chunk
/// says where it came from (frames of 24 bytes start on a group).
fn stream(groups: u32) -> Vec<u8> {
    (0..groups).flat_map(|g| g.to_be_bytes()).collect()
}

fn write_all(r: &mut Rlp, data: &[u8]) {
    for c in data.chunks(100) {
        r.write(c, None);
    }
}

#[test]
fn clean_link_delivers_the_stream_in_order_one_frame_per_slot() {
    let mut w = Wire::new(RlpConfig::default());
    let data = stream(600); // 2400 bytes = 100 frames
    write_all(&mut w.rlp[0], &data);
    w.run(5, &mut |_, _, _| false);
    assert_eq!(w.got, data);
    assert_eq!(w.count(0, FrameKind::Data), 100);
    // 2400 bytes at 24 bytes per 20 ms: the last frame leaves after 1.98 s.
    let last = w.log[0].iter().filter(|f| f.kind == FrameKind::Data).count();
    assert_eq!(last, 100);
    assert_eq!(w.rlp[0].stats.retransmissions + w.rlp[1].stats.srej_sent + w.rlp[0].stats.polls_sent, 0);
}

#[test]
fn one_lost_frame_is_recovered_by_one_srej() {
    let mut w = Wire::new(RlpConfig::default());
    let data = stream(600);
    write_all(&mut w.rlp[0], &data);
    w.run(5, &mut |s, i, _| s == 0 && i == 10);
    assert_eq!(w.got, data);
    assert_eq!(w.rlp[1].stats.srej_sent, 1);
    assert_eq!(w.rlp[0].stats.retransmissions, 1);
    assert_eq!(w.rlp[0].stats.polls_sent, 0);
    let nack = w.log[1].iter().find(|f| f.kind == FrameKind::Nack).unwrap();
    assert_eq!(nack.seq, 10);
}

#[test]
fn a_lost_last_frame_is_recovered_by_checkpointing_after_t1() {
    // Nothing follows the last frame, so no SREJ can name it: T1 expires, the sender
    // polls, the receiver's final response says N(R) = 4, and frame 4 goes again.
    let mut w = Wire::new(RlpConfig::default());
    let data = stream(30); // 120 bytes = 5 frames
    write_all(&mut w.rlp[0], &data);
    w.run(3, &mut |s, i, _| s == 0 && i == 4);
    assert_eq!(w.got, data);
    assert_eq!(w.rlp[1].stats.srej_sent, 0);
    assert_eq!(w.rlp[0].stats.polls_sent, 1);
    assert_eq!(w.rlp[0].stats.retransmissions, 1);
    let poll_at = w.log[0].iter().position(|f| f.ctl & thinwire::link::frame::CTL_POLL != 0).unwrap();
    assert!(poll_at > 4);
}

#[test]
fn n2_plus_one_losses_of_a_frame_reset_the_link_and_lose_the_window() {
    // Frame 3 is lost every time it is sent: after N2 = 6 retransmissions the sender
    // resets the link (SABM, UA) and both sides flush; the stream goes on afterwards.
    let cfg = RlpConfig { n2: 6, ..RlpConfig::default() };
    let mut w = Wire::new(cfg);
    let data = stream(3000); // 12000 bytes
    write_all(&mut w.rlp[0], &data);
    run_dropping(&mut w, 40, |f| f.kind == FrameKind::Data && f.seq == 3 && f.tx <= 7);
    let s0 = &w.rlp[0].stats;
    assert_eq!(s0.resets, 1);
    assert!(s0.retransmissions >= 6, "the six retransmissions of frame 3");
    let f3 = w.log[0].iter().filter(|f| f.kind == FrameKind::Data && f.seq == 3).count();
    assert_eq!(f3, 7, "frame 3 sent once and retransmitted N2 times");
    assert!(w.count(0, FrameKind::Reset) >= 1 && w.count(1, FrameKind::Reset) >= 1, "SABM and UA");
    assert!(w.rlp[0].is_up() && w.rlp[1].is_up());
    check_losses_are_exactly_flushed(&w, &data);
    assert!(w.got.len() < data.len() && w.got.len() > data.len() / 2);
}

/// Runs, losing side 0's frames for which `lose` holds.
fn run_dropping(w: &mut Wire, secs: i64, lose: impl Fn(&Frame) -> bool) {
    let end = w.t + Duration::from_secs(secs);
    while w.t < end {
        let t = w.t;
        // Decide on the frame after it is logged: step with a closure that looks at the log.
        let log_len = w.log[0].len();
        w.step(&mut |_, _, _| false);
        if w.log[0].len() > log_len {
            let f = w.log[0].last().unwrap().clone();
            if lose(&f) {
                // Take it back off the air.
                let at = t + SLOT + DELAY;
                if let Some(k) = w.flight.iter().position(|x| x.0 == at && x.1 == 1) {
                    w.flight.remove(k);
                }
            }
        }
    }
}

/// Every byte of the stream is delivered once in order, or it was in a transmit
/// window a reset flushed and did not reach the receiver.
fn check_losses_are_exactly_flushed(w: &Wire, data: &[u8]) {
    let mut frame_range = std::collections::HashMap::new();
    for f in w.log[0].iter().filter(|f| f.kind == FrameKind::Data) {
        let b = &f.chunk().unwrap().bytes;
        let start = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize * 4;
        frame_range.insert(f.seq, (start, start + b.len()));
    }
    let mut flushed = vec![false; data.len()];
    for &(a, b) in &w.rlp[0].stats.flushed {
        for n in a..b {
            if let Some(&(x, y)) = frame_range.get(&n) {
                flushed[x..y].iter_mut().for_each(|v| *v = true);
            }
        }
    }
    let mut delivered = vec![false; data.len()];
    let mut last = None;
    for g in w.got.chunks(4) {
        let off = u32::from_be_bytes(g.try_into().unwrap()) as usize * 4;
        assert!(last.is_none_or(|l| off > l), "delivered out of order or twice at {off}");
        last = Some(off);
        delivered[off..off + 4].iter_mut().for_each(|v| *v = true);
    }
    for i in 0..data.len() {
        assert!(delivered[i] || flushed[i], "byte {i} lost without a flush");
    }
    let lost = delivered.iter().filter(|&&d| !d).count();
    let flushed_not_delivered = (0..data.len()).filter(|&i| flushed[i] && !delivered[i]).count();
    assert_eq!(lost, flushed_not_delivered);
}

#[test]
fn resets_on_a_bursty_channel_lose_exactly_the_flushed_data() {
    // Long fades in both directions (2-6 s) with independent losses between them.
    for seed in 1..6u64 {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut fades: Vec<(Instant, Instant)> = vec![];
        let mut t = 3_000i64;
        while t < 200_000 {
            let len = FADE_MIN + (next() % FADE_VAR) as i64;
            fades.push((Instant::ZERO + Duration::from_millis(t), Instant::ZERO + Duration::from_millis(t + len)));
            t += len + 5_000 + (next() % 20_000) as i64;
        }
        let mut w = Wire::new(RlpConfig::default());
        let data = stream(40_000);
        write_all(&mut w.rlp[0], &data);
        let mut lose =
            |_: usize, _: u64, now: Instant| fades.iter().any(|&(a, b)| now >= a && now < b) || next() % 100 < 5;
        w.run(200, &mut lose);
        w.run(60, &mut |_, _, _| false);
        assert!(w.rlp[0].stats.resets + w.rlp[1].stats.resets > 0, "seed {seed}: the fades should reset the link");
        assert!(w.rlp[0].is_up());
        assert_eq!(w.rlp[0].unframed(), 0);
        check_losses_are_exactly_flushed(&w, &data);
    }
}

#[test]
fn larger_n2_rides_out_the_same_fades() {
    let fade = |now: Instant| {
        now >= Instant::ZERO + Duration::from_secs(3) && now < Instant::ZERO + Duration::from_millis(6_500)
    };
    let mut resets = vec![];
    for n2 in [6, 20] {
        let mut w = Wire::new(RlpConfig { n2, ..RlpConfig::default() });
        let data = stream(6_000);
        write_all(&mut w.rlp[0], &data);
        w.run(60, &mut |_, _, now| fade(now));
        resets.push(w.rlp[0].stats.resets + w.rlp[1].stats.resets);
        if n2 == 20 {
            assert_eq!(w.got, data);
        }
    }
    assert!(resets[0] >= 1 && resets[1] == 0, "{resets:?}");
}

#[test]
fn drop_call_instead_of_reset() {
    let mut w = Wire::new(RlpConfig { on_n2: OnN2::DropCall, ..RlpConfig::default() });
    let data = stream(6_000);
    write_all(&mut w.rlp[0], &data);
    let fade =
        |now: Instant| now >= Instant::ZERO + Duration::from_secs(3) && now < Instant::ZERO + Duration::from_secs(8);
    w.run(60, &mut |_, _, now| fade(now));
    assert!(w.rlp[0].stats.call_dropped && !w.rlp[0].is_up());
    assert!(!w.rlp[1].is_up(), "DISC reached the peer");
    assert_eq!(w.rlp[0].stats.resets, 0);
    assert!(w.got.len() < data.len());
    assert!(w.log[0].iter().any(|f| f.kind == FrameKind::Reset && f.ctl & thinwire::link::frame::CTL_DISC != 0));
}

#[test]
fn a_silent_peer_makes_sabm_give_up_and_drop_the_call() {
    let mut w = Wire::new(RlpConfig::default());
    write_all(&mut w.rlp[0], &stream(1000));
    w.run(60, &mut |s, _, now| s == 1 || now >= Instant::ZERO + Duration::from_secs(1));
    assert_eq!(w.rlp[0].stats.resets, 1);
    assert_eq!(
        w.log[0].iter().filter(|f| f.kind == FrameKind::Reset && f.ctl & thinwire::link::frame::CTL_POLL != 0).count(),
        6,
        "SABM sent N2 times"
    );
    assert!(!w.rlp[0].is_up());
}

// ----- PPP / VJ / L2R above RLP -----

fn seg(seq: u32, len: u32) -> Packet {
    let t = TcpRepr {
        src_port: 1025,
        dst_port: 80,
        seq,
        ack: 1,
        flags: TcpFlags(TcpFlags::ACK),
        window: 8192,
        ..Default::default()
    };
    Packet::new([10, 0, 0, 1], [10, 0, 1, 2], seq as u16, L4::Tcp(t), len, 0, Instant::ZERO)
}

fn csd(vj: bool, l2r: Option<u64>, network_side: bool) -> Arq {
    GsmCsd::new(CsdConfig { vj, l2r_rate: l2r, network_side, ..CsdConfig::default() }).into()
}

fn pair(vj: bool, drop: thinwire::testkit::DropFn) -> ArqPair {
    // 6-byte headers: 30-byte frames, 20 ms at 12 kbit/s.
    ArqPair::with_header(csd(vj, None, false), csd(vj, None, true), 12_000, DELAY, 6, drop)
}

#[test]
fn ppp_and_vj_round_trip_every_packet_exactly_when_nothing_is_lost() {
    for vj in [false, true] {
        let mut p = pair(vj, Box::new(|_, _, _| false));
        let sent: Vec<Packet> = (0..40).map(|i| seg(1 + i * 460, 460)).collect();
        for s in &sent {
            p.send(0, s.clone());
        }
        p.run(Duration::from_secs(60));
        let got = &p.delivered[1];
        assert_eq!(got.len(), sent.len(), "vj {vj}");
        for (a, b) in got.iter().zip(&sent) {
            assert_eq!((&a.ip, a.l4, a.payload_len), (&b.ip, b.l4, b.payload_len));
            assert_eq!(a.emit(), b.emit());
        }
        let g = p.machine::<GsmCsd>(0);
        // 460-byte segments without options: 500 bytes + 7 of PPP (+ escapes) without VJ;
        // VJ takes the 40-byte header down to a few bytes after the first packet.
        let frames = g.rlp.stats.retransmissions;
        assert_eq!(frames, 0);
        let r = p.machine::<GsmCsd>(1);
        assert_eq!(r.stats.checksum_drops + r.stats.ppp_damaged + r.stats.vj_tossed, 0);
    }
}

#[test]
fn vj_compression_shrinks_what_goes_over_rlp() {
    let mut frames = vec![];
    for vj in [false, true] {
        let mut p = pair(vj, Box::new(|_, _, _| false));
        for i in 0..40 {
            p.send(0, seg(1 + i * 460, 460));
        }
        p.run(Duration::from_secs(60));
        frames.push(p.frames(0));
    }
    // 40 × (500 + 7) bytes ≈ 845 frames without, 40 × (460 + ~12) ≈ 787 with.
    assert!(frames[1] < frames[0] && frames[0] - frames[1] >= 40, "{frames:?}");
}

#[test]
fn l2r_flow_control_throttles_the_mobile_sender_to_the_relay_rate_with_pauses() {
    // Mobile (side 0) sends up; the network side (1) relays at 960 bytes/s.
    let mut p = ArqPair::with_header(
        csd(false, None, false),
        csd(false, Some(960), true),
        12_000,
        DELAY,
        6,
        Box::new(|_, _, _| false),
    );
    for i in 0..60 {
        p.send(0, seg(1 + i * 460, 460));
    }
    let end = p.run(Duration::from_secs(60));
    assert_eq!(p.delivered[1].len(), 60);
    let bytes = 60.0 * (500.0 + 7.0);
    let secs = end.as_secs_f64();
    let rate = bytes / secs;
    assert!(rate < 990.0 && rate > 880.0, "relay rate {rate:.0} B/s over {secs:.1} s");
    let net = p.machine::<GsmCsd>(1);
    assert!(net.stats.l2r_busy >= 3, "busy episodes {}", net.stats.l2r_busy);
}

#[test]
fn a_reset_with_vj_makes_the_receiver_drop_segments_until_an_uncompressed_one() {
    // A long fade resets the link mid-stream. Without VJ only the flushed packets are
    // lost; with VJ later deltas meet a stale base (checksum drops) or are tossed
    // after a damaged frame, and retransmissions (sent uncompressed) resynchronise.
    let mut lost = vec![];
    for vj in [false, true] {
        let mut p = pair(vj, Box::new(|_, _, _| false));
        p.add_outage(0, Instant::ZERO + Duration::from_secs(3), Instant::ZERO + Duration::from_secs(7));
        let sent: Vec<Packet> = (0..60).map(|i| seg(1 + i * 460, 460)).collect();
        for s in &sent {
            p.send(0, s.clone());
        }
        p.run(Duration::from_secs(120));
        let tx = p.machine::<GsmCsd>(0);
        assert_eq!(tx.rlp.stats.resets, 1, "vj {vj}");
        let rx = p.machine::<GsmCsd>(1);
        // Whatever arrives is intact and in order.
        let seqs: Vec<u32> = p.delivered[1].iter().map(|q| q.tcp().unwrap().seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        for q in &p.delivered[1] {
            assert!(sent.iter().any(|s| s.emit() == q.emit()));
        }
        if vj {
            assert!(rx.stats.checksum_drops + rx.stats.vj_tossed > 0);
        } else {
            assert_eq!(rx.stats.checksum_drops + rx.stats.vj_tossed, 0);
        }
        lost.push(sent.len() - seqs.len());
        // A retransmission (its sequence number goes back, so VJ sends it
        // uncompressed) puts the decompressor back on track for what follows.
        let before = p.delivered[1].len();
        p.send(0, seg(1, 460));
        for i in 60..65 {
            p.send(0, seg(1 + i * 460, 460));
        }
        p.run(Duration::from_secs(240));
        assert_eq!(p.delivered[1].len() - before, 6, "vj {vj}");
    }
    assert!(lost[1] > lost[0], "VJ loses more than the flushed packets: {lost:?}");
}

const FADE_MIN: i64 = 2_000;
const FADE_VAR: u64 = 2_000;

#[test]
fn without_error_reports_the_stale_base_fails_the_tcp_checksum() {
    // The same reset, but PPP does not tell the decompressor: deltas applied to a
    // stale base rebuild wrong headers, and the checksum (over the rebuilt header and
    // the real payload bytes) rejects them; with reports they are tossed instead.
    let mut counts = vec![];
    for toss in [true, false] {
        let mk = |net| {
            Arq::from(GsmCsd::new(CsdConfig {
                vj: true,
                vj_toss_on_error: toss,
                network_side: net,
                ..CsdConfig::default()
            }))
        };
        let mut p = ArqPair::with_header(mk(false), mk(true), 12_000, DELAY, 6, Box::new(|_, _, _| false));
        p.add_outage(0, Instant::ZERO + Duration::from_secs(3), Instant::ZERO + Duration::from_secs(7));
        for i in 0..60 {
            p.send(0, seg(1 + i * 460, 460));
        }
        p.run(Duration::from_secs(120));
        let rx = p.machine::<GsmCsd>(1);
        counts.push((rx.stats.vj_tossed, rx.stats.checksum_drops, p.delivered[1].len()));
    }
    let (tossed, ck_toss, n_toss) = counts[0];
    let (tossed_silent, ck_silent, n_silent) = counts[1];
    assert!(tossed > 0 && ck_toss == 0, "{counts:?}");
    assert!(tossed_silent == 0 && ck_silent > 0, "{counts:?}");
    assert_eq!(n_toss, n_silent, "either way the same packets are lost");
}
