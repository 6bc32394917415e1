//! `is707` link layer: the IS-707 Radio Link Protocol's NAK-based selective repeat
//! with partial recovery and idle frames (TIA/EIA IS-707 non-transparent mode, as
//! described in seed 001 §II).
//!
//! - Packets are cut into frames of `max_payload` bytes (default 19 of a 24-byte
//!   frame). Every frame occupies one 20 ms slot of the 9600 bit/s channel: frames
//!   are padded to the full slot (the last fragment of a packet, control and idle
//!   frames too), so airtime is always one slot.
//! - Sender counter V(S): the sequence number of the next new frame. The sender
//!   keeps what it sent and retransmits a frame once for every NAK naming it.
//! - Receiver counters V(R) (next new frame expected) and V(N) (oldest frame not yet
//!   handed on). The receiver does not acknowledge data. It notices missing frames
//!   when a data frame arrives with a sequence number above V(R), or an idle frame
//!   (carrying the sender's V(S)) says more was sent than it received. For each
//!   newly missing range it runs `nak_rounds` rounds: round *i* sends that many NAK
//!   frames and waits `nak_timer`; a frame that arrives ends its recovery. After
//!   the last round the receiver gives up: the hole is passed on and the packet it
//!   falls in is lost (partial recovery; TCP repairs it).
//! - Idle frames: when the sender has nothing to send it sends idle frames carrying
//!   V(S) — `idle_frames` of them after each data frame (seed 001's proposed
//!   control: 0, N, or unlimited), so that a lost last frame is noticed without
//!   waiting for more data. The seed sends idle frames as IS-95 eighth-rate frames
//!   (less power, same 20 ms); here an idle frame takes one slot and sees the
//!   same channel as any frame (the seed's channel model is per slot too).
//!
//! Defaults: `nak_rounds` = [1, 2, 3] (seed 001), `nak_timer` = 200 ms per round
//! (neither the seed nor the public text gives it: about twice the RLP round trip
//! of 20 ms frames plus interleaving and processing), `idle_frames` = 0.
//! NAK frames go on the reverse channel, before retransmissions and new data.
use super::frame::{fragment, Frame, FrameKind, Reassembler};
use super::{Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::Dur;
use crate::wire::Packet;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `idle_frames = 5` or `idle_frames = "unlimited"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleFrames {
    Count(u32),
    Unlimited,
}
impl<'de> serde::Deserialize<'de> for IdleFrames {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u32),
            Word(String),
        }
        match <Raw as serde::Deserialize>::deserialize(d) {
            Ok(Raw::Count(n)) => Ok(IdleFrames::Count(n)),
            Ok(Raw::Word(w)) if w == "unlimited" => Ok(IdleFrames::Unlimited),
            Ok(Raw::Word(w)) => {
                Err(<D::Error as serde::de::Error>::custom(format!("{w:?}: give a number of frames or \"unlimited\"")))
            }
            Err(_) => Err(<D::Error as serde::de::Error>::custom("give a number of frames or \"unlimited\"")),
        }
    }
}

/// `protocol = "is707"`: NAK rounds (default [1, 2, 3]), the NAK timer, idle frames.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Is707Cfg {
    /// NAKs per recovery round, e.g. [1, 2, 3].
    pub nak_rounds: Option<Vec<u32>>,
    /// How long each NAK round waits.
    pub nak_timer: Option<Dur>,
    /// Idle frames after the last data frame: a number or "unlimited".
    pub idle_frames: Option<IdleFrames>,
}

impl Configured for Is707 {
    type Section = Is707Cfg;
}

impl LinkSection for Is707Cfg {
    fn build(&self, i: &LinkInit) -> Arq {
        Is707::new(self.config(i.max_payload)).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        if let Some(r) = &self.nak_rounds {
            if r.len() > 10 || r.iter().any(|&n| n == 0 || n > 10) {
                return Err(FieldError::new(
                    "nak_rounds",
                    "give at most 10 rounds of 1 to 10 NAKs each, e.g. [1, 2, 3]",
                ));
            }
        }
        positive_duration("nak_timer", self.nak_timer)
    }
    fn is_circuit(&self) -> bool {
        true
    }
}

impl Is707Cfg {
    /// The model's configuration: the defaults with what the section sets.
    pub fn config(&self, max_payload: u32) -> Is707Config {
        let d = Is707Config::default();
        Is707Config {
            max_payload,
            nak_rounds: self.nak_rounds.clone().unwrap_or(d.nak_rounds),
            nak_timer: self.nak_timer.map(|x| x.0).unwrap_or(d.nak_timer),
            idle_frames: match self.idle_frames {
                None => d.idle_frames,
                Some(IdleFrames::Count(n)) => Some(n),
                Some(IdleFrames::Unlimited) => None,
            },
        }
    }
}

#[derive(Clone, Debug)]
pub struct Is707Config {
    pub max_payload: u32,
    pub nak_rounds: Vec<u32>,
    pub nak_timer: Duration,
    /// Idle frames after the last data frame; `None` = unlimited.
    pub idle_frames: Option<u32>,
}

impl Default for Is707Config {
    fn default() -> Self {
        Is707Config {
            max_payload: 19,
            nak_rounds: vec![1, 2, 3],
            nak_timer: Duration::from_millis(200),
            idle_frames: Some(0),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Is707Stats {
    pub naks_sent: u64,
    pub retransmissions: u64,
    pub frames_abandoned: u64,
    pub idle_sent: u64,
}

/// Frames kept for retransmission, at most (older ones can no longer be NAKed
/// in time: 3 rounds of 200 ms are 30 slots).
const KEEP: usize = 1024;

pub struct Is707 {
    cfg: Is707Config,
    // sender
    pending: VecDeque<Frame>,
    v_s: u32,
    sent: VecDeque<Frame>,
    sent_base: u32,
    rexmit: VecDeque<u32>,
    idle_left: u32,
    // receiver
    v_r: u32,
    v_n: u32,
    buf: BTreeMap<u32, Frame>,
    /// Missing frame -> (round index, deadline).
    missing: BTreeMap<u32, (usize, Instant)>,
    abandoned: BTreeSet<u32>,
    naks: VecDeque<(u32, u32)>,
    rx: Reassembler,
    delivered: VecDeque<Packet>,
    pub stats: Is707Stats,
}

impl Is707 {
    pub fn new(cfg: Is707Config) -> Is707 {
        Is707 {
            cfg,
            pending: VecDeque::new(),
            v_s: 0,
            sent: VecDeque::new(),
            sent_base: 0,
            rexmit: VecDeque::new(),
            idle_left: 0,
            v_r: 0,
            v_n: 0,
            buf: BTreeMap::new(),
            missing: BTreeMap::new(),
            abandoned: BTreeSet::new(),
            naks: VecDeque::new(),
            rx: Reassembler::default(),
            delivered: VecDeque::new(),
            stats: Is707Stats::default(),
        }
    }

    fn slot(&self, mut f: Frame) -> Frame {
        f.payload = self.cfg.max_payload as u16;
        f
    }

    fn poll_frame(&mut self, _now: Instant, idle: bool) -> Option<Frame> {
        if let Some((first, last)) = self.naks.pop_front() {
            self.stats.naks_sent += 1;
            return Some(self.slot(Frame::control(FrameKind::Nack, first, Some(last))));
        }
        while let Some(sn) = self.rexmit.pop_front() {
            if sn < self.sent_base {
                continue;
            }
            if let Some(f) = self.sent.get_mut((sn - self.sent_base) as usize) {
                f.tx += 1;
                self.stats.retransmissions += 1;
                let f = f.clone();
                return Some(self.slot(f));
            }
        }
        if let Some(mut f) = self.pending.pop_front() {
            f.seq = self.v_s;
            self.v_s += 1;
            self.sent.push_back(f.clone());
            if self.sent.len() > KEEP {
                self.sent.pop_front();
                self.sent_base += 1;
            }
            self.idle_left = self.cfg.idle_frames.unwrap_or(u32::MAX);
            return Some(self.slot(f));
        }
        if idle && self.idle_left > 0 && self.v_s > 0 {
            if self.cfg.idle_frames.is_some() {
                self.idle_left -= 1;
            }
            self.stats.idle_sent += 1;
            return Some(self.slot(Frame::control(FrameKind::Idle, self.v_s, None)));
        }
        None
    }

    /// Frames V(R)..`upto` were sent but not received: start their NAK rounds.
    fn notice_up_to(&mut self, now: Instant, upto: u32) {
        if upto <= self.v_r {
            return;
        }
        let rounds = self.cfg.nak_rounds.clone();
        if rounds.is_empty() {
            for sn in self.v_r..upto {
                self.abandoned.insert(sn);
                self.stats.frames_abandoned += 1;
            }
        } else {
            for sn in self.v_r..upto {
                self.missing.insert(sn, (0, now + self.cfg.nak_timer));
            }
            for _ in 0..rounds[0] {
                self.naks.push_back((self.v_r, upto - 1));
            }
        }
        self.v_r = upto;
        self.deliver();
    }

    fn deliver(&mut self) {
        while self.v_n < self.v_r {
            if let Some(f) = self.buf.remove(&self.v_n) {
                if let Some(p) = self.rx.push(f) {
                    self.delivered.push_back(p);
                }
            } else if !self.abandoned.remove(&self.v_n) {
                break;
            }
            self.v_n += 1;
        }
    }
}

impl ArqMachine for Is707 {
    fn wants_packet(&self) -> bool {
        self.pending.is_empty()
    }
    fn send(&mut self, _now: Instant, p: Packet) {
        fragment(p, self.cfg.max_payload, |f| self.pending.push_back(f));
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        self.poll_frame(now, true)
    }
    /// As [`poll_transmit`](Self::poll_transmit) but never an idle frame: what the
    /// sender puts into a frame queue (idle frames only fill a slot the queue
    /// leaves empty, or the sender would queue idle frames forever).
    fn poll_transmit_queued(&mut self, now: Instant) -> Option<Frame> {
        self.poll_frame(now, false)
    }
    fn on_frame(&mut self, now: Instant, f: Frame) {
        match f.kind {
            FrameKind::Nack => {
                let last = f.ack.unwrap_or(f.seq);
                for sn in f.seq..=last {
                    if sn < self.v_s {
                        self.rexmit.push_back(sn);
                    }
                }
            }
            FrameKind::Idle => self.notice_up_to(now, f.seq),
            FrameKind::Data => {
                let sn = f.seq;
                if sn >= self.v_r {
                    self.notice_up_to(now, sn);
                    self.v_r = sn + 1;
                    self.buf.insert(sn, f);
                } else if self.missing.remove(&sn).is_some() {
                    self.buf.insert(sn, f);
                }
                self.deliver();
            }
            _ => {}
        }
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.missing.values().map(|&(_, d)| d).min()
    }
    fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<u32> = self.missing.iter().filter(|(_, &(_, d))| d <= now).map(|(&s, _)| s).collect();
        if due.is_empty() {
            return;
        }
        // Contiguous runs with the same round get their NAKs together.
        let mut run: Option<(u32, u32, usize)> = None;
        let mut runs = Vec::new();
        for sn in due {
            let (round, _) = self.missing[&sn];
            match run {
                Some((a, b, r)) if b + 1 == sn && r == round => run = Some((a, sn, r)),
                _ => {
                    if let Some(x) = run {
                        runs.push(x);
                    }
                    run = Some((sn, sn, round));
                }
            }
        }
        runs.extend(run);
        for (a, b, round) in runs {
            let next = round + 1;
            if next < self.cfg.nak_rounds.len() {
                for sn in a..=b {
                    self.missing.insert(sn, (next, now + self.cfg.nak_timer));
                }
                for _ in 0..self.cfg.nak_rounds[next] {
                    self.naks.push_back((a, b));
                }
            } else {
                for sn in a..=b {
                    self.missing.remove(&sn);
                    self.abandoned.insert(sn);
                    self.stats.frames_abandoned += 1;
                }
            }
        }
        self.deliver();
    }
    fn sends_idle_frames(&self) -> bool {
        true
    }
    /// After an idle frame: nothing to NAK, retransmit or send (else the poll
    /// would not have given it), so the same idle frame (V(S) unchanged) comes
    /// while the budget lasts.
    fn idle_repeats(&self) -> u32 {
        if !(self.naks.is_empty() && self.rexmit.is_empty() && self.pending.is_empty() && self.v_s > 0) {
            return 0;
        }
        match self.cfg.idle_frames {
            None => u32::MAX,
            Some(_) => self.idle_left,
        }
    }
    fn repeat_idle(&mut self, n: u32) {
        debug_assert!(n <= self.idle_repeats());
        self.stats.idle_sent += n as u64;
        if self.cfg.idle_frames.is_some() {
            self.idle_left -= n;
        }
    }
    fn is_circuit(&self) -> bool {
        true
    }
    /// An idle frame announcing frames this end has already noticed: its V(R) has
    /// reached the V(S) the frame carries, and V(R) never decreases.
    fn ignores(&self, f: &Frame) -> bool {
        f.kind == FrameKind::Idle && f.seq <= self.v_r
    }
    fn counters(&self, sent: &mut LinkStats, _received: &mut LinkStats) {
        sent.sdu_discards += self.stats.frames_abandoned;
    }
}
