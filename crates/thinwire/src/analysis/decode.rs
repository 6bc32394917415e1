//! Decoding captured frames down to the TCP header: link types Ethernet (1, with
//! 802.1Q / 802.1ad tags), raw IP (101, 12, 14, 228, 229), BSD loopback (0, 108),
//! Linux cooked capture SLL (113) and SLL2 (276); IPv4 (options skipped, non-first
//! fragments ignored) and IPv6 (hop-by-hop, routing, destination-options and
//! fragment headers skipped); TCP options MSS, window scale, SACK-permitted, SACK
//! blocks and timestamps (RFC 9293, RFC 7323, RFC 2018) by the wire layer's option
//! parser in its lenient mode (`wire::tcp::parse_options`).
//!
//! Payload length comes from the IP length field, not from the captured length, so
//! snap-length-truncated captures count their data correctly. A zero IPv4 total
//! length (seen in captures of TSO-offloaded segments) falls back to the frame's
//! length on the wire.

/// The options of a captured segment, parsed by the wire layer's parser in its
/// lenient mode (a snap length may cut them; then they are partial).
pub use crate::wire::TcpOptions as TcpOpts;

#[derive(Clone, Copy, Debug, Default)]
pub struct TcpPkt {
    /// Addresses as 16 bytes (IPv4 in the IPv4-mapped form ::ffff:a.b.c.d).
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub v6: bool,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub win: u16,
    pub payload: u32,
    pub opts: TcpOpts,
}

use crate::wire::TcpFlags;
pub const FIN: u8 = TcpFlags::FIN;
pub const SYN: u8 = TcpFlags::SYN;
pub const RST: u8 = TcpFlags::RST;
pub const PSH: u8 = TcpFlags::PSH;
pub const ACK: u8 = TcpFlags::ACK;

#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    Tcp(TcpPkt),
    /// Not TCP (or a non-first fragment): ignored.
    Other,
    /// A TCP packet whose headers were cut short by the snap length, or malformed.
    Short(&'static str),
    /// A link type this reader does not know.
    UnknownLink(u32),
}
impl Eq for TcpPkt {}
impl PartialEq for TcpPkt {
    fn eq(&self, o: &Self) -> bool {
        self.src == o.src
            && self.dst == o.dst
            && self.sport == o.sport
            && self.dport == o.dport
            && self.seq == o.seq
            && self.ack == o.ack
            && self.flags == o.flags
            && self.payload == o.payload
    }
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Decodes one captured frame; `orig_len` is its length on the wire.
pub fn decode(linktype: u32, d: &[u8], orig_len: u32) -> Decoded {
    // (ethertype or 0 for "look at the IP version nibble", offset of the IP header)
    let (et, off) = match linktype {
        1 => {
            if d.len() < 14 {
                return Decoded::Other;
            }
            let mut o = 12;
            let mut et = be16(d, o);
            while et == 0x8100 || et == 0x88a8 {
                if d.len() < o + 6 {
                    return Decoded::Other;
                }
                o += 4;
                et = be16(d, o);
            }
            (et, o + 2)
        }
        101 | 12 | 14 => (0, 0),
        228 => (0x0800, 0),
        229 => (0x86dd, 0),
        0 | 108 => (0, 4),
        113 => {
            if d.len() < 16 {
                return Decoded::Other;
            }
            (be16(d, 14), 16)
        }
        276 => {
            if d.len() < 20 {
                return Decoded::Other;
            }
            (be16(d, 0), 20)
        }
        x => return Decoded::UnknownLink(x),
    };
    if d.len() <= off {
        return Decoded::Other;
    }
    let ip = &d[off..];
    let wire_ip_len = orig_len.saturating_sub(off as u32);
    let v = ip[0] >> 4;
    match (et, v) {
        (0x0800, _) | (0, 4) => ipv4(ip, wire_ip_len),
        (0x86dd, _) | (0, 6) => ipv6(ip, wire_ip_len),
        _ => Decoded::Other,
    }
}

fn ipv4(ip: &[u8], wire_len: u32) -> Decoded {
    if ip.len() < 20 {
        return Decoded::Other;
    }
    if ip[9] != 6 {
        return Decoded::Other;
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    if ihl < 20 {
        return Decoded::Short("IPv4 header length below 20 bytes");
    }
    let frag = be16(ip, 6);
    if frag & 0x1fff != 0 {
        return Decoded::Other;
    }
    let mut total = be16(ip, 2) as u32;
    if total == 0 {
        total = wire_len;
    }
    if total < ihl as u32 {
        return Decoded::Short("IPv4 total length shorter than its header");
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[10] = 0xff;
    src[11] = 0xff;
    dst[10] = 0xff;
    dst[11] = 0xff;
    src[12..].copy_from_slice(&ip[12..16]);
    dst[12..].copy_from_slice(&ip[16..20]);
    if ip.len() < ihl {
        return Decoded::Short("IPv4 header cut by the snap length");
    }
    tcp(&ip[ihl..], total - ihl as u32, src, dst, false)
}

fn ipv6(ip: &[u8], wire_len: u32) -> Decoded {
    if ip.len() < 40 {
        return Decoded::Other;
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&ip[8..24]);
    dst.copy_from_slice(&ip[24..40]);
    let mut plen = be16(ip, 4) as u32;
    if plen == 0 {
        plen = wire_len.saturating_sub(40);
    }
    let mut nh = ip[6];
    let mut o = 40usize;
    loop {
        match nh {
            6 => break,
            0 | 43 | 60 => {
                if ip.len() < o + 2 {
                    return Decoded::Other;
                }
                let l = (ip[o + 1] as usize + 1) * 8;
                nh = ip[o];
                o += l;
            }
            44 => {
                if ip.len() < o + 8 {
                    return Decoded::Other;
                }
                if be16(ip, o + 2) & 0xfff8 != 0 {
                    return Decoded::Other;
                }
                nh = ip[o];
                o += 8;
            }
            _ => return Decoded::Other,
        }
    }
    let ext = (o - 40) as u32;
    if plen < ext {
        return Decoded::Short("IPv6 payload length shorter than its extension headers");
    }
    if ip.len() < o {
        return Decoded::Short("IPv6 extension headers cut by the snap length");
    }
    tcp(&ip[o..], plen - ext, src, dst, true)
}

fn tcp(t: &[u8], seg_len: u32, src: [u8; 16], dst: [u8; 16], v6: bool) -> Decoded {
    if t.len() < 20 {
        return Decoded::Short("TCP header cut by the snap length");
    }
    let hl = ((t[12] >> 4) as usize) * 4;
    if hl < 20 {
        return Decoded::Short("TCP data offset below 20 bytes");
    }
    if (seg_len as usize) < hl {
        return Decoded::Short("IP length shorter than the TCP header");
    }
    let mut p = TcpPkt {
        src,
        dst,
        v6,
        sport: be16(t, 0),
        dport: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: t[13],
        win: be16(t, 14),
        payload: seg_len - hl as u32,
        opts: TcpOpts::default(),
    };
    // Options: parse what was captured (a snap length may cut them; then they are partial).
    let end = hl.min(t.len());
    p.opts = crate::wire::tcp::parse_options(&t[20..end], crate::wire::OptionMode::Lenient).unwrap_or_default();
    Decoded::Tcp(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Packet, TcpRepr, L4};

    fn sample() -> Vec<u8> {
        let mut r = TcpRepr::default();
        r.src_port = 1234;
        r.dst_port = 80;
        r.seq = 1000;
        r.ack = 77;
        r.flags = TcpFlags(ACK | PSH);
        r.window = 5000;
        r.opts.timestamps = Some((11, 22));
        let p = Packet::new([10, 0, 0, 1], [10, 0, 0, 2], 1, L4::Tcp(r), 100, 0, crate::time::Instant::ZERO);
        p.emit()
    }

    #[test]
    fn raw_ipv4_tcp_with_options() {
        let b = sample();
        let Decoded::Tcp(p) = decode(101, &b, b.len() as u32) else { panic!("not decoded") };
        assert_eq!((p.sport, p.dport, p.seq, p.ack, p.win, p.payload), (1234, 80, 1000, 77, 5000, 100));
        assert_eq!(p.flags & (ACK | PSH), ACK | PSH);
        assert_eq!(p.opts.timestamps, Some((11, 22)));
        assert_eq!(&p.src[12..], &[10, 0, 0, 1]);
    }

    #[test]
    fn link_types_agree() {
        let ip = sample();
        let raw = decode(101, &ip, ip.len() as u32);
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x81, 0x00, 0, 5, 0x08, 0x00]);
        eth.extend_from_slice(&ip);
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&ip);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0u8; 18]);
        sll2.extend_from_slice(&ip);
        let mut null = vec![2, 0, 0, 0];
        null.extend_from_slice(&ip);
        for (lt, f) in [(1, &eth), (113, &sll), (276, &sll2), (0, &null)] {
            assert_eq!(decode(lt, f, f.len() as u32), raw, "link type {lt}");
        }
        assert_eq!(decode(9999, &ip, 0), Decoded::UnknownLink(9999));
    }

    #[test]
    fn snaplen_cut_payload_counts_from_ip_length() {
        let ip = sample();
        let Decoded::Tcp(p) = decode(101, &ip[..60], ip.len() as u32) else { panic!() };
        assert_eq!(p.payload, 100);
        assert!(matches!(decode(101, &ip[..30], ip.len() as u32), Decoded::Short(_)));
    }

    #[test]
    fn ipv6_with_extension_header() {
        let ip4 = sample();
        let tcp = &ip4[20..];
        let mut v6 = vec![0x60, 0, 0, 0];
        v6.extend_from_slice(&((tcp.len() + 8) as u16).to_be_bytes());
        v6.extend_from_slice(&[0, 64]); // next header: hop-by-hop
        v6.extend_from_slice(&[0xfe; 16]);
        v6.extend_from_slice(&[0xfd; 16]);
        v6.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0]);
        v6.extend_from_slice(tcp);
        let Decoded::Tcp(p) = decode(101, &v6, v6.len() as u32) else { panic!() };
        assert!(p.v6);
        assert_eq!((p.sport, p.payload, p.src[0]), (1234, 100, 0xfe));
    }
}
