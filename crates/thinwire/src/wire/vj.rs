//! Van Jacobson TCP/IP header compression (RFC 1144), on real header bytes.
//!
//! Source: RFC 1144 §3 and its Appendix A (`sl_compress_tcp` /
//! `sl_uncompress_tcp`); seed 000 §5.3 for why it matters here: a compressed
//! header is a *delta* against the previous header of the same connection, so a
//! frame that vanishes without notice (flushed by an RLP reset) makes the
//! decompressor apply later deltas to a stale base. The rebuilt headers are wrong,
//! the TCP receiver drops those segments on their checksum (the compressed packet
//! carries the original TCP checksum), and only an uncompressed packet — a TCP
//! retransmission, whose sequence number goes backwards and so cannot be sent as a
//! delta — resynchronises the two ends.
//!
//! Parameters and defaults (RFC 1144 defaults):
//! - `MAX_STATES` = 16 connection slots on each side, least recently used reused;
//! - `compress_cid` = true: the connection number is omitted while it repeats.
//!
//! Packet types, as the framing layer (PPP protocol numbers 0x21 / 0x2f / 0x2d)
//! would carry them: [`Kind::Ip`] (sent unchanged: not TCP, a fragment, or SYN / FIN
//! / RST or no ACK), [`Kind::Uncompressed`] (full header, IP protocol field replaced
//! by the slot number; a new connection or a change that cannot be a delta — a
//! change of the TOS byte, ECN included, or of the ECE/CWR flags, which RFC 1144
//! predates and whose compressed form cannot carry them) and
//! [`Kind::Compressed`]. The framing layer reports a damaged frame with
//! [`Decompressor::report_error`]: compressed packets are then tossed until one
//! names its connection explicitly or arrives uncompressed (RFC 1144 §4.3).
use super::checksum;

pub const MAX_STATES: usize = 16;
const NEW_C: u8 = 0x40;
const NEW_I: u8 = 0x20;
const PUSH: u8 = 0x10;
const NEW_S: u8 = 0x08;
const NEW_A: u8 = 0x04;
const NEW_W: u8 = 0x02;
const NEW_U: u8 = 0x01;
const SPECIAL_I: u8 = NEW_S | NEW_W | NEW_U;
const SPECIAL_D: u8 = NEW_S | NEW_A | NEW_W | NEW_U;
const SPECIALS_MASK: u8 = SPECIAL_D;
const TCP_PSH: u8 = 0x08;
const TCP_URG: u8 = 0x20;

/// What kind of packet the compressor produced (the framing layer's protocol field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ip,
    Uncompressed,
    Compressed,
}

/// Why the decompressor dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VjError {
    /// After a reported error, compressed packets are dropped until a resynchronising one.
    Tossed,
    /// A connection number beyond the slots, a slot never filled, or a packet too short.
    Bad,
}

fn be16(h: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([h[o], h[o + 1]])
}
fn be32(h: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]])
}
fn put16(h: &mut [u8], o: usize, v: u16) {
    h[o..o + 2].copy_from_slice(&v.to_be_bytes());
}
fn put32(h: &mut [u8], o: usize, v: u32) {
    h[o..o + 4].copy_from_slice(&v.to_be_bytes());
}
fn add16(h: &mut [u8], o: usize, d: u16) {
    let v = be16(h, o).wrapping_add(d);
    put16(h, o, v);
}
fn add32(h: &mut [u8], o: usize, d: u32) {
    let v = be32(h, o).wrapping_add(d);
    put32(h, o, v);
}

/// Offsets of a header: IP header length and TCP header length.
fn lens(h: &[u8]) -> Option<(usize, usize)> {
    if h.len() < 20 {
        return None;
    }
    let ihl = (h[0] & 0x0f) as usize * 4;
    if ihl < 20 || h.len() < ihl + 20 {
        return None;
    }
    let thl = (h[ihl + 12] >> 4) as usize * 4;
    if thl < 20 || h.len() < ihl + thl {
        return None;
    }
    Some((ihl, thl))
}

/// The same connection: addresses and ports.
fn same_conn(a: &[u8], b: &[u8], ihl: usize) -> bool {
    a[12..20] == b[12..20] && a[ihl..ihl + 4] == b[ihl..ihl + 4]
}

fn encode(out: &mut Vec<u8>, n: u32) {
    if (1..256).contains(&n) {
        out.push(n as u8);
    } else {
        out.push(0);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    }
}

/// The compressing end.
#[derive(Clone, Debug)]
pub struct Compressor {
    slots: Vec<Vec<u8>>,
    /// Slot numbers, most recently used first.
    lru: Vec<u8>,
    last_xmit: Option<u8>,
    pub compress_cid: bool,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compressor {
    pub fn new() -> Compressor {
        Compressor {
            slots: vec![Vec::new(); MAX_STATES],
            lru: (0..MAX_STATES as u8).collect(),
            last_xmit: None,
            compress_cid: true,
        }
    }

    /// Compresses the IP + TCP header `hdr` of a packet (its payload follows on the
    /// link unchanged). Returns the packet kind and the header bytes to send.
    pub fn compress(&mut self, hdr: &[u8]) -> (Kind, Vec<u8>) {
        let Some((ihl, thl)) = lens(hdr) else { return (Kind::Ip, hdr.to_vec()) };
        let hlen = ihl + thl;
        let h = &hdr[..hlen];
        let flags = h[ihl + 13];
        if h[9] != 6 || be16(h, 6) & 0x3fff != 0 || flags & 0x17 != 0x10 {
            return (Kind::Ip, hdr.to_vec());
        }
        // Find the connection's slot (LRU), or take the least recently used one.
        let pos = self.lru.iter().position(|&s| {
            let o = &self.slots[s as usize];
            !o.is_empty() && same_conn(o, h, ihl)
        });
        let (id, known) = match pos {
            Some(p) => (self.lru.remove(p), true),
            None => (self.lru.pop().unwrap(), false),
        };
        self.lru.insert(0, id);
        if !known {
            return self.uncompressed(id, h);
        }
        let o = self.slots[id as usize].clone();
        let (oihl, othl) = lens(&o).unwrap();
        // Anything but the expected deltas changed: send it whole.
        if oihl != ihl
            || othl != thl
            || h[0..2] != o[0..2]
            || h[6..10] != o[6..10]
            || h[20..ihl] != o[20..ihl]
            || h[ihl + 20..hlen] != o[ihl + 20..hlen]
            // ECE and CWR (RFC 3168) have no place in a compressed header: a
            // change of them goes whole, so the decompressor's copy keeps them.
            || (flags ^ o[ihl + 13]) & 0xc0 != 0
        {
            return self.uncompressed(id, h);
        }
        let mut changes = 0u8;
        let mut deltas = Vec::with_capacity(16);
        if flags & TCP_URG != 0 {
            encode(&mut deltas, be16(h, ihl + 18) as u32);
            changes |= NEW_U;
        } else if be16(h, ihl + 18) != be16(&o, ihl + 18) {
            return self.uncompressed(id, h);
        }
        let dw = be16(h, ihl + 14).wrapping_sub(be16(&o, ihl + 14));
        if dw != 0 {
            encode(&mut deltas, dw as u32);
            changes |= NEW_W;
        }
        let da = be32(h, ihl + 8).wrapping_sub(be32(&o, ihl + 8));
        if da != 0 {
            if da > 0xffff {
                return self.uncompressed(id, h);
            }
            encode(&mut deltas, da);
            changes |= NEW_A;
        }
        let ds = be32(h, ihl + 4).wrapping_sub(be32(&o, ihl + 4));
        if ds != 0 {
            if ds > 0xffff {
                return self.uncompressed(id, h);
            }
            encode(&mut deltas, ds);
            changes |= NEW_S;
        }
        let last_len = (be16(&o, 2) as usize).saturating_sub(hlen) as u32;
        match changes {
            0
                // A data packet after a pure ACK may go compressed; anything else
                // unchanged (a retransmitted ACK or segment) goes whole.
                if !(be16(h, 2) != be16(&o, 2) && be16(&o, 2) as usize == hlen) => {
                    return self.uncompressed(id, h);
                }
            SPECIAL_I | SPECIAL_D => return self.uncompressed(id, h),
            c if c == NEW_S | NEW_A
                && ds == da && ds == last_len => {
                    changes = SPECIAL_I;
                    deltas.clear();
                }
            NEW_S
                if ds == last_len => {
                    changes = SPECIAL_D;
                    deltas.clear();
                }
            _ => {}
        }
        let di = be16(h, 4).wrapping_sub(be16(&o, 4));
        if di != 1 {
            if di == 0 {
                deltas.extend_from_slice(&[0, 0, 0]);
            } else {
                encode(&mut deltas, di as u32);
            }
            changes |= NEW_I;
        }
        if flags & TCP_PSH != 0 {
            changes |= PUSH;
        }
        self.slots[id as usize] = h.to_vec();
        let mut out = Vec::with_capacity(4 + deltas.len());
        if !self.compress_cid || self.last_xmit != Some(id) {
            self.last_xmit = Some(id);
            out.push(changes | NEW_C);
            out.push(id);
        } else {
            out.push(changes);
        }
        out.extend_from_slice(&h[ihl + 16..ihl + 18]); // the TCP checksum, as sent
        out.extend_from_slice(&deltas);
        (Kind::Compressed, out)
    }

    fn uncompressed(&mut self, id: u8, h: &[u8]) -> (Kind, Vec<u8>) {
        self.slots[id as usize] = h.to_vec();
        self.last_xmit = Some(id);
        let mut out = h.to_vec();
        out[9] = id;
        (Kind::Uncompressed, out)
    }
}

/// The decompressing end.
#[derive(Clone, Debug)]
pub struct Decompressor {
    slots: Vec<Vec<u8>>,
    last_recv: u8,
    toss: bool,
}

impl Default for Decompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Decompressor {
    pub fn new() -> Decompressor {
        Decompressor { slots: vec![Vec::new(); MAX_STATES], last_recv: 0, toss: false }
    }

    /// The framing layer saw a damaged frame (bad FCS): toss compressed packets until
    /// the connection is named explicitly or sent uncompressed.
    pub fn report_error(&mut self) {
        self.toss = true;
    }

    /// Whether compressed packets are being tossed.
    pub fn tossing(&self) -> bool {
        self.toss
    }

    /// Rebuilds the IP + TCP header of a packet of `kind` whose header bytes on the
    /// link are `bytes` and whose payload is `payload_len` bytes.
    pub fn decompress(&mut self, kind: Kind, bytes: &[u8], payload_len: usize) -> Result<Vec<u8>, VjError> {
        match kind {
            Kind::Ip => Ok(bytes.to_vec()),
            Kind::Uncompressed => {
                let Some((ihl, thl)) = lens(bytes) else {
                    self.toss = true;
                    return Err(VjError::Bad);
                };
                let id = bytes[9] as usize;
                if id >= MAX_STATES {
                    self.toss = true;
                    return Err(VjError::Bad);
                }
                let mut h = bytes[..ihl + thl].to_vec();
                h[9] = 6;
                self.slots[id] = h.clone();
                self.last_recv = id as u8;
                self.toss = false;
                Ok(h)
            }
            Kind::Compressed => self.compressed(bytes, Some(payload_len)).map(|(h, _)| h).inspect_err(|e| {
                if *e == VjError::Bad {
                    self.toss = true;
                }
            }),
        }
    }

    /// Rebuilds a whole packet from the information field of a frame of `kind`
    /// (the link header followed by the payload), as a PPP receiver hands it on.
    pub fn decompress_packet(&mut self, kind: Kind, info: &[u8]) -> Result<Vec<u8>, VjError> {
        match kind {
            Kind::Compressed => {
                let (mut h, used) = self.compressed(info, None).inspect_err(|e| {
                    if *e == VjError::Bad {
                        self.toss = true;
                    }
                })?;
                h.extend_from_slice(&info[used..]);
                Ok(h)
            }
            Kind::Ip => Ok(info.to_vec()),
            Kind::Uncompressed => {
                let Some((ihl, thl)) = lens(info) else {
                    self.toss = true;
                    return Err(VjError::Bad);
                };
                let mut h = self.decompress(kind, &info[..ihl + thl], 0)?;
                h.extend_from_slice(&info[ihl + thl..]);
                Ok(h)
            }
        }
    }

    /// Decodes a compressed header at the start of `b`; with `payload_len` the header
    /// must be all of `b`, without it the rest of `b` is the payload. Returns the
    /// rebuilt header and the bytes the compressed header took.
    fn compressed(&mut self, b: &[u8], payload_len: Option<usize>) -> Result<(Vec<u8>, usize), VjError> {
        let mut p = 0usize;
        let next = |p: &mut usize| -> Result<u8, VjError> {
            let v = *b.get(*p).ok_or(VjError::Bad)?;
            *p += 1;
            Ok(v)
        };
        let changes = next(&mut p)?;
        if changes & NEW_C != 0 {
            let id = next(&mut p)? as usize;
            if id >= MAX_STATES {
                return Err(VjError::Bad);
            }
            self.toss = false;
            self.last_recv = id as u8;
        } else if self.toss {
            return Err(VjError::Tossed);
        }
        let mut h = self.slots[self.last_recv as usize].clone();
        let Some((ihl, thl)) = lens(&h) else { return Err(VjError::Bad) };
        let hlen = ihl + thl;
        let decode = |p: &mut usize| -> Result<u32, VjError> {
            let v = next(p)?;
            if v != 0 {
                return Ok(v as u32);
            }
            let hi = next(p)?;
            let lo = next(p)?;
            Ok(u16::from_be_bytes([hi, lo]) as u32)
        };
        let sum = [next(&mut p)?, next(&mut p)?];
        h[ihl + 16..ihl + 18].copy_from_slice(&sum);
        if changes & PUSH != 0 {
            h[ihl + 13] |= TCP_PSH;
        } else {
            h[ihl + 13] &= !TCP_PSH;
        }
        let last_len = (be16(&h, 2) as usize).saturating_sub(hlen) as u32;
        match changes & SPECIALS_MASK {
            SPECIAL_I => {
                add32(&mut h, ihl + 8, last_len);
                add32(&mut h, ihl + 4, last_len);
            }
            SPECIAL_D => add32(&mut h, ihl + 4, last_len),
            _ => {
                if changes & NEW_U != 0 {
                    h[ihl + 13] |= TCP_URG;
                    let u = decode(&mut p)?;
                    put16(&mut h, ihl + 18, u as u16);
                } else {
                    h[ihl + 13] &= !TCP_URG;
                }
                if changes & NEW_W != 0 {
                    let d = decode(&mut p)?;
                    add16(&mut h, ihl + 14, d as u16);
                }
                if changes & NEW_A != 0 {
                    let d = decode(&mut p)?;
                    add32(&mut h, ihl + 8, d);
                }
                if changes & NEW_S != 0 {
                    let d = decode(&mut p)?;
                    add32(&mut h, ihl + 4, d);
                }
            }
        }
        let di = if changes & NEW_I != 0 { decode(&mut p)? as u16 } else { 1 };
        add16(&mut h, 4, di);
        let payload_len = match payload_len {
            Some(n) if p == b.len() => n,
            Some(_) => return Err(VjError::Bad),
            None => b.len() - p,
        };
        put16(&mut h, 2, (hlen + payload_len) as u16);
        put16(&mut h, 10, 0);
        let c = checksum::checksum(&h[..ihl]);
        put16(&mut h, 10, c);
        self.slots[self.last_recv as usize] = h.clone();
        Ok((h, p))
    }
}
