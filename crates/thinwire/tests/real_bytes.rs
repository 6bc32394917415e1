//! Real bytes end to end: packets made of random bytes (IPv4 and IPv6 TCP with
//! options, UDP, ICMP) go through the wireless link of every link protocol, with
//! frame losses, in both directions. What comes out is byte-identical to what went
//! in, in order; reliable protocols lose nothing.
use thinwire::link::wireless::{Session, WirelessLink};
use thinwire::rng::Rng;
use thinwire::time::{Duration, Instant};
use thinwire::wire::{IpAddress, IpRepr, Meta, Packet, TcpFlags, TcpOptions, TcpRepr, UdpRepr};

const V4: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 1, 2]);
const V6: ([u8; 16], [u8; 16]) = ([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], [0xfd; 16]);

/// A TCP segment with random payload bytes and correct checksums.
fn tcp(src: IpAddress, dst: IpAddress, seq: u32, ts: u32, payload: &[u8]) -> Vec<u8> {
    let t = TcpRepr {
        src_port: 5001,
        dst_port: 40000,
        seq,
        ack: 77,
        flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
        window: 29200,
        opts: TcpOptions { timestamps: Some((ts, ts / 2)), ..Default::default() },
    };
    let ip = IpRepr::new(src, dst, 6, seq as u16, t.header_len() + payload.len());
    let mut b = vec![0u8; ip.total_len()];
    ip.emit(&mut b);
    t.emit(&mut b[ip.header_len()..], payload, src, dst);
    b
}

fn udp(src: IpAddress, dst: IpAddress, ident: u16, payload: &[u8]) -> Vec<u8> {
    let ip = IpRepr::new(src, dst, 17, ident, 8 + payload.len());
    let mut b = vec![0u8; ip.total_len()];
    ip.emit(&mut b);
    UdpRepr { src_port: 53, dst_port: 5353 }.emit(&mut b[ip.header_len()..], payload, src, dst);
    b
}

fn icmp(ident: u16) -> Vec<u8> {
    let ip = IpRepr::new(V4.0.into(), V4.1.into(), 1, ident, 16);
    let mut b = vec![0u8; ip.total_len()];
    ip.emit(&mut b);
    b[20..28].copy_from_slice(&[8, 0, 0, 0, 0, 1, (ident >> 8) as u8, ident as u8]);
    let c = thinwire::wire::checksum::checksum(&b[20..]);
    b[22..24].copy_from_slice(&c.to_be_bytes());
    b
}

/// `n` packets for one direction: mostly a TCP stream over IPv4 (so VJ compresses
/// it), some IPv6 TCP, UDP and ICMP.
fn packets(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    let mut seq = rng.next_u64() as u32;
    let mut out = vec![];
    for i in 0..n {
        let len = 1 + rng.below(1400) as usize;
        let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        out.push(match i % 10 {
            7 => tcp(V6.0.into(), V6.1.into(), seq, i as u32, &payload),
            8 => udp(V4.0.into(), V4.1.into(), i as u16, &payload),
            9 if i % 20 == 9 => icmp(i as u16),
            9 => udp(V6.0.into(), V6.1.into(), i as u16, &payload),
            _ => {
                // Timestamps that change only now and then, so VJ can compress.
                let b = tcp(V4.0.into(), V4.1.into(), seq, 1000 + i as u32 / 5, &payload);
                seq = seq.wrapping_add(len as u32);
                b
            }
        });
    }
    out
}

fn scenario(protocol: &str, extra: &str, loss: f64) -> WirelessLink {
    let text = format!(
        "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\nqueue = {{ limit = \"1000pkt\" }}\n\
         [wireless.channel]\nmodel = \"uniform\"\np = {loss}\n\
         [wireless.arq]\nprotocol = \"{protocol}\"\n{extra}\n\
         [[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n"
    );
    let sc = thinwire::config::parse_scenario(&text, &[]).unwrap_or_else(|e| panic!("{protocol}: {e}"));
    thinwire::build::wireless(&sc)
}

/// Offers the packets (one direction each) every 250 ms and runs the link;
/// returns what left each direction.
fn run(link: &mut WirelessLink, sent: &[Vec<Vec<u8>>; 2]) -> [Vec<Vec<u8>>; 2] {
    let mut out: [Vec<Vec<u8>>; 2] = Default::default();
    let mut step = |link: &mut WirelessLink, until: Instant| {
        while let Some(t) = link.poll_timeout().filter(|&t| t <= until) {
            link.handle_timeout(t);
            while let Some((d, p)) = link.poll_deliver() {
                assert!(p.is_real());
                out[d].push(p.emit());
            }
        }
    };
    let n = sent[0].len().max(sent[1].len());
    for i in 0..n {
        let now = Instant::ZERO + Duration::from_millis(250 * i as i64);
        step(link, now);
        for (d, ps) in sent.iter().enumerate() {
            if let Some(b) = ps.get(i) {
                let p = Packet::from_bytes(b.clone(), Meta::new(d as u16, now)).unwrap();
                link.offer(now, d, Session::Arq, p);
            }
        }
    }
    step(link, Instant::ZERO + Duration::from_secs(100_000));
    out
}

/// Every delivered packet is a sent one, byte for byte, in the order sent.
fn in_order_subsequence(sent: &[Vec<u8>], got: &[Vec<u8>]) -> bool {
    let mut it = sent.iter();
    got.iter().all(|g| it.any(|s| s == g))
}

#[test]
fn random_bytes_cross_every_link_protocol_intact() {
    let cases: &[(&str, &str, f64, bool)] = &[
        // (protocol, extra [wireless.arq] lines, frame loss, loses nothing)
        ("raw", "", 0.02, false),
        ("sr", "", 0.05, true),
        ("asr", "policy = \"3+2\"", 0.05, true),
        ("rlc", "max_retransmissions = 1000", 0.05, true),
        ("is707", "", 0.02, false),
        ("rlp-gsm", "header_compression = true\nn2 = 60", 0.05, true),
        ("rlp-gsm", "header_compression = false\nn2 = 60", 0.05, true),
        ("gprs", "", 0.0, true),
    ];
    for &(protocol, extra, loss, reliable) in cases {
        let mut rng = Rng::stream(11, 0, protocol);
        let sent = [packets(&mut rng, 60), packets(&mut rng, 20)];
        let mut link = scenario(protocol, extra, loss);
        let got = run(&mut link, &sent);
        let stats = link.stats();
        for d in 0..2 {
            assert!(
                in_order_subsequence(&sent[d], &got[d]),
                "{protocol} {extra}: dir {d}: altered, duplicated or reordered bytes"
            );
            if reliable {
                assert_eq!(got[d].len(), sent[d].len(), "{protocol} {extra}: dir {d}: lost packets ({stats:?})");
            } else {
                assert!(got[d].len() * 2 > sent[d].len(), "{protocol}: dir {d}: {} of {}", got[d].len(), sent[d].len());
            }
        }
        if protocol == "rlp-gsm" {
            let g: &thinwire::link::gsm_csd::GsmCsd = link.arq(0).try_into().expect("GSM RLP");
            let vj = extra.contains("compression = true");
            assert_eq!(g.stats.vj_compressed > 10, vj, "{extra}: {} compressed headers", g.stats.vj_compressed);
        }
        if loss > 0.0 {
            assert!(stats[0].frames_lost > 0, "{protocol}: the channel lost frames");
        }
    }
}
