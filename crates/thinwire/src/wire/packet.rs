//! A simulated IP packet: header `Repr`s plus a virtual payload length.
use super::{ipv4, tcp::TcpRepr, udp::UdpRepr, Ipv4Repr};
use crate::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    Tcp(TcpRepr),
    Udp(UdpRepr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub ip: Ipv4Repr,
    pub l4: L4,
    /// Application payload bytes (virtual).
    pub payload_len: u32,
    /// Index of the flow this packet belongs to.
    pub flow: u16,
    /// When the packet entered the network (for delay statistics).
    pub born: Instant,
}

impl Packet {
    pub fn new(src: [u8; 4], dst: [u8; 4], ident: u16, l4: L4, payload_len: u32, flow: u16, born: Instant) -> Packet {
        let (proto, hl) = match &l4 {
            L4::Tcp(t) => (ipv4::PROTO_TCP, t.header_len()),
            L4::Udp(_) => (ipv4::PROTO_UDP, super::udp::HEADER_LEN),
        };
        let ip =
            Ipv4Repr { src, dst, protocol: proto, ttl: 64, ident, payload_len: (hl + payload_len as usize) as u16 };
        Packet { ip, l4, payload_len, flow, born }
    }
    /// Bytes on the wire at the IP layer.
    pub fn size(&self) -> u32 {
        self.ip.total_len() as u32
    }
    pub fn tcp(&self) -> Option<&TcpRepr> {
        if let L4::Tcp(t) = &self.l4 {
            Some(t)
        } else {
            None
        }
    }

    /// The packet's bytes with real headers and checksums over the virtual payload.
    pub fn emit(&self) -> Vec<u8> {
        let total = self.ip.total_len();
        let mut buf = vec![0u8; total];
        self.ip.emit(&mut buf);
        let payload: Vec<u8> = match &self.l4 {
            L4::Tcp(t) => (0..self.payload_len).map(|i| super::virtual_byte(t.seq.wrapping_add(i))).collect(),
            L4::Udp(_) => {
                (0..self.payload_len).map(|i| super::virtual_byte((self.ip.ident as u32) << 16 | i)).collect()
            }
        };
        let body = &mut buf[ipv4::HEADER_LEN..];
        match &self.l4 {
            L4::Tcp(t) => t.emit(body, &payload, self.ip.src, self.ip.dst),
            L4::Udp(u) => u.emit(body, &payload, self.ip.src, self.ip.dst),
        }
        buf
    }

    /// Parses bytes emitted by [`Packet::emit`] (or any IPv4 TCP/UDP packet).
    pub fn parse(buf: &[u8]) -> Result<Packet, super::WireError> {
        let (ip, body) = Ipv4Repr::parse(buf)?;
        let (l4, pl) = match ip.protocol {
            ipv4::PROTO_TCP => {
                let (t, p) = TcpRepr::parse(body, ip.src, ip.dst)?;
                (L4::Tcp(t), p.len())
            }
            ipv4::PROTO_UDP => {
                let (u, p) = UdpRepr::parse(body, ip.src, ip.dst)?;
                (L4::Udp(u), p.len())
            }
            _ => return Err(super::WireError::Malformed("not TCP or UDP")),
        };
        Ok(Packet { ip, l4, payload_len: pl as u32, flow: 0, born: Instant::ZERO })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TcpFlags, UdpRepr};
    #[test]
    fn tcp_packet_roundtrip() {
        let t = TcpRepr {
            src_port: 5001,
            dst_port: 80,
            seq: 1000,
            ack: 1,
            flags: TcpFlags(TcpFlags::ACK),
            window: 1000,
            timestamps: Some((3, 4)),
            ..Default::default()
        };
        let p = Packet::new([10, 0, 0, 1], [10, 0, 1, 2], 9, L4::Tcp(t), 210, 0, Instant::ZERO);
        assert_eq!(p.size(), 20 + 32 + 210);
        let bytes = p.emit();
        let q = Packet::parse(&bytes).unwrap();
        assert_eq!(q.ip, p.ip);
        assert_eq!(q.l4, p.l4);
        assert_eq!(q.payload_len, 210);
    }
    #[test]
    fn udp_packet_roundtrip_and_corruption() {
        let p = Packet::new(
            [10, 0, 0, 1],
            [10, 0, 1, 2],
            77,
            L4::Udp(UdpRepr { src_port: 9, dst_port: 10 }),
            242,
            1,
            Instant::ZERO,
        );
        let mut bytes = p.emit();
        assert_eq!(Packet::parse(&bytes).unwrap().l4, p.l4);
        let n = bytes.len();
        bytes[n - 1] ^= 0x40;
        assert_eq!(Packet::parse(&bytes).unwrap_err(), crate::wire::WireError::Checksum);
    }
}
