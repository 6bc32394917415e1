//! Link-layer protocols over a scripted wire: raw, SR (seed 002 §IV), ASR (§V).
use thinwire::link::{
    raw::Raw,
    sr::{Sr, SrConfig},
    Arq,
};
use thinwire::testkit::{ArqPair, DropFn};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

fn pkt(ident: u16, size: u32) -> Packet {
    Packet::new(
        [10, 0, 0, 1],
        [10, 0, 1, 2],
        ident,
        L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }),
        size - 28,
        0,
        Instant::ZERO,
    )
}
fn sr(cfg: SrConfig) -> Arq {
    Arq::Sr(Box::new(Sr::new(cfg)))
}
fn stats(a: &Arq) -> thinwire::link::sr::SrStats {
    match a {
        Arq::Sr(s) => s.stats.clone(),
        _ => panic!(),
    }
}
fn sr_ref(a: &Arq) -> &Sr {
    match a {
        Arq::Sr(s) => s,
        _ => panic!(),
    }
}
/// Drops the listed frame indices sent by side `from`.
fn drop_from(from: usize, list: &[u64]) -> DropFn {
    let l = list.to_vec();
    Box::new(move |s, i, _| s == from && l.contains(&i))
}

fn transfer(a: Arq, b: Arq, n: u16, size: u32, drop: DropFn) -> ArqPair {
    let mut p = ArqPair::new(a, b, 64_000, Duration::from_millis(50), drop);
    for i in 0..n {
        p.send(0, pkt(i, size));
    }
    p.run(Duration::from_secs(3600));
    p
}
fn idents(p: &ArqPair) -> Vec<u16> {
    p.delivered[1].iter().map(|p| p.ident() as u16).collect()
}

#[test]
fn raw_loses_the_packet_of_a_lost_frame() {
    let p = transfer(Arq::Raw(Raw::new(250)), Arq::Raw(Raw::new(250)), 10, 600, drop_from(0, &[4]));
    // 600-byte packets are 3 frames each; frame 4 belongs to packet 1.
    assert_eq!(idents(&p), vec![0, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn sr_without_loss_delivers_in_order_with_delayed_acks() {
    let p = transfer(sr(SrConfig::default()), sr(SrConfig::default()), 40, 250, Box::new(|_, _, _| false));
    assert_eq!(idents(&p), (0..40).collect::<Vec<_>>());
    let s = stats(p.side(0));
    assert_eq!((s.retransmissions, s.timeouts), (0, 0));
    // 40 frames of 31.75 ms = 1.27 s; with a 500 ms ACK delay the receiver sends a
    // handful of standalone ACKs, not one per frame.
    let r = stats(p.side(1));
    assert!(r.acks_sent >= 2 && r.acks_sent <= 5, "acks {}", r.acks_sent);
}

#[test]
fn sr_nack_repairs_a_loss_before_the_timeout() {
    let p = transfer(sr(SrConfig::default()), sr(SrConfig::default()), 20, 250, drop_from(0, &[5]));
    assert_eq!(idents(&p), (0..20).collect::<Vec<_>>());
    let (s, r) = (stats(p.side(0)), stats(p.side(1)));
    assert_eq!((s.retransmissions, s.timeouts, r.nacks_sent), (1, 0, 1));
}

#[test]
fn sr_lost_nack_is_covered_by_the_timeout() {
    // Receiver side 1's first frame is the NACK for frame 5.
    let mut p = ArqPair::new(
        sr(SrConfig::default()),
        sr(SrConfig::default()),
        64_000,
        Duration::from_millis(50),
        Box::new(|s, i, _| (s == 0 && i == 5) || (s == 1 && i == 0)),
    );
    for i in 0..20 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_secs(60));
    assert_eq!(idents(&p), (0..20).collect::<Vec<_>>());
    assert!(stats(p.side(0)).timeouts >= 1);
}

#[test]
fn sr_multireject_nacks_a_frame_again_when_its_retransmission_is_lost() {
    // Frame 5 is lost, and so is its retransmission (the first retransmitted frame).
    let mut lost_retx = false;
    let drop: DropFn = Box::new(move |s, i, retx| {
        if s != 0 {
            return false;
        }
        if i == 5 {
            return true;
        }
        if retx && !lost_retx {
            lost_retx = true;
            return true;
        }
        false
    });
    let cfg =
        SrConfig { timeout: Duration::from_secs(30), renack: Some(Duration::from_millis(300)), ..Default::default() };
    let mut p = ArqPair::new(sr(cfg), sr(cfg), 64_000, Duration::from_millis(50), drop);
    for i in 0..200 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_secs(600));
    assert_eq!(idents(&p), (0..200).collect::<Vec<_>>());
    assert_eq!(stats(p.side(0)).timeouts, 0, "recovered by a second NACK, not by the (30 s) timer");
    assert_eq!(stats(p.side(1)).nacks_sent, 2);
}

#[test]
fn sr_never_exceeds_its_window() {
    let cfg = SrConfig { window: 4, ..Default::default() };
    let mut p = ArqPair::new(sr(cfg), sr(cfg), 64_000, Duration::from_millis(500), Box::new(|_, _, _| false));
    for i in 0..20 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_millis(400));
    assert_eq!(sr_ref(p.side(0)).outstanding(), 4);
    assert_eq!(p.frames(0), 4, "only a window's worth before the first ACK can return");
    p.run(Duration::from_secs(60));
    assert_eq!(idents(&p), (0..20).collect::<Vec<_>>());
}

#[test]
fn asr_timeout_follows_alpha_srtt_plus_beta_srttvar() {
    // Constant RTT: srttvar decays towards 0 and srtt towards the sample, so the
    // timeout tends to α·srtt.
    for (a, b) in [(1u32, 4u32), (3, 2), (4, 0)] {
        let cfg = SrConfig { adaptive: Some((a, b)), ack_delay: Duration::ZERO, ..Default::default() };
        let p = transfer(sr(cfg), sr(cfg), 300, 250, Box::new(|_, _, _| false));
        let s = sr_ref(p.side(0));
        let srtt = s.srtt().as_secs_f64();
        assert!(srtt > 0.09 && srtt < 0.2, "srtt {srtt}");
        let rto = s.rto().as_secs_f64();
        assert!(
            rto >= a as f64 * srtt - 0.011 && rto <= a as f64 * srtt + b as f64 * 0.03 + 0.011,
            "{a}+{b}: rto {rto} srtt {srtt}"
        );
        assert!(stats(p.side(0)).rtt_samples > 100);
    }
}

#[test]
fn asr_does_not_back_off_after_a_timeout() {
    let cfg = SrConfig { adaptive: Some((3, 2)), ..Default::default() };
    let before = Sr::new(cfg).rto();
    assert_eq!(before, Duration::from_millis(3300), "initial srtt 1.1 s, srttvar 0 → 3·1.1 s");
    // Everything from side 0 is lost after frame 0: repeated timeouts, same rto.
    let mut p = ArqPair::new(sr(cfg), sr(cfg), 64_000, Duration::from_millis(50), Box::new(|s, i, _| s == 0 && i > 0));
    for i in 0..3 {
        p.send(0, pkt(i, 250));
    }
    p.run(Duration::from_secs(30));
    let s = sr_ref(p.side(0));
    assert!(s.stats.timeouts >= 3);
    let rto = s.rto().as_secs_f64();
    assert!(rto < 3.4, "no exponential backoff: {rto}");
}
