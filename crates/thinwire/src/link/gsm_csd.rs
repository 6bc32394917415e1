//! `rlp-gsm` link layer, part 2: GSM circuit-switched data as the IP layer sees it —
//! PPP framing (RFC 1662) with optional VJ TCP/IP header compression (RFC 1144)
//! over the GSM RLP byte stream ([`super::rlp_gsm`]), with L2R flow control at the
//! network side (seed 000 §3.1, §5.3, §5.5).
//!
//! Sending: a packet's real bytes (headers and checksums over the virtual payload)
//! are compressed (if `vj`), framed by PPP (flag, address, control, protocol,
//! escaped information, FCS-16; 7 bytes of overhead before escapes with shared
//! flags, the seed's accounting) and written into the RLP byte stream. The link
//! takes the next packet from the interface queue only when less than two RLP
//! frames' worth of bytes wait to be framed, so packets queue in the interface
//! buffer (BSD: 50 packets), where the seed saw them.
//!
//! Receiving: RLP's in-sequence bytes go through the PPP deframer. A frame whose FCS
//! fails (cut by a link reset, or glued to the start of another) is discarded and
//! reported to the VJ decompressor, which then tosses compressed packets until an
//! uncompressed one (RFC 1144 §4.3). Frames that vanish whole are not noticed: the
//! decompressor applies later deltas to a stale base and the rebuilt packets fail
//! the TCP checksum, which is verified here for real (as the receiving host's TCP
//! input would) and the segment dropped.
//!
//! L2R (`l2r_rate`, default off; seed 000 §5.5 measured 960 bytes/s, "9.6 kbit/s
//! asynchronous"): the interworking function relays to and from a modem at that
//! rate. Uplink, bytes RLP delivers at the network side wait in an L2R buffer drained
//! at the rate; above `l2r_buffer` bytes (default 1200, 50 frames) the network side's
//! RLP says "not ready" until the buffer is half empty, which gives the mobile's RLP
//! sender the periodic pauses of about a second the seed traced (Fig. 12).
//! Downlink, bytes enter the network side's RLP no faster than the rate.
use super::frame::{ByteQueue, Frame, Mark};
use super::rlp_gsm::{OnN2, Rlp, RlpConfig};
use super::{check_window, Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::{Dur, Rate, Size};
use crate::wire::ppp::{Deframer, Framer, Received, PROTO_IP, PROTO_IPV6, PROTO_VJ_COMPRESSED, PROTO_VJ_UNCOMPRESSED};
use crate::wire::vj::{Compressor, Decompressor, Kind, VjError};
use crate::wire::{IpRepr, Meta, Packet};
use std::collections::VecDeque;

/// What exceeding N2 does.
#[derive(Clone, Copy, Debug, serde::Deserialize, PartialEq, Eq)]
pub enum OnN2Cfg {
    #[serde(rename = "reset")]
    Reset,
    #[serde(rename = "drop-call")]
    DropCall,
}

/// `protocol = "rlp-gsm"`: GSM RLP (window 61, T1, N2, on_n2) under PPP with VJ
/// header compression and L2R flow control.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RlpGsmCfg {
    pub window: Option<u32>,
    /// Acknowledgement timer T1.
    pub t1: Option<Dur>,
    /// Maximum retransmissions of a frame (and of a poll) before the link is reset.
    pub n2: Option<u32>,
    pub on_n2: Option<OnN2Cfg>,
    /// VJ TCP/IP header compression (RFC 1144) on the PPP link.
    pub header_compression: Option<bool>,
    /// PPP reports damaged frames to the VJ decompressor (RFC 1144 toss).
    pub vj_toss_on_error: Option<bool>,
    /// L2R relay rate at the network side (seed 000: 960 bytes/s = "7680bps").
    pub l2r_rate: Option<Rate>,
    /// L2R buffer above which the network side's RLP signals "not ready".
    pub l2r_buffer: Option<Size>,
}

impl Configured for GsmCsd {
    type Section = RlpGsmCfg;
}

impl LinkSection for RlpGsmCfg {
    fn build(&self, i: &LinkInit) -> Arq {
        GsmCsd::new(self.config(i.max_payload, i.side == 0)).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        check_window(self.window)?;
        if self.window.is_some_and(|w| w > 61) {
            return Err(FieldError::new("window", "GSM RLP (modulus 64) allows at most 61 frames"));
        }
        if self.n2.is_some_and(|n| n == 0 || n > 255) {
            return Err(FieldError::new("n2", "must be between 1 and 255 retransmissions"));
        }
        positive_duration("t1", self.t1)?;
        if self.l2r_rate.is_some_and(|r| r.0 < 8) {
            return Err(FieldError::new("l2r_rate", "must be at least 8bps (one byte per second)"));
        }
        if self.l2r_buffer.is_some_and(|b| b.0 == 0 || b.0 > 1 << 20) {
            return Err(FieldError::new("l2r_buffer", "must be between 1B and 1MiB"));
        }
        Ok(())
    }
    fn is_circuit(&self) -> bool {
        true
    }
}

impl RlpGsmCfg {
    /// The model's configuration at the network side (`network_side`) or the
    /// mobile's: the defaults with what the section sets.
    pub fn config(&self, max_payload: u32, network_side: bool) -> CsdConfig {
        let d = RlpConfig::default();
        let rlp = RlpConfig {
            payload: max_payload,
            window: self.window.unwrap_or(d.window),
            t1: self.t1.map(|x| x.0).unwrap_or(d.t1),
            n2: self.n2.unwrap_or(d.n2),
            on_n2: match self.on_n2 {
                Some(OnN2Cfg::DropCall) => OnN2::DropCall,
                Some(OnN2Cfg::Reset) => OnN2::Reset,
                None => d.on_n2,
            },
        };
        let c = CsdConfig::default();
        CsdConfig {
            rlp,
            vj: self.header_compression.unwrap_or(c.vj),
            vj_toss_on_error: self.vj_toss_on_error.unwrap_or(c.vj_toss_on_error),
            l2r_rate: self.l2r_rate.map(|r| r.0 / 8).or(c.l2r_rate),
            l2r_buffer: self.l2r_buffer.map(|b| b.0 as u32).unwrap_or(c.l2r_buffer),
            network_side,
        }
    }
}

#[derive(Clone, Debug)]
pub struct CsdConfig {
    pub rlp: RlpConfig,
    /// VJ TCP/IP header compression on this link.
    pub vj: bool,
    /// PPP tells the VJ decompressor about damaged frames, which then tosses
    /// compressed packets until an uncompressed one (RFC 1144 §4.3). Default true;
    /// false models a receiver that is not told, whose stale base turns later
    /// deltas into checksum failures (what seed 000 §5.3 traced).
    pub vj_toss_on_error: bool,
    /// L2R relay rate at the network side in bytes/s (`None`: no L2R limit).
    pub l2r_rate: Option<u64>,
    /// L2R buffer at the network side (bytes) above which RLP signals "not ready".
    pub l2r_buffer: u32,
    /// This side is the network side (the IWF, at the gateway).
    pub network_side: bool,
}

impl Default for CsdConfig {
    fn default() -> Self {
        CsdConfig {
            rlp: RlpConfig::default(),
            vj: false,
            vj_toss_on_error: true,
            l2r_rate: None,
            l2r_buffer: 1200,
            network_side: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct CsdStats {
    /// PPP frames discarded by the deframer (bad FCS, cut, too long).
    pub ppp_damaged: u64,
    /// Compressed packets the VJ decompressor tossed after an error.
    pub vj_tossed: u64,
    /// Packets whose rebuilt bytes failed the IP or TCP/UDP checksum.
    pub checksum_drops: u64,
    /// Times the network side's L2R buffer turned RLP to "not ready".
    pub l2r_busy: u64,
    /// Packets sent with a VJ-compressed header.
    pub vj_compressed: u64,
}

/// Byte-rate gate: bytes may pass as credit accrues at `rate` bytes/s. Credit is
/// kept in nano-bytes (integer time throughout).
struct Gate {
    rate: i128,
    credit: i128,
    last: Instant,
    cap: i128,
}

const NANO: i128 = 1_000_000_000;

/// `a / b` (truncating, as `i128` divides), in 64 bits when both fit: a 128-bit
/// division is a library call, and the gate divides on every byte-stream step
/// (5 % of `gsm-csd-upload`'s time, bench/RESULTS.md 2026-11-29, second session).
#[inline]
fn div(a: i128, b: i128) -> i128 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) => (a / b) as i128,
        _ => a / b,
    }
}

impl Gate {
    fn new(rate: u64, cap_bytes: u32) -> Gate {
        Gate { rate: rate as i128, credit: 0, last: Instant::ZERO, cap: cap_bytes as i128 * NANO }
    }
    fn refill(&mut self, now: Instant) {
        self.credit = (self.credit + (now - self.last).nanos() as i128 * self.rate).min(self.cap);
        self.last = now;
    }
    /// Takes as many whole bytes as there is credit for, at most `max`.
    fn take(&mut self, max: usize) -> usize {
        let n = (div(self.credit, NANO) as usize).min(max);
        self.credit -= n as i128 * NANO;
        n
    }
    /// When `need` bytes of credit will be there.
    fn ready_at(&self, need: usize) -> Instant {
        let missing = need as i128 * NANO - self.credit;
        if missing <= 0 {
            return self.last;
        }
        self.last + Duration::from_nanos(div(missing + self.rate - 1, self.rate) as i64)
    }
}

pub struct GsmCsd {
    cfg: CsdConfig,
    pub rlp: Rlp,
    framer: Framer,
    comp: Compressor,
    deframer: Deframer,
    decomp: Decompressor,
    delivered: VecDeque<Packet>,
    /// Downlink L2R at the network side: PPP bytes waiting to enter RLP.
    staged: ByteQueue,
    send_gate: Option<Gate>,
    /// Uplink L2R at the network side: bytes RLP delivered, waiting for the modem.
    relay: ByteQueue,
    recv_gate: Option<Gate>,
    pub stats: CsdStats,
}

impl GsmCsd {
    pub fn new(cfg: CsdConfig) -> GsmCsd {
        let gate = |r: u64| Gate::new(r, cfg.rlp.payload * 2);
        let l2r = cfg.l2r_rate.filter(|_| cfg.network_side);
        GsmCsd {
            rlp: Rlp::new(cfg.rlp.clone()),
            framer: Framer::default(),
            comp: Compressor::new(),
            deframer: Deframer::new(),
            decomp: Decompressor::new(),
            delivered: VecDeque::new(),
            staged: ByteQueue::default(),
            send_gate: l2r.map(gate),
            relay: ByteQueue::default(),
            recv_gate: l2r.map(gate),
            stats: CsdStats::default(),
            cfg,
        }
    }

    fn pass_gate(&mut self, now: Instant) {
        let Some(g) = &mut self.send_gate else { return };
        g.refill(now);
        let n = g.take(self.staged.len());
        if n == 0 {
            return;
        }
        let (b, marks) = self.staged.take(n);
        let mut from = 0;
        for (at, m) in marks {
            self.rlp.write(&b[from..=at], Some(m));
            from = at + 1;
        }
        let open = self.staged.next_mark().map_or(u16::MAX, |m| m.meta.flow);
        self.rlp.write_partial(&b[from..], open);
    }

    /// Uplink L2R: hands bytes to the modem side at the relay rate; flow control.
    fn relay_out(&mut self, now: Instant) {
        let Some(g) = &mut self.recv_gate else { return };
        g.refill(now);
        let n = g.take(self.relay.len());
        if n > 0 {
            let (b, marks) = self.relay.take(n);
            self.deframe(&b, marks);
        }
        let len = self.relay.len() as u32;
        if len > self.cfg.l2r_buffer {
            if !self.rlp.busy() {
                self.stats.l2r_busy += 1;
            }
            self.rlp.set_busy(true);
        } else if len <= self.cfg.l2r_buffer / 2 {
            self.rlp.set_busy(false);
        }
    }

    /// Feeds bytes to the PPP deframer, labelling each frame that ends on a mark.
    fn deframe(&mut self, b: &[u8], marks: Vec<(usize, Mark)>) {
        let mut out = Vec::new();
        let mut from = 0;
        for (at, m) in
            marks.into_iter().map(|(a, m)| (a, Some(m))).chain(std::iter::once((b.len().wrapping_sub(1), None)))
        {
            if from > at || at >= b.len() {
                continue;
            }
            self.deframer.push(&b[from..=at], &mut out);
            from = at + 1;
            for r in out.drain(..) {
                self.received(r, m);
            }
        }
    }

    fn received(&mut self, r: Received, mark: Option<Mark>) {
        let (proto, info) = match r {
            Received::Damaged => {
                self.stats.ppp_damaged += 1;
                if self.cfg.vj_toss_on_error {
                    self.decomp.report_error();
                }
                return;
            }
            Received::Frame { protocol, info } => (protocol, info),
        };
        let kind = match proto {
            PROTO_IP | PROTO_IPV6 => Kind::Ip,
            PROTO_VJ_UNCOMPRESSED => Kind::Uncompressed,
            PROTO_VJ_COMPRESSED => Kind::Compressed,
            _ => return,
        };
        let bytes = match self.decomp.decompress_packet(kind, &info) {
            Ok(b) => b,
            Err(VjError::Tossed) => {
                self.stats.vj_tossed += 1;
                return;
            }
            Err(VjError::Bad) => {
                self.stats.checksum_drops += 1;
                return;
            }
        };
        // Only a frame that ended where one was written carries a mark; an intact
        // frame always does. The receiving host checks the checksums either way; a
        // packet that came in with real bytes leaves with the rebuilt real bytes.
        let m = mark.unwrap_or(Mark { meta: Meta::new(u16::MAX, Instant::ZERO), real: false });
        let meta = m.meta;
        let parsed = if m.real {
            Packet::verify(&bytes).and_then(|_| Packet::from_bytes(bytes, meta))
        } else {
            Packet::parse(&bytes).map(|p| Packet { meta, ..p })
        };
        match parsed {
            Ok(p) if m.meta.flow != u16::MAX => self.delivered.push_back(p),
            Ok(_) => {}
            Err(_) => self.stats.checksum_drops += 1,
        }
    }
}

impl ArqMachine for GsmCsd {
    fn wants_packet(&self) -> bool {
        self.rlp.is_up() && self.rlp.unframed() + self.staged.len() < 2 * self.cfg.rlp.payload as usize
    }
    fn send(&mut self, _now: Instant, p: Packet) {
        let bytes = p.emit();
        let v4 = matches!(p.ip, IpRepr::V4(_));
        let (proto, info) = if self.cfg.vj && v4 && p.tcp().is_some() {
            let hl = bytes.len() - p.payload_len as usize;
            let (kind, mut hdr) = self.comp.compress(&bytes[..hl]);
            hdr.extend_from_slice(&bytes[hl..]);
            (
                match kind {
                    Kind::Ip => PROTO_IP,
                    Kind::Uncompressed => PROTO_VJ_UNCOMPRESSED,
                    Kind::Compressed => {
                        self.stats.vj_compressed += 1;
                        PROTO_VJ_COMPRESSED
                    }
                },
                hdr,
            )
        } else {
            (if v4 { PROTO_IP } else { PROTO_IPV6 }, bytes)
        };
        let mut wire = Vec::with_capacity(info.len() + 16);
        self.framer.frame(proto, &info, &mut wire);
        let mark = Mark { meta: p.meta, real: p.is_real() };
        if self.send_gate.is_some() {
            let last = wire.len() - 1;
            self.staged.push(&wire, [(last, mark)]);
        } else {
            self.rlp.write(&wire, Some(mark));
        }
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        self.pass_gate(now);
        self.relay_out(now);
        self.rlp.poll_transmit(now)
    }
    fn on_frame(&mut self, now: Instant, f: Frame) {
        self.rlp.on_frame(now, f);
        while let Some(c) = self.rlp.read() {
            if self.recv_gate.is_some() {
                self.relay.push(&c.bytes, c.marks.iter().map(|&(o, m)| (o as usize, m)));
            } else {
                self.deframe(&c.bytes, c.marks.iter().map(|&(o, m)| (o as usize, m)).collect());
            }
        }
        self.relay_out(now);
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        let mut t = self.rlp.poll_timeout();
        let mut at = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        if let Some(g) = &self.send_gate {
            if !self.staged.is_empty() {
                at(g.ready_at(self.staged.len().min(self.cfg.rlp.payload as usize)));
            }
        }
        if let Some(g) = &self.recv_gate {
            if !self.relay.is_empty() {
                at(g.ready_at(self.relay.len().min(self.cfg.rlp.payload as usize)));
            }
        }
        t
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.rlp.handle_timeout(now);
        self.pass_gate(now);
        self.relay_out(now);
    }
    fn transmits_by_clock(&self) -> bool {
        true
    }
    fn is_circuit(&self) -> bool {
        true
    }
    /// As the sender: polls (the RLP's timer expiries), resets, bytes flushed
    /// from its window; as the receiver: bytes flushed from its buffer and what
    /// PPP, VJ and L2R threw away; either end down means the call dropped.
    fn counters(&self, sent: &mut LinkStats, received: &mut LinkStats) {
        let rlp = &self.rlp.stats;
        sent.arq_timeouts += rlp.polls_sent;
        sent.link_resets += rlp.resets;
        sent.flushed_bytes += rlp.flushed_tx;
        received.flushed_bytes += rlp.flushed_rx;
        sent.call_dropped |= !self.rlp.is_up();
        received.call_dropped |= !self.rlp.is_up();
        received.ppp_damaged += self.stats.ppp_damaged;
        received.vj_tossed += self.stats.vj_tossed;
        received.checksum_drops += self.stats.checksum_drops;
        received.l2r_busy += self.stats.l2r_busy;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_divides_as_128_bits_do() {
        let big = i64::MAX as i128;
        for a in [0, 1, 999_999_999, NANO, -NANO - 1, big, big + 1, -big - 7, i128::MAX / 3] {
            for b in [1, 7, NANO, 1_200, big, big + 5] {
                assert_eq!(div(a, b), a / b, "{a} / {b}");
            }
        }
    }
}
