//! Link-layer protocols for the wireless link, one module each, all sans-IO:
//! `raw` (no ARQ), `sr` and `asr` (Selective Repeat with fixed or adaptive timeout),
//! `rlc` (UMTS RLC Acknowledged Mode), `is707` (IS-707 RLP with NAK rounds and idle frames),
//! `rlp-gsm` (GSM RLP byte stream, `rlp_gsm`, under PPP/VJ and L2R, `gsm_csd`), `gprs`
//! (a GPRS link: TBF set-up delays, outages, uplink bunching). Beside them: `capacity`
//! (a radio's capacity from a Mahimahi delivery trace), `frame`, and `wireless` (the
//! link as one machine).
pub mod capacity;
pub mod frame;
pub mod gprs;
pub mod gsm_csd;
pub mod is707;
pub mod raw;
pub mod rlc_am;
pub mod rlp_gsm;
pub mod sr;
pub mod wireless;

use crate::time::Instant;
use crate::wire::Packet;
pub use frame::{Body, Frame, FrameKind};

/// One side of a wireless link: the sender for its direction and the receiver for
/// the other, so that ACKs can ride on reverse data frames.
pub enum Arq {
    Raw(raw::Raw),
    Sr(Box<sr::Sr>),
    Rlc(Box<rlc_am::Rlc>),
    Is707(Box<is707::Is707>),
    Gsm(Box<gsm_csd::GsmCsd>),
    Gprs(Box<gprs::Gprs>),
}

impl Arq {
    pub fn wants_packet(&self) -> bool {
        match self {
            Arq::Raw(r) => r.wants_packet(),
            Arq::Sr(s) => s.wants_packet(),
            Arq::Rlc(l) => l.wants_packet(),
            Arq::Is707(i) => i.wants_packet(),
            Arq::Gsm(g) => g.wants_packet(),
            Arq::Gprs(g) => g.wants_packet(),
        }
    }
    pub fn send(&mut self, now: Instant, p: Packet) {
        match self {
            Arq::Gprs(g) => g.send_at(now, p),
            Arq::Raw(r) => r.send(p),
            Arq::Sr(s) => s.send(p),
            Arq::Rlc(l) => l.send(p),
            Arq::Is707(i) => i.send(p),
            Arq::Gsm(g) => g.send(p),
        }
    }
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        match self {
            Arq::Raw(r) => r.poll_transmit(now),
            Arq::Sr(s) => s.poll_transmit(now),
            Arq::Rlc(l) => l.poll_transmit(now),
            Arq::Is707(i) => i.poll_transmit(now),
            Arq::Gsm(g) => g.poll_transmit(now),
            Arq::Gprs(g) => g.poll_transmit(now),
        }
    }
    /// What this end puts into a shared frame queue: as `poll_transmit`, but no
    /// IS-707 idle frame (those only fill a slot the queue leaves empty).
    pub fn poll_transmit_queued(&mut self, now: Instant) -> Option<Frame> {
        match self {
            Arq::Is707(i) => i.poll_transmit_without_idle(now),
            _ => self.poll_transmit(now),
        }
    }
    /// Whether `poll_transmit` may give a frame later with no `send`, `on_frame` or
    /// `handle_timeout` in between: GPRS (TBF set-up, outages, lifetimes), GSM RLP
    /// (the L2R rate gate) and RLC look at the clock there. RLC's prohibit timers
    /// are deadlines of `poll_timeout`, but at the very instant one ends a poll
    /// made before the timer's own event already sees it over (skipping such polls
    /// changed 67 of the 17,880 runs of the `shared-link-arq` study). Raw, SR/ASR and
    /// IS-707 change only through those calls.
    pub fn transmits_by_clock(&self) -> bool {
        matches!(self, Arq::Gsm(_) | Arq::Gprs(_) | Arq::Rlc(_))
    }
    /// Whether this end sends idle frames when it has nothing else (IS-707).
    pub fn sends_idle_frames(&self) -> bool {
        matches!(self, Arq::Is707(_))
    }
    pub fn on_frame(&mut self, now: Instant, f: Frame) {
        match self {
            Arq::Raw(r) => r.on_frame(now, f),
            Arq::Sr(s) => s.on_frame(now, f),
            Arq::Rlc(l) => l.on_frame(now, f),
            Arq::Is707(i) => i.on_frame(now, f),
            Arq::Gsm(g) => g.on_frame(now, f),
            Arq::Gprs(g) => g.on_frame(now, f),
        }
    }
    #[inline(always)] // the link's hot path and its cold one for further mobiles alike
    pub fn poll_deliver(&mut self) -> Option<Packet> {
        match self {
            Arq::Raw(r) => r.poll_deliver(),
            Arq::Sr(s) => s.poll_deliver(),
            Arq::Rlc(l) => l.poll_deliver(),
            Arq::Is707(i) => i.poll_deliver(),
            Arq::Gsm(g) => g.poll_deliver(),
            Arq::Gprs(g) => g.poll_deliver(),
        }
    }
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        match self {
            Arq::Raw(_) => None,
            Arq::Sr(s) => s.poll_timeout(),
            Arq::Rlc(l) => l.poll_timeout(),
            Arq::Is707(i) => i.poll_timeout(),
            Arq::Gsm(g) => g.poll_timeout(),
            Arq::Gprs(g) => g.poll_timeout(),
        }
    }
    #[inline(always)] // as poll_deliver
    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            Arq::Raw(_) => {}
            Arq::Sr(s) => s.handle_timeout(now),
            Arq::Rlc(l) => l.handle_timeout(now),
            Arq::Is707(i) => i.handle_timeout(now),
            Arq::Gsm(g) => g.handle_timeout(now),
            Arq::Gprs(g) => g.handle_timeout(now),
        }
    }
    /// Whether frame `f` of the peer's ARQ session, arriving here at any later time,
    /// would change nothing: so far only an IS-707 idle frame announcing frames this
    /// end has already noticed (its V(R) has reached the V(S) the frame carries, and
    /// V(R) never decreases). The link then skips its arrival (an event with no
    /// effect; long IS-707 runs are mostly idle frames).
    pub fn ignores(&self, f: &Frame) -> bool {
        match self {
            Arq::Is707(i) => f.kind == FrameKind::Idle && f.seq <= i.counters().1,
            _ => false,
        }
    }
    /// The sender's window (RLC: VT(A), VT(S)), for the trace.
    pub fn window(&self) -> Option<(u32, u32)> {
        match self {
            Arq::Rlc(l) => Some(l.window()),
            _ => None,
        }
    }
    /// Retransmission timer expiries (SR/ASR) or poll timer expiries (RLC).
    pub fn timeouts(&self) -> u64 {
        match self {
            Arq::Raw(_) | Arq::Is707(_) | Arq::Gprs(_) => 0,
            Arq::Gsm(g) => g.rlp.stats.polls_sent,
            Arq::Sr(s) => s.stats.timeouts,
            Arq::Rlc(l) => l.stats.poll_timeouts,
        }
    }
    /// SDUs given up by the link layer (RLC SDU discard).
    pub fn discards(&self) -> u64 {
        match self {
            Arq::Rlc(l) => l.stats.sdu_discards,
            Arq::Is707(i) => i.stats.frames_abandoned,
            Arq::Gprs(g) => g.stats.lifetime_drops,
            _ => 0,
        }
    }
}
