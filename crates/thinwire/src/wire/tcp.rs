//! TCP header (RFC 9293) with options MSS, window scale and timestamps (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018). Options are emitted in the order
//! Linux uses and padded with NOPs to 32-bit alignment; at most 40 bytes of options
//! fit, so with timestamps at most 3 SACK blocks are carried, 4 without.
use super::{checksum, WireError};

pub const BASE_LEN: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);
impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
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
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr)
    pub timestamps: Option<(u32, u32)>,
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
}

impl TcpRepr {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.sack_len as usize]
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
        if self.mss.is_some() {
            n += 4;
        }
        if self.wscale.is_some() {
            n += 4;
        }
        if self.sack_permitted {
            n += 4;
        }
        if self.timestamps.is_some() {
            n += 12;
        }
        if self.sack_len > 0 {
            n += 4 + 8 * self.sack_len as usize;
        }
        n
    }
    pub fn header_len(&self) -> usize {
        BASE_LEN + self.options_len()
    }

    /// Writes header and payload into `buf` and fills in the checksum.
    pub fn emit(&self, buf: &mut [u8], payload: &[u8], src: [u8; 4], dst: [u8; 4]) {
        let hl = self.header_len();
        assert!(hl <= 60, "TCP options exceed 40 bytes");
        let b = &mut buf[..hl + payload.len()];
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
        if let Some(m) = self.mss {
            let m = m.to_be_bytes();
            put(&[2, 4, m[0], m[1]], &mut o);
        }
        if self.sack_permitted {
            put(&[1, 1, 4, 2], &mut o);
        }
        if let Some((v, e)) = self.timestamps {
            put(&[1, 1, 8, 10], &mut o);
            put(&v.to_be_bytes(), &mut o);
            put(&e.to_be_bytes(), &mut o);
        }
        if let Some(w) = self.wscale {
            put(&[1, 3, 3, w], &mut o);
        }
        if self.sack_len > 0 {
            put(&[1, 1, 5, 2 + 8 * self.sack_len], &mut o);
            for &(l, r) in self.sack_blocks() {
                put(&l.to_be_bytes(), &mut o);
                put(&r.to_be_bytes(), &mut o);
            }
        }
        debug_assert_eq!(o, hl);
        b[hl..].copy_from_slice(payload);
        let len = (hl + payload.len()) as u16;
        let acc = checksum::sum(b, checksum::pseudo_header(src, dst, super::ipv4::PROTO_TCP, len));
        b[16..18].copy_from_slice(&(!checksum::fold(acc)).to_be_bytes());
    }

    /// Parses a segment, verifying the checksum against the pseudo-header.
    pub fn parse(buf: &[u8], src: [u8; 4], dst: [u8; 4]) -> Result<(TcpRepr, &[u8]), WireError> {
        if buf.len() < BASE_LEN {
            return Err(WireError::Truncated);
        }
        let hl = (buf[12] >> 4) as usize * 4;
        if hl < BASE_LEN || hl > buf.len() {
            return Err(WireError::Malformed("bad data offset"));
        }
        let acc = checksum::sum(buf, checksum::pseudo_header(src, dst, super::ipv4::PROTO_TCP, buf.len() as u16));
        if checksum::fold(acc) != 0xffff {
            return Err(WireError::Checksum);
        }
        let mut r = TcpRepr {
            src_port: u16::from_be_bytes([buf[0], buf[1]]),
            dst_port: u16::from_be_bytes([buf[2], buf[3]]),
            seq: u32::from_be_bytes(buf[4..8].try_into().unwrap()),
            ack: u32::from_be_bytes(buf[8..12].try_into().unwrap()),
            flags: TcpFlags(buf[13] & 0x3f),
            window: u16::from_be_bytes([buf[14], buf[15]]),
            ..Default::default()
        };
        let opts = &buf[BASE_LEN..hl];
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => break,
                1 => {
                    i += 1;
                    continue;
                }
                kind => {
                    if i + 1 >= opts.len() {
                        return Err(WireError::Malformed("option length"));
                    }
                    let len = opts[i + 1] as usize;
                    if len < 2 || i + len > opts.len() {
                        return Err(WireError::Malformed("option length"));
                    }
                    let v = &opts[i + 2..i + len];
                    match (kind, len) {
                        (2, 4) => r.mss = Some(u16::from_be_bytes([v[0], v[1]])),
                        (3, 3) => r.wscale = Some(v[0]),
                        (4, 2) => r.sack_permitted = true,
                        (8, 10) => {
                            r.timestamps = Some((
                                u32::from_be_bytes(v[0..4].try_into().unwrap()),
                                u32::from_be_bytes(v[4..8].try_into().unwrap()),
                            ))
                        }
                        (5, l) if (l - 2) % 8 == 0 && l <= 34 => {
                            for (k, c) in v.chunks_exact(8).enumerate() {
                                r.sack[k] = (
                                    u32::from_be_bytes(c[0..4].try_into().unwrap()),
                                    u32::from_be_bytes(c[4..8].try_into().unwrap()),
                                );
                                r.sack_len = k as u8 + 1;
                            }
                        }
                        (2 | 3 | 4 | 8 | 5, _) => return Err(WireError::Malformed("option length")),
                        _ => {}
                    }
                    i += len;
                }
            }
        }
        Ok((r, &buf[hl..]))
    }
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
            mss: None,
            wscale: None,
            sack_permitted: false,
            timestamps: Some((1, 2)),
            ..Default::default()
        };
        r.sack[0] = (100, 200);
        r.sack[1] = (300, 400);
        r.sack_len = 2;
        let payload: Vec<u8> = (0..33u32).map(|i| crate::wire::virtual_byte(r.seq.wrapping_add(i))).collect();
        let mut buf = vec![0u8; r.header_len() + payload.len()];
        let (s, d) = ([10, 0, 0, 1], [10, 0, 1, 2]);
        r.emit(&mut buf, &payload, s, d);
        let (p, pl) = TcpRepr::parse(&buf, s, d).unwrap();
        assert_eq!(p, r);
        assert_eq!(pl, &payload[..]);
        buf[30] ^= 1;
        assert_eq!(TcpRepr::parse(&buf, s, d).unwrap_err(), WireError::Checksum);
    }
    #[test]
    fn syn_options_roundtrip() {
        let r = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: 5,
            flags: TcpFlags(TcpFlags::SYN),
            window: 8192,
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            timestamps: Some((9, 0)),
            ..Default::default()
        };
        let mut buf = vec![0u8; r.header_len()];
        r.emit(&mut buf, &[], [1, 2, 3, 4], [5, 6, 7, 8]);
        assert_eq!(r.header_len(), 44);
        assert_eq!(TcpRepr::parse(&buf, [1, 2, 3, 4], [5, 6, 7, 8]).unwrap().0, r);
    }
}
