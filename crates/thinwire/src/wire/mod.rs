//! Real wire formats: `Repr` structs with `parse`/`emit` (RFC 791 IPv4, RFC 8200
//! IPv6, RFC 9293 TCP with RFC 7323 timestamps / window scale and RFC 2018 SACK,
//! RFC 768 UDP, RFC 1662 PPP, RFC 1144 VJ header compression).
//!
//! Link layers move `Packet`s: header `Repr`s, a payload, and the simulator's
//! metadata (`Meta`: flow, birth time) beside them. The simulator's packets have a
//! virtual payload (a length): bytes are produced only for pcap export and byte-level
//! links (PPP/VJ over GSM RLP), over a deterministic payload whose bytes depend on
//! the TCP sequence number (so a retransmission carries the same bytes) or, for UDP,
//! on the IP identification. Real packets (the emulator, the proxy daemon) carry
//! their bytes, which every link passes on unchanged.
//!
//! One TCP option parser (`tcp::parse_options`) serves the simulator (strict), the
//! capture analyser and real packets (lenient: what a host accepts).
pub mod checksum;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod packet;
pub mod ppp;
pub mod tcp;
pub mod udp;
pub mod vj;

pub use ip::{IpAddress, IpRepr};
pub use ipv4::Ipv4Repr;
pub use ipv6::Ipv6Repr;
pub use packet::{Meta, Packet, L4};
pub use tcp::{OptionMode, TcpFlags, TcpOptions, TcpRepr};
pub use udp::UdpRepr;

/// Errors from parsing bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Truncated,
    Malformed(&'static str),
    Checksum,
    /// A non-first IP fragment: no transport header to parse.
    Fragment,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "truncated header"),
            WireError::Malformed(w) => write!(f, "malformed: {w}"),
            WireError::Checksum => write!(f, "bad checksum"),
            WireError::Fragment => write!(f, "a non-first fragment"),
        }
    }
}

/// Byte `i` of the virtual TCP payload: a function of the sequence number.
#[inline]
pub fn virtual_byte(seq: u32) -> u8 {
    (seq.wrapping_mul(0x9E37_79B1) >> 24) as u8
}
