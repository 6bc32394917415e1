//! Two-endpoint harnesses with a scripted wire, for tests of the protocol machines.
//!
//! `TcpPair`: a client (active open, receives) and a server (passive open, sends)
//! joined by a link of given rate and one-way delay in each direction; a drop
//! function decides, per direction and per segment index, whether a segment is lost.
//! `ArqPair`: two link-layer ends joined the same way, dropping frames by index.
use crate::engine::queue::EventQueue;
use crate::link::{Arq, Frame};
use crate::tcp::{Segment, Tcp, TcpConfig};
use crate::time::{Duration, Instant};
use crate::wire::{Packet, TcpRepr};

pub type DropFn = Box<dyn FnMut(usize, u64, bool) -> bool>;

enum PairEv {
    Arrive(usize, TcpRepr, u32),
    Timer(usize),
    Kick(usize),
}

/// Which end is which: index 0 = client (receives data), 1 = server (sends data).
pub struct TcpPair {
    pub ep: [Tcp; 2],
    pub rate: u64,
    pub delay: Duration,
    q: EventQueue<PairEv>,
    busy_until: [Instant; 2],
    sent: [u64; 2],
    sched: [Option<Instant>; 2],
    drop: DropFn,
    /// Segments sent in each direction (index by sender end): (time, seq offset, len, retransmission).
    pub log: [Vec<(Instant, u32, u32, bool)>; 2],
    pub dropped: [u64; 2],
}

impl TcpPair {
    /// `bytes`: data the server sends (None = unlimited).
    pub fn new(
        client: TcpConfig,
        server: TcpConfig,
        bytes: Option<u64>,
        rate: u64,
        delay: Duration,
        drop: DropFn,
    ) -> TcpPair {
        let mut c = Tcp::new(client, 40000, 80, 1_000_000);
        let mut s = Tcp::new(server, 80, 40000, 4_294_960_000); // wraps during the transfer
        s.set_app_data(bytes, true);
        s.listen();
        c.connect(Instant::ZERO);
        let mut p = TcpPair {
            ep: [c, s],
            rate,
            delay,
            q: EventQueue::new(),
            busy_until: [Instant::ZERO; 2],
            sent: [0; 2],
            sched: [None; 2],
            drop,
            log: [vec![], vec![]],
            dropped: [0; 2],
        };
        p.drain(0);
        p
    }
    /// A drop function losing the listed segment indices sent by the server (data direction).
    pub fn drop_data(list: &[u64]) -> DropFn {
        let l = list.to_vec();
        Box::new(move |from, i, _| from == 1 && l.contains(&i))
    }
    pub fn drop_none() -> DropFn {
        Box::new(|_, _, _| false)
    }

    /// Lets end `e` send what it can at `at` (after the test changed its application
    /// data); `run` must then go past `at`.
    pub fn kick_at(&mut self, e: usize, at: Instant) {
        self.q.schedule(at, PairEv::Kick(e));
    }

    fn drain(&mut self, e: usize) {
        let now = self.q.now();
        while let Some(Segment { repr, len, retransmission }) = self.ep[e].poll_transmit(now) {
            let idx = self.sent[e];
            self.sent[e] += 1;
            self.log[e].push((now, repr.seq.wrapping_sub(self.ep[e].iss()), len, retransmission));
            let size = 40 + repr.options_len() as u64 + len as u64;
            let start = self.busy_until[e].max(now);
            let tx = Duration::transmission(size, self.rate);
            self.busy_until[e] = start + tx;
            if (self.drop)(e, idx, retransmission) {
                self.dropped[e] += 1;
                continue;
            }
            self.q.schedule(start + tx + self.delay, PairEv::Arrive(1 - e, repr, len));
        }
        if let Some(t) = self.ep[e].poll_timeout() {
            let t = t.max(now);
            if self.sched[e].is_none_or(|s| t < s) {
                self.sched[e] = Some(t);
                self.q.schedule(t, PairEv::Timer(e));
            }
        }
    }

    /// Runs until both ends are closed, nothing is left to do, or `limit` passes.
    pub fn run(&mut self, limit: Duration) -> Instant {
        let end = Instant::ZERO + limit;
        while let Some(t) = self.q.peek_time() {
            if t > end || (self.ep[0].is_closed() && self.ep[1].is_closed()) {
                break;
            }
            let (now, ev) = self.q.pop().unwrap();
            match ev {
                PairEv::Arrive(to, repr, len) => {
                    self.ep[to].on_segment(now, &repr, len);
                    self.drain(to);
                }
                PairEv::Kick(e) => self.drain(e),
                PairEv::Timer(e) => {
                    if self.sched[e] != Some(now) {
                        continue;
                    }
                    self.sched[e] = None;
                    self.ep[e].handle_timeout(now);
                    self.drain(e);
                }
            }
        }
        self.q.now()
    }
}

enum ArqEv {
    Arrive(usize, Frame),
    Done(usize),
    Timer(usize),
}

/// Two link-layer ends; `send(side, packet)` then `run`.
pub struct ArqPair {
    pub side: [Arq; 2],
    pub rate: u64,
    pub delay: Duration,
    pub header: u32,
    q: EventQueue<ArqEv>,
    busy: [bool; 2],
    backlog: [std::collections::VecDeque<Packet>; 2],
    sched: [Option<Instant>; 2],
    pub frames: [u64; 2],
    drop: DropFn,
    pub delivered: [Vec<Packet>; 2],
    /// Outages: frames side `.0` starts sending in [`.1`, `.2`) are lost.
    pub outages: Vec<(usize, Instant, Instant)>,
}

impl ArqPair {
    pub fn new(a: Arq, b: Arq, rate: u64, delay: Duration, drop: DropFn) -> ArqPair {
        ArqPair {
            side: [a, b],
            rate,
            delay,
            header: 4,
            q: EventQueue::new(),
            busy: [false; 2],
            backlog: Default::default(),
            sched: [None; 2],
            frames: [0; 2],
            drop,
            delivered: [vec![], vec![]],
            outages: vec![],
        }
    }
    pub fn send(&mut self, s: usize, p: Packet) {
        self.backlog[s].push_back(p);
    }
    fn kick(&mut self, s: usize) {
        let now = self.q.now();
        if !self.busy[s] {
            while self.side[s].wants_packet() {
                match self.backlog[s].pop_front() {
                    Some(p) => self.side[s].send(now, p),
                    None => break,
                }
            }
            if let Some(f) = self.side[s].poll_transmit(now) {
                let tx = Duration::transmission(f.size(self.header) as u64, self.rate);
                let i = self.frames[s];
                self.frames[s] += 1;
                self.busy[s] = true;
                self.q.schedule(now + tx, ArqEv::Done(s));
                let out = self.outages.iter().any(|&(side, a, b)| side == s && now >= a && now < b);
                if !(self.drop)(s, i, f.tx > 1) && !out {
                    self.q.schedule(now + tx + self.delay, ArqEv::Arrive(1 - s, f));
                }
            }
        }
        if let Some(t) = self.side[s].poll_timeout() {
            let t = t.max(now);
            if self.sched[s].is_none_or(|x| t < x) {
                self.sched[s] = Some(t);
                self.q.schedule(t, ArqEv::Timer(s));
            }
        }
    }
    pub fn run(&mut self, limit: Duration) -> Instant {
        self.kick(0);
        self.kick(1);
        let end = Instant::ZERO + limit;
        while let Some(t) = self.q.peek_time() {
            if t > end {
                break;
            }
            let (now, ev) = self.q.pop().unwrap();
            match ev {
                ArqEv::Arrive(s, f) => {
                    self.side[s].on_frame(now, f);
                    while let Some(p) = self.side[s].poll_deliver() {
                        self.delivered[s].push(p);
                    }
                    self.kick(s);
                }
                ArqEv::Done(s) => {
                    self.busy[s] = false;
                    self.kick(s);
                }
                ArqEv::Timer(s) => {
                    if self.sched[s] != Some(now) {
                        continue;
                    }
                    self.sched[s] = None;
                    self.side[s].handle_timeout(now);
                    while let Some(p) = self.side[s].poll_deliver() {
                        self.delivered[s].push(p);
                    }
                    self.kick(s);
                }
            }
        }
        self.q.now()
    }
}
