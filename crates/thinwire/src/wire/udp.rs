//! UDP header (RFC 768) with the IPv4 or IPv6 pseudo-header checksum.
use super::{checksum, IpAddress, WireError};

pub const HEADER_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    /// Writes header + payload into `buf` (which must hold both).
    pub fn emit(&self, buf: &mut [u8], payload: &[u8], src: IpAddress, dst: IpAddress) {
        buf[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
        self.emit_around(&mut buf[..HEADER_LEN + payload.len()], src, dst);
    }

    /// Writes the header into the start of `buf`, whose rest already holds the
    /// payload, and fills in the checksum.
    pub fn emit_around(&self, buf: &mut [u8], src: IpAddress, dst: IpAddress) {
        let len = buf.len() as u16;
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..6].copy_from_slice(&len.to_be_bytes());
        buf[6..8].copy_from_slice(&[0, 0]);
        let acc =
            checksum::sum(&buf[..len as usize], checksum::pseudo_header(src, dst, super::ip::PROTO_UDP, len as u32));
        let mut c = !checksum::fold(acc);
        if c == 0 {
            c = 0xffff;
        }
        buf[6..8].copy_from_slice(&c.to_be_bytes());
    }

    pub fn parse(buf: &[u8], src: IpAddress, dst: IpAddress) -> Result<(UdpRepr, &[u8]), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = u16::from_be_bytes([buf[4], buf[5]]) as usize;
        if len < HEADER_LEN || len > buf.len() {
            return Err(WireError::Malformed("bad UDP length"));
        }
        let c = u16::from_be_bytes([buf[6], buf[7]]);
        if c != 0 {
            let acc = checksum::sum(&buf[..len], checksum::pseudo_header(src, dst, super::ip::PROTO_UDP, len as u32));
            if checksum::fold(acc) != 0xffff {
                return Err(WireError::Checksum);
            }
        }
        Ok((Self::ports(buf), &buf[HEADER_LEN..len]))
    }

    /// The ports, without checking length or checksum (real packets).
    pub fn parse_lenient(buf: &[u8]) -> Result<(UdpRepr, &[u8]), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok((Self::ports(buf), &buf[HEADER_LEN..]))
    }

    fn ports(buf: &[u8]) -> UdpRepr {
        UdpRepr { src_port: u16::from_be_bytes([buf[0], buf[1]]), dst_port: u16::from_be_bytes([buf[2], buf[3]]) }
    }
}
