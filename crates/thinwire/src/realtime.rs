//! The emulated path between two hosts, driven by real time but doing no I/O: the
//! real-time emulator (`thinwire emulate`) feeds it the packets it reads from the
//! hosts' TUN devices, each stamped with the time it was read, and writes out what
//! it gives back; `thinwire simulate-log` feeds it the same packets from the
//! emulator's log and gets the same schedule, byte for byte, because this type is
//! the only place decisions are made.
//!
//! Topology (as the simulator's): mobile host — wireless link (the scenario's
//! `[wireless]`, a [`WirelessLink`]) — gateway — wired link (`[wired]`) — server.
//! Every packet goes through the link's ARQ session.
//!
//! Time: `advance(t)` runs every event due at or before `t`, each at its own
//! scheduled time, in `(time, sequence)` order; `input(t, ..)` then offers a packet
//! at `t`. A driver calls `advance(t)` before `input(t, ..)` and before sleeping
//! until `next_deadline()`. Outputs carry the time they were due (the emulator
//! measures its lateness against it).
use crate::build;
use crate::config::Scenario;
use crate::fx::FxMap;
use crate::link::path::{self, PathDriver, WiredTimer};
use crate::link::wireless::{LinkTimer, LinkTrace, Offer, Session, WirelessLink};
use crate::outputs::TraceOut;
use crate::queue::wired::WiredLink;
use crate::sched::EventQueue;
use crate::time::Instant;
use crate::trace::mahimahi::MmLogs;
use crate::trace::{Recorder, TraceTable};
use crate::wire::{IpAddress, Meta, Packet, L4};
use std::collections::VecDeque;

/// The two ends of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    Mobile,
    Server,
}

impl End {
    pub fn name(self) -> &'static str {
        match self {
            End::Mobile => "mobile",
            End::Server => "server",
        }
    }
}

/// A packet leaving the path toward `to`, due at `at`.
#[derive(Clone, Debug)]
pub struct Output {
    pub at: Instant,
    pub to: End,
    pub packet: Packet,
}

/// What became of every packet, in order: the schedule a replay must reproduce.
/// `hash` is a 64-bit FNV-1a of the packet's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Offered at `at` by `from`.
    In { at: Instant, from: End, len: u32, hash: u64 },
    /// Dropped by a queue at its arrival (full, or the discipline's decision):
    /// the wired link's, or the wireless link's IP queue; for the wired link also
    /// a drop after queueing (CoDel at dequeue).
    Drop { at: Instant, len: u32, hash: u64, wired: bool },
    /// Left the path toward `to`.
    Out { at: Instant, to: End, len: u32, hash: u64 },
}

impl std::fmt::Display for Decision {
    /// One line of the schedule log: `time_ns event end len hash`.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match *self {
            Decision::In { at, from, len, hash } => write!(f, "{} in {} {len} {hash:016x}", at.nanos(), from.name()),
            Decision::Drop { at, len, hash, wired } => {
                write!(f, "{} drop {} {len} {hash:016x}", at.nanos(), if wired { "wired" } else { "wireless" })
            }
            Decision::Out { at, to, len, hash } => write!(f, "{} out {} {len} {hash:016x}", at.nanos(), to.name()),
        }
    }
}

/// 64-bit FNV-1a of a packet's bytes.
pub fn packet_hash(p: &Packet) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    match &p.bytes {
        Some(b) => b.iter().for_each(|&x| h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3)),
        None => p.emit().iter().for_each(|&x| h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3)),
    }
    h
}

/// A transport conversation, the same key for both directions.
type ConvKey = (u8, IpAddress, u16, IpAddress, u16);

fn conversation(p: &Packet) -> ConvKey {
    let (proto, sp, dp) = match &p.l4 {
        L4::Tcp(t) => (6, t.src_port, t.dst_port),
        L4::Udp(u) => (17, u.src_port, u.dst_port),
        L4::Other(x) => (*x, 0, 0),
    };
    let (a, b) = ((p.ip.src(), sp), (p.ip.dst(), dp));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    (proto, lo.0, lo.1, hi.0, hi.1)
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ev {
    Link(LinkTimer),
    Wired(WiredTimer),
}

impl From<LinkTimer> for Ev {
    fn from(t: LinkTimer) -> Ev {
        Ev::Link(t)
    }
}

impl From<WiredTimer> for Ev {
    fn from(t: WiredTimer) -> Ev {
        Ev::Wired(t)
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    pub inputs: [u64; 2],
    pub outputs: [u64; 2],
    pub wired_drops: u64,
    pub link_drops: u64,
}

pub struct RealtimePath {
    link: WirelessLink,
    /// Index 0 = down (server to gateway), 1 = up.
    wired: [WiredLink; 2],
    /// False when a real gateway joins the link's far end to the server (the
    /// emulator's `--gateway`): packets go straight between link and `End::Server`.
    wired_on: bool,
    /// UDP packets take the link's bypass session (no ARQ, seed 002 §III's media
    /// session) instead of its ARQ session (`--udp-bypass`).
    udp_bypass: bool,
    /// A shared cell's mobiles by address (`share_cell`): packets to (down) or
    /// from (up) mobile k >= 1 take its link-layer session; the others mobile 0's.
    cell: FxMap<IpAddress, u16>,
    q: EventQueue<Ev>,
    out: VecDeque<Output>,
    decisions: Option<Vec<Decision>>,
    /// Packets crossing the gateway (between the wired and the wireless link):
    /// (time, toward the mobile, packet), for the emulator's capture.
    taps: Option<Vec<(Instant, bool, Packet)>>,
    /// Flow number of each conversation, in order of first packet (traces).
    flows: FxMap<ConvKey, u16>,
    rec: Recorder<TraceOut>,
    link_traced: bool,
    /// mm-link-format logs of the wireless link (needs `trace`).
    mm: Option<MmLogs<Box<dyn std::io::Write + Send>>>,
    /// TCP rows from the packets entering and leaving the path: per (flow,
    /// direction), the first sequence number seen (relative numbers) and the
    /// highest sequence end sent (retransmissions).
    tcp_seen: FxMap<(u16, u8), (u32, u64)>,
    /// One row per conversation, from the same segments (with `trace`).
    conns: crate::trace::conn_table::ConnTable,
    pub stats: PathStats,
}

impl RealtimePath {
    /// The path of a scenario (its `[wired]` and `[wireless]`; flows are ignored).
    /// `trace`: record link, queue and channel rows.
    pub fn new(sc: &Scenario, trace: bool) -> RealtimePath {
        let mut link = build::wireless(sc);
        link.set_trace(LinkTrace { link: trace, queue: trace, sojourn: false, channel: trace });
        use crate::trace::{Layer, LayerMask};
        let mask =
            if trace { LayerMask::of(&[Layer::Tcp, Layer::Link, Layer::Queue, Layer::Channel]) } else { LayerMask(0) };
        RealtimePath {
            link,
            wired: [0, 1].map(|d| {
                let mut w = build::wired(sc, d);
                w.set_trace(true, false);
                w
            }),
            wired_on: true,
            udp_bypass: false,
            cell: FxMap::default(),
            q: EventQueue::new(),
            out: VecDeque::new(),
            decisions: None,
            taps: None,
            flows: FxMap::default(),
            rec: Recorder::new(mask, TraceOut::default()),
            link_traced: trace,
            mm: None,
            tcp_seen: FxMap::default(),
            conns: Default::default(),
            stats: PathStats::default(),
        }
    }

    /// No wired link: the far end of the wireless link is `End::Server` itself (a
    /// real gateway forwards to the server).
    pub fn without_wired(&mut self) {
        self.wired_on = false;
    }

    /// UDP packets take the link's bypass session (no ARQ), as the simulator's
    /// media flows do; everything else its ARQ session.
    pub fn bypass_udp(&mut self) {
        self.udp_bypass = true;
    }

    /// The wireless link is a cell that mobile k at `addrs[k]` (each of its
    /// addresses) shares with the others: each mobile gets its own link-layer
    /// session and IP queues (`WirelessLink::add_mobile`, configured as the
    /// scenario's), multiplexed on the one radio. A packet goes to the session of
    /// the mobile it is for (down) or from (up); one for no mobile (multicast)
    /// to mobile 0's.
    pub fn share_cell(&mut self, sc: &Scenario, addrs: &[Vec<IpAddress>]) {
        build::add_mobiles(sc, &mut self.link, addrs.len());
        for (k, a) in addrs.iter().enumerate().skip(1) {
            for &a in a {
                self.cell.insert(a, k as u16);
            }
        }
    }

    /// Keep every decision (for the schedule log).
    pub fn record_decisions(&mut self) {
        self.decisions.get_or_insert_with(Vec::new);
    }

    /// Keep the packets crossing the gateway (`take_taps`).
    pub fn record_taps(&mut self) {
        self.taps.get_or_insert_with(Vec::new);
    }

    /// Packets that crossed the gateway since the last call, in time order:
    /// (time, toward the mobile, packet).
    pub fn take_taps(&mut self) -> Vec<(Instant, bool, Packet)> {
        self.taps.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Decisions made since the last call.
    pub fn take_decisions(&mut self) -> Vec<Decision> {
        self.decisions.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Writes mm-link-format logs of the wireless link (the path must have been
    /// made with `trace`).
    pub fn set_mm_logs(&mut self, m: MmLogs<Box<dyn std::io::Write + Send>>) {
        assert!(self.link_traced, "mm-link logs need the link's trace events");
        self.mm = Some(m);
    }

    /// Ends the mm-link logs at `end` (capacity lines up to then) and flushes them.
    pub fn finish_mm_logs(&mut self, end: Instant) -> std::io::Result<()> {
        match self.mm.take() {
            Some(m) => m.finish(end).map(|_| ()),
            None => Ok(()),
        }
    }

    /// The trace rows recorded so far (tcp, link, queue and channel layers);
    /// none when they are streamed to a file.
    pub fn take_trace(&mut self) -> TraceTable {
        match &mut self.rec.sink {
            TraceOut::Table(t) => std::mem::take(t),
            TraceOut::File(_) => TraceTable::default(),
        }
    }

    /// From now on the trace rows go into `DIR/trace.parquet` as they are
    /// recorded, with the simulator's writer (outputs.rs: bounded memory,
    /// time order up to the channel's horizon, encoded on a thread of its own):
    /// a long emulation's trace costs disk, not memory.
    pub fn stream_trace(&mut self, dir: &std::path::Path) -> std::io::Result<()> {
        let sink = crate::outputs::ParquetSink::create(dir)?;
        self.rec.sink = TraceOut::File(Box::new(sink));
        Ok(())
    }

    /// Ends a streamed trace: the file's footer; its error, if any (a full disk).
    pub fn finish_trace(&mut self) -> Result<(), String> {
        match std::mem::take(&mut self.rec.sink) {
            TraceOut::File(f) => f.close(),
            TraceOut::Table(t) => {
                self.rec.sink = TraceOut::Table(t);
                Ok(())
            }
        }
    }

    /// When the path next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.q.peek_time()
    }

    /// Runs every event due at or before `now`, each at its scheduled time.
    pub fn advance(&mut self, now: Instant) {
        self.advance_events(now);
        // Rows up to now are final, but for channel transitions not yet revealed.
        if let TraceOut::File(f) = &mut self.rec.sink {
            f.set_horizon(self.link.channel_horizon().nanos().min(now.nanos()));
        }
    }

    fn advance_events(&mut self, now: Instant) {
        while let Some(t) = self.q.peek_time() {
            if t > now {
                break;
            }
            let (t, ev) = self.q.pop().expect("an event is due");
            match ev {
                Ev::Link(timer) => path::link_timer(self, t, timer),
                Ev::Wired(timer) => path::wired_timer(self, t, timer),
            }
        }
    }

    /// A packet read from `from` at `now` (call `advance(now)` first). Bytes that
    /// hold no IP packet are refused (the error says why); nothing else is.
    pub fn input(&mut self, now: Instant, from: End, bytes: Vec<u8>) -> Result<(), crate::wire::WireError> {
        let mut p = Packet::from_bytes(bytes, Meta::new(0, now))?;
        let n = self.flows.len() as u16;
        p.meta.flow = *self.flows.entry(conversation(&p)).or_insert(n);
        if let Some(d) = &mut self.decisions {
            d.push(Decision::In { at: now, from, len: p.size(), hash: packet_hash(&p) });
        }
        self.trace_segment(now, &p, from, true);
        match from {
            End::Mobile => {
                self.stats.inputs[1] += 1;
                self.link_offer(now, 1, p)
            }
            End::Server => {
                self.stats.inputs[0] += 1;
                self.wired_offer(now, 0, p)
            }
        }
        Ok(())
    }

    /// One row per TCP conversation seen (by flow number), accumulated as the
    /// segments passed (`trace::conn_table`; needs `trace`).
    pub fn conn_rows(&self) -> Vec<crate::trace::conn_table::ConnRow> {
        self.conns.rows()
    }

    /// Each flow's two addresses, by flow number (flows are numbered in the order
    /// of their first packet).
    pub fn flow_addresses(&self) -> Vec<(IpAddress, IpAddress)> {
        let mut v = vec![(IpAddress::V4([0; 4]), IpAddress::V4([0; 4])); self.flows.len()];
        for (k, &f) in &self.flows {
            v[f as usize] = (k.1, k.3);
        }
        v
    }

    /// When the next packet to leave the path was due (None: none waiting).
    pub fn next_output_at(&self) -> Option<Instant> {
        self.out.front().map(|o| o.at)
    }

    /// The next packet due to leave the path.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Counters of the wireless link, per direction (0 = down).
    pub fn link_stats(&self, run_s: f64) -> [crate::link::wireless::LinkStats; 2] {
        self.link.stats_at_end(run_s)
    }

    fn emit(&mut self, at: Instant, to: End, packet: Packet) {
        if let Some(d) = &mut self.decisions {
            d.push(Decision::Out { at, to, len: packet.size(), hash: packet_hash(&packet) });
        }
        self.trace_segment(at, &packet, to, false);
        self.stats.outputs[(to == End::Mobile) as usize ^ 1] += 1;
        self.out.push_back(Output { at, to, packet });
    }

    fn link_offer(&mut self, now: Instant, dir: usize, p: Packet) {
        let (len, hash) = (p.size(), if self.decisions.is_some() { packet_hash(&p) } else { 0 });
        let session = if self.udp_bypass && matches!(p.l4, L4::Udp(_)) {
            Session::Bypass
        } else if self.cell.is_empty() {
            Session::Arq
        } else {
            let host = if dir == 0 { p.ip.dst() } else { p.ip.src() };
            self.cell.get(&host).map_or(Session::Arq, |&k| Session::Mobile(k))
        };
        if self.link.offer_with(now, dir, session, p, &mut self.q) == Offer::QueueFull {
            self.stats.link_drops += 1;
            if let Some(d) = &mut self.decisions {
                d.push(Decision::Drop { at: now, len, hash, wired: false });
            }
        }
        self.link_events();
    }

    fn wired_offer(&mut self, now: Instant, d: usize, p: Packet) {
        if !self.wired_on {
            return if d == 0 { self.link_offer(now, 0, p) } else { self.emit(now, End::Server, p) };
        }
        let (len, hash) = (p.size(), if self.decisions.is_some() { packet_hash(&p) } else { 0 });
        if let crate::queue::Verdict::Dropped(_) = path::wired_offer(self, now, d, p) {
            self.stats.wired_drops += 1;
            if let Some(dec) = &mut self.decisions {
                dec.push(Decision::Drop { at: now, len, hash, wired: true });
            }
        }
        self.wired_events(d);
    }

    /// A TCP row: a segment sent by host `at_end` (`sent`) or received by it.
    fn trace_segment(&mut self, at: Instant, p: &Packet, at_end: End, sent: bool) {
        use crate::trace::recorder::SegKind;
        use crate::trace::SegEvent;
        let Some(t) = p.tcp().filter(|_| self.link_traced) else { return };
        // Data going up is sent by the mobile.
        let dir: u8 = if (at_end == End::Mobile) == sent { 1 } else { 0 };
        let flow = p.meta.flow;
        let syn = t.flags.has(crate::wire::TcpFlags::SYN) as u64;
        let fin = t.flags.has(crate::wire::TcpFlags::FIN) as u64;
        let isn = self.tcp_seen.entry((flow, dir)).or_insert((t.seq, 0)).0;
        let rel = t.seq.wrapping_sub(isn) as u64;
        let end = rel + p.payload_len as u64 + syn + fin;
        let mut kind = if sent { SegKind::Send } else { SegKind::Recv };
        if sent {
            let high = &mut self.tcp_seen.get_mut(&(flow, dir)).expect("seen").1;
            if end > rel && end <= *high {
                kind = SegKind::Retransmit;
            }
            *high = (*high).max(end);
        }
        let ack = if t.flags.has(crate::wire::TcpFlags::ACK) {
            self.tcp_seen.get(&(flow, 1 - dir)).map(|&(peer, _)| t.ack.wrapping_sub(peer) as i64)
        } else {
            None
        };
        self.conns.segment(&crate::trace::conn_table::Seg {
            at_ns: at.nanos(),
            kind,
            dir,
            flow,
            seq: rel,
            ack: ack.map(|a| a as u64),
            len: p.payload_len,
            flags: t.flags.0,
        });
        let ev = SegEvent {
            at,
            kind,
            mobile: at_end == End::Mobile,
            dir,
            flow: flow as i32,
            seq: rel as i64,
            ack,
            len: p.payload_len,
            flags: t.flags.0,
        };
        self.rec.segment(&ev);
    }
}

impl PathDriver for RealtimePath {
    type Queue = EventQueue<Ev>;
    fn parts(&mut self) -> (&mut WirelessLink, &mut [WiredLink; 2], &mut EventQueue<Ev>) {
        (&mut self.link, &mut self.wired, &mut self.q)
    }
    fn link_events(&mut self) {
        if self.link_traced {
            crate::trace::recorder::drain_link(&mut self.link, &mut self.rec, self.mm.as_mut());
        }
    }
    /// Drops by the wired discipline after queueing (CoDel at dequeue,
    /// FQ-CoDel's head drops) count and enter the schedule.
    fn wired_events(&mut self, d: usize) {
        use crate::queue::{wired::WiredEvent, QdiscEvent};
        while let Some(e) = self.wired[d].poll_event() {
            if let WiredEvent::Queue { ev: QdiscEvent::Drop { at, packet, .. }, .. } = e {
                self.stats.wired_drops += 1;
                if let Some(dec) = &mut self.decisions {
                    dec.push(Decision::Drop { at, len: packet.size(), hash: packet_hash(&packet), wired: true });
                }
            }
        }
    }
    /// Down: out to the mobile; up: through the gateway onto the wired link.
    fn from_wireless(&mut self, now: Instant, dir: usize, p: Packet) {
        if dir == 0 {
            self.emit(now, End::Mobile, p);
        } else {
            if let Some(taps) = &mut self.taps {
                taps.push((now, false, p.clone()));
            }
            self.wired_offer(now, 1, p);
        }
    }
    /// Up: out to the server; down: through the gateway onto the wireless link.
    fn from_wired(&mut self, now: Instant, d: usize, p: Packet) {
        if d == 1 {
            self.emit(now, End::Server, p);
        } else {
            if let Some(taps) = &mut self.taps {
                taps.push((now, true, p.clone()));
            }
            self.link_offer(now, 0, p);
        }
    }
}
