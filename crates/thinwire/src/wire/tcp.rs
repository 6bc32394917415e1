//! TCP header (RFC 9293) with options MSS, window scale and timestamps (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018). Options are emitted in the order
//! Linux uses and padded with NOPs to 32-bit alignment; at most 40 bytes of options
//! fit, so with timestamps at most 3 SACK blocks are carried, 4 without.
use super::{checksum, IpAddress, WireError};

pub const BASE_LEN: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);
impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    /// RFC 3168 §6.1: ECN-Echo and Congestion Window Reduced.
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
    pub fn has(self, f: u8) -> bool {
        self.0 & f != 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    /// The options (MSS, window scale, SACK, timestamps).
    pub opts: TcpOptions,
}

impl TcpRepr {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        self.opts.sack_blocks()
    }
    /// Most SACK blocks that fit next to the other options.
    pub fn max_sack_blocks(timestamps: bool) -> usize {
        if timestamps {
            3
        } else {
            4
        }
    }

    pub fn options_len(&self) -> usize {
        let mut n = 0;
        if self.opts.mss.is_some() {
            n += 4;
        }
        if self.opts.wscale.is_some() {
            n += 4;
        }
        // With timestamps, SACK-permitted takes the two NOPs before them.
        if self.opts.sack_permitted && self.opts.timestamps.is_none() {
            n += 4;
        }
        if self.opts.timestamps.is_some() {
            n += 12;
        }
        if self.opts.sack_len > 0 {
            n += 4 + 8 * self.opts.sack_len as usize;
        }
        n
    }
    pub fn header_len(&self) -> usize {
        BASE_LEN + self.options_len()
    }

    /// Writes header and payload into `buf` and fills in the checksum.
    pub fn emit(&self, buf: &mut [u8], payload: &[u8], src: IpAddress, dst: IpAddress) {
        let hl = self.header_len();
        buf[hl..hl + payload.len()].copy_from_slice(payload);
        self.emit_around(&mut buf[..hl + payload.len()], src, dst);
    }

    /// Writes the header into the start of `b`, whose rest already holds the
    /// payload, and fills in the checksum.
    pub fn emit_around(&self, b: &mut [u8], src: IpAddress, dst: IpAddress) {
        let hl = self.header_len();
        assert!(hl <= 60, "TCP options exceed 40 bytes");
        b[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        b[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        b[4..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..12].copy_from_slice(&self.ack.to_be_bytes());
        b[12] = ((hl / 4) as u8) << 4;
        b[13] = self.flags.0;
        b[14..16].copy_from_slice(&self.window.to_be_bytes());
        b[16..20].copy_from_slice(&[0, 0, 0, 0]);
        let mut o = BASE_LEN;
        let mut put = |bytes: &[u8], o: &mut usize| {
            b[*o..*o + bytes.len()].copy_from_slice(bytes);
            *o += bytes.len();
        };
        if let Some(m) = self.opts.mss {
            let m = m.to_be_bytes();
            put(&[2, 4, m[0], m[1]], &mut o);
        }
        // Linux `tcp_options_write`: SACK-permitted rides in the timestamps'
        // padding (a SYN of MSS, SACK-permitted, timestamps and window scale is
        // 20 bytes of options, 60 bytes of IPv4 and TCP).
        match (self.opts.sack_permitted, self.opts.timestamps.is_some()) {
            (true, true) => put(&[4, 2, 8, 10], &mut o),
            (true, false) => put(&[1, 1, 4, 2], &mut o),
            (false, true) => put(&[1, 1, 8, 10], &mut o),
            (false, false) => {}
        }
        if let Some((v, e)) = self.opts.timestamps {
            put(&v.to_be_bytes(), &mut o);
            put(&e.to_be_bytes(), &mut o);
        }
        if let Some(w) = self.opts.wscale {
            put(&[1, 3, 3, w], &mut o);
        }
        if self.opts.sack_len > 0 {
            put(&[1, 1, 5, 2 + 8 * self.opts.sack_len], &mut o);
            for &(l, r) in self.sack_blocks() {
                put(&l.to_be_bytes(), &mut o);
                put(&r.to_be_bytes(), &mut o);
            }
        }
        debug_assert_eq!(o, hl);
        let len = b.len() as u32;
        let acc = checksum::sum(b, checksum::pseudo_header(src, dst, super::ip::PROTO_TCP, len));
        b[16..18].copy_from_slice(&(!checksum::fold(acc)).to_be_bytes());
    }

    /// Parses a segment strictly, verifying the checksum against the pseudo-header
    /// of `src` and `dst`; options as [`OptionMode::Strict`].
    pub fn parse(buf: &[u8], src: IpAddress, dst: IpAddress) -> Result<(TcpRepr, &[u8]), WireError> {
        let hl = Self::data_offset(buf)?;
        let acc = checksum::sum(buf, checksum::pseudo_header(src, dst, super::ip::PROTO_TCP, buf.len() as u32));
        if checksum::fold(acc) != 0xffff {
            return Err(WireError::Checksum);
        }
        let mut r = Self::fixed(buf);
        r.opts = parse_options(&buf[BASE_LEN..hl], OptionMode::Strict)?;
        Ok((r, &buf[hl..]))
    }

    /// Parses a segment as a host would accept it from the network: no checksum
    /// check, every flag bit kept, options as [`OptionMode::Lenient`]. For real
    /// packets, whose bytes stay the authority.
    pub fn parse_lenient(buf: &[u8]) -> Result<(TcpRepr, &[u8]), WireError> {
        let hl = Self::data_offset(buf)?;
        let mut r = Self::fixed(buf);
        r.opts = parse_options(&buf[BASE_LEN..hl], OptionMode::Lenient)?;
        Ok((r, &buf[hl..]))
    }

    fn data_offset(buf: &[u8]) -> Result<usize, WireError> {
        if buf.len() < BASE_LEN {
            return Err(WireError::Truncated);
        }
        let hl = (buf[12] >> 4) as usize * 4;
        if hl < BASE_LEN || hl > buf.len() {
            return Err(WireError::Malformed("bad data offset"));
        }
        Ok(hl)
    }

    fn fixed(buf: &[u8]) -> TcpRepr {
        TcpRepr {
            src_port: be16(buf, 0),
            dst_port: be16(buf, 2),
            seq: be32(buf, 4),
            ack: be32(buf, 8),
            flags: TcpFlags(buf[13]),
            window: be16(buf, 14),
            ..Default::default()
        }
    }
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// The TCP options thinwire understands: MSS (kind 2), window scale (3),
/// SACK-permitted (4), SACK blocks (5), timestamps (8). Others (TFO cookies,
/// MD5 signatures, MPTCP, experimental kinds) are skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr)
    pub timestamps: Option<(u32, u32)>,
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
}

impl TcpOptions {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.sack_len as usize]
    }
}

/// How [`parse_options`] treats what it does not expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionMode {
    /// What thinwire emits: a known option of the wrong length, or an option that
    /// runs past the header, is an error.
    Strict,
    /// What a host or an analyser accepts (the capture reader, real packets in the
    /// emulator and the proxy): parsing stops at the first malformed option and
    /// keeps what came before; a window scale above 14 is taken as 14 (RFC 7323
    /// §2.3); a SACK option carries as many whole blocks as fit, at most 4.
    Lenient,
}

/// Parses the option bytes of a TCP header (after the 20 fixed bytes).
pub fn parse_options(opts: &[u8], mode: OptionMode) -> Result<TcpOptions, WireError> {
    let strict = mode == OptionMode::Strict;
    let bad = |o: TcpOptions| if strict { Err(WireError::Malformed("option length")) } else { Ok(o) };
    let mut o = TcpOptions::default();
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        if kind == 0 {
            break;
        }
        if kind == 1 {
            i += 1;
            continue;
        }
        if i + 1 >= opts.len() {
            return bad(o);
        }
        let len = opts[i + 1] as usize;
        if len < 2 || i + len > opts.len() {
            return bad(o);
        }
        let v = &opts[i + 2..i + len];
        match (kind, len) {
            (2, 4) => o.mss = Some(be16(v, 0)),
            (3, 3) => o.wscale = Some(if strict { v[0] } else { v[0].min(14) }),
            (4, 2) => o.sack_permitted = true,
            (8, 10) => o.timestamps = Some((be32(v, 0), be32(v, 4))),
            (5, l) if !strict || ((l - 2) % 8 == 0 && l <= 34) => {
                let n = ((l - 2) / 8).min(4);
                for k in 0..n {
                    o.sack[k] = (be32(v, 8 * k), be32(v, 8 * k + 4));
                }
                o.sack_len = n as u8;
            }
            (2 | 3 | 4 | 8 | 5, _) if strict => return bad(o),
            _ => {}
        }
        i += len;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn roundtrip_with_all_options() {
        let mut r = TcpRepr {
            src_port: 80,
            dst_port: 40000,
            seq: 0xfffffff0,
            ack: 7,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            window: 65535,
            opts: TcpOptions { timestamps: Some((1, 2)), ..Default::default() },
        };
        r.opts.sack[0] = (100, 200);
        r.opts.sack[1] = (300, 400);
        r.opts.sack_len = 2;
        let payload: Vec<u8> = (0..33u32).map(|i| crate::wire::virtual_byte(r.seq.wrapping_add(i))).collect();
        let mut buf = vec![0u8; r.header_len() + payload.len()];
        let (s, d) = ([10, 0, 0, 1].into(), [10, 0, 1, 2].into());
        r.emit(&mut buf, &payload, s, d);
        let (p, pl) = TcpRepr::parse(&buf, s, d).unwrap();
        assert_eq!(p, r);
        assert_eq!(pl, &payload[..]);
        buf[30] ^= 1;
        assert_eq!(TcpRepr::parse(&buf, s, d).unwrap_err(), WireError::Checksum);
    }
    /// Every flag bit crosses a strict parse, ECE and CWR included (RFC 3168):
    /// a link that rebuilds packets from their bytes (PPP over GSM RLP) once
    /// dropped them and with them the ECN negotiation.
    #[test]
    fn ecn_flags_survive_a_strict_parse() {
        let r = TcpRepr {
            src_port: 1,
            dst_port: 2,
            flags: TcpFlags(TcpFlags::SYN | TcpFlags::ECE | TcpFlags::CWR),
            ..Default::default()
        };
        let mut buf = vec![0u8; r.header_len()];
        let (s, d) = ([10, 0, 0, 1].into(), [10, 0, 1, 2].into());
        r.emit(&mut buf, &[], s, d);
        assert_eq!(TcpRepr::parse(&buf, s, d).unwrap().0.flags, r.flags);
    }
    #[test]
    fn syn_options_roundtrip() {
        let r = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: 5,
            flags: TcpFlags(TcpFlags::SYN),
            window: 8192,
            opts: TcpOptions {
                mss: Some(1460),
                wscale: Some(7),
                sack_permitted: true,
                timestamps: Some((9, 0)),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut buf = vec![0u8; r.header_len()];
        let (s, d) = ([1, 2, 3, 4].into(), [5, 6, 7, 8].into());
        r.emit(&mut buf, &[], s, d);
        assert_eq!(r.header_len(), 40, "Linux's SYN: 20 bytes of options");
        // The bytes Linux writes (a capture of a 6.18 kernel's SYN).
        assert_eq!(&buf[20..], &[2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 1, 3, 3, 7]);
        assert_eq!(TcpRepr::parse(&buf, s, d).unwrap().0, r);
        for (sack, ts, len) in [(true, false, 32), (false, true, 40), (false, false, 28)] {
            let mut q = r;
            q.opts.sack_permitted = sack;
            q.opts.timestamps = ts.then_some((9, 0));
            let mut b = vec![0u8; q.header_len()];
            q.emit(&mut b, &[], s, d);
            assert_eq!(q.header_len(), len, "sack {sack} ts {ts}");
            assert_eq!(TcpRepr::parse(&b, s, d).unwrap().0, q);
        }
    }

    /// Options as Linux sends them on a SYN with a TFO cookie and an MPTCP option,
    /// then SACK on data: both modes parse what thinwire knows and skip the rest.
    #[test]
    fn linux_options_and_unknown_kinds() {
        let syn = [
            2, 4, 5, 0xb4, // MSS 1460
            4, 2, // SACK permitted
            8, 10, 0, 0, 0, 9, 0, 0, 0, 0, // timestamps
            1, 3, 3, 7, // NOP, wscale 7
            34, 10, 1, 2, 3, 4, 5, 6, 7, 8, // TFO cookie
            30, 4, 0, 1, // MPTCP MP_CAPABLE (short form)
        ];
        for mode in [OptionMode::Strict, OptionMode::Lenient] {
            let o = parse_options(&syn, mode).unwrap();
            assert_eq!((o.mss, o.wscale, o.sack_permitted, o.timestamps), (Some(1460), Some(7), true, Some((9, 0))));
        }
        let sack = [1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
        let o = parse_options(&sack, OptionMode::Strict).unwrap();
        assert_eq!(o.sack_blocks(), &[(1, 2), (3, 4)]);
    }

    #[test]
    fn malformed_options_are_errors_when_strict_and_cut_when_lenient() {
        // MSS, then a timestamp option whose length runs past the header.
        let cut = [2, 4, 1, 0, 8, 10, 0, 0, 0, 1];
        assert_eq!(parse_options(&cut, OptionMode::Strict), Err(WireError::Malformed("option length")));
        let o = parse_options(&cut, OptionMode::Lenient).unwrap();
        assert_eq!((o.mss, o.timestamps), (Some(256), None));
        // A window scale of 20 is taken as 14 by a host (RFC 7323 §2.3).
        assert_eq!(parse_options(&[3, 3, 20, 0], OptionMode::Lenient).unwrap().wscale, Some(14));
        assert_eq!(parse_options(&[3, 3, 20, 0], OptionMode::Strict).unwrap().wscale, Some(20));
        // A SACK option of 3 blocks plus 4 stray bytes: lenient keeps the 3 blocks.
        let mut odd = vec![5, 30];
        odd.extend((0..28).map(|i| i as u8));
        assert!(parse_options(&odd, OptionMode::Strict).is_err());
        assert_eq!(parse_options(&odd, OptionMode::Lenient).unwrap().sack_len, 3);
    }

    #[test]
    fn ipv6_checksum_covers_the_v6_pseudo_header() {
        let r = TcpRepr { src_port: 5, dst_port: 6, seq: 1, flags: TcpFlags(TcpFlags::ACK), ..Default::default() };
        let (s, d): (IpAddress, IpAddress) = ([0x20; 16].into(), [0xfe; 16].into());
        let mut buf = vec![0u8; r.header_len() + 3];
        r.emit(&mut buf, b"abc", s, d);
        assert!(TcpRepr::parse(&buf, s, d).is_ok());
        assert_eq!(TcpRepr::parse(&buf, d, s).map(|_| ()), Ok(()), "the sum is symmetric in src and dst");
        let other: IpAddress = [0x21; 16].into();
        assert_eq!(TcpRepr::parse(&buf, other, d).unwrap_err(), WireError::Checksum);
    }
}
