//! IPv4 header (RFC 791). thinwire emits headers without options (DF set); parsing
//! real packets accepts options (kept in the packet's bytes) and fragments.
use super::{checksum, WireError};

pub const HEADER_LEN: usize = 20;
pub use super::ip::{PROTO_TCP, PROTO_UDP};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub protocol: u8,
    pub ttl: u8,
    pub ident: u16,
    /// Length of the IP payload (transport header + data) in bytes.
    pub payload_len: u16,
    /// The ECN field (RFC 3168 §5: the two low bits of the TOS byte; the DSCP
    /// bits are emitted as 0).
    pub ecn: u8,
}

impl Ipv4Repr {
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len as usize
    }

    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[0] = 0x45;
        b[1] = self.ecn & 3;
        b[2..4].copy_from_slice(&(self.total_len() as u16).to_be_bytes());
        b[4..6].copy_from_slice(&self.ident.to_be_bytes());
        b[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
        b[8] = self.ttl;
        b[9] = self.protocol;
        b[10..12].copy_from_slice(&[0, 0]);
        b[12..16].copy_from_slice(&self.src);
        b[16..20].copy_from_slice(&self.dst);
        let c = checksum::checksum(b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
    }

    /// Parses and validates a header (checksum verified); returns the repr and the
    /// payload slice.
    pub fn parse(buf: &[u8]) -> Result<(Ipv4Repr, &[u8]), WireError> {
        Self::parse_mode(buf, true)
    }

    /// `strict`: verify the header checksum. Either way the payload is what the
    /// total length says (after any options); a non-first fragment is an error
    /// (`Fragment`) since it carries no transport header.
    pub fn parse_mode(buf: &[u8], strict: bool) -> Result<(Ipv4Repr, &[u8]), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if buf[0] >> 4 != 4 {
            return Err(WireError::Malformed("not IPv4"));
        }
        let ihl = (buf[0] & 0xf) as usize * 4;
        if ihl < HEADER_LEN || buf.len() < ihl {
            return Err(WireError::Malformed("bad IHL"));
        }
        let total = u16::from_be_bytes([buf[2], buf[3]]) as usize;
        if total < ihl || total > buf.len() {
            return Err(WireError::Truncated);
        }
        if strict && checksum::checksum(&buf[..ihl]) != 0 {
            return Err(WireError::Checksum);
        }
        if u16::from_be_bytes([buf[6], buf[7]]) & 0x1fff != 0 {
            return Err(WireError::Fragment);
        }
        let r = Ipv4Repr {
            ident: u16::from_be_bytes([buf[4], buf[5]]),
            ttl: buf[8],
            protocol: buf[9],
            src: buf[12..16].try_into().unwrap(),
            dst: buf[16..20].try_into().unwrap(),
            payload_len: (total - ihl) as u16,
            ecn: buf[1] & 3,
        };
        Ok((r, &buf[ihl..total]))
    }
}
