//! Real wire formats: `Repr` structs with `parse`/`emit` (RFC 791 IPv4, RFC 9293 TCP
//! with RFC 7323 timestamps / window scale and RFC 2018 SACK, RFC 768 UDP).
//!
//! The simulator moves `Packet`s (a `Repr` per layer plus a payload length); bytes
//! are produced only for pcap export, over a deterministic virtual payload whose
//! bytes depend on the TCP sequence number (so a retransmission carries the same
//! bytes) or, for UDP, on the IP identification.
pub mod checksum;
pub mod ipv4;
pub mod packet;
pub mod ppp;
pub mod tcp;
pub mod udp;
pub mod vj;

pub use ipv4::Ipv4Repr;
pub use packet::{Packet, L4};
pub use tcp::{TcpFlags, TcpRepr};
pub use udp::UdpRepr;

/// Errors from parsing bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Truncated,
    Malformed(&'static str),
    Checksum,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "truncated header"),
            WireError::Malformed(w) => write!(f, "malformed: {w}"),
            WireError::Checksum => write!(f, "bad checksum"),
        }
    }
}

/// Byte `i` of the virtual TCP payload: a function of the sequence number.
#[inline]
pub fn virtual_byte(seq: u32) -> u8 {
    (seq.wrapping_mul(0x9E37_79B1) >> 24) as u8
}
