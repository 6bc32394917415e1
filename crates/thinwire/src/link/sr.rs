//! Selective Repeat ARQ (`sr`) and Adaptive Selective Repeat (`asr`), after seed 002
//! §IV and §V.
//!
//! Sender: frames are sent within a window of `window` frames and buffered until a
//! cumulative ACK covers them. Each (re)transmission starts a retransmission timer;
//! on expiry the frame is retransmitted. NACKed frames are retransmitted. Order of
//! service when the radio is free: NACKs, standalone ACKs, retransmissions (first
//! come, first served), new frames.
//!
//! Receiver: accepts frames within a window of `window` frames from the next
//! expected one; delivers in order; delays the cumulative ACK up to `ack_delay`
//! hoping to piggyback it on a data frame going the other way; sends one NACK per
//! missing frame as soon as a gap appears (NACKs are their own frames and carry no
//! cumulative ACK). A duplicate frame re-arms the delayed ACK (the sender timed out,
//! so the ACK was probably lost).
//!
//! Multireject (seed 002 §IV, after Brady 1987): a missing frame is NACKed again "if
//! the receiver detects that its retransmissions have also been lost". The seed does
//! not say how; thinwire detects it from two header fields (both fit in the 4-byte
//! header the study charges): every NACK carries a serial number, every data frame
//! echoes the serial of the latest NACK the sender had acted on when sending it,
//! and a retransmission bit. The sender serves retransmissions first come first
//! served and before new frames, and the link keeps order, so:
//! - a first transmission echoing serial `e` was sent after the retransmissions
//!   asked for by every NACK up to `e` that reached the sender;
//! - a retransmission of a frame the receiver NACKed with serial `s ≤` its echo was
//!   sent after those asked for by every NACK before `s`.
//!
//! When such a frame arrives, every frame still missing whose latest NACK is covered
//! was lost again (or its NACK was): it is NACKed again, with a new serial. No timer
//! is involved. With `renack` set, the older rule is used instead: NACK a frame again
//! when a later data frame arrives at least `renack` after its last NACK while it is
//! still missing.
//!
//! Timers start when the frame is handed to the radio. With `asr`, the timeout
//! follows seed 002 §V: per acknowledged frame a sample `now − last transmission
//! time` is taken, except from NACKs, from all but the last frame of a cumulative
//! ACK, and from duplicate ACKs. "Integer arithmetic … with a 10 ms granularity as
//! in TCP": a sample is rounded to the nearest tick (at least one), as ns-2's TCP
//! does (`int(t/tick + 0.5)`); srtt and srttvar are kept in Jacobson's scaled form
//! (srtt×8, srttvar×4; variance updated from the old srtt as in RFC 6298):
//! `srtt ← 7/8·srtt + 1/8·sample`, `srttvar ← 3/4·srttvar + 1/4·|srtt − sample|`;
//! and `rtxto = α·srtt + β·srttvar` is computed from their whole-tick values, as the
//! formula is written (at least one tick). So a steady RTT gives 1+4 `rtxto = srtt`
//! with no hidden margin — the paper's "very short timeouts" (§V). No backoff after
//! a timeout; a new timer never expires before an earlier one.
//!
//! Defaults (seed 002 §IV/§V): window 127, ack_delay 500 ms, timeout 1.1 s, initial
//! srtt 1.1 s, initial srttvar 0, tick 10 ms, multireject by detection (`renack`
//! unset).
use super::frame::{Fragments, Frame, FrameKind, Reassembler, Spare};
use super::{check_window, Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::Dur;
use crate::wire::Packet;
use std::collections::VecDeque;

/// ASR's policy when none is given: "3+2" (seed 002 §V's TCP-like choice).
pub const DEFAULT_POLICY: (u32, u32) = (3, 2);

/// `protocol = "sr"`: defaults window 127, ack_delay 500 ms, timeout 1.1 s, renack
/// unset (multireject by detection; a duration selects the timer rule).
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SrCfg {
    pub window: Option<u32>,
    pub ack_delay: Option<Dur>,
    pub timeout: Option<Dur>,
    pub renack: Option<Dur>,
}

impl Configured for Sr {
    type Section = SrCfg;
}

impl LinkSection for SrCfg {
    fn build(&self, i: &LinkInit) -> Arq {
        Sr::new(self.config(i.max_payload)).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        check_window(self.window)?;
        positive_duration("timeout", self.timeout)?;
        positive_duration("renack", self.renack)
    }
}

impl SrCfg {
    /// The model's configuration: the defaults with what the section sets.
    pub fn config(&self, max_payload: u32) -> SrConfig {
        let d = SrConfig::default();
        SrConfig {
            window: self.window.unwrap_or(d.window),
            ack_delay: self.ack_delay.map(|x| x.0).unwrap_or(d.ack_delay),
            timeout: self.timeout.map(|x| x.0).unwrap_or(d.timeout),
            renack: self.renack.map(|x| x.0).or(d.renack),
            max_payload,
            ..d
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SrConfig {
    pub window: u32,
    pub ack_delay: Duration,
    pub timeout: Duration,
    /// `Some((α, β))` makes this ASR.
    pub adaptive: Option<(u32, u32)>,
    pub initial_srtt: Duration,
    pub tick: Duration,
    /// Multireject by a timer of this interval; None: by detection (module doc).
    pub renack: Option<Duration>,
    pub max_payload: u32,
}

impl Default for SrConfig {
    fn default() -> Self {
        SrConfig {
            window: 127,
            ack_delay: Duration::from_millis(500),
            timeout: Duration::from_millis(1100),
            adaptive: None,
            initial_srtt: Duration::from_millis(1100),
            tick: Duration::from_millis(10),
            renack: None,
            max_payload: 250,
        }
    }
}

struct Slot {
    frame: Frame,
    sent_at: Instant,
    queued: bool,
}

#[derive(Default, Clone, Debug)]
pub struct SrStats {
    pub timeouts: u64,
    pub retransmissions: u64,
    pub nacks_sent: u64,
    pub acks_sent: u64,
    pub rtt_samples: u64,
    /// NACKs sent again for a frame already NACKed (multireject).
    pub renacks: u64,
}

/// When and with which serial a missing frame was last NACKed.
#[derive(Clone, Copy)]
struct Nacked {
    at: Instant,
    sn: u32,
}

pub struct Sr {
    cfg: SrConfig,
    // sender
    /// The packet being taken into the window, cut into frames as they are polled.
    pending: Fragments,
    base: u32,
    next_seq: u32,
    slots: VecDeque<Slot>,
    retx: VecDeque<u32>,
    timers: VecDeque<(Instant, u32, u16)>,
    last_deadline: Instant,
    /// Serial of the latest NACK acted on, echoed in data frames.
    echo: u32,
    rto: Duration,
    srtt8: i64,
    var4: i64,
    // receiver
    expected: u32,
    highest: u32,
    rxbuf: VecDeque<Option<Frame>>,
    nack_at: VecDeque<Option<Nacked>>,
    /// NACKs to send: (missing frame, serial).
    nacks: VecDeque<(u32, u32)>,
    last_nsn: u32,
    /// The highest NACK serial already searched for lost retransmissions.
    scanned: u32,
    ack_due: Option<Instant>,
    ack_now: bool,
    reasm: Reassembler,
    delivered: VecDeque<Packet>,
    /// Allocations of acknowledged packets, for the next ones (`frame::Spare`).
    spare: Spare,
    pub stats: SrStats,
}

impl Sr {
    pub fn new(cfg: SrConfig) -> Sr {
        let srtt8 = 8 * cfg.initial_srtt.nanos() / cfg.tick.nanos().max(1);
        let mut s = Sr {
            cfg,
            pending: Fragments::default(),
            base: 0,
            next_seq: 0,
            slots: VecDeque::new(),
            retx: VecDeque::new(),
            timers: VecDeque::new(),
            last_deadline: Instant::ZERO,
            echo: 0,
            rto: cfg.timeout,
            srtt8,
            var4: 0,
            expected: 0,
            highest: 0,
            rxbuf: VecDeque::new(),
            nack_at: VecDeque::new(),
            nacks: VecDeque::new(),
            last_nsn: 0,
            scanned: 0,
            ack_due: None,
            ack_now: false,
            reasm: Reassembler::default(),
            delivered: VecDeque::new(),
            spare: Spare::default(),
            stats: SrStats::default(),
        };
        if s.cfg.adaptive.is_some() {
            s.rto = s.adaptive_rto();
        }
        s
    }
    /// Current retransmission timeout.
    pub fn rto(&self) -> Duration {
        self.rto
    }
    /// ASR's smoothed RTT in whole ticks, as `rtxto` uses it.
    pub fn srtt(&self) -> Duration {
        self.cfg.tick * (self.srtt8 >> 3)
    }
    /// Frames sent but not yet acknowledged.
    pub fn outstanding(&self) -> u32 {
        self.next_seq - self.base
    }

    fn adaptive_rto(&self) -> Duration {
        let (a, b) = self.cfg.adaptive.unwrap();
        let ticks = (a as i64 * (self.srtt8 >> 3) + b as i64 * (self.var4 >> 2)).max(1);
        self.cfg.tick * ticks
    }

    fn rtt_sample(&mut self, sample: Duration) {
        if self.cfg.adaptive.is_none() {
            return;
        }
        self.stats.rtt_samples += 1;
        let t = self.cfg.tick.nanos().max(1);
        let m = ((sample.nanos().max(0) + t / 2) / t).max(1);
        let delta = m - self.srtt8 / 8;
        self.srtt8 += delta;
        self.var4 += delta.abs() - self.var4 / 4;
        self.rto = self.adaptive_rto();
    }

    fn on_ack(&mut self, now: Instant, a: u32) {
        if a <= self.base || a > self.next_seq {
            return;
        } // duplicate or bogus: no sample
        let last = &self.slots[(a - 1 - self.base) as usize];
        let sample = now - last.sent_at;
        let n = (a - self.base) as usize;
        for s in self.slots.drain(..n) {
            self.spare.keep(s.frame);
        }
        self.base = a;
        self.rtt_sample(sample);
    }

    fn on_nack(&mut self, n: u32, sn: u32) {
        self.echo = self.echo.max(sn);
        if n < self.base || n >= self.next_seq {
            return;
        }
        let slot = &mut self.slots[(n - self.base) as usize];
        if !slot.queued {
            slot.queued = true;
            self.retx.push_back(n);
        }
    }

    fn deliver_in_order(&mut self) {
        while let Some(Some(_)) = self.rxbuf.front() {
            let f = self.rxbuf.pop_front().unwrap().unwrap();
            self.nack_at.pop_front();
            self.expected += 1;
            if let Some(p) = self.reasm.push(f) {
                self.delivered.push_back(p);
            }
        }
    }

    fn arm_ack(&mut self, now: Instant) {
        if self.ack_due.is_none() {
            self.ack_due = Some(now + self.cfg.ack_delay);
        }
    }

    /// Queues a NACK for the missing frame at receive-buffer offset `i`.
    fn nack(&mut self, now: Instant, i: usize) {
        if self.nack_at[i].is_some() {
            self.stats.renacks += 1;
        }
        self.last_nsn += 1;
        self.nacks.push_back((self.expected + i as u32, self.last_nsn));
        self.nack_at[i] = Some(Nacked { at: now, sn: self.last_nsn });
    }

    /// NACKs again the missing frames whose retransmission (or NACK) the arrival of
    /// data frame `f` (at offset `off`) shows lost; with `renack`, those NACKed at
    /// least that long ago. See the module doc.
    fn multireject(&mut self, now: Instant, off: usize, f: &Frame) {
        // Detection: every NACK up to `covered` was acted on before `f` was sent.
        let covered = if f.tx <= 1 {
            f.nsn
        } else {
            match self.nack_at[off] {
                Some(own) if own.sn <= f.nsn => own.sn - 1,
                _ => 0,
            }
        };
        if self.cfg.renack.is_none() {
            // Every frame NACKed at or below `scanned` was NACKed again (with a
            // newer serial) when that was learnt; nothing new to find.
            if covered <= self.scanned {
                return;
            }
            self.scanned = covered;
        }
        let lost = |n: &Nacked| match self.cfg.renack {
            Some(r) => now - n.at >= r,
            None => n.sn <= covered,
        };
        let again: Vec<usize> = (0..self.rxbuf.len())
            .filter(|&i| i != off && self.rxbuf[i].is_none() && self.nack_at[i].as_ref().is_some_and(&lost))
            .collect();
        for i in again {
            self.nack(now, i);
        }
    }

    fn on_data(&mut self, now: Instant, f: Frame) {
        let s = f.seq;
        if s < self.expected || s - self.expected >= self.cfg.window {
            self.arm_ack(now);
            return;
        }
        let off = (s - self.expected) as usize;
        while self.rxbuf.len() <= off {
            self.rxbuf.push_back(None);
            self.nack_at.push_back(None);
        }
        if self.rxbuf[off].is_some() {
            self.arm_ack(now);
            return;
        }
        // New gap: NACK every frame between the highest seen and this one.
        if s > self.highest {
            for m in self.highest.max(self.expected)..s {
                let i = (m - self.expected) as usize;
                if self.rxbuf[i].is_none() && self.nack_at[i].is_none() {
                    self.nack(now, i);
                }
            }
        }
        self.multireject(now, off, &f);
        self.highest = self.highest.max(s + 1);
        self.rxbuf[off] = Some(f);
        if off == 0 {
            self.deliver_in_order();
            self.arm_ack(now);
        }
    }

    fn stamp(&mut self, now: Instant, seq: u32) -> Frame {
        let i = (seq - self.base) as usize;
        let deadline = (now + self.rto).max(self.last_deadline);
        self.last_deadline = deadline;
        let slot = &mut self.slots[i];
        slot.sent_at = now;
        slot.queued = false;
        slot.frame.tx += 1;
        self.timers.push_back((deadline, seq, slot.frame.tx));
        let mut f = slot.frame.clone();
        f.ack = Some(self.expected);
        f.nsn = self.echo;
        self.ack_due = None;
        self.ack_now = false;
        f
    }

    fn prune_timers(&mut self) {
        while let Some(&(_, seq, tx)) = self.timers.front() {
            let live = seq >= self.base && {
                let s = &self.slots[(seq - self.base) as usize];
                s.frame.tx == tx && !s.queued
            };
            if live {
                break;
            }
            self.timers.pop_front();
        }
    }
}

impl ArqMachine for Sr {
    fn wants_packet(&self) -> bool {
        self.pending.is_empty()
    }
    fn send(&mut self, _now: Instant, pkt: Packet) {
        debug_assert!(self.pending.is_empty(), "send only when wants_packet");
        self.pending.start_into(pkt, self.cfg.max_payload, &mut self.spare);
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
    /// A frame arrived from the peer (it survived the channel).
    fn on_frame(&mut self, now: Instant, mut f: Frame) {
        if let Some(a) = f.ack.take() {
            self.on_ack(now, a);
        }
        match f.kind {
            FrameKind::Data => self.on_data(now, f),
            FrameKind::Ack | FrameKind::Status | FrameKind::Idle | FrameKind::Reset => {}
            FrameKind::Nack => self.on_nack(f.seq, f.nsn),
        }
    }
    /// The next frame to put on the air, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        if let Some((n, sn)) = self.nacks.pop_front() {
            self.stats.nacks_sent += 1;
            return Some(Frame { nsn: sn, ..Frame::control(FrameKind::Nack, n, None) });
        }
        if self.ack_now {
            self.ack_now = false;
            self.ack_due = None;
            self.stats.acks_sent += 1;
            return Some(Frame::control(FrameKind::Ack, 0, Some(self.expected)));
        }
        while let Some(seq) = self.retx.pop_front() {
            if seq < self.base {
                continue;
            }
            if !self.slots[(seq - self.base) as usize].queued {
                continue;
            }
            self.stats.retransmissions += 1;
            return Some(self.stamp(now, seq));
        }
        if self.next_seq - self.base < self.cfg.window {
            if let Some(mut f) = self.pending.next_frame() {
                f.seq = self.next_seq;
                f.tx = 0;
                self.next_seq += 1;
                self.slots.push_back(Slot { frame: f, sent_at: now, queued: false });
                return Some(self.stamp(now, self.next_seq - 1));
            }
        }
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.prune_timers();
        crate::time::earliest(self.timers.front().map(|e| e.0), self.ack_due)
    }
    fn handle_timeout(&mut self, now: Instant) {
        if let Some(d) = self.ack_due {
            if d <= now {
                self.ack_now = true;
                self.ack_due = None;
            }
        }
        loop {
            self.prune_timers();
            match self.timers.front() {
                Some(&(d, seq, _)) if d <= now => {
                    self.timers.pop_front();
                    self.stats.timeouts += 1;
                    let slot = &mut self.slots[(seq - self.base) as usize];
                    slot.queued = true;
                    self.retx.push_back(seq);
                }
                _ => break,
            }
        }
    }
    fn counters(&self, sent: &mut LinkStats, _received: &mut LinkStats) {
        sent.arq_timeouts += self.stats.timeouts;
    }
}
