//! `rlp-gsm` link layer, part 1: the GSM Radio Link Protocol as a byte-stream ARQ
//! machine (GSM 04.22 / 3GPP TS 24.022, version 0/1 frames; seed 000 §3.2, §5.3).
//!
//! - Fixed frames of `payload` user bytes (default 24 of a 30-byte frame: RLP
//!   header, L2R status octet and FCS take the rest), one per 20 ms TCH/F9.6 slot
//!   (the scenario's rate and header give the slot: 30 B at 12 kbit/s). Frames are
//!   always full size on the air; a frame holds whatever bytes are waiting, up to
//!   `payload` — RLP carries a byte stream and knows nothing of packets.
//! - Every frame carries N(R), the receiver's V(R) (I+S frames piggyback it);
//!   supervisory frames are RR, or RNR while the receiving side is flow-controlled
//!   ([`CTL_BUSY`]). S frames are sent when something needs saying (new data to
//!   acknowledge, a poll to answer); a real RLP also fills idle slots with them,
//!   which changes nothing a peer can learn.
//! - Error recovery: the receiver asks for each missing frame once with SREJ; the
//!   sender's acknowledgement timer `t1` (default 480 ms, GSM 04.22 for full-rate
//!   data) guards the oldest unacknowledged frame; on expiry it sends a checkpoint
//!   poll (P = 1) and, on the response (F = 1) with N(R), retransmits every frame
//!   from N(R) on (go back). The receiver's SREJ memory is cleared by a poll, so a
//!   frame whose retransmission was lost can be asked for again.
//! - `n2` (default 6, the seed's and the standard's default): a frame may be
//!   retransmitted at most N2 times and a poll repeated at most N2 times. Beyond
//!   that the link is reset (`on_n2 = "reset"`): the side that gave up sends SABM,
//!   the peer answers UA, and both flush their transmit windows (frames sent but not
//!   acknowledged) and receive buffers (frames held out of sequence), losing those
//!   bytes, and restart their sequence numbers. Bytes not yet framed survive. SABM is
//!   repeated every T1, at most N2 times; then the call is dropped. With
//!   `on_n2 = "drop-call"` the first N2 excess drops the call: DISC (repeated every
//!   T1 until UA, at most N2 times) and both sides stop; everything not yet
//!   delivered is lost, as some networks do (seed 000 §5.5).
//! - Window `window` frames (default 61, the version 0/1 maximum with modulus 64).
//!   Sequence numbers here never wrap and continue across resets (so traces keep
//!   one number per frame); the wire's N(S) is the number since the last reset
//!   modulo 64.
//!
//! Flow control (L2R's X bit / RLP's RNR) is driven from outside: [`Rlp::set_busy`]
//! makes every frame this side sends say "not ready", and a peer that hears it
//! sends no new I frames (retransmissions and polls still go).
use super::frame::{Body, ByteQueue, Chunk, Frame, FrameKind, Mark, CTL_BUSY, CTL_DISC, CTL_FINAL, CTL_POLL};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// What exceeding N2 does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnN2 {
    Reset,
    DropCall,
}

#[derive(Clone, Debug)]
pub struct RlpConfig {
    pub payload: u32,
    pub window: u32,
    pub t1: Duration,
    pub n2: u32,
    pub on_n2: OnN2,
}

impl Default for RlpConfig {
    fn default() -> Self {
        RlpConfig { payload: 24, window: 61, t1: Duration::from_millis(480), n2: 6, on_n2: OnN2::Reset }
    }
}

#[derive(Clone, Debug, Default)]
pub struct RlpStats {
    pub srej_sent: u64,
    pub polls_sent: u64,
    pub retransmissions: u64,
    /// Resets this side started (SABM after N2).
    pub resets: u64,
    /// User bytes this side threw away from its transmit window (sent, not
    /// acknowledged) and, after the call dropped, not yet framed.
    pub flushed_tx: u64,
    /// User bytes this side threw away from its receive buffer (held out of sequence).
    pub flushed_rx: u64,
    pub call_dropped: bool,
    /// Sequence-number ranges [first, end) of the transmit windows flushed.
    pub flushed: Vec<(u32, u32)>,
}

struct Sent {
    n: u32,
    chunk: Arc<Chunk>,
    tx: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Up,
    Resetting { deadline: Instant, tries: u32 },
    Down,
}

pub struct Rlp {
    cfg: RlpConfig,
    // transmit side
    input: ByteQueue,
    /// Flow of the upper-layer frame whose end has not been written yet (bytes
    /// written without a mark belong to it), for trace labels.
    open_flow: u16,
    sent: VecDeque<Sent>,
    v_a: u32,
    v_s: u32,
    rexmit: VecDeque<u32>,
    t1: Option<Instant>,
    poll_due: bool,
    poll_tries: u32,
    awaiting_final: bool,
    peer_busy: bool,
    // receive side
    v_r: u32,
    held: BTreeMap<u32, Arc<Chunk>>,
    srej_asked: BTreeSet<u32>,
    srej_due: VecDeque<u32>,
    ack_due: bool,
    final_due: bool,
    busy: bool,
    busy_told: bool,
    out: VecDeque<Arc<Chunk>>,
    // link control
    state: State,
    sabm_due: bool,
    ua_due: bool,
    disc_due: bool,
    disc_tries: u32,
    disc_deadline: Option<Instant>,
    pub stats: RlpStats,
}

impl Rlp {
    pub fn new(cfg: RlpConfig) -> Rlp {
        Rlp {
            cfg,
            input: ByteQueue::default(),
            open_flow: u16::MAX,
            sent: VecDeque::new(),
            v_a: 0,
            v_s: 0,
            rexmit: VecDeque::new(),
            t1: None,
            poll_due: false,
            poll_tries: 0,
            awaiting_final: false,
            peer_busy: false,
            v_r: 0,
            held: BTreeMap::new(),
            srej_asked: BTreeSet::new(),
            srej_due: VecDeque::new(),
            ack_due: false,
            final_due: false,
            busy: false,
            busy_told: false,
            out: VecDeque::new(),
            state: State::Up,
            sabm_due: false,
            ua_due: false,
            disc_due: false,
            disc_tries: 0,
            disc_deadline: None,
            stats: RlpStats::default(),
        }
    }

    /// Bytes handed down but not yet put in a frame.
    pub fn unframed(&self) -> usize {
        self.input.len()
    }

    /// Whether the call is still up.
    pub fn is_up(&self) -> bool {
        self.state != State::Down
    }

    /// Queues bytes for transmission; `mark` labels the last of them.
    pub fn write(&mut self, bytes: &[u8], mark: Option<Mark>) {
        if self.state == State::Down || bytes.is_empty() {
            return;
        }
        if mark.is_some() {
            self.open_flow = u16::MAX;
        }
        self.input.push(bytes, mark.map(|m| (bytes.len() - 1, m)));
    }

    /// In-sequence bytes received, in order.
    pub fn read(&mut self) -> Option<Arc<Chunk>> {
        self.out.pop_front()
    }

    /// Flow control of the receiving side: while busy, every frame says RNR.
    pub fn set_busy(&mut self, busy: bool) {
        if busy != self.busy {
            self.busy = busy;
            self.busy_told = false;
        }
    }

    /// Whether this side says "not ready".
    pub fn busy(&self) -> bool {
        self.busy
    }

    fn ctl(&self) -> u8 {
        if self.busy {
            CTL_BUSY
        } else {
            0
        }
    }

    fn frame(&mut self, kind: FrameKind, seq: u32, ctl: u8) -> Frame {
        let mut f = Frame::control(kind, seq, Some(self.v_r));
        f.ctl = ctl | self.ctl();
        f.payload = self.cfg.payload as u16;
        self.ack_due = false;
        self.busy_told = true;
        f
    }

    /// Writes the first bytes of an upper-layer frame of `flow` whose end comes in
    /// a later write (trace labels only).
    pub fn write_partial(&mut self, bytes: &[u8], flow: u16) {
        if self.state == State::Down || bytes.is_empty() {
            return;
        }
        self.open_flow = flow;
        self.input.push(bytes, None);
    }

    fn take_chunk(&mut self) -> Chunk {
        // The upper-layer frame holding the first byte ends at the next mark.
        // Bytes whose end is not written yet (partial writes through L2R) belong
        // to the flow named with `write_partial`.
        let flow = self.input.next_mark().map_or(self.open_flow, |m| m.meta.flow);
        let (bytes, marks) = self.input.take(self.cfg.payload as usize);
        Chunk { bytes, marks: marks.into_iter().map(|(o, m)| (o as u16, m)).collect(), flow }
    }

    fn data_frame(&mut self, n: u32, chunk: Arc<Chunk>, tx: u16, ctl: u8) -> Frame {
        let mut f = self.frame(FrameKind::Data, n, ctl);
        f.flow = chunk.flow;
        f.body = Body::Stream(chunk);
        f.tx = tx;
        f
    }

    /// The next frame to send in the slot starting at `now`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        match self.state {
            State::Down => {
                if std::mem::take(&mut self.ua_due) {
                    return Some(self.ua());
                }
                if !std::mem::take(&mut self.disc_due) {
                    return None;
                }
                self.disc_tries += 1;
                self.disc_deadline = (self.disc_tries < self.cfg.n2).then(|| now + self.cfg.t1);
                return Some(self.control(0, CTL_DISC));
            }
            State::Resetting { .. } => {
                if std::mem::take(&mut self.sabm_due) {
                    return Some(self.control(self.v_s, CTL_POLL));
                }
                if std::mem::take(&mut self.ua_due) {
                    return Some(self.ua());
                }
                return None;
            }
            State::Up => {}
        }
        if std::mem::take(&mut self.ua_due) {
            return Some(self.ua());
        }
        if let Some(m) = self.srej_due.pop_front() {
            self.stats.srej_sent += 1;
            return Some(self.frame(FrameKind::Nack, m, 0));
        }
        if self.poll_due {
            self.poll_due = false;
            self.awaiting_final = true;
            self.stats.polls_sent += 1;
            self.t1 = Some(now + self.cfg.t1);
            return Some(self.frame(FrameKind::Ack, self.v_s, CTL_POLL));
        }
        if std::mem::take(&mut self.final_due) {
            return Some(self.frame(FrameKind::Ack, self.v_s, CTL_FINAL));
        }
        if !self.awaiting_final {
            while let Some(n) = self.rexmit.pop_front() {
                let Some(i) = n.checked_sub(self.v_a).map(|i| i as usize).filter(|&i| i < self.sent.len()) else {
                    continue;
                };
                if self.sent[i].tx as u32 > self.cfg.n2 {
                    self.give_up(now);
                    return self.poll_transmit(now);
                }
                self.sent[i].tx += 1;
                self.stats.retransmissions += 1;
                let (chunk, tx) = (self.sent[i].chunk.clone(), self.sent[i].tx);
                if self.t1.is_none() {
                    self.t1 = Some(now + self.cfg.t1);
                }
                return Some(self.data_frame(n, chunk, tx, 0));
            }
            if !self.peer_busy && !self.input.is_empty() && self.v_s < self.v_a + self.cfg.window {
                let chunk = Arc::new(self.take_chunk());
                let n = self.v_s;
                self.v_s += 1;
                self.sent.push_back(Sent { n, chunk: chunk.clone(), tx: 1 });
                if self.t1.is_none() {
                    self.t1 = Some(now + self.cfg.t1);
                }
                return Some(self.data_frame(n, chunk, 1, 0));
            }
        }
        if self.ack_due || !self.busy_told {
            return Some(self.frame(FrameKind::Ack, self.v_s, 0));
        }
        None
    }

    fn ua(&mut self) -> Frame {
        self.control(self.v_s, CTL_FINAL)
    }

    /// A link-control (U) frame: SABM (`CTL_POLL`, carrying the sender's new first
    /// sequence number), UA (`CTL_FINAL`, likewise) or DISC (`CTL_DISC`).
    fn control(&self, seq: u32, ctl: u8) -> Frame {
        let mut f = Frame::control(FrameKind::Reset, seq, None);
        f.ctl = ctl;
        f.payload = self.cfg.payload as u16;
        f
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Resetting { deadline, .. } => Some(deadline),
            State::Down => self.disc_deadline,
            State::Up => self.t1,
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Down => {
                if self.disc_deadline.is_some_and(|d| d <= now) {
                    self.disc_deadline = None;
                    self.disc_due = true;
                }
            }
            State::Resetting { deadline, tries } => {
                if now < deadline {
                    return;
                }
                if tries >= self.cfg.n2 {
                    self.drop_call();
                    return;
                }
                self.state = State::Resetting { deadline: now + self.cfg.t1, tries: tries + 1 };
                self.sabm_due = true;
            }
            State::Up => {
                let Some(t) = self.t1 else { return };
                if now < t {
                    return;
                }
                self.t1 = None;
                if self.awaiting_final {
                    if self.poll_tries >= self.cfg.n2 {
                        self.give_up(now);
                        return;
                    }
                } else if self.sent.is_empty() {
                    return;
                }
                self.poll_tries += 1;
                self.awaiting_final = false;
                self.poll_due = true;
            }
        }
    }

    /// N2 exceeded: reset the link, or drop the call.
    fn give_up(&mut self, now: Instant) {
        if self.cfg.on_n2 == OnN2::DropCall {
            self.drop_call();
            return;
        }
        self.stats.resets += 1;
        self.flush();
        self.state = State::Resetting { deadline: now + self.cfg.t1, tries: 1 };
        self.sabm_due = true;
    }

    fn drop_call(&mut self) {
        self.flush();
        self.stats.flushed_tx += self.input.len() as u64;
        self.input.clear();
        self.state = State::Down;
        self.stats.call_dropped = true;
        self.disc_due = true;
        self.disc_tries = 0;
        self.sabm_due = false;
        self.ua_due = false;
    }

    /// Throws away the transmit window and the receive buffer.
    fn flush(&mut self) {
        if self.v_a < self.v_s {
            self.stats.flushed.push((self.v_a, self.v_s));
        }
        self.stats.flushed_tx += self.sent.iter().map(|s| s.chunk.bytes.len() as u64).sum::<u64>();
        self.stats.flushed_rx += self.held.values().map(|c| c.bytes.len() as u64).sum::<u64>();
        self.sent.clear();
        self.held.clear();
        self.v_a = self.v_s;
        self.rexmit.clear();
        self.srej_asked.clear();
        self.srej_due.clear();
        self.t1 = None;
        self.poll_due = false;
        self.poll_tries = 0;
        self.awaiting_final = false;
        self.final_due = false;
        self.ack_due = false;
        self.peer_busy = false;
    }

    /// A frame from the peer (it survived the channel).
    pub fn on_frame(&mut self, now: Instant, f: Frame) {
        if f.kind == FrameKind::Reset {
            self.on_link_control(&f);
            return;
        }
        if self.state != State::Up {
            return;
        }
        self.peer_busy = f.ctl & CTL_BUSY != 0;
        if let Some(nr) = f.ack {
            self.on_ack(now, nr);
        }
        if f.ctl & CTL_FINAL != 0 && self.awaiting_final {
            // Checkpoint recovery: go back to N(R).
            self.awaiting_final = false;
            self.poll_tries = 0;
            self.t1 = None;
            self.rexmit = self.sent.iter().map(|s| s.n).collect();
        }
        if f.ctl & CTL_POLL != 0 {
            self.final_due = true;
            self.srej_asked.retain(|&n| n < self.v_r);
        }
        match f.kind {
            FrameKind::Data => self.on_data(f),
            FrameKind::Nack if f.seq >= self.v_a && f.seq < self.v_s && !self.rexmit.contains(&f.seq) => {
                self.rexmit.push_back(f.seq);
            }
            _ => {}
        }
    }

    fn on_link_control(&mut self, f: &Frame) {
        if self.state == State::Down {
            // UA answering our DISC ends its repetition; a repeated DISC is answered again.
            if f.ctl & CTL_FINAL != 0 {
                self.disc_deadline = None;
                self.disc_due = false;
            }
            if f.ctl & CTL_DISC != 0 {
                self.ua_due = true;
            }
            return;
        }
        if f.ctl & CTL_DISC != 0 {
            self.drop_call();
            self.disc_due = false;
            self.ua_due = true;
        } else if f.ctl & CTL_POLL != 0 {
            // SABM: flush, take the peer's numbering, answer UA.
            self.flush();
            self.v_r = f.seq;
            self.state = State::Up;
            self.sabm_due = false;
            self.ua_due = true;
        } else if f.ctl & CTL_FINAL != 0 && matches!(self.state, State::Resetting { .. }) {
            self.v_r = f.seq;
            self.state = State::Up;
        }
    }

    fn on_ack(&mut self, now: Instant, nr: u32) {
        if nr <= self.v_a || nr > self.v_s {
            return;
        }
        while self.sent.front().is_some_and(|s| s.n < nr) {
            self.sent.pop_front();
        }
        self.v_a = nr;
        self.rexmit.retain(|&n| n >= nr);
        if !self.awaiting_final {
            self.t1 = if self.sent.is_empty() { None } else { Some(now + self.cfg.t1) };
        }
    }

    fn on_data(&mut self, f: Frame) {
        let n = f.seq;
        let Body::Stream(chunk) = f.body else { panic!("RLP data frame carries bytes") };
        self.ack_due = true;
        if n < self.v_r || n >= self.v_r + self.cfg.window {
            return;
        }
        if n > self.v_r {
            for m in self.v_r..n {
                if !self.held.contains_key(&m) && self.srej_asked.insert(m) {
                    self.srej_due.push_back(m);
                }
            }
            self.held.insert(n, chunk);
            return;
        }
        self.out.push_back(chunk);
        self.v_r += 1;
        while let Some(c) = self.held.remove(&self.v_r) {
            self.out.push_back(c);
            self.v_r += 1;
        }
        let v_r = self.v_r;
        self.srej_asked.retain(|&m| m >= v_r);
        self.srej_due.retain(|&m| m >= v_r);
    }
}
