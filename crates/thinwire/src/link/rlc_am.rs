//! UMTS Radio Link Control, Acknowledged Mode (`rlc`), after seed 002 §VI and
//! Table I, with the procedures of 3GPP TS 25.322 (Release 7) that the seed names.
//!
//! Sender: SDUs (IP packets) are segmented into PDUs of a fixed payload size (the
//! link's `frame` size); the last segment of an SDU is padded, SDUs are not
//! concatenated (the seed's packets fit one PDU). New PDUs are sent within a
//! transmit window of `window` PDUs from the oldest unacknowledged one. There are
//! no retransmission timers: PDUs are retransmitted only when a Status PDU reports
//! them missing. The poll bit asks the receiver for a Status PDU; it is set when
//! - `poll_last_tx`: the PDU is the last one in the transmission buffer;
//! - `poll_last_retx`: the PDU is the last one in the retransmission buffer;
//! - `poll_window`: after sending it, the window is at least this percentage full;
//! - `poll_timer`: no Status PDU accounting for every PDU sent before the last poll
//!   arrived within this time (Timer_Poll, restarted by every poll). If there is nothing to send, the poll
//!   rides on a retransmission of the newest unacknowledged PDU (TS 25.322 §11.3.2).
//!
//! A `poll_prohibit` timer started by each poll defers further polls; a poll
//! triggered meanwhile is sent when it expires.
//!
//! Receiver: accepts PDUs within `window` of the next one expected (VR(R)) and
//! delivers SDUs in order. It sends a Status PDU (ACK SUFI up to VR(R) plus a BITMAP
//! SUFI from VR(R) to the highest PDU received) when polled, when it detects a new
//! gap (`status_missing`), and every `status_periodic` (Timer_Status_Periodic, which
//! runs from the first PDU received for the life of the entity, as in TS 25.322: a
//! lost final Status PDU is only ever repeated by it). A `status_prohibit` timer
//! started by each Status PDU defers further ones. Status PDUs are always frames of
//! their own (no piggybacking, as in Table I) and, with `pad`, occupy a whole PDU.
//!
//! SDU discard after `max_retransmissions` (Table I's "discard after x
//! transmissions"; the seed's text counts *re*transmissions, "1 to 5", so a PDU is
//! sent at most 1 + x times; 3GPP's MaxDAT is x + 2, since VT(DAT) counts the
//! scheduling that triggers the discard). When a PDU that has used up its
//! transmissions is reported missing again, the sender discards its SDU, gives up
//! every older unacknowledged PDU, and sends an MRW SUFI naming the first PDU after
//! the SDU; it repeats the MRW every `mrw_timer` until an MRW_ACK arrives (or a
//! Status PDU shows the receiver already past that point), then advances its
//! window. The receiver moves VR(R) to the MRW point, delivers the complete SDUs it
//! held below it, drops the incomplete ones and answers MRW_ACK at once (not subject
//! to status prohibit). A NACK for a PDU whose retransmission is already scheduled
//! is ignored; a NACK for one already submitted to the lower layer retransmits it
//! again. TS 25.322 schedules every negatively acknowledged PDU and counts each
//! scheduling in VT(DAT); its only guard against asking again too early is the
//! receiver's optional EPC, which Table I does not use; TS 36.322 §5.2.1 and 38.322
//! §5.3.2 spell the rule out ("not pending for retransmission already"). Under the
//! study's shared interface queue a submitted PDU may still wait in the FIFO when a
//! Status PDU reports it missing again, so it is sent twice: the standard allows it,
//! and the ns-2 structure, not UMTS (whose MAC takes PDUs at each TTI), creates it
//! (docs/studies/shared-link-arq.md). Sequence numbers are not wrapped (the 12-bit
//! space of the standard never limits a 128-PDU window).
//!
//! Presets: seed 002 Table I's two columns, and `typical` (below: polls on the
//! last PDU, as deployed networks configure TS 25.322; not the seed's). Defaults
//! are Table I's "uniform" column: window 128, polls by timer (200 ms) and
//! window (70 %), poll prohibit 100 ms, status on missing PDU and every 400 ms, no
//! status prohibit, MRW timer 500 ms, 2 retransmissions, padded PDUs. The
//! "two-state" preset adds a poll on the last PDU of the retransmission buffer,
//! window threshold 80 %, status timer 500 ms, status prohibit 90 ms, MRW timer
//! 110 ms and 1 retransmission.
use super::frame::{fragment_into, Body, Frame, FrameKind, Reassembler, Report, Spare, Status};
use super::{check_window, Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::{earliest, Duration, Instant};
use crate::units::{Dur, Timer};
use crate::wire::Packet;
use std::collections::VecDeque;

/// Seed 002 Table I's RLC settings (its two columns), and `typical`: polls on the
/// last PDU as deployed TS 25.322 configurations set (`link/rlc_am.rs`).
#[derive(Clone, Copy, Debug, serde::Deserialize, PartialEq, Eq)]
pub enum RlcPreset {
    #[serde(rename = "uniform")]
    Uniform,
    #[serde(rename = "two-state")]
    TwoState,
    #[serde(rename = "typical")]
    Typical,
}

impl RlcPreset {
    pub fn name(self) -> &'static str {
        match self {
            RlcPreset::Uniform => "uniform",
            RlcPreset::TwoState => "two-state",
            RlcPreset::Typical => "typical",
        }
    }
}

/// `protocol = "rlc"`: Table I column `preset` (default "uniform"); the fields
/// override it.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RlcCfg {
    pub preset: Option<RlcPreset>,
    pub window: Option<u32>,
    pub pad: Option<bool>,
    pub max_retransmissions: Option<u32>,
    pub poll_timer: Option<Timer>,
    /// Window-based polling threshold in percent, or 0 for none.
    pub poll_window: Option<u32>,
    pub poll_last_tx: Option<bool>,
    pub poll_last_retx: Option<bool>,
    pub poll_prohibit: Option<Timer>,
    pub status_missing: Option<bool>,
    pub status_periodic: Option<Timer>,
    pub status_prohibit: Option<Timer>,
    pub mrw_timer: Option<Dur>,
}

impl Configured for Rlc {
    type Section = RlcCfg;
}

impl LinkSection for RlcCfg {
    fn build(&self, i: &LinkInit) -> Arq {
        Rlc::new(self.config(i.max_payload)).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        check_window(self.window)?;
        if self.poll_window.is_some_and(|p| p > 100) {
            return Err(FieldError::new("poll_window", "is a percentage of the window: 0 (off) to 100"));
        }
        if self.max_retransmissions.is_some_and(|x| x > 1000) {
            return Err(FieldError::new("max_retransmissions", "must be at most 1000"));
        }
        positive_duration("mrw_timer", self.mrw_timer)
    }
    fn warning(&self, max_payload: u32) -> Option<String> {
        self.config(max_payload).stall_risk()
    }
}

impl RlcCfg {
    /// The model's configuration: the preset (default "uniform") with what the
    /// section sets.
    pub fn config(&self, max_payload: u32) -> RlcConfig {
        let d = RlcConfig::preset(self.preset.map_or("uniform", |p| p.name())).unwrap_or_default();
        RlcConfig {
            window: self.window.unwrap_or(d.window),
            max_payload,
            pad: self.pad.unwrap_or(d.pad),
            max_retransmissions: self.max_retransmissions.unwrap_or(d.max_retransmissions),
            poll_timer: self.poll_timer.map(|t| t.0).unwrap_or(d.poll_timer),
            poll_window: self.poll_window.map(|p| (p > 0).then_some(p)).unwrap_or(d.poll_window),
            poll_last_tx: self.poll_last_tx.unwrap_or(d.poll_last_tx),
            poll_last_retx: self.poll_last_retx.unwrap_or(d.poll_last_retx),
            poll_prohibit: self.poll_prohibit.map(|t| t.0).unwrap_or(d.poll_prohibit),
            status_missing: self.status_missing.unwrap_or(d.status_missing),
            status_periodic: self.status_periodic.map(|t| t.0).unwrap_or(d.status_periodic),
            status_prohibit: self.status_prohibit.map(|t| t.0).unwrap_or(d.status_prohibit),
            mrw_timer: self.mrw_timer.map(|t| t.0).unwrap_or(d.mrw_timer),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RlcConfig {
    pub window: u32,
    pub max_payload: u32,
    pub pad: bool,
    pub max_retransmissions: u32,
    pub poll_timer: Option<Duration>,
    /// Window-based polling threshold in percent of `window`.
    pub poll_window: Option<u32>,
    pub poll_last_tx: bool,
    pub poll_last_retx: bool,
    pub poll_prohibit: Option<Duration>,
    pub status_missing: bool,
    pub status_periodic: Option<Duration>,
    pub status_prohibit: Option<Duration>,
    pub mrw_timer: Duration,
}

impl Default for RlcConfig {
    fn default() -> Self {
        RlcConfig::preset("uniform").unwrap()
    }
}

impl RlcConfig {
    /// Seed 002 Table I, by error model: "uniform" or "two-state".
    pub fn preset(name: &str) -> Option<RlcConfig> {
        let ms = Duration::from_millis;
        let uniform = RlcConfig {
            window: 128,
            max_payload: 250,
            pad: true,
            max_retransmissions: 2,
            poll_timer: Some(ms(200)),
            poll_window: Some(70),
            poll_last_tx: false,
            poll_last_retx: false,
            poll_prohibit: Some(ms(100)),
            status_missing: true,
            status_periodic: Some(ms(400)),
            status_prohibit: None,
            mrw_timer: ms(500),
        };
        match name {
            "uniform" => Some(uniform),
            "two-state" => Some(RlcConfig {
                poll_window: Some(80),
                poll_last_retx: true,
                status_periodic: Some(ms(500)),
                status_prohibit: Some(ms(90)),
                mrw_timer: ms(110),
                max_retransmissions: 1,
                ..uniform
            }),
            // Not a column of the seed: TS 25.322's polling as networks commonly
            // configure it (this project's choice of values, documented here and in
            // docs/scenario.md; the standard leaves them to RRC, TS 25.331): a poll
            // on the last PDU of the transmission and of the retransmission buffer,
            // so a lone last PDU (a TCP ACK) that is lost is asked about at once;
            // Timer_Poll 200 ms, Poll_Window 80 %, Timer_Poll_Prohibit and
            // Timer_Status_Prohibit 100 ms, status on a missing PDU, no periodic
            // status, MaxDAT 6 (4 retransmissions), Timer_MRW 500 ms.
            "typical" => Some(RlcConfig {
                window: 128,
                max_retransmissions: 4,
                poll_timer: Some(ms(200)),
                poll_window: Some(80),
                poll_last_tx: true,
                poll_last_retx: true,
                poll_prohibit: Some(ms(100)),
                status_missing: true,
                status_periodic: None,
                status_prohibit: Some(ms(100)),
                mrw_timer: ms(500),
                ..uniform
            }),
            _ => None,
        }
    }

    /// Why these settings can leave a PDU unrecovered for long (None: they do
    /// not): without a poll on the last PDU of the transmission buffer, a lost
    /// last PDU (a lone TCP ACK) is noticed only when a later PDU arrives behind
    /// it or a poll timer that an earlier poll started expires.
    pub fn stall_risk(&self) -> Option<String> {
        if self.poll_last_tx {
            return None;
        }
        Some(format!(
            "RLC without poll_last_tx: a lost last PDU of a burst (a lone TCP ACK) waits until a later PDU reveals the gap{} — seconds on sparse traffic. Seed 002's presets are its Table I columns; preset = \"typical\" (or poll_last_tx = true) polls the last PDU",
            match self.poll_timer {
                Some(t) => format!(" or Timer_Poll ({} ms, run only after a poll) expires", t.nanos() / 1_000_000),
                None => String::new(),
            }
        ))
    }
}

#[derive(Default, Clone, Debug)]
pub struct RlcStats {
    pub retransmissions: u64,
    pub polls: u64,
    pub poll_timeouts: u64,
    pub status_sent: u64,
    pub sdu_discards: u64,
    pub mrw_sent: u64,
}

struct Slot {
    frame: Frame,
    acked: bool,
    queued: bool,
    discarded: bool,
}

struct Mrw {
    sn: u32,
    send: bool,
    deadline: Option<Instant>,
}

pub struct Rlc {
    cfg: RlcConfig,
    // sender
    pending: VecDeque<Frame>,
    pending_sdus: u32,
    vt_a: u32,
    vt_s: u32,
    slots: VecDeque<Slot>,
    retx: VecDeque<u32>,
    poll_pending: bool,
    poll_prohibit: Option<Instant>,
    /// Timer_Poll deadline and VT(S) when the poll was sent.
    poll_timer: Option<(Instant, u32)>,
    mrw: Option<Mrw>,
    // receiver
    vr_r: u32,
    vr_h: u32,
    rxbuf: VecDeque<Option<Frame>>,
    status_pending: bool,
    status_prohibit: Option<Instant>,
    status_periodic: Option<Instant>,
    mrw_ack: Option<u32>,
    reasm: Reassembler,
    delivered: VecDeque<Packet>,
    /// Allocations of acknowledged packets, for the next ones (`frame::Spare`).
    spare: Spare,
    pub stats: RlcStats,
}

impl Rlc {
    pub fn new(cfg: RlcConfig) -> Rlc {
        Rlc {
            cfg,
            pending: VecDeque::new(),
            pending_sdus: 0,
            vt_a: 0,
            vt_s: 0,
            slots: VecDeque::new(),
            retx: VecDeque::new(),
            poll_pending: false,
            poll_prohibit: None,
            poll_timer: None,
            mrw: None,
            vr_r: 0,
            vr_h: 0,
            rxbuf: VecDeque::new(),
            status_pending: false,
            status_prohibit: None,
            status_periodic: None,
            mrw_ack: None,
            reasm: Reassembler::default(),
            delivered: VecDeque::new(),
            spare: Spare::default(),
            stats: RlcStats::default(),
        }
    }

    /// PDUs sent and not yet released (acknowledged or discarded and MRW-acknowledged).
    pub fn outstanding(&self) -> u32 {
        self.vt_s - self.vt_a
    }

    /// One-line state summary for diagnostics.
    pub fn describe(&self) -> String {
        let slots: String = self
            .slots
            .iter()
            .map(|s| {
                if s.acked {
                    'a'
                } else if s.discarded {
                    'd'
                } else if s.queued {
                    'q'
                } else {
                    '.'
                }
            })
            .collect();
        format!("VT(A)={} VT(S)={} [{slots}] poll_pending={} poll_timer={:?} mrw={:?} | VR(R)={} VR(H)={} status_pending={} periodic={:?}",
            self.vt_a, self.vt_s, self.poll_pending, self.poll_timer, self.mrw.as_ref().map(|m| (m.sn, m.send, m.deadline)), self.vr_r, self.vr_h,
            self.status_pending, self.status_periodic)
    }

    fn slot(&mut self, sn: u32) -> Option<&mut Slot> {
        if sn < self.vt_a {
            return None;
        }
        self.slots.get_mut((sn - self.vt_a) as usize)
    }

    /// Releases every PDU below `sn` and any acknowledged ones that follow.
    fn release_below(&mut self, sn: u32) {
        let sn = sn.min(self.vt_s);
        if sn > self.vt_a {
            for s in self.slots.drain(..(sn - self.vt_a) as usize) {
                self.spare.keep(s.frame);
            }
            self.vt_a = sn;
        }
        while self.slots.front().is_some_and(|s| s.acked) {
            if let Some(s) = self.slots.pop_front() {
                self.spare.keep(s.frame);
            }
            self.vt_a += 1;
        }
    }

    // ----- sender: Status PDUs received -----

    fn on_report(&mut self, r: &Report) {
        if self.mrw.as_ref().is_some_and(|m| r.ack >= m.sn) {
            self.mrw = None;
        }
        // Timer_Poll stops once every PDU sent before the poll is accounted for.
        if self.poll_timer.is_some_and(|(_, vs)| r.end.max(r.ack) >= vs) {
            self.poll_timer = None;
        }
        let mut missing = r.missing.iter().copied().peekable();
        for sn in r.ack.max(self.vt_a)..r.end.min(self.vt_s) {
            while missing.peek().is_some_and(|&m| m < sn) {
                missing.next();
            }
            if missing.peek() == Some(&sn) {
                missing.next();
                self.on_nack(sn);
            } else if let Some(s) = self.slot(sn) {
                s.acked = true;
            }
        }
        self.release_below(r.ack);
    }

    fn on_nack(&mut self, sn: u32) {
        let limit = 1 + self.cfg.max_retransmissions;
        let Some(s) = self.slot(sn) else { return };
        if s.acked || s.discarded || s.queued {
            return;
        }
        if s.frame.tx as u32 >= limit {
            self.discard(sn);
            return;
        }
        s.queued = true;
        self.retx.push_back(sn);
    }

    /// SDU discard with explicit signalling: gives up the SDU holding `sn` and every
    /// older unacknowledged PDU, and tells the receiver with an MRW SUFI.
    fn discard(&mut self, sn: u32) {
        self.stats.sdu_discards += 1;
        let mut end = sn;
        while end < self.vt_s && !self.slots[(end - self.vt_a) as usize].frame.last() {
            end += 1;
        }
        let mrw_sn = if end < self.vt_s {
            end + 1
        } else {
            // The SDU's remaining segments were never numbered: drop them unsent.
            while let Some(f) = self.pending.pop_front() {
                if f.last() {
                    self.pending_sdus -= 1;
                    break;
                }
            }
            self.vt_s
        };
        for s in self.slots.iter_mut().take((mrw_sn - self.vt_a) as usize) {
            s.discarded = true;
            s.queued = false;
        }
        let sn = self.mrw.as_ref().map_or(mrw_sn, |m| m.sn.max(mrw_sn));
        self.mrw = Some(Mrw { sn, send: true, deadline: None });
    }

    fn on_mrw_ack(&mut self, sn: u32) {
        if let Some(m) = &self.mrw {
            if sn >= m.sn {
                let target = m.sn;
                self.mrw = None;
                self.release_below(target);
            }
        }
    }

    // ----- receiver -----

    fn arm_periodic(&mut self, now: Instant) {
        if self.status_periodic.is_none() {
            self.status_periodic = self.cfg.status_periodic.map(|p| now + p);
        }
    }

    fn deliver_in_order(&mut self) {
        while let Some(Some(_)) = self.rxbuf.front() {
            let f = self.rxbuf.pop_front().unwrap().unwrap();
            self.vr_r += 1;
            if let Some(p) = self.reasm.push(f) {
                self.delivered.push_back(p);
            }
        }
    }

    fn on_data(&mut self, now: Instant, f: Frame) {
        self.arm_periodic(now);
        if f.poll() {
            self.status_pending = true;
        }
        let sn = f.seq;
        if sn < self.vr_r || sn - self.vr_r >= self.cfg.window {
            return;
        }
        let off = (sn - self.vr_r) as usize;
        while self.rxbuf.len() <= off {
            self.rxbuf.push_back(None);
        }
        if self.rxbuf[off].is_some() {
            return;
        }
        if sn > self.vr_h && self.cfg.status_missing {
            self.status_pending = true;
        }
        self.vr_h = self.vr_h.max(sn + 1);
        self.rxbuf[off] = Some(f);
        if off == 0 {
            self.deliver_in_order();
        }
    }

    fn on_mrw(&mut self, sn: u32) {
        if sn > self.vr_r {
            for _ in self.vr_r..sn {
                if let Some(Some(f)) = self.rxbuf.pop_front() {
                    if let Some(p) = self.reasm.push(f) {
                        self.delivered.push_back(p);
                    }
                }
            }
            self.vr_r = sn;
            self.vr_h = self.vr_h.max(sn);
            self.deliver_in_order();
        }
        self.mrw_ack = Some(self.vr_r);
    }

    fn report(&self) -> Report {
        let missing = self
            .rxbuf
            .iter()
            .take((self.vr_h - self.vr_r) as usize)
            .enumerate()
            .filter(|(_, f)| f.is_none())
            .map(|(i, _)| self.vr_r + i as u32)
            .collect();
        Report { ack: self.vr_r, end: self.vr_h, missing }
    }

    // ----- transmission -----

    fn status_frame(&mut self, now: Instant) -> Option<Frame> {
        let report_ok = self.status_pending && self.status_prohibit.is_none_or(|t| t <= now);
        let mrw = self.mrw.as_ref().filter(|m| m.send).map(|m| m.sn);
        if !report_ok && mrw.is_none() && self.mrw_ack.is_none() {
            return None;
        }
        let mut st = Status { report: None, mrw, mrw_ack: self.mrw_ack.take() };
        if report_ok {
            st.report = Some(self.report());
            self.status_pending = false;
            self.status_prohibit = self.cfg.status_prohibit.map(|p| now + p);
        }
        if let Some(m) = &mut self.mrw {
            if m.send {
                m.send = false;
                m.deadline = Some(now + self.cfg.mrw_timer);
                self.stats.mrw_sent += 1;
            }
        }
        self.stats.status_sent += 1;
        let mut f = Frame::control(FrameKind::Status, 0, None);
        f.payload = if self.cfg.pad { self.cfg.max_payload as u16 } else { status_bytes(&st) };
        f.body = Body::Status(Box::new(st));
        Some(f)
    }

    fn next_retx(&mut self) -> Option<u32> {
        while let Some(sn) = self.retx.pop_front() {
            if self.slot(sn).is_some_and(|s| s.queued) {
                return Some(sn);
            }
        }
        None
    }

    fn retx_empty(&self) -> bool {
        self.retx.iter().all(|&sn| sn < self.vt_a || !self.slots[(sn - self.vt_a) as usize].queued)
    }

    /// Stamps a PDU for transmission, deciding its poll bit.
    fn emit(&mut self, now: Instant, sn: u32, trigger: bool) -> Frame {
        let mut want = trigger || self.poll_pending;
        if want && self.poll_prohibit.is_some_and(|t| t > now) {
            self.poll_pending = true;
            want = false;
        }
        let pad = self.cfg.pad;
        let max = self.cfg.max_payload as u16;
        let s = self.slot(sn).unwrap();
        s.queued = false;
        s.frame.tx += 1;
        let mut f = s.frame.clone();
        if pad {
            f.payload = max;
        }
        f.set_poll(want);
        if want {
            self.stats.polls += 1;
            self.poll_pending = false;
            self.poll_prohibit = self.cfg.poll_prohibit.map(|p| now + p);
            self.poll_timer = self.cfg.poll_timer.map(|p| (now + p, self.vt_s));
        }
        f
    }
}

/// Size of a Status PDU without padding (TS 25.322 §9.2.2.11): a 1-byte header,
/// ACK SUFI 2 bytes, BITMAP SUFI 3 bytes plus one bit per PDU reported, MRW 3
/// bytes, MRW_ACK 3 bytes.
fn status_bytes(st: &Status) -> u16 {
    let mut b = 1;
    if let Some(r) = &st.report {
        b += 2;
        if !r.missing.is_empty() {
            b += 3 + (r.end - r.ack).div_ceil(8) as u16;
        }
    }
    if st.mrw.is_some() {
        b += 3;
    }
    if st.mrw_ack.is_some() {
        b += 3;
    }
    b
}

impl ArqMachine for Rlc {
    /// The RLC holds the SDU being segmented and the next one, so that "last PDU in
    /// the transmission buffer" means the queue above is empty too.
    fn wants_packet(&self) -> bool {
        self.pending_sdus < 2
    }
    fn send(&mut self, _now: Instant, pkt: Packet) {
        self.pending_sdus += 1;
        fragment_into(pkt, self.cfg.max_payload, &mut self.spare, |f| self.pending.push_back(f));
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
    /// A frame arrived from the peer (it survived the channel).
    fn on_frame(&mut self, now: Instant, f: Frame) {
        match f.kind {
            FrameKind::Data => self.on_data(now, f),
            FrameKind::Status => {
                let Body::Status(st) = f.body else { panic!("status PDU carries super-fields") };
                if let Some(r) = &st.report {
                    self.on_report(r);
                }
                if let Some(sn) = st.mrw {
                    self.on_mrw(sn);
                }
                if let Some(sn) = st.mrw_ack {
                    self.on_mrw_ack(sn);
                }
            }
            FrameKind::Ack | FrameKind::Nack | FrameKind::Idle | FrameKind::Reset => {}
        }
    }
    /// The next frame to put on the air, if any: Status PDUs first, then
    /// retransmissions, then new PDUs, then a lone poll.
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        if let Some(f) = self.status_frame(now) {
            return Some(f);
        }
        if let Some(sn) = self.next_retx() {
            self.stats.retransmissions += 1;
            let last = self.cfg.poll_last_retx && self.retx_empty();
            return Some(self.emit(now, sn, last));
        }
        if self.vt_s - self.vt_a < self.cfg.window {
            if let Some(mut f) = self.pending.pop_front() {
                if f.last() {
                    self.pending_sdus -= 1;
                }
                f.seq = self.vt_s;
                f.tx = 0;
                self.vt_s += 1;
                self.slots.push_back(Slot { frame: f, acked: false, queued: false, discarded: false });
                let last = self.cfg.poll_last_tx && self.pending.is_empty();
                let win = self.cfg.poll_window.is_some_and(|p| (self.vt_s - self.vt_a) * 100 >= p * self.cfg.window);
                return Some(self.emit(now, self.vt_s - 1, last || win));
            }
        }
        if self.poll_pending && self.poll_prohibit.is_none_or(|t| t <= now) {
            let newest = (self.vt_a..self.vt_s).rev().find(|&sn| {
                let s = &self.slots[(sn - self.vt_a) as usize];
                !s.acked && !s.discarded
            });
            match newest {
                Some(sn) => {
                    self.stats.retransmissions += 1;
                    return Some(self.emit(now, sn, true));
                }
                None => self.poll_pending = false,
            }
        }
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        let mut t = self.poll_timer.map(|p| p.0);
        t = earliest(t, self.poll_prohibit);
        t = earliest(t, self.status_prohibit);
        t = earliest(t, self.status_periodic);
        earliest(t, self.mrw.as_ref().and_then(|m| m.deadline))
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timer.is_some_and(|p| p.0 <= now) {
            self.poll_timer = None;
            self.stats.poll_timeouts += 1;
            // Only worth a poll while something is unacknowledged.
            if self.slots.iter().any(|s| !s.acked && !s.discarded) {
                self.poll_pending = true;
            }
        }
        if self.poll_prohibit.is_some_and(|t| t <= now) {
            self.poll_prohibit = None;
        }
        if self.status_prohibit.is_some_and(|t| t <= now) {
            self.status_prohibit = None;
        }
        if self.status_periodic.is_some_and(|t| t <= now) {
            self.status_periodic = None;
            self.status_pending = true;
            self.arm_periodic(now);
        }
        if let Some(m) = &mut self.mrw {
            if m.deadline.is_some_and(|t| t <= now) {
                m.deadline = None;
                m.send = true;
            }
        }
    }
    fn transmits_by_clock(&self) -> bool {
        true
    }
    /// The transmit window: VT(A) (oldest unacknowledged PDU) and VT(S) (next new).
    fn window(&self) -> Option<(u32, u32)> {
        Some((self.vt_a, self.vt_s))
    }
    fn counters(&self, sent: &mut LinkStats, _received: &mut LinkStats) {
        sent.arq_timeouts += self.stats.poll_timeouts;
        sent.sdu_discards += self.stats.sdu_discards;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn presets_follow_table_one() {
        let u = RlcConfig::preset("uniform").unwrap();
        let t = RlcConfig::preset("two-state").unwrap();
        assert_eq!((u.window, t.window), (128, 128));
        assert_eq!((u.poll_window, t.poll_window), (Some(70), Some(80)));
        assert_eq!((u.poll_last_retx, t.poll_last_retx), (false, true));
        assert_eq!(
            (u.status_periodic, t.status_periodic),
            (Some(Duration::from_millis(400)), Some(Duration::from_millis(500)))
        );
        assert_eq!((u.status_prohibit, t.status_prohibit), (None, Some(Duration::from_millis(90))));
        assert_eq!((u.mrw_timer, t.mrw_timer), (Duration::from_millis(500), Duration::from_millis(110)));
        assert!(RlcConfig::preset("fading").is_none());
    }
    #[test]
    fn unpadded_status_size_counts_super_fields() {
        let st = Status { report: Some(Report { ack: 10, end: 30, missing: vec![12] }), mrw: None, mrw_ack: None };
        assert_eq!(status_bytes(&st), 1 + 2 + 3 + 3);
        assert_eq!(status_bytes(&Status { report: None, mrw: Some(4), mrw_ack: None }), 4);
    }
}
