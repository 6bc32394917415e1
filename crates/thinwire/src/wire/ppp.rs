//! PPP in HDLC-like framing over an octet stream (RFC 1662 §3–4, RFC 1661 §2).
//!
//! Used over GSM and IS-707 data links, whose RLP carries a transparent byte
//! stream: the receiver finds frames by their flag bytes and discards a frame whose
//! FCS fails — for instance one cut by an RLP link reset — whole (seed 000 §5.3).
//!
//! Frame: flag 0x7e, address 0xff, control 0x03, protocol (2 bytes), information,
//! FCS-16 (2 bytes, least significant first), and the flag that ends it (which may
//! open the next frame). Parameters and defaults:
//! - `accm` = 0: the async control-character map as LCP usually negotiates it on
//!   an 8-bit clean link (RFC 1662's pre-negotiation default is 0xffff_ffff); every
//!   byte below 0x20 it marks is escaped, and always 0x7e and 0x7d (escape 0x7d,
//!   then the byte xor 0x20). Escapes depend on the real bytes, so they are counted;
//! - `shared_flags` = true: back-to-back frames share one flag, so the overhead is
//!   7 bytes per frame before escapes (seed 000 §4.4 counts 7 bytes);
//! - protocol numbers: IPv4 0x0021, VJ compressed TCP 0x002d, VJ uncompressed TCP
//!   0x002f (RFC 1332). Address/control and protocol-field compression are not used.
//! - maximum receive unit: 1500 bytes of information (RFC 1661 default); longer
//!   frames are discarded as damaged.
pub const FLAG: u8 = 0x7e;
pub const ESC: u8 = 0x7d;
pub const PROTO_IP: u16 = 0x0021;
/// IPv6 over PPP (RFC 5072).
pub const PROTO_IPV6: u16 = 0x0057;
pub const PROTO_VJ_COMPRESSED: u16 = 0x002d;
pub const PROTO_VJ_UNCOMPRESSED: u16 = 0x002f;
pub const MRU: usize = 1500;

const fn fcs_table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        let mut v = b as u16;
        let mut i = 0;
        while i < 8 {
            v = if v & 1 != 0 { (v >> 1) ^ 0x8408 } else { v >> 1 };
            i += 1;
        }
        t[b] = v;
        b += 1;
    }
    t
}
static FCS: [u16; 256] = fcs_table();

/// FCS-16 of `data` continuing from `fcs` (start with 0xffff); RFC 1662 §C.2.
pub fn fcs16(mut fcs: u16, data: &[u8]) -> u16 {
    for &b in data {
        fcs = (fcs >> 8) ^ FCS[((fcs ^ b as u16) & 0xff) as usize];
    }
    fcs
}
/// The FCS of a frame that arrived intact, taken over its contents and its FCS.
pub const GOOD_FCS: u16 = 0xf0b8;

/// The sending side.
#[derive(Clone, Debug)]
pub struct Framer {
    pub accm: u32,
    pub shared_flags: bool,
    flag_sent: bool,
}

impl Default for Framer {
    fn default() -> Self {
        Framer { accm: 0, shared_flags: true, flag_sent: false }
    }
}

impl Framer {
    fn escaped(&self, b: u8) -> bool {
        b == FLAG || b == ESC || (b < 0x20 && self.accm & (1 << b) != 0)
    }

    /// Appends the frame for `info` of `protocol` to `out`; returns the bytes added.
    /// When `shared_flags`, the opening flag is omitted if the previous frame's
    /// closing flag immediately precedes (call [`Framer::idle`] when the line idles).
    pub fn frame(&mut self, protocol: u16, info: &[u8], out: &mut Vec<u8>) -> usize {
        let n0 = out.len();
        if !(self.shared_flags && self.flag_sent) {
            out.push(FLAG);
        }
        let head = [0xff, 0x03, (protocol >> 8) as u8, protocol as u8];
        let fcs = !fcs16(fcs16(0xffff, &head), info);
        for &b in head.iter().chain(info).chain(&fcs.to_le_bytes()) {
            if self.escaped(b) {
                out.push(ESC);
                out.push(b ^ 0x20);
            } else {
                out.push(b);
            }
        }
        out.push(FLAG);
        self.flag_sent = true;
        out.len() - n0
    }

    /// The line went idle: the next frame opens with its own flag.
    pub fn idle(&mut self) {
        self.flag_sent = false;
    }
}

/// What the receiver made of the bytes between two flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    Frame {
        protocol: u16,
        info: Vec<u8>,
    },
    /// FCS failed, too short, too long or aborted (escape before a flag): discarded.
    Damaged,
}

/// The receiving side: feed it the byte stream, collect frames.
#[derive(Clone, Debug, Default)]
pub struct Deframer {
    buf: Vec<u8>,
    esc: bool,
    hunting: bool,
    started: bool,
}

impl Deframer {
    pub fn new() -> Deframer {
        Deframer::default()
    }

    /// Consumes bytes from the link; pushes each frame found (or damage) to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Received>) {
        for &b in bytes {
            if b == FLAG {
                if self.started && (!self.buf.is_empty() || self.esc) {
                    out.push(self.finish());
                }
                self.buf.clear();
                self.esc = false;
                self.hunting = false;
                self.started = true;
                continue;
            }
            if !self.started || self.hunting {
                continue;
            }
            if b == ESC {
                self.esc = true;
                continue;
            }
            let v = if self.esc {
                self.esc = false;
                b ^ 0x20
            } else {
                b
            };
            if self.buf.len() > MRU + 8 {
                self.hunting = true;
                out.push(Received::Damaged);
                self.buf.clear();
                continue;
            }
            self.buf.push(v);
        }
    }

    fn finish(&mut self) -> Received {
        let b = &self.buf;
        if self.esc || b.len() < 6 || fcs16(0xffff, b) != GOOD_FCS || b[0] != 0xff || b[1] != 0x03 {
            return Received::Damaged;
        }
        Received::Frame { protocol: u16::from_be_bytes([b[2], b[3]]), info: b[4..b.len() - 2].to_vec() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fcs_of_rfc1662_check_value() {
        // The FCS-16 of "123456789" (CRC-16/X.25 check value 0x906e).
        assert_eq!(!fcs16(0xffff, b"123456789"), 0x906e);
    }

    #[test]
    fn frames_round_trip_with_escapes_and_cost_seven_bytes_plus_escapes() {
        let mut f = Framer::default();
        let mut d = Deframer::new();
        let infos: Vec<Vec<u8>> =
            vec![vec![0x41, 0x42, 0x43], (0..=255).collect(), vec![FLAG, ESC, 0x11, 0x41], vec![0x41; 1500]];
        let mut line = Vec::new();
        let mut sizes = Vec::new();
        for (i, info) in infos.iter().enumerate() {
            sizes.push(f.frame(PROTO_IP + i as u16, info, &mut line));
        }
        let mut got = Vec::new();
        d.push(&line, &mut got);
        assert_eq!(
            got,
            infos
                .iter()
                .enumerate()
                .map(|(i, x)| Received::Frame { protocol: PROTO_IP + i as u16, info: x.clone() })
                .collect::<Vec<_>>()
        );
        // 8 bytes for the first frame (two flags), 7 for the next when nothing needs escaping.
        assert_eq!(sizes[0], 8 + 3);
        assert_eq!(sizes[3], 7 + 1500);
        // 256 byte values: 0x7d and 0x7e escaped (plus the FCS's, if any).
        assert!((7 + 256 + 2..=7 + 256 + 4).contains(&sizes[1]), "{}", sizes[1]);
        // With the pre-negotiation map every control character is escaped too, the
        // control field 0x03 included.
        let mut g = Framer { accm: 0xffff_ffff, ..Framer::default() };
        let mut l2 = Vec::new();
        assert!(g.frame(PROTO_IP, &(0..=255).collect::<Vec<u8>>(), &mut l2) > 8 + 256 + 2 + 32);
        let mut got = Vec::new();
        Deframer::new().push(&l2, &mut got);
        assert_eq!(got, vec![Received::Frame { protocol: PROTO_IP, info: (0..=255).collect() }]);
    }

    #[test]
    fn a_cut_frame_is_damaged_and_the_next_one_survives() {
        let mut f = Framer::default();
        let mut line = Vec::new();
        f.frame(PROTO_IP, &[0x45; 100], &mut line);
        let first_end = line.len();
        f.frame(PROTO_VJ_COMPRESSED, &[9, 8, 7], &mut line);
        f.frame(PROTO_IP, &[0x45; 50], &mut line);
        // A link reset flushes 40 bytes from the middle of the first frame.
        let mut cut = line[..30].to_vec();
        cut.extend_from_slice(&line[70..]);
        let mut got = Vec::new();
        Deframer::new().push(&cut, &mut got);
        assert_eq!(got[0], Received::Damaged);
        assert_eq!(got[1], Received::Frame { protocol: PROTO_VJ_COMPRESSED, info: vec![9, 8, 7] });
        assert_eq!(got.len(), 3);
        // A frame that vanishes entirely (its bytes flushed from flag to flag) leaves no trace.
        let mut gone = line[..1].to_vec();
        gone.extend_from_slice(&line[first_end..]);
        let mut got = Vec::new();
        Deframer::new().push(&gone, &mut got);
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], Received::Frame { protocol: PROTO_VJ_COMPRESSED, .. }));
    }

    #[test]
    fn flipped_bits_are_caught_by_the_fcs() {
        let mut f = Framer::default();
        let mut line = Vec::new();
        f.frame(PROTO_IP, &(0..200u8).collect::<Vec<_>>(), &mut line);
        for pos in [5, 50, 150, line.len() - 3] {
            let mut bad = line.clone();
            bad[pos] ^= 0x04;
            if bad[pos] == FLAG || bad[pos] == ESC {
                continue;
            }
            let mut got = Vec::new();
            Deframer::new().push(&bad, &mut got);
            assert_eq!(got, vec![Received::Damaged], "bit flip at {pos}");
        }
    }
}
