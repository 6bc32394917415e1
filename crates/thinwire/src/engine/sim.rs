//! The simulator: the canonical topology server — wired link — gateway — wireless
//! link — mobile host, any number of TCP flows in either direction sharing the
//! wireless link, all protocol machines driven sans-IO from one event queue.
//!
//! Wired link: per direction a drop-tail queue (default 1000 packets), a rate and a
//! propagation delay. Wireless link: one [`WirelessLink`] (src/link/wireless.rs) with
//! both directions' IP queues, link-layer sessions, multiplexer, channels, airtime
//! and propagation; its wake-ups go into this simulator's event queue, so its events
//! are ordered with every other event as if its code were part of the simulator.
//!
//! Each machine exposes `poll_timeout`; the simulator keeps the earliest wake-up it
//! has scheduled per machine and ignores stale timer events.
use super::outputs::{Closed, FileOut, Out, ParquetSink, Tap, TraceOut};
use crate::app::web::{Transaction, WebModel};
use crate::build;
use crate::config::{mobile_addr, Direction, FlowCfg, LinkSession, Scenario, Stop};
use crate::link::wireless::{LinkTimer, LinkTrace, Offer, Session, WirelessLink};
use crate::queue::wired::WiredLink;
use crate::rng::Rng;
use crate::sched::EventQueue;
use crate::tcp::Tcp;
use crate::time::{Duration, Instant};
use crate::trace::recorder::SegKind;
use crate::trace::{Layer, LayerMask, Recorder, SegEvent, TraceTable};
use crate::wire::{Packet, L4};
use std::collections::VecDeque;

mod apps;
mod gateway;
mod media;
mod results;
use apps::{Interactive, Web};
pub use media::MediaResult;
use media::{BornCount, Media};
pub use results::{EndReason, FlowResult, RunResult};

pub const SERVER_ADDR: [u8; 4] = [10, 0, 0, 1];

#[derive(Clone, Copy, Debug)]
enum Event {
    FlowStart(u16),
    /// The mobile's application aborts flow `.0` (`abort` of a bulk flow).
    FlowAbort(u16),
    TcpTimer(u16, u8),
    MediaNext(u16),
    WebNext(u16),
    Tick(u16),
    WiredArrive(u8),
    /// The wired transmitter of direction `.0` is free (disciplines that decide
    /// at dequeue).
    WiredTx(u8),
    Link(LinkTimer),
    ProxyTimer,
}

impl From<LinkTimer> for Event {
    fn from(t: LinkTimer) -> Event {
        Event::Link(t)
    }
}

pub use crate::link::wireless::LinkStats;

struct Flow {
    /// Index in the scenario's flow list (carried by packets and traces).
    id: usize,
    cfg: crate::config::FlowCfg,
    ep: [Tcp; 2],
    sched: [Option<Instant>; 2],
    ident: [u16; 2],
    start: Instant,
    bytes: Option<u64>,
    /// Which end sends the data: 0 = server (down), 1 = mobile (up).
    sender: usize,
    completed: Option<Instant>,
    /// An interactive flow's message source and latencies.
    chat: Option<Interactive>,
    /// The mobile host's address (`mobile_addr`).
    addr: [u8; 4],
}

/// Events at one simulated instant after which a run counts as stuck.
pub const STUCK_EVENTS: u64 = 20_000_000;
/// How often (in events) a run asks its caller whether to stop.
pub const POLL_EVERY: u64 = 1 << 16;

#[derive(Clone, Copy)]
enum Slot {
    Tcp(usize),
    Media(usize),
    Web(usize),
}

pub struct Sim {
    q: EventQueue<Event>,
    wired: [WiredLink; 2],
    link: WirelessLink,
    flows: Vec<Flow>,
    media: Vec<Media>,
    webs: Vec<Web>,
    slots: Vec<Slot>,
    /// Link session of each scenario flow.
    session: Vec<Session>,
    stop: Stop,
    max_time: Instant,
    pending_finite: usize,
    /// Trace rows of the layers asked for.
    rec: Recorder<TraceOut>,
    /// Whether the link produces trace events (link, queue or channel layer).
    link_traced: bool,
    pcap: [Option<Tap>; 2],
    mm: Option<crate::trace::mahimahi::MmLogs<Out>>,
    proxy: Option<crate::proxy::Proxy>,
    proxy_sched: Option<Instant>,
    /// The mobile host's next ephemeral port for session applications.
    next_client_port: u16,
}

impl Sim {
    pub fn new(sc: &Scenario) -> Sim {
        let mask = LayerMask::from_names(&sc.trace.layers);
        let mk_wired = |d: usize| {
            let mut w = build::wired(sc, d);
            w.set_trace(mask.has(Layer::Queue), mask.has(Layer::Sojourn));
            w
        };
        let mut link = build::wireless(sc);
        // mm-link logs are made from the link's queue and delivery events.
        let mm = sc.trace.mahimahi;
        let link_trace = LinkTrace {
            link: mask.has(Layer::Link) || mm,
            queue: mask.has(Layer::Queue) || mm,
            sojourn: mask.has(Layer::Sojourn),
            channel: mask.has(Layer::Channel),
        };
        link.set_trace(link_trace);
        let mut q = EventQueue::new();
        let mut flows = Vec::new();
        let mut media = Vec::new();
        let mut webs = Vec::new();
        let mut slots = Vec::new();
        let mut session = Vec::new();
        for (i, f) in sc.flow.iter().enumerate() {
            let start = Instant::ZERO + f.start();
            let sender = if f.direction() == Direction::Up { 1 } else { 0 };
            session.push(match (f.session(), f.mobile()) {
                (LinkSession::Arq, 0) => Session::Arq,
                (LinkSession::Arq, k) => Session::Mobile(k),
                (LinkSession::Bypass, _) => Session::Bypass,
            });
            if let Some(src) = build::udp_source(sc, i, f, start) {
                q.schedule(start, Event::MediaNext(media.len() as u16));
                slots.push(Slot::Media(media.len()));
                media.push(Media {
                    id: i,
                    src,
                    sender,
                    mobile: f.mobile(),
                    addr: mobile_addr(f.mobile()),
                    ident: 1,
                    sent_born: BornCount::default(),
                    recv_born: BornCount::default(),
                    delays: vec![],
                    bytes: 0,
                    start,
                });
                continue;
            }
            if let Some(cfg) = build::session(f) {
                q.schedule(start, Event::WebNext(webs.len() as u16));
                slots.push(Slot::Web(webs.len()));
                webs.push(Web::new(sc, i, f, cfg, start));
                continue;
            }
            let mut rng = build::flow_stream(sc, i, "isn");
            let chat = match f {
                FlowCfg::Interactive(c) => Some(Interactive::new(build::interactive(c))),
                _ => None,
            };
            let port = match (f, &chat) {
                (FlowCfg::Bulk(b), _) => b.port.unwrap_or(build::BULK_PORT),
                (_, Some(c)) => c.port(),
                _ => unreachable!("bulk or interactive"),
            };
            let [mut server, mut mobile] = build::tcp_pair(f, port, 40000 + i as u16, &mut rng, mask.has(Layer::Tcp));
            let bytes = match &chat {
                Some(c) => c.total(),
                None => f.bytes(),
            };
            if let Some(c) = &chat {
                server.set_app_data(Some(0), false);
                q.schedule(c.first_tick(start), Event::Tick(flows.len() as u16));
            } else if sender == 0 {
                server.set_app_data(bytes, true);
            } else {
                mobile.set_app_data(bytes, true);
            }
            q.schedule(start, Event::FlowStart(flows.len() as u16));
            if let FlowCfg::Bulk(crate::config::flow::BulkCfg { abort: Some(a), .. }) = f {
                q.schedule(start + a.0, Event::FlowAbort(flows.len() as u16));
            }
            slots.push(Slot::Tcp(flows.len()));
            flows.push(Flow {
                id: i,
                cfg: f.clone(),
                ep: [server, mobile],
                sched: [None, None],
                ident: [1, 1],
                start,
                bytes,
                sender,
                completed: None,
                chat,
                addr: mobile_addr(f.mobile()),
            });
        }
        let pending_finite =
            flows.iter().filter(|f| f.bytes.is_some()).count() + webs.iter().filter(|w| w.finite()).count();
        let max_time = build::max_time(sc);
        let epoch = sc.trace.pcap_epoch_ns().unwrap_or(0); // validated with the scenario
        let pcap = if sc.trace.pcap { [Some(Tap::memory(epoch)), Some(Tap::memory(epoch))] } else { [None, None] };
        Sim {
            q,
            wired: [mk_wired(0), mk_wired(1)],
            link,
            link_traced: link_trace.link || link_trace.queue || link_trace.channel,
            flows,
            media,
            webs,
            slots,
            session,
            stop: sc.stop,
            max_time,
            pending_finite,
            rec: Recorder::new(mask, TraceOut::default()),
            pcap,
            mm: mm.then(|| {
                build::mm_logs(sc, [Out::Mem(Vec::new()), Out::Mem(Vec::new())], "thinwire run")
                    .expect("writes to memory")
            }),
            proxy: build::proxy_config(sc).map(|c| {
                let mut p = crate::proxy::Proxy::new(c);
                if mask.has(Layer::Proxy) {
                    p.enable_trace();
                }
                p
            }),
            proxy_sched: None,
            next_client_port: 0,
        }
    }

    /// Like [`Sim::new`], but the trace (`trace.parquet`), the pcap taps
    /// (`server.pcap`, `mobile.pcap`) and the mm-link logs (`mm-down.log`,
    /// `mm-up.log`) the scenario asks for are streamed into files of `dir` while the
    /// run goes (src/outputs.rs), not kept in memory.
    pub fn with_output_dir(sc: &Scenario, dir: &std::path::Path) -> std::io::Result<Sim> {
        let mut sim = Sim::new(sc);
        if sim.rec.mask.0 != 0 {
            let mut sink = ParquetSink::create(dir)?;
            sink.set_horizon(sim.link.channel_horizon().nanos());
            sim.rec.sink = TraceOut::File(Box::new(sink));
        }
        let epoch = sc.trace.pcap_epoch_ns().unwrap_or(0); // validated with the scenario
        for (i, name) in ["server.pcap", "mobile.pcap"].into_iter().enumerate() {
            if sim.pcap[i].is_some() {
                sim.pcap[i] = Some(Tap::file(dir, name, epoch)?);
            }
        }
        if sim.mm.is_some() {
            let files = [FileOut::create(dir, "mm-down.log")?, FileOut::create(dir, "mm-up.log")?];
            sim.mm = Some(build::mm_logs(sc, files.map(Out::File), "thinwire run")?);
        }
        Ok(sim)
    }

    /// Whether writing a streamed output failed (the run then stops).
    fn output_failed(&self) -> bool {
        let trace = matches!(&self.rec.sink, TraceOut::File(f) if f.failed());
        trace
            || self.pcap.iter().flatten().any(|p| p.failed())
            || self.mm.as_ref().is_some_and(|m| m.dirs.iter().any(|d| d.get_ref().failed()))
    }

    fn now(&self) -> Instant {
        self.q.now()
    }

    /// The wireless link, for tests that set it up differently (feature `testkit`).
    #[cfg(feature = "testkit")]
    pub fn link_mut(&mut self) -> &mut WirelessLink {
        &mut self.link
    }

    /// Runs to the stop condition and returns the results.
    pub fn run(self) -> RunResult {
        self.run_polled(&mut || false)
    }

    /// As [`Sim::run`], asking `stop` every [`POLL_EVERY`] events whether to stop
    /// (the Python binding checks for Ctrl-C there); the result says why it ended.
    pub fn run_polled(mut self, stop: &mut dyn FnMut() -> bool) -> RunResult {
        let mut why = None;
        let (mut instant, mut same) = (Instant::ZERO, 0u64);
        let mut next_poll = POLL_EVERY;
        while let Some(t) = self.q.peek_time() {
            if t > self.max_time {
                break;
            }
            if self.stop == Stop::End && self.pending_finite == 0 {
                break;
            }
            if t == instant {
                same += 1;
                if same >= STUCK_EVENTS {
                    why = Some(EndReason::Stuck);
                    break;
                }
            } else {
                (instant, same) = (t, 0);
            }
            let (_, ev) = self.q.pop().unwrap();
            self.dispatch(ev);
            if self.q.popped() >= next_poll {
                next_poll += POLL_EVERY;
                if stop() || self.output_failed() {
                    why = Some(EndReason::Interrupted);
                    break;
                }
            }
        }
        let why = why.unwrap_or(match self.stop {
            Stop::At(_) => EndReason::StopTime,
            Stop::End if self.pending_finite == 0 => EndReason::Finished,
            Stop::End if self.q.peek_time().is_some() => EndReason::MaxTime,
            Stop::End => EndReason::Idle,
        });
        // A run that reached its stop time or max_time lasted that long, whenever
        // its last event was.
        let end = match why {
            EndReason::StopTime | EndReason::MaxTime => self.max_time,
            // The last frame arrivals that changed nothing were not events.
            EndReason::Idle => self.now().max(self.link.silent_until()),
            _ => self.now(),
        };
        self.finish(end, why)
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::FlowStart(f) => {
                let now = self.now();
                self.flows[f as usize].ep[1].connect(now);
                self.drain_tcp(f as usize, 1);
            }
            Event::FlowAbort(f) => {
                let fl = &mut self.flows[f as usize];
                fl.ep[1].abort();
                if fl.completed.is_none() && fl.bytes.is_some() {
                    // It will not finish: no longer awaited by `stop = "end"`.
                    fl.bytes = None;
                    self.pending_finite -= 1;
                }
                self.drain_tcp(f as usize, 1);
            }
            Event::TcpTimer(f, e) => {
                let now = self.now();
                let fl = &mut self.flows[f as usize];
                if fl.sched[e as usize] != Some(now) {
                    return;
                }
                fl.sched[e as usize] = None;
                fl.ep[e as usize].handle_timeout(now);
                self.drain_tcp(f as usize, e as usize);
            }
            Event::MediaNext(m) => self.media_send(m as usize),
            Event::WebNext(w) => self.web_next(w as usize),
            Event::Tick(f) => self.chat_tick(f as usize),
            Event::WiredTx(d) => {
                let now = self.now();
                let step = self.wired[d as usize].handle_timeout(now);
                self.wired_step(d as usize, step);
                self.wired_events(d as usize);
            }
            Event::WiredArrive(d) => {
                let now = self.now();
                let p = self.wired[d as usize].poll_arrival(now).expect("packet in flight");
                self.wired_events(d as usize);
                if d == 1 {
                    self.to_endpoint(0, p);
                } else if self.proxy.is_some() {
                    self.to_proxy(crate::proxy::Side::Wired, p);
                } else {
                    self.enqueue_radio(0, p);
                }
            }
            Event::ProxyTimer => self.proxy_timer(),
            Event::Link(t) => {
                let now = self.now();
                self.link.on_timer_with(now, t, &mut self.q);
                self.drain_link_events();
                while let Some((dir, p)) = self.link.poll_deliver() {
                    self.drain_link_events();
                    self.from_wireless(dir, p);
                }
                self.link.resume_with(&mut self.q);
                self.drain_link_events();
            }
        }
    }

    // ----- TCP endpoints -----
    fn drain_tcp(&mut self, f: usize, end: usize) {
        let now = self.now();
        loop {
            let fl = &mut self.flows[f];
            let Some(seg) = fl.ep[end].poll_transmit(now) else { break };
            let (src, dst) = if end == 0 { (SERVER_ADDR, fl.addr) } else { (fl.addr, SERVER_ADDR) };
            let ident = fl.ident[end];
            fl.ident[end] = ident.wrapping_add(1);
            let id = fl.id;
            let mut pkt = Packet::new(src, dst, ident, L4::Tcp(seg.repr), seg.len, id as u16, now);
            if seg.ect {
                pkt.ip.set_ecn(crate::wire::ip::ECT0);
            }
            if self.rec.wants(Layer::Tcp) {
                let (seq, ack) = self.rel_seq_ack(f, end, &seg.repr);
                let kind = if seg.retransmission { SegKind::Retransmit } else { SegKind::Send };
                let (mobile, dir, flow, len, flags) = (end == 1, end as u8, id as i32, seg.len, seg.repr.flags.0);
                self.rec.segment(&SegEvent { at: now, kind, mobile, dir, flow, seq, ack, len, flags });
            }
            tap(&mut self.pcap[end], now, &pkt);
            if end == 0 {
                self.enqueue_wired(0, pkt);
            } else {
                self.enqueue_radio(1, pkt);
            }
        }
        self.drain_vars(f, end);
        self.sched_tcp(f, end);
    }

    /// Sequence and acknowledgement numbers relative to the two ends' ISNs.
    fn rel_seq_ack(&self, f: usize, end: usize, r: &crate::wire::TcpRepr) -> (i64, Option<i64>) {
        let fl = &self.flows[f];
        let iss = fl.ep[end].iss();
        let peer_iss = fl.ep[1 - end].iss();
        let ack = r.flags.has(crate::wire::TcpFlags::ACK).then(|| r.ack.wrapping_sub(peer_iss) as i64);
        (r.seq.wrapping_sub(iss) as i64, ack)
    }

    fn drain_vars(&mut self, f: usize, end: usize) {
        let fl = &mut self.flows[f];
        let id = fl.id as i32;
        while let Some(v) = fl.ep[end].poll_event() {
            self.rec.tcp_var(end == 1, end as u8, id, &v);
        }
    }

    fn sched_tcp(&mut self, f: usize, end: usize) {
        let now = self.now();
        let fl = &mut self.flows[f];
        if let Some(t) = fl.ep[end].poll_timeout() {
            let t = t.max(now);
            if fl.sched[end].is_none_or(|s| t < s) {
                fl.sched[end] = Some(t);
                self.q.schedule(t, Event::TcpTimer(f as u16, end as u8));
            }
        }
    }

    /// The TCP connection whose mobile end sent `p` (for a local drop at the mobile).
    /// The TCP connection (index in `flows`) of the mobile's segment from
    /// `src_port` of scenario flow `flow`.
    fn local_sender(&self, flow: u16, src_port: u16) -> Option<usize> {
        match self.slots[flow as usize] {
            Slot::Tcp(f) => Some(f),
            Slot::Web(w) => self.webs[w].ports.get(&src_port).copied(),
            Slot::Media(_) => None,
        }
    }

    fn to_endpoint(&mut self, end: usize, p: Packet) {
        let now = self.now();
        tap(&mut self.pcap[end], now, &p);
        let f = match self.slots[p.meta.flow as usize] {
            Slot::Tcp(f) => f,
            Slot::Web(w) => {
                let L4::Tcp(r) = &p.l4 else { return };
                let client_port = if end == 1 { r.dst_port } else { r.src_port };
                match self.webs[w].ports.get(&client_port) {
                    Some(&f) => f,
                    None => return,
                }
            }
            Slot::Media(m) => {
                let m = &mut self.media[m];
                m.recv_born.push(p.meta.born, now);
                m.delays.push((now - p.meta.born).nanos());
                m.bytes += p.payload_len as u64;
                return;
            }
        };
        let L4::Tcp(repr) = p.l4 else { return };
        if self.rec.wants(Layer::Tcp) {
            let (seq, ack) = self.rel_seq_ack(f, 1 - end, &repr);
            let (mobile, dir, flow, len, flags) =
                (end == 1, (1 - end) as u8, p.meta.flow as i32, p.payload_len, repr.flags.0);
            self.rec.segment(&SegEvent { at: now, kind: SegKind::Recv, mobile, dir, flow, seq, ack, len, flags });
        }
        let fl = &mut self.flows[f];
        fl.ep[end].on_segment_ecn(now, &repr, p.payload_len, p.ip.ecn() == crate::wire::ip::CE);
        if let Slot::Web(w) = self.slots[fl.id] {
            self.web_progress(w, f, end);
        } else if fl.completed.is_none() && end != fl.sender {
            if end == 1 && fl.chat.is_some() {
                self.chat_progress(f);
            }
            let fl = &mut self.flows[f];
            if let Some(b) = fl.bytes {
                if fl.ep[end].delivered() >= b {
                    fl.completed = Some(now);
                    self.pending_finite -= 1;
                }
            }
        }
        self.drain_tcp(f, end);
    }

    // ----- wired link -----
    fn enqueue_wired(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let (flow, len) = (p.meta.flow as i32, p.size());
        let (verdict, step) = self.wired[d].offer(now, p);
        self.wired_step(d, step);
        if self.rec.wants(Layer::Queue) {
            let qlen = self.wired[d].queue_len(now) as u64;
            self.rec.wired_queue(now, d as u8, flow, len, qlen, verdict);
        }
        self.wired_events(d);
    }

    fn wired_step(&mut self, d: usize, step: crate::queue::wired::Step) {
        if let Some(t) = step.arrival {
            self.q.schedule(t, Event::WiredArrive(d as u8));
        }
        if let Some(t) = step.wake {
            self.q.schedule(t, Event::WiredTx(d as u8));
        }
    }

    /// The wired queue's trace events (drops and marks after queueing, sojourn times).
    #[inline]
    fn wired_events(&mut self, d: usize) {
        if self.wired[d].has_events() {
            self.record_wired_events(d);
        }
    }

    #[inline(never)]
    fn record_wired_events(&mut self, d: usize) {
        use crate::queue::{wired::WiredEvent, QdiscEvent};
        while let Some(e) = self.wired[d].poll_event() {
            match e {
                WiredEvent::Queue { ev: QdiscEvent::Drop { at, packet, reason }, qlen } => {
                    self.rec.wired_aqm(at, d as u8, packet.meta.flow as i32, packet.size(), qlen as u64, Some(reason))
                }
                WiredEvent::Queue { ev: QdiscEvent::Mark { at, flow, len }, qlen } => {
                    self.rec.wired_aqm(at, d as u8, flow as i32, len, qlen as u64, None)
                }
                WiredEvent::Dequeue { at, flow, len, sojourn } => {
                    self.rec.wired_dequeue(at, d as u8, flow as i32, len, sojourn)
                }
            }
        }
    }

    // ----- wireless link -----
    fn enqueue_radio(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let session = self.session[p.meta.flow as usize];
        // A mobile's TCP segment the local interface queue drops quenches its sender
        // (the `bsd` profile); which connection it was is looked up only then.
        let local = match (&p.l4, d) {
            (L4::Tcp(r), 1) => Some((p.meta.flow, r.src_port)),
            _ => None,
        };
        let offer = self.link.offer_with(now, d, session, p, &mut self.q);
        if let (Offer::QueueFull, Some((flow, port))) = (offer, local) {
            if let Some(f) = self.local_sender(flow, port) {
                if self.flows[f].ep[1].config().source_quench {
                    self.flows[f].ep[1].source_quench(now);
                }
            }
        }
        self.drain_link_events();
    }

    /// A packet that left the far end of wireless direction `dir`.
    fn from_wireless(&mut self, dir: usize, p: Packet) {
        if dir == 0 {
            self.to_endpoint(1, p);
        } else if self.proxy.is_some() {
            self.to_proxy(crate::proxy::Side::Wireless, p);
        } else {
            self.enqueue_wired(1, p);
        }
    }

    /// Takes the link's trace events, if the link is traced (a check inlined at every
    /// call: the call itself cost 2.6 % of the study mix's instructions untraced).
    #[inline]
    fn drain_link_events(&mut self) {
        if self.link_traced {
            self.record_link_events();
        }
    }

    #[inline(never)]
    fn record_link_events(&mut self) {
        crate::trace::recorder::drain_link(&mut self.link, &mut self.rec, self.mm.as_mut());
        if let TraceOut::File(f) = &mut self.rec.sink {
            f.set_horizon(self.link.channel_horizon().nanos());
        }
    }

    fn finish(mut self, end: Instant, why: EndReason) -> RunResult {
        let (flows, unfinished) = self.flow_results(end);
        let [p0, p1] = std::mem::take(&mut self.pcap);
        let mut out = Closed::default();
        let pcap_server = p0.and_then(|t| out.take("server.pcap", t.finish()));
        let pcap_mobile = p1.and_then(|t| out.take("mobile.pcap", t.finish()));
        let mm_logs = match self.mm.take().map(|m| m.finish(end)) {
            None => None,
            Some(Ok([d, u])) => match (out.take("mm-down.log", d.finish()), out.take("mm-up.log", u.finish())) {
                (Some(d), Some(u)) => Some([d, u]),
                _ => None,
            },
            Some(Err(e)) => {
                out.take("mm-link logs", Err(e.to_string()));
                None
            }
        };
        let trace_rows = match &self.rec.sink {
            TraceOut::Table(t) => t.len(),
            TraceOut::File(f) => f.rows(),
        };
        let trace = match std::mem::take(&mut self.rec.sink) {
            TraceOut::Table(t) => t,
            TraceOut::File(f) => {
                out.take("trace.parquet", f.close().map(|()| None));
                TraceTable::default()
            }
        };
        RunResult {
            end: why,
            unfinished,
            events: self.q.popped(),
            sim_time_s: end.as_secs_f64(),
            flows,
            link: self.link.stats_at_end(end.as_secs_f64()),
            wired_drops: [self.wired[0].stats.drops, self.wired[1].stats.drops],
            wired: [self.wired[0].stats, self.wired[1].stats],
            trace,
            trace_rows,
            pcap_server,
            pcap_mobile,
            mm_logs,
            files: out.files,
            output_error: out.errors.into_iter().next(),
            proxy: self.proxy.as_ref().map(|p| p.stats()),
        }
    }
}

/// Records `pkt` at a pcap tap, if there is one (a tap keeps a write error itself;
/// the run stops at its next poll).
#[inline]
fn tap(w: &mut Option<Tap>, now: Instant, pkt: &Packet) {
    if let Some(w) = w {
        record_tap(w, now, pkt);
    }
}

#[inline(never)]
fn record_tap(w: &mut Tap, now: Instant, pkt: &Packet) {
    w.record(now.nanos(), pkt);
}

/// Parses, builds and runs a scenario.
pub fn run_scenario(sc: &Scenario) -> RunResult {
    Sim::new(sc).run()
}
