//! Two-endpoint harnesses with a scripted wire, for tests of the protocol machines.
//!
//! `TcpPair`: a client (active open, receives) and a server (passive open, sends)
//! joined by a link of given rate and one-way delay in each direction; a drop
//! function decides, per direction and per segment index, whether a segment is lost.
//! `ArqPair`: two link-layer ends joined by the simulator's own wireless link
//! ([`WirelessLink`], driven on its own timers), dropping frames by index.
use crate::channel::Channel;
use crate::link::wireless::{DirConfig, Mux, Session, WirelessConfig, WirelessLink};
use crate::link::{Arq, ArqKind};
use crate::queue::Limit;
use crate::sched::EventQueue;
use crate::tcp::{Segment, Tcp, TcpConfig};
use crate::time::{Duration, Instant};
use crate::wire::{Packet, TcpRepr};
use std::sync::{Arc, Mutex};

pub type DropFn = Box<dyn FnMut(usize, u64, bool) -> bool + Send>;

#[derive(PartialEq)]
enum PairEv {
    /// A segment reaching end `.0`, with its payload bytes when the sender keeps
    /// real bytes, and whether it is marked CE.
    Arrive(usize, TcpRepr, u32, Vec<u8>, bool),
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
    last_arrival: [Instant; 2],
    sent: [u64; 2],
    sched: [Option<Instant>; 2],
    drop: DropFn,
    /// Which ECN-capable segments a congested queue marks CE (same arguments as
    /// `drop`; see [`TcpPair::mark_ce`]).
    mark: Option<DropFn>,
    /// Segments sent in each direction (index by sender end): (time, seq offset, len, retransmission).
    pub log: [Vec<(Instant, u32, u32, bool)>; 2],
    /// The TCP flags of each segment in `log`.
    pub flags: [Vec<u8>; 2],
    pub dropped: [u64; 2],
    /// Real data (after `send_bytes`): what each end's application still has to
    /// write, whether it closes after it, and what it has read (it reads at once).
    to_write: [std::collections::VecDeque<u8>; 2],
    close_after: [bool; 2],
    pub received: [Vec<u8>; 2],
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
            last_arrival: [Instant::ZERO; 2],
            sent: [0; 2],
            sched: [None; 2],
            drop,
            mark: None,
            log: [vec![], vec![]],
            flags: [vec![], vec![]],
            dropped: [0; 2],
            to_write: Default::default(),
            close_after: [false; 2],
            received: [vec![], vec![]],
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
    /// From now on `mark(from, index, retransmission)` says which segments an
    /// AQM marks Congestion Experienced; only ECN-capable ones (ECT) take it.
    pub fn mark_ce(&mut self, mark: DropFn) {
        self.mark = Some(mark);
    }

    /// Both ends keep real bytes; end `e`'s application writes `data` as send-buffer
    /// space allows (then closes if `close`), and each end's application reads
    /// everything as it arrives (into `received`). Call before `run`.
    pub fn send_bytes(&mut self, e: usize, data: &[u8], close: bool) {
        for ep in self.ep.iter_mut() {
            if !ep.has_byte_buffers() {
                ep.set_app_data(Some(0), false);
                ep.use_byte_buffers();
            }
        }
        self.to_write[e].extend(data);
        self.close_after[e] = close;
        self.app(e);
    }

    /// End `e`'s application: writes what fits, reads what arrived.
    fn app(&mut self, e: usize) {
        if !self.ep[e].has_byte_buffers() {
            return;
        }
        let (a, _) = self.to_write[e].as_slices();
        let n = self.ep[e].write(a);
        self.to_write[e].drain(..n);
        if self.to_write[e].is_empty() && self.close_after[e] {
            self.ep[e].close();
        }
        let r = self.ep[e].read(usize::MAX);
        self.received[e].extend(r);
    }

    /// Lets end `e` send what it can at `at` (after the test changed its application
    /// data); `run` must then go past `at`.
    pub fn kick_at(&mut self, e: usize, at: Instant) {
        self.q.schedule(at, PairEv::Kick(e));
    }

    fn drain(&mut self, e: usize) {
        let now = self.q.now();
        self.app(e);
        while let Some(seg) = self.ep[e].poll_transmit(now) {
            let Segment { repr, len, retransmission, ect, .. } = seg;
            let data = self.ep[e].segment_data(&seg);
            let idx = self.sent[e];
            self.sent[e] += 1;
            self.log[e].push((now, repr.seq.wrapping_sub(self.ep[e].iss()), len, retransmission));
            self.flags[e].push(repr.flags.0);
            let size = 40 + repr.options_len() as u64 + len as u64;
            let start = self.busy_until[e].max(now);
            let tx = Duration::transmission(size, self.rate);
            self.busy_until[e] = start + tx;
            if (self.drop)(e, idx, retransmission) {
                self.dropped[e] += 1;
                continue;
            }
            // One FIFO path per direction: a segment never overtakes an earlier one,
            // even when a test shortens `delay` meanwhile.
            let at = (start + tx + self.delay).max(self.last_arrival[e]);
            self.last_arrival[e] = at;
            let ce = ect && self.mark.as_mut().is_some_and(|m| m(e, idx, retransmission));
            self.q.schedule(at, PairEv::Arrive(1 - e, repr, len, data, ce));
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
                PairEv::Arrive(to, repr, len, data, ce) => {
                    if self.ep[to].has_byte_buffers() && data.len() == len as usize {
                        self.ep[to].on_segment_data(now, &repr, &data);
                    } else {
                        self.ep[to].on_segment_ecn(now, &repr, len, ce);
                    }
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

/// Two link-layer ends joined by a [`WirelessLink`] with a scripted channel: queue
/// packets with `send(side, packet)`, then `run`. Side 0 sends direction 0 (down),
/// side 1 direction 1 (up); IP queues are unbounded, frame headers 4 bytes.
pub struct ArqPair {
    link: WirelessLink,
    pub rate: u64,
    pub delay: Duration,
    script: Arc<Mutex<Script>>,
    backlog: [Vec<Packet>; 2],
    now: Instant,
    /// Packets delivered at each side (side 1 receives direction 0).
    pub delivered: [Vec<Packet>; 2],
}

struct Script {
    drop: DropFn,
    /// Frames side `.0` starts sending in [`.1`, `.2`) are lost.
    outages: Vec<(usize, Instant, Instant)>,
}

impl ArqPair {
    /// `drop(side, frame index, retransmission?)` decides which frames are lost.
    pub fn new(a: Arq, b: Arq, rate: u64, delay: Duration, drop: DropFn) -> ArqPair {
        ArqPair::with_header(a, b, rate, delay, 4, drop)
    }
    /// As `new`, with `header` bytes of link-layer header per frame.
    pub fn with_header(a: Arq, b: Arq, rate: u64, delay: Duration, header: u32, drop: DropFn) -> ArqPair {
        let script = Arc::new(Mutex::new(Script { drop, outages: vec![] }));
        let channel = |side: usize| {
            let s = Arc::clone(&script);
            Channel::Scripted(Box::new(move |i, at, retx| {
                let mut s = s.lock().expect("script");
                let out = s.outages.iter().any(|&(o, a, b)| o == side && at >= a && at < b);
                (s.drop)(side, i, retx) || out
            }))
        };
        let dir = DirConfig { rate, delay, queue: Limit::Packets(u32::MAX) };
        let cfg = WirelessConfig { dirs: [dir, dir], frame: 250, header, mux: Mux::default() };
        let link = WirelessLink::new(cfg, [a, b], [channel(0), channel(1)]);
        ArqPair {
            link,
            rate,
            delay,
            script,
            backlog: Default::default(),
            now: Instant::ZERO,
            delivered: [vec![], vec![]],
        }
    }
    /// Queues `p` at side `s`; it is offered to the link when `run` starts.
    pub fn send(&mut self, s: usize, p: Packet) {
        self.backlog[s].push(p);
    }
    /// Frames that side `s` sends in [`from`, `to`) are lost.
    pub fn add_outage(&mut self, s: usize, from: Instant, to: Instant) {
        self.script.lock().expect("script").outages.push((s, from, to));
    }
    /// Side `s`'s link-layer machine.
    pub fn side(&self, s: usize) -> &Arq {
        self.link.arq(s)
    }
    /// Side `s`'s link-layer machine as its own type, for its own counters and
    /// state: `p.machine::<Sr>(0)`.
    ///
    /// # Panics
    /// If side `s` runs another protocol.
    pub fn machine<T>(&self, s: usize) -> &T
    where
        for<'a> &'a T: TryFrom<&'a Arq, Error = ArqKind>,
    {
        match self.side(s).try_into() {
            Ok(m) => m,
            Err(k) => panic!("side {s} runs {}", k.name()),
        }
    }
    /// Frames side `s` has sent.
    pub fn frames(&self, s: usize) -> u64 {
        self.link.stats()[s].frames_sent
    }
    /// Runs until nothing is left to do or `limit` passes; returns the time of the
    /// last event.
    pub fn run(&mut self, limit: Duration) -> Instant {
        for s in 0..2 {
            let ps = std::mem::take(&mut self.backlog[s]);
            self.link.offer_all(self.now, s, Session::Arq, ps);
        }
        let end = Instant::ZERO + limit;
        while let Some(t) = self.link.poll_timeout() {
            if t > end {
                break;
            }
            self.now = t;
            self.link.handle_timeout(t);
            while let Some((dir, p)) = self.link.poll_deliver() {
                self.delivered[1 - dir].push(p);
            }
        }
        self.now
    }
}
