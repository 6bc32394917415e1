//! IP addresses and the IP header of either version (RFC 791 IPv4, RFC 8200 IPv6).
use super::{ipv4, ipv6, Ipv4Repr, Ipv6Repr, WireError};

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

/// ECN codepoints (RFC 3168 §5).
pub const NOT_ECT: u8 = 0;
pub const ECT1: u8 = 1;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// An IPv4 or IPv6 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpAddress {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl From<[u8; 4]> for IpAddress {
    fn from(a: [u8; 4]) -> Self {
        IpAddress::V4(a)
    }
}

impl From<std::net::IpAddr> for IpAddress {
    fn from(a: std::net::IpAddr) -> Self {
        match a {
            std::net::IpAddr::V4(a) => IpAddress::V4(a.octets()),
            std::net::IpAddr::V6(a) => IpAddress::V6(a.octets()),
        }
    }
}

impl From<IpAddress> for std::net::IpAddr {
    fn from(a: IpAddress) -> Self {
        match a {
            IpAddress::V4(a) => std::net::IpAddr::from(a),
            IpAddress::V6(a) => std::net::IpAddr::from(a),
        }
    }
}

impl From<[u8; 16]> for IpAddress {
    fn from(a: [u8; 16]) -> Self {
        IpAddress::V6(a)
    }
}

impl IpAddress {
    pub fn bytes(&self) -> &[u8] {
        match self {
            IpAddress::V4(a) => a,
            IpAddress::V6(a) => a,
        }
    }
}

impl std::fmt::Display for IpAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            IpAddress::V4(a) => std::net::Ipv4Addr::from(*a).fmt(f),
            IpAddress::V6(a) => std::net::Ipv6Addr::from(*a).fmt(f),
        }
    }
}

/// The IP header of a packet. (IPv6 headers are boxed so that the simulator's
/// IPv4 packets stay small: packets are moved through many queues.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpRepr {
    V4(Ipv4Repr),
    V6(Box<Ipv6Repr>),
}

impl IpRepr {
    /// A header for `payload_len` bytes of `protocol` from `src` to `dst` (both of
    /// one version): TTL / hop limit 64, DF set on IPv4.
    pub fn new(src: IpAddress, dst: IpAddress, protocol: u8, ident: u16, payload_len: usize) -> IpRepr {
        match (src, dst) {
            (IpAddress::V4(src), IpAddress::V4(dst)) => {
                IpRepr::V4(Ipv4Repr { src, dst, protocol, ttl: 64, ident, payload_len: payload_len as u16, ecn: 0 })
            }
            (IpAddress::V6(src), IpAddress::V6(dst)) => IpRepr::V6(Box::new(Ipv6Repr {
                src,
                dst,
                next_header: protocol,
                hop_limit: 64,
                flow_label: ident as u32,
                payload_len: payload_len as u16,
                ext_len: 0,
                ecn: 0,
            })),
            _ => panic!("IP addresses of two versions: {src} and {dst}"),
        }
    }
    pub fn src(&self) -> IpAddress {
        match self {
            IpRepr::V4(r) => IpAddress::V4(r.src),
            IpRepr::V6(r) => IpAddress::V6(r.src),
        }
    }
    pub fn dst(&self) -> IpAddress {
        match self {
            IpRepr::V4(r) => IpAddress::V4(r.dst),
            IpRepr::V6(r) => IpAddress::V6(r.dst),
        }
    }
    /// The transport protocol (after any IPv6 extension headers).
    pub fn protocol(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.protocol,
            IpRepr::V6(r) => r.next_header,
        }
    }
    /// Bytes before the transport header.
    pub fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(_) => ipv4::HEADER_LEN,
            IpRepr::V6(r) => ipv6::HEADER_LEN + r.ext_len as usize,
        }
    }
    /// Transport header and data bytes.
    pub fn payload_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.payload_len as usize,
            IpRepr::V6(r) => r.payload_len as usize,
        }
    }
    pub fn total_len(&self) -> usize {
        self.header_len() + self.payload_len()
    }
    /// The ECN field (RFC 3168 §5).
    pub fn ecn(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.ecn,
            IpRepr::V6(r) => r.ecn,
        }
    }
    pub fn set_ecn(&mut self, ecn: u8) {
        match self {
            IpRepr::V4(r) => r.ecn = ecn & 3,
            IpRepr::V6(r) => r.ecn = ecn & 3,
        }
    }
    /// IPv4 identification, or the IPv6 flow label.
    pub fn ident(&self) -> u32 {
        match self {
            IpRepr::V4(r) => r.ident as u32,
            IpRepr::V6(r) => r.flow_label,
        }
    }
    /// Writes the header (without IPv6 extension headers) into `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        match self {
            IpRepr::V4(r) => r.emit(buf),
            IpRepr::V6(r) => r.emit(buf),
        }
    }
    /// Parses the header of either version: `strict` verifies the IPv4 header
    /// checksum and rejects what thinwire does not emit; otherwise only what is
    /// needed to find the transport header is required. Returns the repr and the
    /// transport header and data.
    pub fn parse(buf: &[u8], strict: bool) -> Result<(IpRepr, &[u8]), WireError> {
        match buf.first().map(|b| b >> 4) {
            Some(4) => Ipv4Repr::parse_mode(buf, strict).map(|(r, p)| (IpRepr::V4(r), p)),
            Some(6) => Ipv6Repr::parse(buf).map(|(r, p)| (IpRepr::V6(Box::new(r)), p)),
            Some(_) => Err(WireError::Malformed("not IPv4 or IPv6")),
            None => Err(WireError::Truncated),
        }
    }
}
