//! IPv6 header (RFC 8200). thinwire emits headers without extension headers;
//! parsing skips hop-by-hop, routing, destination-options and (first) fragment
//! headers to find the transport header.
use super::WireError;

pub const HEADER_LEN: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// The transport protocol (the last next-header value).
    pub next_header: u8,
    pub hop_limit: u8,
    pub flow_label: u32,
    /// Transport header and data bytes (after extension headers).
    pub payload_len: u16,
    /// Bytes of extension headers between the fixed header and the transport header
    /// (0 when thinwire emits the header).
    pub ext_len: u16,
    /// The ECN field (RFC 3168 §5: the two low bits of the traffic class).
    pub ecn: u8,
}

impl Ipv6Repr {
    /// Writes the fixed header; `next_header` is the transport protocol.
    pub fn emit(&self, buf: &mut [u8]) {
        debug_assert_eq!(self.ext_len, 0, "thinwire emits no extension headers");
        let b = &mut buf[..HEADER_LEN];
        let vtf = (6u32 << 28) | ((self.ecn as u32 & 3) << 20) | (self.flow_label & 0xf_ffff);
        b[0..4].copy_from_slice(&vtf.to_be_bytes());
        b[4..6].copy_from_slice(&self.payload_len.to_be_bytes());
        b[6] = self.next_header;
        b[7] = self.hop_limit;
        b[8..24].copy_from_slice(&self.src);
        b[24..40].copy_from_slice(&self.dst);
    }

    /// Parses the fixed header and skips extension headers; returns the repr and
    /// the transport header and data. A non-first fragment is `Fragment`.
    pub fn parse(buf: &[u8]) -> Result<(Ipv6Repr, &[u8]), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if buf[0] >> 4 != 6 {
            return Err(WireError::Malformed("not IPv6"));
        }
        let plen = u16::from_be_bytes([buf[4], buf[5]]) as usize;
        if HEADER_LEN + plen > buf.len() {
            return Err(WireError::Truncated);
        }
        let end = HEADER_LEN + plen;
        let mut nh = buf[6];
        let mut o = HEADER_LEN;
        loop {
            match nh {
                0 | 43 | 60 => {
                    if end < o + 2 {
                        return Err(WireError::Truncated);
                    }
                    let l = (buf[o + 1] as usize + 1) * 8;
                    nh = buf[o];
                    o += l;
                }
                44 => {
                    if end < o + 8 {
                        return Err(WireError::Truncated);
                    }
                    if u16::from_be_bytes([buf[o + 2], buf[o + 3]]) & 0xfff8 != 0 {
                        return Err(WireError::Fragment);
                    }
                    nh = buf[o];
                    o += 8;
                }
                _ => break,
            }
            if o > end {
                return Err(WireError::Truncated);
            }
        }
        let r = Ipv6Repr {
            src: buf[8..24].try_into().unwrap(),
            dst: buf[24..40].try_into().unwrap(),
            next_header: nh,
            hop_limit: buf[7],
            flow_label: u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) & 0xf_ffff,
            payload_len: (end - o) as u16,
            ext_len: (o - HEADER_LEN) as u16,
            ecn: (buf[1] >> 4) & 3,
        };
        Ok((r, &buf[o..end]))
    }
}
