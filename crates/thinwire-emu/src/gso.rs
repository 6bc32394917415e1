//! Segmentation offload on the emulator's TUN devices, doing no I/O: each device
//! is opened with `IFF_VNET_HDR` and told (`TUNSETOFFLOAD`) that it takes
//! checksum and TCP segmentation offload, so a host hands over TCP super-packets
//! of up to 64 KB in one read (with a `virtio_net_hdr` in front) instead of 44
//! reads of 1,500 bytes, and the emulator may write several segments of one flow
//! as one super-packet, which the receiving host's stack takes in one pass, as it
//! takes what a NIC's GRO merged.
//!
//! - [`split`]: what one read returned, cut into the packets a host without
//!   offload would have sent — exactly what the kernel's own software GSO makes
//!   (`net/ipv4/tcp_offload.c` `tcp_gso_segment`, `net/ipv4/af_inet.c`
//!   `inet_gso_segment`): the headers copied to every segment, the sequence
//!   number advanced by the segment size, the IPv4 ID by one per segment, the
//!   lengths and every checksum rewritten, FIN and PSH on the last segment only,
//!   CWR on the first only. A packet with a partial checksum (`NEEDS_CSUM`) has
//!   it completed. The model therefore sees the same packets as before, all read
//!   at one time (the kernel's software GSO also queued them at one time).
//! - [`Coalescer`]: the packets due at one wake-up for one device, merged where
//!   Linux's GRO would merge them (`tcp_gro_receive`: same addresses, ports,
//!   acknowledgement, window, flags and options; consecutive sequence numbers;
//!   equal segment sizes with only the last smaller; IPv4 IDs one apart, equal
//!   TOS/TTL/DF; PSH only on the last; no FIN, SYN, RST, URG or CWR; a valid TCP
//!   checksum, so that a packet the model damaged is never healed by the merge).
//!   A run of one packet is written as it is. Nothing is reordered or delayed:
//!   the packets merged were due at the same wake-up and would have been written
//!   within microseconds of each other, one system call each.
//!
//! Sources: `include/uapi/linux/virtio_net.h` (the header), `drivers/net/tun.c`
//! (`TUNSETOFFLOAD`, `tun_put_user`, `tun_get_user`), the kernel files above, and
//! wireguard-go's `tun/offload_linux.go` for the shape (read, not copied).
//! Header fields are in host byte order (little-endian on every host this runs on;
//! `TUNSETVNETLE` is not needed there).
use thinwire::wire::checksum::{fold, sum};

/// Bytes of the `virtio_net_hdr` before every packet read or written.
pub const HDR: usize = 10;
const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
/// Set with a TCP GSO type when the super-packet carries CWR (not offered to the
/// kernel, `TUN_F_TSO_ECN`, but tolerated).
const GSO_ECN: u8 = 0x80;

const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const CWR: u8 = 0x80;

/// Why what a read returned could not be cut into packets.
#[derive(Debug, PartialEq, Eq)]
pub enum GsoError {
    /// Shorter than its headers say.
    Short,
    /// A GSO type other than TCP over IPv4 or IPv6 (UDP segmentation is not offered).
    Unsupported(u8),
    /// Header fields that do not fit the packet.
    Malformed,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// The pseudo-header sum (not folded) of an IPv4 or IPv6 packet for its
/// transport's `len` bytes.
fn pseudo(pkt: &[u8], proto: u8, len: usize) -> u32 {
    let addrs = if pkt[0] >> 4 == 4 { &pkt[12..20] } else { &pkt[8..40] };
    sum(addrs, 0) + proto as u32 + (len as u32 >> 16) + (len as u32 & 0xffff)
}

fn ipv4_header_checksum(pkt: &mut [u8], ihl: usize) {
    put16(pkt, 10, 0);
    let c = !fold(sum(&pkt[..ihl], 0));
    put16(pkt, 10, c);
}

/// The packets one read returned, appended to `out`: with `offload` the read
/// starts with the virtio header and is cut ([`split`]); without, it is one
/// packet.
pub fn packets_of(read: &[u8], offload: bool, out: &mut Vec<Vec<u8>>) -> Result<(), GsoError> {
    if offload {
        split(read, out)
    } else {
        out.push(read.to_vec());
        Ok(())
    }
}

/// Cuts what one read returned (`frame`: the virtio header, then the packet) into
/// packets appended to `out`.
pub fn split(frame: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), GsoError> {
    if frame.len() < HDR {
        return Err(GsoError::Short);
    }
    let h = &frame[..HDR];
    let (flags, gso_type) = (h[0], h[1]);
    let gso_size = u16::from_ne_bytes([h[4], h[5]]) as usize;
    let csum_start = u16::from_ne_bytes([h[6], h[7]]) as usize;
    let csum_offset = u16::from_ne_bytes([h[8], h[9]]) as usize;
    let pkt = &frame[HDR..];
    match gso_type & !GSO_ECN {
        GSO_NONE => {
            let mut p = pkt.to_vec();
            if flags & F_NEEDS_CSUM != 0 {
                let at = csum_start + csum_offset;
                if at + 2 > p.len() {
                    return Err(GsoError::Malformed);
                }
                // The field holds the pseudo-header sum; the rest is summed over it.
                let c = !fold(sum(&p[csum_start..], 0));
                // UDP sends a computed zero as all ones (RFC 768).
                let c = if c == 0 && csum_offset == 6 { 0xffff } else { c };
                put16(&mut p, at, c);
            }
            out.push(p);
            Ok(())
        }
        t @ (GSO_TCPV4 | GSO_TCPV6) => segment_tcp(pkt, t == GSO_TCPV4, csum_start, gso_size, out),
        t => Err(GsoError::Unsupported(t)),
    }
}

fn segment_tcp(pkt: &[u8], v4: bool, l4: usize, mss: usize, out: &mut Vec<Vec<u8>>) -> Result<(), GsoError> {
    // The kernel's hdr_len is not relied on (it can be the whole linear part):
    // the TCP header's own length is.
    if pkt.len() < l4 + 20 || mss == 0 || (pkt[0] >> 4 == 4) != v4 {
        return Err(GsoError::Malformed);
    }
    let thl = ((pkt[l4 + 12] >> 4) as usize) * 4;
    let hl = l4 + thl;
    if thl < 20 || pkt.len() < hl || (v4 && l4 != ((pkt[0] & 0xf) as usize) * 4) {
        return Err(GsoError::Malformed);
    }
    let payload = &pkt[hl..];
    let seq0 = u32::from_be_bytes(pkt[l4 + 4..l4 + 8].try_into().expect("4 bytes"));
    let id0 = be16(pkt, 4);
    let n = payload.len().div_ceil(mss).max(1);
    for i in 0..n {
        let chunk = &payload[(i * mss).min(payload.len())..((i + 1) * mss).min(payload.len())];
        let len = hl + chunk.len();
        let mut s = Vec::with_capacity(len);
        s.extend_from_slice(&pkt[..hl]);
        s.extend_from_slice(chunk);
        if v4 {
            put16(&mut s, 2, len as u16);
            put16(&mut s, 4, id0.wrapping_add(i as u16));
            ipv4_header_checksum(&mut s, l4);
        } else {
            put16(&mut s, 4, (len - 40) as u16);
        }
        let seq = seq0.wrapping_add((i * mss) as u32);
        s[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        if i + 1 < n {
            s[l4 + 13] &= !(FIN | PSH);
        }
        if i > 0 {
            s[l4 + 13] &= !CWR;
        }
        put16(&mut s, l4 + 16, 0);
        let c = !fold(sum(&s[l4..], pseudo(&s, 6, len - l4)));
        put16(&mut s, l4 + 16, c);
        out.push(s);
    }
    Ok(())
}

/// Where a packet's TCP header starts, if it is a candidate for merging: IPv4
/// without options and not a fragment, or IPv6 with TCP as the first header;
/// data; flags ACK or ACK+PSH; a valid TCP checksum.
fn candidate(p: &[u8]) -> Option<usize> {
    let l4 = match p.first()? >> 4 {
        4 if p.len() >= 40 && p[0] & 0xf == 5 && p[9] == 6 && be16(p, 2) as usize == p.len() => {
            // MF set or a fragment offset: not merged.
            (be16(p, 6) & 0x3fff == 0).then_some(20)?
        }
        6 if p.len() >= 60 && p[6] == 6 && be16(p, 4) as usize + 40 == p.len() => 40,
        _ => return None,
    };
    let thl = ((p[l4 + 12] >> 4) as usize) * 4;
    let flags = p[l4 + 13];
    if thl < 20 || p.len() <= l4 + thl || (flags != ACK && flags != ACK | PSH) || p[l4 + 12] & 0x0f != 0 {
        return None;
    }
    (fold(sum(&p[l4..], pseudo(p, 6, p.len() - l4))) == 0xffff).then_some(l4)
}

/// The run being merged: the super-packet so far is `Coalescer::buf[HDR..]`.
struct Run {
    l4: usize,
    hl: usize,
    mss: usize,
    count: usize,
    next_seq: u32,
    next_id: u16,
    /// A shorter segment or PSH ended it: nothing more may follow.
    closed: bool,
}

/// Merges consecutive packets written to one device (module doc). `push` each
/// packet in order and `flush` at the end of the wake-up; `emit` receives what to
/// write (the virtio header and the packet) and how many packets it carries.
#[derive(Default)]
pub struct Coalescer {
    buf: Vec<u8>,
    run: Option<Run>,
    /// Super-packets written, and the packets they carried.
    pub merged_writes: u64,
    pub merged_packets: u64,
}

impl Coalescer {
    pub fn push(&mut self, p: &[u8], emit: &mut impl FnMut(&[u8], usize)) {
        if self.joins(p) {
            let run = self.run.as_mut().expect("a run");
            let payload = &p[run.hl..];
            run.count += 1;
            run.next_seq = run.next_seq.wrapping_add(payload.len() as u32);
            run.next_id = run.next_id.wrapping_add(1);
            run.closed = payload.len() < run.mss || p[run.l4 + 13] & PSH != 0;
            let flags_at = HDR + run.l4 + 13;
            self.buf[flags_at] |= p[run.l4 + 13] & PSH;
            self.buf.extend_from_slice(payload);
            return;
        }
        self.flush(emit);
        self.buf.clear();
        self.buf.extend_from_slice(&[0; HDR]);
        self.buf.extend_from_slice(p);
        if let Some(l4) = candidate(p) {
            let hl = l4 + ((p[l4 + 12] >> 4) as usize) * 4;
            let mss = p.len() - hl;
            self.run = Some(Run {
                l4,
                hl,
                mss,
                count: 1,
                next_seq: u32::from_be_bytes(p[l4 + 4..l4 + 8].try_into().expect("4 bytes")).wrapping_add(mss as u32),
                next_id: be16(p, 4).wrapping_add(1),
                closed: p[l4 + 13] & PSH != 0,
            });
        } else {
            emit(&self.buf, 1);
            self.buf.clear();
        }
    }

    /// Whether `p` continues the run (module doc).
    fn joins(&self, p: &[u8]) -> bool {
        let Some(run) = &self.run else { return false };
        let head = &self.buf[HDR..];
        let (l4, hl) = (run.l4, run.hl);
        if run.closed || p.len() <= hl || p.len() - hl > run.mss || head.len() + p.len() - hl > 65535 {
            return false;
        }
        // The IP header: version and length type, then what GRO compares.
        let same_ip = if l4 == 20 {
            p[0] == head[0]
                && p[1] == head[1]
                && p[6] & 0xe0 == head[6] & 0xe0
                && p[8..10] == head[8..10]
                && p[12..20] == head[12..20]
                && be16(p, 4) == run.next_id
        } else {
            p[..4] == head[..4] && p[6..40] == head[6..40]
        };
        // Ports, acknowledgement, data offset, window, options equal; flags ACK
        // (PSH allowed, it ends the run); the sequence number next.
        same_ip
            && p[l4..l4 + 4] == head[l4..l4 + 4]
            && p[l4 + 8..l4 + 13] == head[l4 + 8..l4 + 13]
            && p[l4 + 14..l4 + 16] == head[l4 + 14..l4 + 16]
            && p[l4 + 20..hl] == head[l4 + 20..hl]
            && u32::from_be_bytes(p[l4 + 4..l4 + 8].try_into().expect("4 bytes")) == run.next_seq
            && candidate(p) == Some(l4)
    }

    /// Writes the run merged so far, if any.
    pub fn flush(&mut self, emit: &mut impl FnMut(&[u8], usize)) {
        let Some(run) = self.run.take() else { return };
        if run.count > 1 {
            let (l4, total) = (run.l4, self.buf.len() - HDR);
            let p = &mut self.buf[HDR..];
            let gso_type = if l4 == 20 {
                put16(p, 2, total as u16);
                ipv4_header_checksum(p, 20);
                GSO_TCPV4
            } else {
                put16(p, 4, (total - 40) as u16);
                GSO_TCPV6
            };
            // CHECKSUM_PARTIAL: the field holds the pseudo-header sum.
            let ps = fold(pseudo(p, 6, total - l4));
            put16(p, l4 + 16, ps);
            let h = &mut self.buf[..HDR];
            h[0] = F_NEEDS_CSUM;
            h[1] = gso_type;
            h[2..4].copy_from_slice(&(run.hl as u16).to_ne_bytes());
            h[4..6].copy_from_slice(&(run.mss as u16).to_ne_bytes());
            h[6..8].copy_from_slice(&(l4 as u16).to_ne_bytes());
            h[8..10].copy_from_slice(&16u16.to_ne_bytes());
            self.merged_writes += 1;
            self.merged_packets += run.count as u64;
        }
        emit(&self.buf, run.count);
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use thinwire::wire::packet::Packet;
    const SYN: u8 = 0x02;
    const RST: u8 = 0x04;

    /// A valid TCP/IPv4 (or IPv6) packet of `len` payload bytes.
    fn tcp(v6: bool, seq: u32, len: usize, flags: u8, id: u16) -> Vec<u8> {
        let l4 = if v6 { 40 } else { 20 };
        let thl = 32; // with a timestamp option (NOP NOP TS)
        let total = l4 + thl + len;
        let mut p = vec![0u8; total];
        if v6 {
            p[0] = 0x60;
            put16(&mut p, 4, (total - 40) as u16);
            p[6] = 6;
            p[7] = 64;
            p[8..24].copy_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p[24..40].copy_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            p[0] = 0x45;
            put16(&mut p, 2, total as u16);
            put16(&mut p, 4, id);
            p[6] = 0x40;
            p[8] = 64;
            p[9] = 6;
            p[12..16].copy_from_slice(&[10, 0, 0, 1]);
            p[16..20].copy_from_slice(&[10, 0, 1, 2]);
            ipv4_header_checksum(&mut p, 20);
        }
        put16(&mut p, l4, 5201);
        put16(&mut p, l4 + 2, 40000);
        p[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        p[l4 + 8..l4 + 12].copy_from_slice(&777u32.to_be_bytes());
        p[l4 + 12] = ((thl / 4) as u8) << 4;
        p[l4 + 13] = flags;
        put16(&mut p, l4 + 14, 502);
        p[l4 + 20..l4 + 32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3]);
        for (i, b) in p[l4 + thl..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        let c = !fold(sum(&p[l4..], pseudo(&p, 6, total - l4)));
        put16(&mut p, l4 + 16, c);
        p
    }

    fn fix_tcp_checksum(p: &mut [u8]) {
        put16(p, 36, 0);
        let c = !fold(sum(&p[20..], pseudo(p, 6, p.len() - 20)));
        put16(p, 36, c);
    }

    fn valid(p: &[u8]) -> bool {
        Packet::parse(p).is_ok()
    }

    fn gso_frame(segs: &[Vec<u8>]) -> Vec<u8> {
        let mut c = Coalescer::default();
        let mut out = vec![];
        for s in segs {
            c.push(s, &mut |b, _| out.push(b.to_vec()));
        }
        c.flush(&mut |b, _| out.push(b.to_vec()));
        assert_eq!(out.len(), 1, "one write");
        out.pop().unwrap()
    }

    fn split_all(frame: &[u8]) -> Vec<Vec<u8>> {
        let mut out = vec![];
        split(frame, &mut out).unwrap();
        out
    }

    /// Merging a run and cutting it again gives the packets back, byte for byte,
    /// for IPv4 and IPv6, with the last segment shorter and carrying PSH.
    #[test]
    fn merge_then_split_is_identity() {
        for v6 in [false, true] {
            let segs: Vec<Vec<u8>> = (0..5u32)
                .map(|i| {
                    let len = if i == 4 { 300 } else { 1448 };
                    let flags = if i == 4 { ACK | PSH } else { ACK };
                    tcp(v6, 1000 + i * 1448, len, flags, 40 + i as u16)
                })
                .collect();
            assert!(segs.iter().all(|s| valid(s)));
            let frame = gso_frame(&segs);
            assert_eq!(frame[1], if v6 { GSO_TCPV6 } else { GSO_TCPV4 });
            assert_eq!(frame.len(), HDR + segs[0].len() + 3 * 1448 + 300);
            assert_eq!(split_all(&frame), segs);
        }
    }

    /// Runs break where GRO would: a gap in the sequence, another ACK number, a
    /// FIN, a shorter segment followed by more, a damaged checksum, an IPv4 ID
    /// that does not follow.
    #[test]
    fn runs_break_where_gro_would() {
        let writes = |segs: &[Vec<u8>]| {
            let mut c = Coalescer::default();
            let mut out = vec![];
            for s in segs {
                c.push(s, &mut |b, _| out.push(b.to_vec()));
            }
            c.flush(&mut |b, _| out.push(b.to_vec()));
            let back: Vec<Vec<u8>> = out.iter().flat_map(|f| split_all(f)).collect();
            assert_eq!(back, segs, "nothing lost, changed or reordered");
            out.len()
        };
        let a = tcp(false, 0, 1000, ACK, 1);
        let b = tcp(false, 1000, 1000, ACK, 2);
        assert_eq!(writes(&[a.clone(), b.clone()]), 1);
        assert_eq!(writes(&[a.clone(), tcp(false, 1001, 1000, ACK, 2)]), 2, "sequence gap");
        let mut other_ack = b.clone();
        other_ack[28] ^= 1;
        fix_tcp_checksum(&mut other_ack);
        assert_eq!(writes(&[a.clone(), other_ack]), 2, "acknowledgement differs");
        assert_eq!(writes(&[a.clone(), tcp(false, 1000, 1000, ACK | FIN, 2)]), 2, "FIN");
        assert_eq!(
            writes(&[tcp(false, 0, 500, ACK, 1), tcp(false, 500, 500, ACK, 2), b.clone()]),
            2,
            "larger after smaller"
        );
        let after_short = tcp(false, 1500, 1000, ACK, 3);
        assert_eq!(writes(&[a.clone(), tcp(false, 1000, 500, ACK, 2), after_short]), 2, "a shorter segment ends a run");
        assert_eq!(writes(&[tcp(false, 0, 1000, ACK | PSH, 1), b.clone()]), 2, "PSH ends a run");
        let mut damaged = b.clone();
        *damaged.last_mut().unwrap() ^= 0x55;
        assert_eq!(writes(&[a.clone(), damaged]), 2, "damaged checksum");
        assert_eq!(writes(&[a.clone(), tcp(false, 1000, 1000, ACK, 7)]), 2, "IPv4 ID");
        assert_eq!(writes(&[tcp(false, 0, 0, ACK, 1), tcp(false, 0, 0, ACK, 2)]), 2, "pure ACKs");
        assert_eq!(writes(&[tcp(false, 0, 1000, SYN | ACK, 1)]), 1);
        assert_eq!(writes(&[tcp(false, 0, 1000, RST | ACK, 1)]), 1);
    }

    /// A kernel super-packet: headers of the first segment, the partial checksum,
    /// IPv4 ID and lengths of the whole; FIN/PSH on the last segment only, CWR on
    /// the first only.
    #[test]
    fn split_follows_the_kernels_gso() {
        let first = tcp(false, 5000, 1448, ACK | PSH | FIN | CWR, 90);
        let mut sp = first[..52].to_vec();
        sp.extend((0..3000).map(|i| (5000 + i) as u8));
        let l = sp.len();
        put16(&mut sp, 2, l as u16);
        let ps = fold(pseudo(&sp, 6, l - 20));
        put16(&mut sp, 36, ps);
        let mut frame = vec![F_NEEDS_CSUM, GSO_TCPV4 | GSO_ECN];
        frame.extend_from_slice(&(l as u16).to_ne_bytes()); // hdr_len as tun may give it: not relied on
        frame.extend_from_slice(&1448u16.to_ne_bytes());
        frame.extend_from_slice(&20u16.to_ne_bytes());
        frame.extend_from_slice(&16u16.to_ne_bytes());
        frame.extend_from_slice(&sp);
        let segs = split_all(&frame);
        assert_eq!(segs.len(), 3);
        for (i, s) in segs.iter().enumerate() {
            assert!(valid(s), "segment {i} has valid checksums");
            assert_eq!(be16(s, 4), 90 + i as u16);
            assert_eq!(u32::from_be_bytes(s[24..28].try_into().unwrap()), 5000 + 1448 * i as u32);
            let f = s[33];
            assert_eq!(f & (FIN | PSH) != 0, i == 2, "FIN/PSH on the last");
            assert_eq!(f & CWR != 0, i == 0, "CWR on the first");
        }
        assert_eq!(segs[2].len(), 52 + 3000 - 2 * 1448);
    }

    /// A packet with a partial checksum and no segmentation gets its checksum
    /// completed; a truncated or unknown header is refused.
    #[test]
    fn partial_checksum_completed_and_bad_headers_refused() {
        let good = tcp(true, 1, 700, ACK, 0);
        let mut p = good.clone();
        let l = p.len();
        let ps = fold(pseudo(&p, 6, l - 40));
        put16(&mut p, 56, ps);
        let mut frame = vec![F_NEEDS_CSUM, GSO_NONE, 0, 0, 0, 0];
        frame.extend_from_slice(&40u16.to_ne_bytes());
        frame.extend_from_slice(&16u16.to_ne_bytes());
        frame.extend_from_slice(&p);
        assert_eq!(split_all(&frame), vec![good]);
        let mut out = vec![];
        assert_eq!(split(&[0; 5], &mut out), Err(GsoError::Short));
        assert_eq!(split(&[0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0x45], &mut out), Err(GsoError::Unsupported(5)));
        let mut bad = frame.clone();
        bad[6..8].copy_from_slice(&5000u16.to_ne_bytes());
        assert_eq!(split(&bad, &mut out), Err(GsoError::Malformed));
        let mut tso = frame;
        tso[1] = GSO_TCPV4; // an IPv6 packet said to be IPv4
        tso[4..6].copy_from_slice(&100u16.to_ne_bytes());
        assert_eq!(split(&tso, &mut out), Err(GsoError::Malformed));
    }
}
