//! Property tests over random loss patterns: reliable layers deliver every byte or
//! packet exactly once and in order, whatever is lost.
use thinwire::link::sr::{Sr, SrConfig};
use thinwire::rng::Rng;
use thinwire::tcp::{TcpConfig, Variant};
use thinwire::testkit::{ArqPair, TcpPair};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

#[test]
fn tcp_delivers_every_byte_once_under_random_loss() {
    let (mut dropped, mut retx) = (0u64, 0u64);
    for case in 0..160u64 {
        let mut rng = Rng::stream(case, 0, "prop.tcp");
        let v = [Variant::Tahoe, Variant::Reno, Variant::NewReno, Variant::Sack][case as usize % 4];
        let p_loss = [0.0, 0.01, 0.05, 0.15][(case / 4) as usize % 4];
        let bytes = 1 + rng.below(120_000);
        let mss = 200 + rng.below(1300) as u32;
        let c = TcpConfig { mss, timestamps: rng.bernoulli(0.5), ..Default::default() }.with_variant(v);
        let mut lr = Rng::stream(case, 1, "prop.tcp.loss");
        let mut p = TcpPair::new(
            c,
            c,
            Some(bytes),
            1_000_000,
            Duration::from_millis(1 + rng.below(200) as i64),
            Box::new(move |_, _, _| lr.bernoulli(p_loss)),
        );
        p.run(Duration::from_secs(20_000));
        assert_eq!(p.ep[0].delivered(), bytes, "case {case}: {v:?} p={p_loss} mss={mss}");
        assert!(p.ep[1].is_closed(), "case {case}: sender should finish the FIN exchange");
        dropped += p.dropped[0] + p.dropped[1];
        retx += p.ep[1].stats().retransmits;
    }
    assert!(
        dropped > 500 && retx > 500,
        "the loss patterns must exercise recovery: {dropped} dropped, {retx} retransmitted"
    );
}

#[test]
fn sr_delivers_every_packet_once_in_order_under_random_loss() {
    let mut retx = 0;
    for case in 0..120u64 {
        let mut rng = Rng::stream(case, 0, "prop.sr");
        let adaptive = if rng.bernoulli(0.5) { Some((1 + rng.below(4) as u32, rng.below(5) as u32)) } else { None };
        let cfg = SrConfig {
            window: 2 + rng.below(126) as u32,
            adaptive,
            timeout: Duration::from_millis(200 + rng.below(1500) as i64),
            ack_delay: Duration::from_millis(rng.below(600) as i64),
            // Multireject by detection (the default) or by the older timer.
            renack: rng.bernoulli(0.5).then(|| Duration::from_millis(100 + rng.below(1000) as i64)),
            ..Default::default()
        };
        let p_loss = [0.0, 0.05, 0.2, 0.4][case as usize % 4];
        let mut lr = Rng::stream(case, 1, "prop.sr.loss");
        let mut p = ArqPair::new(
            Sr::new(cfg).into(),
            Sr::new(cfg).into(),
            64_000,
            Duration::from_millis(50),
            Box::new(move |_, _, _| lr.bernoulli(p_loss)),
        );
        let n = 1 + rng.below(150) as u16;
        for i in 0..n {
            let size = 40 + rng.below(700) as u32;
            p.send(
                0,
                Packet::new(
                    [1; 4],
                    [2; 4],
                    i,
                    L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }),
                    size - 28,
                    0,
                    Instant::ZERO,
                ),
            );
            if rng.bernoulli(0.3) {
                p.send(
                    1,
                    Packet::new([2; 4], [1; 4], i, L4::Udp(UdpRepr { src_port: 2, dst_port: 1 }), 40, 0, Instant::ZERO),
                );
            }
        }
        p.run(Duration::from_secs(100_000));
        let got: Vec<u16> = p.delivered[1].iter().map(|p| p.ident() as u16).collect();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "case {case}: {cfg:?} p={p_loss}");
        for w in p.delivered[0].windows(2) {
            assert!(w[0].ident() < w[1].ident(), "case {case}: reverse direction out of order or duplicated");
        }
        retx += p.machine::<Sr>(0).stats.retransmissions;
    }
    assert!(retx > 1000, "the loss patterns must exercise recovery: {retx}");
}
