//! Van Jacobson header compression (RFC 1144): exact round trips when nothing is
//! lost, uncompressed packets when no delta can be sent, and the seed-000 failure:
//! a packet that vanishes without notice makes the decompressor rebuild wrong
//! headers that the TCP receiver rejects by checksum until an uncompressed
//! retransmission resynchronises it.
use thinwire::rng::Rng;
use thinwire::time::Instant;
use thinwire::wire::vj::{Compressor, Decompressor, Kind, VjError};
use thinwire::wire::{Packet, TcpFlags, TcpRepr, WireError, L4};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const URG: u8 = 0x20;

struct Seg {
    sport: u16,
    seq: u32,
    ack: u32,
    win: u16,
    flags: u8,
    len: u32,
    id: u16,
    urg: u16,
}

fn bytes(s: &Seg) -> (Vec<u8>, usize) {
    let mut r = TcpRepr::default();
    r.src_port = s.sport;
    r.dst_port = 80;
    r.seq = s.seq;
    r.ack = s.ack;
    r.window = s.win;
    r.flags = TcpFlags(s.flags);
    let mut p = Packet::new(A, B, s.id, L4::Tcp(r), s.len, 0, Instant::ZERO);
    let mut b = p.emit();
    if s.urg != 0 {
        // Set an urgent pointer and fix the TCP checksum by re-emitting through parse.
        b[20 + 18..20 + 20].copy_from_slice(&s.urg.to_be_bytes());
        b[20 + 16..20 + 18].copy_from_slice(&[0, 0]);
        let c = !thinwire::wire::checksum::fold(thinwire::wire::checksum::sum(
            &b[20..],
            thinwire::wire::checksum::pseudo_header(A.into(), B.into(), 6, (b.len() - 20) as u32),
        ));
        b[20 + 16..20 + 18].copy_from_slice(&c.to_be_bytes());
        p = Packet::parse(&b).unwrap();
    }
    let hl = 20 + p.tcp().unwrap().header_len();
    (b, hl)
}

/// Header of `b` replaced by `h`: what the TCP receiver gets.
fn rebuilt(b: &[u8], hl: usize, h: &[u8]) -> Vec<u8> {
    let mut v = h.to_vec();
    v.extend_from_slice(&b[hl..]);
    v
}

fn tcp_ok(pkt: &[u8]) -> Result<(), WireError> {
    TcpRepr::parse(&pkt[20..], A.into(), B.into()).map(|_| ())
}

fn bulk(n: u32, mss: u32) -> Vec<Seg> {
    (0..n)
        .map(|i| Seg {
            sport: 1000,
            seq: 5000 + i * mss,
            ack: 77,
            win: 8192,
            flags: TcpFlags::ACK | if i % 4 == 3 { TcpFlags::PSH } else { 0 },
            len: mss,
            id: 100 + i as u16,
            urg: 0,
        })
        .collect()
}

#[test]
fn bulk_data_compresses_to_three_bytes_and_round_trips_exactly() {
    let (mut c, mut d) = (Compressor::new(), Decompressor::new());
    let mut sizes = Vec::new();
    for s in bulk(50, 460) {
        let (b, hl) = bytes(&s);
        let (k, wire) = c.compress(&b[..hl]);
        sizes.push((k, wire.len()));
        let h = d.decompress(k, &wire, b.len() - hl).unwrap();
        assert_eq!(h, b[..hl], "header rebuilt byte for byte");
        tcp_ok(&rebuilt(&b, hl, &h)).unwrap();
    }
    assert_eq!(sizes[0], (Kind::Uncompressed, 40), "a new connection goes uncompressed");
    // The uncompressed packet already named the connection, so no delta repeats it.
    assert!(
        sizes[1..].iter().all(|&x| x == (Kind::Compressed, 3)),
        "SPECIAL_D: change byte and checksum only: {sizes:?}"
    );
}

#[test]
fn control_segments_and_retransmissions_are_not_deltas() {
    let mut c = Compressor::new();
    let seg = |seq: u32, flags: u8, id: u16| Seg { sport: 1000, seq, ack: 1, win: 8192, flags, len: 100, id, urg: 0 };
    let k = |c: &mut Compressor, s: &Seg| {
        let (b, hl) = bytes(s);
        c.compress(&b[..hl]).0
    };
    assert_eq!(k(&mut c, &seg(1, TcpFlags::SYN, 1)), Kind::Ip);
    assert_eq!(k(&mut c, &seg(1, TcpFlags::ACK, 2)), Kind::Uncompressed);
    assert_eq!(k(&mut c, &seg(101, TcpFlags::ACK, 3)), Kind::Compressed);
    assert_eq!(k(&mut c, &seg(201, TcpFlags::ACK, 4)), Kind::Compressed);
    assert_eq!(k(&mut c, &seg(101, TcpFlags::ACK, 5)), Kind::Uncompressed, "sequence went back: a retransmission");
    assert_eq!(k(&mut c, &seg(301, TcpFlags::ACK, 6)), Kind::Compressed);
    assert_eq!(k(&mut c, &seg(301 + 70_000, TcpFlags::ACK, 7)), Kind::Uncompressed, "a jump beyond 16 bits");
    assert_eq!(k(&mut c, &seg(401 + 70_000, TcpFlags::ACK | TcpFlags::FIN, 8)), Kind::Ip);
}

#[test]
fn a_frame_lost_without_notice_corrupts_headers_until_an_uncompressed_retransmission() {
    let (mut c, mut d) = (Compressor::new(), Decompressor::new());
    let segs = bulk(12, 460);
    let mut verdicts = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let (b, hl) = bytes(s);
        let (k, wire) = c.compress(&b[..hl]);
        if i == 4 {
            verdicts.push("lost");
            continue;
        } // flushed by a link reset: no error reported
        let h = d.decompress(k, &wire, b.len() - hl).unwrap();
        verdicts.push(if tcp_ok(&rebuilt(&b, hl, &h)).is_ok() { "ok" } else { "bad checksum" });
    }
    // TCP retransmits segment 4 (its sequence number goes back: sent uncompressed).
    let (b, hl) = bytes(&Seg { id: 200, ..bulk(5, 460).pop().unwrap() });
    let (k, wire) = c.compress(&b[..hl]);
    assert_eq!(k, Kind::Uncompressed);
    let h = d.decompress(k, &wire, b.len() - hl).unwrap();
    tcp_ok(&rebuilt(&b, hl, &h)).unwrap();
    // And the stream continues in step.
    let (b, hl) = bytes(&Seg { id: 201, seq: 5000 + 12 * 460, ..bulk(1, 460).pop().unwrap() });
    let (k, wire) = c.compress(&b[..hl]);
    let h = d.decompress(k, &wire, b.len() - hl).unwrap();
    assert_eq!(h, b[..hl]);
    assert_eq!(&verdicts[..4], ["ok"; 4]);
    assert_eq!(verdicts[4], "lost");
    assert!(
        verdicts[5..].iter().all(|v| *v == "bad checksum"),
        "every later delta applied to a stale base: {verdicts:?}"
    );
}

#[test]
fn a_reported_error_tosses_until_resynchronised() {
    let (mut c, mut d) = (Compressor::new(), Decompressor::new());
    let segs = bulk(8, 300);
    for (i, s) in segs.iter().enumerate() {
        let (b, hl) = bytes(s);
        let (k, wire) = c.compress(&b[..hl]);
        if i == 3 {
            d.report_error();
            continue;
        } // PPP saw a bad FCS
        let r = d.decompress(k, &wire, b.len() - hl);
        if i < 3 {
            assert!(r.is_ok());
        } else {
            assert_eq!(r, Err(VjError::Tossed), "packet {i}");
        }
    }
    assert!(d.tossing());
    // An uncompressed retransmission clears the toss state.
    let (b, hl) = bytes(&Seg { id: 300, ..bulk(4, 300).pop().unwrap() });
    let (k, wire) = c.compress(&b[..hl]);
    assert_eq!(d.decompress(k, &wire, b.len() - hl).unwrap(), b[..hl]);
    assert!(!d.tossing());
}

#[test]
fn random_interleaved_connections_round_trip_exactly() {
    let mut kinds = [0usize; 3];
    for seed in 0..40 {
        let mut rng = Rng::stream(seed, 0, "vj");
        let (mut c, mut d) = (Compressor::new(), Decompressor::new());
        c.compress_cid = rng.bernoulli(0.5);
        let nconn = 1 + rng.below(20) as usize; // more than 16: slots get reused
        let mut st: Vec<(u32, u32, u16, u16)> =
            (0..nconn).map(|i| (rng.next_u64() as u32, rng.next_u64() as u32, 4096, i as u16 * 1000)).collect();
        for _ in 0..400 {
            let i = rng.below(nconn as u64) as usize;
            let (seq, ack, win, id) = &mut st[i];
            let len = [0, 0, 1, 40, 460, 536, 1460][rng.below(7) as usize];
            let flags = TcpFlags::ACK
                | if rng.bernoulli(0.3) { TcpFlags::PSH } else { 0 }
                | if rng.bernoulli(0.02) { URG } else { 0 };
            if rng.bernoulli(0.3) {
                *ack = ack.wrapping_add(rng.below(3000) as u32);
            }
            if rng.bernoulli(0.1) {
                *win = win.wrapping_add(rng.below(600) as u16).wrapping_sub(300);
            }
            if rng.bernoulli(0.05) {
                *seq = seq.wrapping_sub(rng.below(5000) as u32);
            } // retransmission
            if rng.bernoulli(0.02) {
                *seq = seq.wrapping_add(100_000);
            }
            *id = id.wrapping_add(if rng.bernoulli(0.9) { 1 } else { rng.below(700) as u16 });
            let urg = if flags & URG != 0 { 1 + rng.below(100) as u16 } else { 0 };
            let s = Seg { sport: 2000 + i as u16, seq: *seq, ack: *ack, win: *win, flags, len, id: *id, urg };
            *seq = seq.wrapping_add(len);
            let (b, hl) = bytes(&s);
            let (k, wire) = c.compress(&b[..hl]);
            assert!(wire.len() <= hl);
            let h = d.decompress(k, &wire, b.len() - hl).unwrap_or_else(|e| panic!("seed {seed}: {e:?}"));
            assert_eq!(h, b[..hl], "seed {seed}: header rebuilt exactly");
            kinds[k as usize] += 1;
        }
    }
    assert!(kinds[2] > kinds[1] && kinds[1] > 100 && kinds[0] == 0, "compressed, uncompressed, IP: {kinds:?}");
}
