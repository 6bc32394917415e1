//! An IP packet as the link layers carry it: header `Repr`s, a payload that is
//! either virtual (the simulator's fast path: a length, with bytes that follow from
//! the TCP sequence number or the IP identification) or real (the packet's bytes,
//! whole, as read from a device or built by a host), and the simulator's metadata
//! beside them.
use super::{ip, IpAddress, IpRepr, TcpRepr, UdpRepr, WireError};
use crate::time::Instant;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    Tcp(TcpRepr),
    Udp(UdpRepr),
    /// Another transport (ICMP, ...), or a fragment without a transport header:
    /// only real packets carry it, and their bytes say the rest.
    Other(u8),
}

/// What the simulator knows about a packet besides its bytes: not part of the wire
/// format, kept beside it through every layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Meta {
    /// Index of the flow this packet belongs to (traces, statistics).
    pub flow: u16,
    /// When the packet entered the network (delay statistics).
    pub born: Instant,
    /// When it entered the wireless link's IP queue (set by the link; the link
    /// delay of mm-link logs).
    pub queued: Instant,
}

impl Meta {
    pub fn new(flow: u16, born: Instant) -> Meta {
        Meta { flow, born, queued: born }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub ip: IpRepr,
    pub l4: L4,
    /// Application payload bytes after the transport header.
    pub payload_len: u32,
    /// Real packets: the whole packet, headers included, exactly as it must leave
    /// the link (`ip` and `l4` are a view parsed from it). `None`: the payload is
    /// virtual and `emit` builds the bytes from the reprs.
    pub bytes: Option<Arc<Vec<u8>>>,
    pub meta: Meta,
}

impl Packet {
    /// A packet with a virtual payload of `payload_len` bytes.
    pub fn new(
        src: impl Into<IpAddress>,
        dst: impl Into<IpAddress>,
        ident: u16,
        l4: L4,
        payload_len: u32,
        flow: u16,
        born: Instant,
    ) -> Packet {
        let (proto, hl) = match &l4 {
            L4::Tcp(t) => (ip::PROTO_TCP, t.header_len()),
            L4::Udp(_) => (ip::PROTO_UDP, super::udp::HEADER_LEN),
            L4::Other(p) => (*p, 0),
        };
        let ip = IpRepr::new(src.into(), dst.into(), proto, ident, hl + payload_len as usize);
        Packet { ip, l4, payload_len, bytes: None, meta: Meta::new(flow, born) }
    }

    /// A real packet from its bytes (IPv4 or IPv6, any transport): the bytes stay
    /// as they are; the header view is parsed leniently (no checksums checked,
    /// unknown options skipped). Fails only when no IP header can be found.
    pub fn from_bytes(bytes: Vec<u8>, meta: Meta) -> Result<Packet, WireError> {
        let bytes = Arc::new(bytes);
        let (ip, l4, payload_len) = match IpRepr::parse(&bytes, false) {
            Ok((ip, body)) => {
                let (l4, pl) = match ip.protocol() {
                    ip::PROTO_TCP => match TcpRepr::parse_lenient(body) {
                        Ok((t, p)) => (L4::Tcp(t), p.len()),
                        Err(_) => (L4::Other(ip::PROTO_TCP), body.len()),
                    },
                    ip::PROTO_UDP => match UdpRepr::parse_lenient(body) {
                        Ok((u, p)) => (L4::Udp(u), p.len()),
                        Err(_) => (L4::Other(ip::PROTO_UDP), body.len()),
                    },
                    p => (L4::Other(p), body.len()),
                };
                (ip, l4, pl as u32)
            }
            Err(WireError::Fragment) => {
                // A non-first fragment: addresses from the fixed header, no transport.
                let (ip, proto) = fragment_view(&bytes)?;
                (ip, L4::Other(proto), 0)
            }
            Err(e) => return Err(e),
        };
        Ok(Packet { ip, l4, payload_len, bytes: Some(bytes), meta })
    }

    /// A real TCP packet: headers built from the reprs, checksums over `payload`.
    pub fn tcp_with_payload(
        src: IpAddress,
        dst: IpAddress,
        ident: u16,
        tcp: TcpRepr,
        payload: &[u8],
        meta: Meta,
    ) -> Packet {
        let ip = IpRepr::new(src, dst, ip::PROTO_TCP, ident, tcp.header_len() + payload.len());
        let mut buf = vec![0u8; ip.total_len()];
        ip.emit(&mut buf);
        tcp.emit(&mut buf[ip.header_len()..], payload, src, dst);
        Packet { ip, l4: L4::Tcp(tcp), payload_len: payload.len() as u32, bytes: Some(Arc::new(buf)), meta }
    }

    /// A real packet's transport payload (the bytes after the TCP or UDP header);
    /// `None` for a virtual payload.
    pub fn l4_payload(&self) -> Option<&[u8]> {
        let b = self.bytes.as_ref()?;
        let end = self.ip.total_len().min(b.len());
        end.checked_sub(self.payload_len as usize).map(|start| &b[start..end])
    }

    /// Bytes on the wire at the IP layer.
    pub fn size(&self) -> u32 {
        match &self.bytes {
            Some(b) => b.len() as u32,
            None => self.ip.total_len() as u32,
        }
    }
    pub fn tcp(&self) -> Option<&TcpRepr> {
        if let L4::Tcp(t) = &self.l4 {
            Some(t)
        } else {
            None
        }
    }
    /// RFC 3168 §5 at a congested queue: an ECN-capable packet (ECT(0) or
    /// ECT(1)) is marked Congestion Experienced instead of being dropped, and true
    /// is returned; a packet that is not ECN-capable is left alone (false: the
    /// queue drops it). Real bytes are rewritten too, the IPv4 header checksum
    /// updated (RFC 1624).
    pub fn mark_ce(&mut self) -> bool {
        let e = self.ip.ecn();
        if e == ip::NOT_ECT {
            return false;
        }
        self.ip.set_ecn(ip::CE);
        if let Some(b) = &mut self.bytes {
            let b = Arc::make_mut(b);
            match b.first().map(|v| v >> 4) {
                Some(4) if b.len() >= 20 => {
                    let old = u16::from_be_bytes([b[0], b[1]]);
                    b[1] |= ip::CE;
                    let new = u16::from_be_bytes([b[0], b[1]]);
                    let c = !u16::from_be_bytes([b[10], b[11]]);
                    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
                    let mut sum = c as u32 + (!old) as u32 + new as u32;
                    sum = (sum & 0xffff) + (sum >> 16);
                    sum = (sum & 0xffff) + (sum >> 16);
                    b[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
                }
                Some(6) if b.len() >= 40 => b[1] |= ip::CE << 4,
                _ => {}
            }
        }
        true
    }
    /// Whether the packet carries real bytes.
    pub fn is_real(&self) -> bool {
        self.bytes.is_some()
    }
    /// IPv4 identification, or the IPv6 flow label.
    pub fn ident(&self) -> u32 {
        self.ip.ident()
    }

    /// The packet's bytes: real ones as they are; otherwise real headers and
    /// checksums over the virtual payload.
    pub fn emit(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.emit_into(&mut buf);
        buf
    }

    /// [`Packet::emit`] into `buf` (cleared first), so a caller that emits many
    /// packets reuses one allocation.
    pub fn emit_into(&self, buf: &mut Vec<u8>) {
        buf.clear();
        if let Some(b) = &self.bytes {
            buf.extend_from_slice(b);
            return;
        }
        buf.resize(self.ip.total_len(), 0);
        self.ip.emit(buf);
        let body = &mut buf[self.ip.header_len()..];
        let hl = match &self.l4 {
            L4::Tcp(t) => t.header_len(),
            L4::Udp(_) => super::udp::HEADER_LEN,
            L4::Other(_) => 0,
        };
        let payload = &mut body[hl..hl + self.payload_len as usize];
        match &self.l4 {
            L4::Tcp(t) => {
                payload.iter_mut().zip(0u32..).for_each(|(b, i)| *b = super::virtual_byte(t.seq.wrapping_add(i)))
            }
            _ => {
                let base = self.ip.ident() << 16;
                payload.iter_mut().zip(0u32..).for_each(|(b, i)| *b = super::virtual_byte(base | i))
            }
        }
        let (s, d) = (self.ip.src(), self.ip.dst());
        let body = &mut body[..hl + self.payload_len as usize];
        match &self.l4 {
            L4::Tcp(t) => t.emit_around(body, s, d),
            L4::Udp(u) => u.emit_around(body, s, d),
            L4::Other(_) => {}
        }
    }

    /// Parses bytes emitted by [`Packet::emit`] (or any IPv4/IPv6 TCP or UDP
    /// packet) strictly, verifying every checksum; the result has a virtual
    /// payload of the same length.
    pub fn parse(buf: &[u8]) -> Result<Packet, WireError> {
        let (ip, body) = IpRepr::parse(buf, true)?;
        let (l4, pl) = transport(&ip, body)?;
        Ok(Packet { ip, l4, payload_len: pl as u32, bytes: None, meta: Meta::default() })
    }

    /// Verifies a real packet's checksums as a receiving host would: the IPv4
    /// header checksum and the TCP or UDP checksum; other transports pass.
    pub fn verify(buf: &[u8]) -> Result<(), WireError> {
        let (ip, body) = IpRepr::parse(buf, true)?;
        match ip.protocol() {
            ip::PROTO_TCP | ip::PROTO_UDP => transport(&ip, body).map(|_| ()),
            _ => Ok(()),
        }
    }
}

/// The transport header of a strictly parsed packet and its payload length.
fn transport(ip: &IpRepr, body: &[u8]) -> Result<(L4, usize), WireError> {
    let (s, d) = (ip.src(), ip.dst());
    match ip.protocol() {
        ip::PROTO_TCP => TcpRepr::parse(body, s, d).map(|(t, p)| (L4::Tcp(t), p.len())),
        ip::PROTO_UDP => UdpRepr::parse(body, s, d).map(|(u, p)| (L4::Udp(u), p.len())),
        _ => Err(WireError::Malformed("not TCP or UDP")),
    }
}

/// Addresses and protocol of a non-first fragment.
fn fragment_view(b: &[u8]) -> Result<(IpRepr, u8), WireError> {
    match b[0] >> 4 {
        4 => {
            let mut h = super::Ipv4Repr {
                src: b[12..16].try_into().unwrap(),
                dst: b[16..20].try_into().unwrap(),
                protocol: b[9],
                ttl: b[8],
                ident: u16::from_be_bytes([b[4], b[5]]),
                payload_len: 0,
                ecn: b[1] & 3,
            };
            h.payload_len = (b.len() - 20) as u16;
            Ok((IpRepr::V4(h), b[9]))
        }
        _ => {
            let src: [u8; 16] = b[8..24].try_into().unwrap();
            let dst: [u8; 16] = b[24..40].try_into().unwrap();
            let ip = IpRepr::new(src.into(), dst.into(), 44, 0, b.len() - 40);
            Ok((ip, 44))
        }
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
            opts: crate::wire::TcpOptions { timestamps: Some((3, 4)), ..Default::default() },
        };
        let p = Packet::new([10, 0, 0, 1], [10, 0, 1, 2], 9, L4::Tcp(t), 210, 0, Instant::ZERO);
        assert_eq!(p.size(), 20 + 32 + 210);
        let bytes = p.emit();
        let q = Packet::parse(&bytes).unwrap();
        assert_eq!(q.ip, p.ip);
        assert_eq!(q.l4, p.l4);
        assert_eq!(q.payload_len, 210);
    }
    /// RFC 3168 §5: the ECN field goes out in the TOS byte (IPv4) or the traffic
    /// class (IPv6) and comes back; a queue's CE mark on an ECT packet with real
    /// bytes leaves a valid IPv4 header checksum (RFC 1624), and a Not-ECT packet
    /// is not marked.
    #[test]
    fn ecn_field_roundtrip_and_ce_marking() {
        let t = TcpRepr { src_port: 5001, dst_port: 80, flags: TcpFlags(TcpFlags::ACK), ..Default::default() };
        let v6 = (IpAddress::V6([1; 16]), IpAddress::V6([2; 16]));
        for (src, dst) in [(IpAddress::V4([10, 0, 0, 1]), IpAddress::V4([10, 0, 1, 2])), v6] {
            let mut p = Packet::new(src, dst, 9, L4::Tcp(t), 100, 0, Instant::ZERO);
            assert!(!p.clone().mark_ce(), "Not-ECT is dropped, not marked");
            p.ip.set_ecn(ip::ECT0);
            let q = Packet::parse(&p.emit()).unwrap();
            assert_eq!(q.ip.ecn(), ip::ECT0);
            // The same packet as real bytes, marked on the way.
            let mut real = Packet::from_bytes(p.emit(), Meta::default()).unwrap();
            assert!(real.mark_ce());
            let bytes = real.emit();
            Packet::verify(&bytes).unwrap();
            assert_eq!(Packet::parse(&bytes).unwrap().ip.ecn(), ip::CE);
            assert_eq!(real.ip.ecn(), ip::CE);
        }
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
    #[test]
    fn ipv6_tcp_roundtrip() {
        let t = TcpRepr { src_port: 1, dst_port: 2, seq: 7, flags: TcpFlags(TcpFlags::SYN), ..Default::default() };
        let (s, d) = (
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        );
        let p = Packet::new(s, d, 3, L4::Tcp(t), 10, 0, Instant::ZERO);
        let b = p.emit();
        assert_eq!(b.len(), 40 + 20 + 10);
        let q = Packet::parse(&b).unwrap();
        assert_eq!((q.ip, q.l4, q.payload_len), (p.ip, p.l4, 10));
        assert!(Packet::verify(&b).is_ok());
    }
    /// A real packet keeps its bytes whatever they hold: IPv4 options, ECN bits,
    /// an unknown TCP option, a wrong checksum, ICMP.
    #[test]
    fn real_packets_keep_their_bytes() {
        let t = TcpRepr { src_port: 80, dst_port: 9, seq: 1, flags: TcpFlags(TcpFlags::ACK), ..Default::default() };
        let mut b = Packet::new([10, 0, 0, 1], [10, 0, 1, 2], 1, L4::Tcp(t), 5, 0, Instant::ZERO).emit();
        b[1] = 0x02; // ECT(0)
        b[20 + 13] |= 0x80; // CWR
        b[20 + 16] ^= 0xff; // break the TCP checksum
        let p = Packet::from_bytes(b.clone(), Meta::new(3, Instant(5))).unwrap();
        assert_eq!(p.emit(), b);
        assert_eq!((p.size(), p.payload_len, p.meta.flow), (b.len() as u32, 5, 3));
        assert_eq!(p.tcp().unwrap().flags.0 & 0x80, 0x80, "every flag bit is kept in the view");
        assert_eq!(Packet::verify(&b), Err(WireError::Checksum));
        // ICMP echo request over IPv4.
        let mut icmp = vec![0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 1, 0, 0, 10, 0, 1, 2, 10, 0, 0, 1];
        let c = crate::wire::checksum::checksum(&icmp);
        icmp[10..12].copy_from_slice(&c.to_be_bytes());
        icmp.extend_from_slice(&[8, 0, 0xf7, 0xfe, 0, 1, 0, 0]);
        let p = Packet::from_bytes(icmp.clone(), Meta::default()).unwrap();
        assert_eq!((p.l4, p.emit()), (L4::Other(1), icmp.clone()));
        assert!(Packet::verify(&icmp).is_ok());
        assert!(Packet::from_bytes(vec![0x45, 0, 0], Meta::default()).is_err());
    }
}
