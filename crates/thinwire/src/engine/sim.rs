//! The simulator: the canonical topology server — wired link — gateway — wireless
//! link — mobile host, any number of TCP flows in either direction sharing the
//! wireless link, all protocol machines driven sans-IO from one event queue.
//!
//! Wired link: per direction a drop-tail queue (default 1000 packets), a rate and a
//! propagation delay. Wireless link: per direction a drop-tail IP queue in front of
//! the link-layer protocol (default 50 packets), a rate, a delay and a channel; the
//! ARQ machine at each end sends in its direction and receives the other, so ACKs
//! can ride on reverse data frames. A frame's fate is decided by the channel when it
//! starts transmission; frames and packets in flight on a link keep FIFO order.
//!
//! Link sharing (seed 002 §III): each end of the wireless link runs two link-layer
//! sessions, session 0 with the configured protocol (raw/SR/ASR/RLC) and session 1
//! without ARQ ("bypass", for media). Each has its own IP queue. When the radio is
//! free the multiplexer takes the next frame from one session: `round-robin`
//! (default) alternates between sessions that have a frame ready; `arq-first` and
//! `bypass-first` are strict priorities.
//!
//! With `mux = "shared-queue"` the sessions instead push every frame they can
//! produce, as soon as they can, into one drop-tail frame queue (limit
//! `frame_queue`, default 50 frames) that the radio serves first come, first served:
//! the structure of ns-2, where the link layer sits above the interface queue. A
//! frame that finds the queue full is lost (the ARQ recovers it like a channel loss).
//!
//! Each machine exposes `poll_timeout`; the simulator keeps the earliest wake-up it
//! has scheduled per machine and ignores stale timer events.
use super::build;
use super::queue::EventQueue;
use super::rng::Rng;
use crate::app::media::{MediaConfig, MediaSource};
use crate::app::web::{Transaction, WebModel};
use crate::channel::Channel;
use crate::config::{Limit, Scenario, Stop};
use crate::link::{raw::Raw, Arq, Frame, FrameKind};
use crate::queue::{wired::WiredLink, DropTail};
use crate::tcp::{Tcp, TcpVar};
use crate::time::{Duration, Instant};
use crate::trace::{pcap::PcapWriter, Ev, Layer, LayerMask, Row, TraceTable};
use crate::wire::{Packet, L4};
use std::collections::VecDeque;

mod apps;
mod gateway;
use apps::{Interactive, Web};

pub const SERVER_ADDR: [u8; 4] = [10, 0, 0, 1];
pub const MOBILE_ADDR: [u8; 4] = [10, 0, 1, 2];
const NODE_SERVER: u8 = 0;
const NODE_GATEWAY: u8 = 1;
const NODE_MOBILE: u8 = 2;

#[derive(Clone, Copy, Debug)]
enum Event {
    FlowStart(u16),
    TcpTimer(u16, u8),
    MediaNext(u16),
    WebNext(u16),
    Tick(u16),
    WiredArrive(u8),
    RadioDone(u8),
    FrameArrive(u8),
    ArqTimer(u8),
    ProxyTimer,
}

struct Wire {
    link: WiredLink,
    in_flight: VecDeque<Packet>,
}

#[derive(Default, Clone, Debug)]
pub struct LinkStats {
    pub frames_sent: u64,
    pub frames_lost: u64,
    pub data_frames_sent: u64,
    pub frames_retransmitted: u64,
    pub ack_frames: u64,
    pub nack_frames: u64,
    /// RLC Status PDUs.
    pub status_frames: u64,
    /// SDUs the link layer gave up (RLC SDU discard), or frames (IS-707 after its NAK rounds).
    pub sdu_discards: u64,
    /// IS-707 idle frames.
    pub idle_frames: u64,
    /// GSM RLP link-reset frames (SABM, UA, DISC) sent.
    pub reset_frames: u64,
    /// GSM RLP: resets started by this direction's sender (N2 exceeded).
    pub link_resets: u64,
    /// GSM RLP: this direction's user bytes thrown away by resets (sender's window
    /// and receiver's out-of-sequence buffer).
    pub flushed_bytes: u64,
    /// GSM RLP: the call was dropped (`on_n2 = "drop-call"`, or SABM unanswered).
    pub call_dropped: bool,
    /// PPP frames of this direction discarded by the receiver's deframer (bad FCS).
    pub ppp_damaged: u64,
    /// VJ-compressed packets tossed by the decompressor after a reported error.
    pub vj_tossed: u64,
    /// Packets whose rebuilt bytes failed the IP/TCP checksum at the receiver (VJ
    /// decompression against a stale base).
    pub checksum_drops: u64,
    /// Times the network side's L2R buffer turned this direction's RLP to "not ready".
    pub l2r_busy: u64,
    /// GPRS: temporary block flows set up (first packet after idle) in this direction.
    pub tbf_setups: u64,
    /// GPRS: outages seen by this direction's sender.
    pub outages: u64,
    pub bytes_sent: u64,
    pub arq_timeouts: u64,
    pub queue_drops: u64,
    pub queue_max: u64,
    /// Frames dropped at a full shared frame queue (`mux = "shared-queue"`).
    pub frame_queue_drops: u64,
    pub busy_ns: i64,
    /// The radio link's rate in bit/s (so analyses can turn frame sizes into airtime).
    pub rate_bps: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mux {
    RoundRobin,
    ArqFirst,
    BypassFirst,
}

struct Radio {
    qs: [DropTail; 2],
    rr: usize,
    mux: Mux,
    shared: Option<(VecDeque<Frame>, usize)>,
    busy: bool,
    rate: u64,
    delay: Duration,
    header: u32,
    channel: Channel,
    in_flight: VecDeque<Frame>,
    stats: LinkStats,
}

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
}

/// A media (UDP on/off) flow and what its receiver saw.
struct Media {
    id: usize,
    src: crate::app::UdpSource,
    sender: usize,
    ident: u16,
    sent_born: Vec<i64>,
    recv_born: Vec<i64>,
    delays: Vec<i64>,
    bytes: u64,
    start: Instant,
}

/// Media flow statistics. Loss counts packets sent at least 5 s before the end of
/// the run that never arrived (later ones may still be in flight).
#[derive(Clone, Debug, Default)]
pub struct MediaResult {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub loss: f64,
    pub delay_mean_s: Option<f64>,
    pub delay_p50_s: Option<f64>,
    pub delay_p95_s: Option<f64>,
    pub delay_max_s: Option<f64>,
    /// Every received packet's one-way delay, in arrival order (ns).
    pub delays_ns: Vec<i64>,
}

#[derive(Clone, Copy)]
enum Slot {
    Tcp(usize),
    Media(usize),
    Web(usize),
}

#[derive(Clone, Debug)]
pub struct FlowResult {
    pub id: usize,
    pub app: String,
    pub direction: String,
    pub variant: String,
    pub start_s: f64,
    pub bytes_delivered: u64,
    pub throughput_bps: f64,
    pub completion_s: Option<f64>,
    pub tcp_retransmits: u64,
    pub tcp_timeouts: u64,
    pub tcp_fast_retransmits: u64,
    pub rtt_avg_s: Option<f64>,
    pub segments_sent: u64,
    pub media: Option<MediaResult>,
    /// Web, http, ttcp: completed transactions (pages, downloads).
    pub transactions: Option<u64>,
    /// Web, http, ttcp: each completed transaction's duration, from its first
    /// connection request to its last byte (ttcp: to the FIN).
    pub durations_s: Vec<f64>,
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub events: u64,
    pub sim_time_s: f64,
    pub flows: Vec<FlowResult>,
    pub link: [LinkStats; 2],
    pub wired_drops: [u64; 2],
    pub trace: TraceTable,
    pub pcap_server: Option<Vec<u8>>,
    pub pcap_mobile: Option<Vec<u8>>,
    /// The split-TCP proxy's counters, if the scenario has one.
    pub proxy: Option<crate::proxy::ProxyStats>,
}

pub struct Sim {
    q: EventQueue<Event>,
    wired: [Wire; 2],
    radio: [Radio; 2],
    /// [side][session]: side 0 = gateway, 1 = mobile; session 0 = ARQ, 1 = bypass.
    arq: [[Arq; 2]; 2],
    arq_sched: [Option<Instant>; 2],
    flows: Vec<Flow>,
    media: Vec<Media>,
    webs: Vec<Web>,
    slots: Vec<Slot>,
    /// Link session of each scenario flow.
    session: Vec<u8>,
    stop: Stop,
    max_time: Instant,
    pending_finite: usize,
    mask: LayerMask,
    trace: TraceTable,
    pcap: [Option<PcapWriter>; 2],
    proxy: Option<crate::proxy::Proxy>,
    proxy_sched: Option<Instant>,
    /// The mobile host's next ephemeral port for session applications.
    next_client_port: u16,
}

impl Sim {
    pub fn new(sc: &Scenario) -> Sim {
        let w = &sc.wireless;
        let mk_wired = |_d: usize| Wire {
            link: WiredLink::new(
                sc.wired.rate.0,
                sc.wired.delay.0,
                build::limit(&sc.wired.queue, Limit::Packets(1000)),
            ),
            in_flight: VecDeque::new(),
        };
        let mk_radio = |d: usize| {
            let spec = if d == 0 { &w.down } else { &w.up };
            let rate = spec.as_ref().and_then(|s| s.rate).map(|r| r.0).unwrap_or(w.rate.0);
            let delay = spec.as_ref().and_then(|s| s.delay).map(|r| r.0).unwrap_or(w.delay.0);
            let header = w.header.0 as u32;
            let airtime = Duration::transmission(w.frame.0 + w.header.0, rate);
            // GPRS: the gateway's ~120 KB downlink buffer (seed 003 §IV-B, seed 004 §III)
            // unless configured; elsewhere 50 packets.
            let gprs = w.arq.as_ref().is_some_and(|a| a.protocol == "gprs");
            let lim = build::limit(&w.queue, if gprs { Limit::Bytes(120_000) } else { Limit::Packets(50) });
            let mux = match w.scheduler.as_deref() {
                Some("arq-first") => Mux::ArqFirst,
                Some("bypass-first") => Mux::BypassFirst,
                _ => Mux::RoundRobin,
            };
            let shared = (w.mux.as_deref() == Some("shared-queue"))
                .then(|| (VecDeque::new(), w.frame_queue.unwrap_or(50) as usize));
            Radio {
                qs: [DropTail::new(lim), DropTail::new(lim)],
                rr: 0,
                mux,
                shared,
                busy: false,
                rate,
                delay,
                header,
                channel: build::channel(sc, d, airtime),
                in_flight: VecDeque::new(),
                stats: LinkStats::default(),
            }
        };
        let mask = LayerMask::from_names(&sc.trace.layers);
        let mut radio = [mk_radio(0), mk_radio(1)];
        if mask.has(Layer::Channel) {
            for r in radio.iter_mut() {
                if let Channel::TwoState(c) = &mut r.channel {
                    c.log = Some(Vec::new());
                }
            }
        }
        let mut q = EventQueue::new();
        let mut flows = Vec::new();
        let mut media = Vec::new();
        let mut webs = Vec::new();
        let mut slots = Vec::new();
        let mut session = Vec::new();
        for (i, f) in sc.flow.iter().enumerate() {
            let start = Instant::ZERO + f.start.map(|d| d.0).unwrap_or(Duration::ZERO);
            let sender = if f.direction == "up" { 1 } else { 0 };
            let bypass = f.link.as_deref().map(|l| l == "bypass").unwrap_or(f.app == "media");
            session.push(bypass as u8);
            if f.app == "media" || f.app == "probe" {
                let rng = Rng::stream(sc.seed, sc.run, &format!("flow.{i}.media"));
                let src = if f.app == "media" {
                    let d = MediaConfig::default();
                    let cfg = MediaConfig {
                        rate: f.rate.map(|r| r.0).unwrap_or(d.rate),
                        packet: f.packet.map(|p| p.0 as u32).unwrap_or(d.packet),
                        talk: f.talk.map(|x| x.0).unwrap_or(d.talk),
                        silence: f.silence.map(|x| x.0).unwrap_or(d.silence),
                    };
                    crate::app::UdpSource::Media(MediaSource::new(cfg, start, rng))
                } else {
                    let d = crate::app::probe::ProbeConfig::default();
                    let cfg = crate::app::probe::ProbeConfig {
                        packet: f.packet.map(|p| p.0 as u32).unwrap_or(d.packet),
                        burst: f.burst.unwrap_or(d.burst),
                        spacing: f.spacing.as_ref().map(|v| (v[0].0, v[1].0)).unwrap_or(d.spacing),
                        bursts: f.messages,
                    };
                    crate::app::UdpSource::Probe(crate::app::probe::ProbeSource::new(cfg, start, rng))
                };
                q.schedule(start, Event::MediaNext(media.len() as u16));
                slots.push(Slot::Media(media.len()));
                media.push(Media {
                    id: i,
                    src,
                    sender,
                    ident: 1,
                    sent_born: vec![],
                    recv_born: vec![],
                    delays: vec![],
                    bytes: 0,
                    start,
                });
                continue;
            }
            if ["web", "ttcp", "http"].contains(&f.app.as_str()) {
                q.schedule(start, Event::WebNext(webs.len() as u16));
                slots.push(Slot::Web(webs.len()));
                webs.push(Web::new(sc, i, f, start));
                continue;
            }
            let mut rng = Rng::stream(sc.seed, sc.run, &format!("flow.{i}.isn"));
            let chat = (f.app == "interactive").then(|| Interactive::new(f));
            let port = f.port.unwrap_or(if chat.is_some() { 23 } else { 5001 });
            let [mut server, mut mobile] = endpoint_pair(f, port, 40000 + i as u16, &mut rng, mask);
            let bytes = match &chat {
                Some(c) => c.total(),
                None => f.bytes.and_then(|b| b.0),
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
            });
        }
        let pending_finite =
            flows.iter().filter(|f| f.bytes.is_some()).count() + webs.iter().filter(|w| w.finite()).count();
        let max_time = match sc.stop {
            Stop::At(d) => Instant::ZERO + d,
            Stop::End => Instant::ZERO + sc.max_time.map(|d| d.0).unwrap_or(Duration::from_secs(100_000)),
        };
        let pcap = if sc.trace.pcap { [Some(PcapWriter::new()), Some(PcapWriter::new())] } else { [None, None] };
        Sim {
            q,
            wired: [mk_wired(0), mk_wired(1)],
            radio,
            arq: [Self::sessions(sc, 0), Self::sessions(sc, 1)],
            arq_sched: [None, None],
            flows,
            media,
            webs,
            slots,
            session,
            stop: sc.stop,
            max_time,
            pending_finite,
            mask,
            trace: TraceTable::default(),
            pcap,
            proxy: build::proxy_config(sc).map(|c| {
                let mut p = crate::proxy::Proxy::new(c);
                if mask.has(Layer::Proxy) {
                    p.trace = Some(vec![]);
                }
                p
            }),
            proxy_sched: None,
            next_client_port: 0,
        }
    }

    fn sessions(sc: &Scenario, side: usize) -> [Arq; 2] {
        [build::arq(sc, side), Arq::Raw(Raw::new(sc.wireless.frame.0 as u32))]
    }

    fn now(&self) -> Instant {
        self.q.now()
    }

    /// Runs to the stop condition and returns the results.
    pub fn run(mut self) -> RunResult {
        while let Some(t) = self.q.peek_time() {
            if t > self.max_time {
                break;
            }
            if self.stop == Stop::End && self.pending_finite == 0 {
                break;
            }
            let (_, ev) = self.q.pop().unwrap();
            self.dispatch(ev);
        }
        let end = match self.stop {
            Stop::At(_) => self.max_time,
            Stop::End => self.now(),
        };
        self.finish(end)
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::FlowStart(f) => {
                let now = self.now();
                self.flows[f as usize].ep[1].connect(now);
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
            Event::WiredArrive(d) => {
                let p = self.wired[d as usize].in_flight.pop_front().expect("packet in flight");
                if d == 1 {
                    self.to_endpoint(0, p);
                } else if self.proxy.is_some() {
                    self.to_proxy(crate::proxy::Side::Wired, p);
                } else {
                    self.enqueue_radio(0, p);
                }
            }
            Event::ProxyTimer => self.proxy_timer(),
            Event::RadioDone(d) => {
                self.radio[d as usize].busy = false;
                self.kick_radio(d as usize);
            }
            Event::FrameArrive(d) => self.frame_arrive(d as usize),
            Event::ArqTimer(s) => {
                let now = self.now();
                if self.arq_sched[s as usize] != Some(now) {
                    return;
                }
                self.arq_sched[s as usize] = None;
                self.arq[s as usize][0].handle_timeout(now);
                self.deliver(s as usize, 0);
                self.kick_radio(s as usize); // also reschedules the ARQ timer
            }
        }
    }

    // ----- TCP endpoints -----
    fn drain_tcp(&mut self, f: usize, end: usize) {
        let now = self.now();
        loop {
            let fl = &mut self.flows[f];
            let Some(seg) = fl.ep[end].poll_transmit(now) else { break };
            let (src, dst) = if end == 0 { (SERVER_ADDR, MOBILE_ADDR) } else { (MOBILE_ADDR, SERVER_ADDR) };
            let ident = fl.ident[end];
            fl.ident[end] = ident.wrapping_add(1);
            let id = fl.id;
            let pkt = Packet::new(src, dst, ident, L4::Tcp(seg.repr), seg.len, id as u16, now);
            if self.mask.has(Layer::Tcp) {
                let (seq, ack) = self.rel_seq_ack(f, end, &seg.repr);
                let ev = if seg.retransmission { Ev::Retransmit } else { Ev::Send };
                self.trace.push(Row {
                    t: now.nanos(),
                    layer: Layer::Tcp,
                    ev,
                    node: if end == 0 { NODE_SERVER } else { NODE_MOBILE },
                    dir: end as u8,
                    flow: id as i32,
                    seq,
                    ack,
                    len: seg.len as i64,
                    value: seg.repr.flags.0 as i64,
                });
            }
            if let Some(w) = &mut self.pcap[end] {
                w.record(now.nanos(), &pkt.emit());
            }
            if end == 0 {
                self.enqueue_wired(0, pkt);
            } else {
                self.enqueue_radio(1, pkt);
            }
        }
        self.drain_vars(f, end);
        self.sched_tcp(f, end);
    }

    fn rel_seq_ack(&self, f: usize, end: usize, r: &crate::wire::TcpRepr) -> (i64, i64) {
        let fl = &self.flows[f];
        let iss = fl.ep[end].iss();
        let peer_iss = fl.ep[1 - end].iss();
        (
            r.seq.wrapping_sub(iss) as i64,
            if r.flags.has(crate::wire::TcpFlags::ACK) { r.ack.wrapping_sub(peer_iss) as i64 } else { -1 },
        )
    }

    fn drain_vars(&mut self, f: usize, end: usize) {
        let fl = &mut self.flows[f];
        let Some(vars) = fl.ep[end].trace.as_mut() else { return };
        let node = if end == 0 { NODE_SERVER } else { NODE_MOBILE };
        let id = fl.id as i32;
        for v in vars.drain(..) {
            let ev = match v.var {
                TcpVar::Cwnd => Ev::Cwnd,
                TcpVar::Ssthresh => Ev::Ssthresh,
                TcpVar::Srtt => Ev::Srtt,
                TcpVar::Rttvar => Ev::Rttvar,
                TcpVar::Rto => Ev::Rto,
                TcpVar::Timeout => Ev::Timeout,
                TcpVar::FastRetransmit => Ev::FastRetransmit,
            };
            self.trace.push(Row {
                t: v.at.nanos(),
                layer: Layer::Tcp,
                ev,
                node,
                dir: end as u8,
                flow: id,
                seq: -1,
                ack: -1,
                len: 0,
                value: v.value.min(i64::MAX / 2),
            });
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
    fn local_sender(&self, p: &Packet) -> Option<usize> {
        let L4::Tcp(r) = &p.l4 else { return None };
        match self.slots[p.flow as usize] {
            Slot::Tcp(f) => Some(f),
            Slot::Web(w) => self.webs[w].ports.get(&r.src_port).copied(),
            Slot::Media(_) => None,
        }
    }

    fn to_endpoint(&mut self, end: usize, p: Packet) {
        let now = self.now();
        if let Some(w) = &mut self.pcap[end] {
            w.record(now.nanos(), &p.emit());
        }
        let f = match self.slots[p.flow as usize] {
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
                m.recv_born.push(p.born.nanos());
                m.delays.push((now - p.born).nanos());
                m.bytes += p.payload_len as u64;
                return;
            }
        };
        let L4::Tcp(repr) = p.l4 else { return };
        if self.mask.has(Layer::Tcp) {
            let (seq, ack) = self.rel_seq_ack(f, 1 - end, &repr);
            self.trace.push(Row {
                t: now.nanos(),
                layer: Layer::Tcp,
                ev: Ev::Recv,
                node: if end == 0 { NODE_SERVER } else { NODE_MOBILE },
                dir: (1 - end) as u8,
                flow: p.flow as i32,
                seq,
                ack,
                len: p.payload_len as i64,
                value: repr.flags.0 as i64,
            });
        }
        let fl = &mut self.flows[f];
        fl.ep[end].on_segment(now, &repr, p.payload_len);
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

    // ----- media sources -----
    fn media_send(&mut self, m: usize) {
        let now = self.now();
        while let Some(size) = self.media[m].src.poll_packet(now) {
            let md = &mut self.media[m];
            let (src, dst) = if md.sender == 0 { (SERVER_ADDR, MOBILE_ADDR) } else { (MOBILE_ADDR, SERVER_ADDR) };
            let port = 6000 + md.id as u16;
            let pkt = Packet::new(
                src,
                dst,
                md.ident,
                L4::Udp(crate::wire::UdpRepr { src_port: port, dst_port: port }),
                size - 28,
                md.id as u16,
                now,
            );
            md.ident = md.ident.wrapping_add(1);
            md.sent_born.push(now.nanos());
            let sender = md.sender;
            if let Some(w) = &mut self.pcap[sender] {
                w.record(now.nanos(), &pkt.emit());
            }
            if sender == 0 {
                self.enqueue_wired(0, pkt);
            } else {
                self.enqueue_radio(1, pkt);
            }
        }
        let next = self.media[m].src.poll_timeout();
        if next <= self.max_time {
            self.q.schedule(next, Event::MediaNext(m as u16));
        }
    }

    // ----- wired link -----
    fn enqueue_wired(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let node = if d == 0 { NODE_SERVER } else { NODE_GATEWAY };
        let (flow, len) = (p.flow as i32, p.size() as i64);
        let w = &mut self.wired[d];
        let arrival = w.link.offer(now, p.size());
        if let Some(t) = arrival {
            w.in_flight.push_back(p);
            self.q.schedule(t, Event::WiredArrive(d as u8));
        }
        if self.mask.has(Layer::Queue) {
            let qlen = self.wired[d].link.queue_len(now) as i64;
            self.trace.push(Row {
                t: now.nanos(),
                layer: Layer::Queue,
                ev: if arrival.is_none() { Ev::Drop } else { Ev::Enqueue },
                node,
                dir: d as u8,
                flow,
                seq: -1,
                ack: -1,
                len,
                value: qlen,
            });
        }
    }

    // ----- wireless link -----
    fn enqueue_radio(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let node = if d == 0 { NODE_GATEWAY } else { NODE_MOBILE };
        let (flow, len) = (p.flow as i32, p.size() as i64);
        let sess = self.session[p.flow as usize] as usize;
        let quench = if d == 1 { self.local_sender(&p) } else { None };
        let r = &mut self.radio[d];
        let dropped = r.qs[sess].push(p).is_err();
        if dropped {
            r.stats.queue_drops += 1;
        }
        if let (true, Some(f)) = (dropped, quench) {
            if self.flows[f].ep[1].config().source_quench {
                self.flows[f].ep[1].source_quench(now);
            }
        }
        let qlen = r.qs[sess].len();
        r.stats.queue_max = r.stats.queue_max.max(qlen as u64);
        if self.mask.has(Layer::Queue) {
            self.trace.push(Row {
                t: now.nanos(),
                layer: Layer::Queue,
                ev: if dropped { Ev::Drop } else { Ev::Enqueue },
                node,
                dir: d as u8,
                flow,
                seq: -1,
                ack: -1,
                len,
                value: qlen as i64,
            });
        }
        self.kick_radio(d);
    }

    /// Takes the next frame from the sessions of direction `d` in multiplexer order.
    fn next_frame(&mut self, d: usize, now: Instant) -> Option<Frame> {
        let r = &mut self.radio[d];
        let order = match r.mux {
            Mux::RoundRobin => [r.rr, 1 - r.rr],
            Mux::ArqFirst => [0, 1],
            Mux::BypassFirst => [1, 0],
        };
        for s in order {
            let arq = &mut self.arq[d][s];
            while arq.wants_packet() {
                match r.qs[s].pop() {
                    Some(p) => arq.send(now, p),
                    None => break,
                }
            }
            if let Some(mut f) = arq.poll_transmit(now) {
                f.session = s as u8;
                r.rr = 1 - s;
                return Some(f);
            }
        }
        None
    }

    /// Shared-queue mode: moves every frame the sessions can produce now into the
    /// frame queue, dropping those that find it full.
    fn fill_shared(&mut self, d: usize, now: Instant) {
        while let Some(f) = self.next_frame(d, now) {
            let r = &mut self.radio[d];
            let (q, limit) = r.shared.as_mut().unwrap();
            if q.len() < *limit {
                q.push_back(f);
                continue;
            }
            r.stats.frame_queue_drops += 1;
            if self.mask.has(Layer::Queue) {
                let flow = if f.flow == u16::MAX { -1 } else { f.flow as i32 };
                self.trace.push(Row {
                    t: now.nanos(),
                    layer: Layer::Queue,
                    ev: Ev::Drop,
                    node: if d == 0 { NODE_GATEWAY } else { NODE_MOBILE },
                    dir: d as u8,
                    flow,
                    seq: f.seq as i64,
                    ack: -1,
                    len: f.size(r.header) as i64,
                    value: *limit as i64,
                });
            }
        }
    }

    fn kick_radio(&mut self, d: usize) {
        let now = self.now();
        if self.radio[d].busy {
            // Pushing frames into the shared queue may have started ARQ timers, and
            // a frame just received may have changed them.
            if self.radio[d].shared.is_some() {
                self.fill_shared(d, now);
            }
            self.sched_arq(d);
            return;
        }
        if self.radio[d].shared.is_some() {
            self.fill_shared(d, now);
        }
        let next = match &mut self.radio[d].shared {
            Some((q, _)) => q.pop_front(),
            None => self.next_frame(d, now),
        };
        if let Some(frame) = next {
            let r = &mut self.radio[d];
            let size = frame.size(r.header);
            let airtime = Duration::transmission(size as u64, r.rate);
            let index = r.stats.frames_sent;
            let lost = r.channel.lose(index, now, airtime, size as u64 * 8);
            r.stats.frames_sent += 1;
            r.stats.bytes_sent += size as u64;
            r.stats.busy_ns += airtime.nanos();
            let ev = match frame.kind {
                FrameKind::Data => {
                    r.stats.data_frames_sent += 1;
                    if frame.tx > 1 {
                        r.stats.frames_retransmitted += 1;
                        Ev::FrameRetransmit
                    } else {
                        Ev::FrameSend
                    }
                }
                FrameKind::Ack => {
                    r.stats.ack_frames += 1;
                    Ev::AckSend
                }
                FrameKind::Nack => {
                    r.stats.nack_frames += 1;
                    Ev::NackSend
                }
                FrameKind::Status => {
                    r.stats.status_frames += 1;
                    Ev::StatusSend
                }
                FrameKind::Idle => {
                    r.stats.idle_frames += 1;
                    Ev::IdleSend
                }
                FrameKind::Reset => {
                    r.stats.reset_frames += 1;
                    Ev::Reset
                }
            };
            if lost {
                r.stats.frames_lost += 1;
            }
            if self.mask.has(Layer::Link) {
                let node = if d == 0 { NODE_GATEWAY } else { NODE_MOBILE };
                let flow = if frame.flow == u16::MAX { -1 } else { frame.flow as i32 };
                let ack = frame.ack.map(|a| a as i64).unwrap_or(-1);
                self.trace.push(Row {
                    t: now.nanos(),
                    layer: Layer::Link,
                    ev,
                    node,
                    dir: d as u8,
                    flow,
                    seq: frame.seq as i64,
                    ack,
                    len: size as i64,
                    value: frame.tx as i64,
                });
                if lost {
                    self.trace.push(Row {
                        t: now.nanos(),
                        layer: Layer::Link,
                        ev: Ev::FrameLost,
                        node,
                        dir: d as u8,
                        flow,
                        seq: frame.seq as i64,
                        ack,
                        len: size as i64,
                        value: frame.tx as i64,
                    });
                }
            }
            if let Channel::TwoState(c) = &mut r.channel {
                if let Some(log) = &mut c.log {
                    for (t, bad) in log.drain(..) {
                        self.trace.push(Row {
                            t: t.nanos(),
                            layer: Layer::Channel,
                            ev: Ev::State,
                            node: if d == 0 { NODE_GATEWAY } else { NODE_MOBILE },
                            dir: d as u8,
                            flow: -1,
                            seq: -1,
                            ack: -1,
                            len: 0,
                            value: bad as i64,
                        });
                    }
                }
            }
            r.busy = true;
            self.q.schedule(now + airtime, Event::RadioDone(d as u8));
            if !lost {
                r.in_flight.push_back(frame);
                self.q.schedule(now + airtime + r.delay, Event::FrameArrive(d as u8));
            }
        }
        self.sched_arq(d);
    }

    fn frame_arrive(&mut self, d: usize) {
        let now = self.now();
        let side = 1 - d;
        let frame = self.radio[d].in_flight.pop_front().expect("frame in flight");
        if self.mask.has(Layer::Link) {
            let flow = if frame.flow == u16::MAX { -1 } else { frame.flow as i32 };
            self.trace.push(Row {
                t: now.nanos(),
                layer: Layer::Link,
                ev: Ev::FrameRecv,
                node: if side == 0 { NODE_GATEWAY } else { NODE_MOBILE },
                dir: d as u8,
                flow,
                seq: frame.seq as i64,
                ack: frame.ack.map(|a| a as i64).unwrap_or(-1),
                len: frame.size(self.radio[d].header) as i64,
                value: frame.tx as i64,
            });
        }
        let sess = frame.session as usize;
        self.arq[side][sess].on_frame(now, frame);
        self.deliver(side, sess);
        self.kick_radio(side); // also reschedules the ARQ timer
    }

    /// Hands on what the link layer of `side` has delivered.
    fn deliver(&mut self, side: usize, sess: usize) {
        let now = self.now();
        let d = 1 - side;
        while let Some(p) = self.arq[side][sess].poll_deliver() {
            if self.mask.has(Layer::Link) {
                self.trace.push(Row {
                    t: now.nanos(),
                    layer: Layer::Link,
                    ev: Ev::PacketDeliver,
                    node: if side == 0 { NODE_GATEWAY } else { NODE_MOBILE },
                    dir: d as u8,
                    flow: p.flow as i32,
                    seq: -1,
                    ack: -1,
                    len: p.size() as i64,
                    value: (now - p.born).nanos(),
                });
            }
            if side == 1 {
                self.to_endpoint(1, p);
            } else if self.proxy.is_some() {
                self.to_proxy(crate::proxy::Side::Wireless, p);
            } else {
                self.enqueue_wired(1, p);
            }
        }
    }

    fn sched_arq(&mut self, s: usize) {
        let now = self.now();
        if let Some(t) = self.arq[s][0].poll_timeout() {
            let t = t.max(now);
            if self.arq_sched[s].is_none_or(|x| t < x) {
                self.arq_sched[s] = Some(t);
                self.q.schedule(t, Event::ArqTimer(s as u8));
            }
        }
    }

    fn finish(mut self, end: Instant) -> RunResult {
        let mut flows = Vec::new();
        for slot in &self.slots {
            flows.push(match *slot {
                Slot::Tcp(t) => {
                    let f = &self.flows[t];
                    let recv = &f.ep[1 - f.sender];
                    let snd = &f.ep[f.sender];
                    let delivered = recv.delivered();
                    let span = (f.completed.unwrap_or(end) - f.start).as_secs_f64();
                    let st = &snd.stats;
                    FlowResult {
                        id: f.id,
                        app: f.cfg.app.clone(),
                        direction: f.cfg.direction.clone(),
                        variant: snd.cfg.variant.name().into(),
                        start_s: f.start.as_secs_f64(),
                        bytes_delivered: delivered,
                        throughput_bps: if span > 0.0 { delivered as f64 * 8.0 / span } else { 0.0 },
                        completion_s: f.completed.map(|c| (c - f.start).as_secs_f64()),
                        tcp_retransmits: st.retransmits,
                        tcp_timeouts: st.timeouts,
                        tcp_fast_retransmits: st.fast_retransmits,
                        rtt_avg_s: (st.rtt_samples > 0).then(|| st.rtt_sum.as_secs_f64() / st.rtt_samples as f64),
                        segments_sent: st.segments_sent,
                        media: f.chat.as_ref().map(|c| c.result()),
                        transactions: None,
                        durations_s: vec![],
                    }
                }
                Slot::Web(w) => {
                    let wb = &self.webs[w];
                    let span = wb.last_done.map(|t| (t - wb.start).as_secs_f64()).unwrap_or(0.0);
                    let sum = |g: &dyn Fn(&crate::tcp::TcpStats) -> u64| {
                        wb.conns.iter().map(|&c| g(&self.flows[c].ep[0].stats)).sum::<u64>()
                    };
                    let (n, rtt): (u64, f64) = wb
                        .conns
                        .iter()
                        .map(|&c| &self.flows[c].ep[0].stats)
                        .fold((0, 0.0), |a, s| (a.0 + s.rtt_samples, a.1 + s.rtt_sum.as_secs_f64()));
                    FlowResult {
                        id: wb.id,
                        app: wb.cfg.app.clone(),
                        direction: "down".into(),
                        variant: build::tcp_config(&wb.cfg).variant.name().into(),
                        start_s: wb.start.as_secs_f64(),
                        bytes_delivered: wb.bytes_done,
                        throughput_bps: if span > 0.0 { wb.bytes_done as f64 * 8.0 / span } else { 0.0 },
                        completion_s: wb.last_done.map(|t| (t - wb.start).as_secs_f64()),
                        tcp_retransmits: sum(&|s| s.retransmits),
                        tcp_timeouts: sum(&|s| s.timeouts),
                        tcp_fast_retransmits: sum(&|s| s.fast_retransmits),
                        rtt_avg_s: (n > 0).then(|| rtt / n as f64),
                        segments_sent: sum(&|s| s.segments_sent),
                        media: None,
                        transactions: Some(wb.done),
                        durations_s: wb.durations.clone(),
                    }
                }
                Slot::Media(m) => {
                    let m = &self.media[m];
                    let span = (end - m.start).as_secs_f64();
                    FlowResult {
                        id: m.id,
                        app: match m.src {
                            crate::app::UdpSource::Media(_) => "media",
                            crate::app::UdpSource::Probe(_) => "probe",
                        }
                        .into(),
                        direction: if m.sender == 0 { "down".into() } else { "up".into() },
                        variant: "udp".into(),
                        start_s: m.start.as_secs_f64(),
                        bytes_delivered: m.bytes,
                        throughput_bps: if span > 0.0 { m.bytes as f64 * 8.0 / span } else { 0.0 },
                        completion_s: None,
                        tcp_retransmits: 0,
                        tcp_timeouts: 0,
                        tcp_fast_retransmits: 0,
                        rtt_avg_s: None,
                        segments_sent: m.sent_born.len() as u64,
                        media: Some(media_result(m, end)),
                        transactions: None,
                        durations_s: vec![],
                    }
                }
            });
        }
        for d in 0..2 {
            if let Arq::Gprs(g) = &self.arq[d][0] {
                self.radio[d].stats.tbf_setups = g.stats.tbf_setups;
                self.radio[d].stats.outages = g.stats.outages;
            }
            if let (Arq::Gsm(tx), Arq::Gsm(rx)) = (&self.arq[d][0], &self.arq[1 - d][0]) {
                let s = &mut self.radio[d].stats;
                s.link_resets = tx.rlp.stats.resets;
                s.flushed_bytes = tx.rlp.stats.flushed_tx + rx.rlp.stats.flushed_rx;
                s.call_dropped = !tx.rlp.is_up() || !rx.rlp.is_up();
                s.ppp_damaged = rx.stats.ppp_damaged;
                s.vj_tossed = rx.stats.vj_tossed;
                s.checksum_drops = rx.stats.checksum_drops;
                s.l2r_busy = rx.stats.l2r_busy;
            }
        }
        for d in 0..2 {
            self.radio[d].stats.arq_timeouts = self.arq[d][0].timeouts();
            self.radio[d].stats.sdu_discards = self.arq[d][0].discards();
            self.radio[d].stats.rate_bps = self.radio[d].rate;
        }
        let [p0, p1] = std::mem::take(&mut self.pcap);
        RunResult {
            events: self.q.popped(),
            sim_time_s: end.as_secs_f64(),
            flows,
            link: [self.radio[0].stats.clone(), self.radio[1].stats.clone()],
            wired_drops: [self.wired[0].link.drops, self.wired[1].link.drops],
            trace: std::mem::take(&mut self.trace),
            pcap_server: p0.map(|w| w.buf),
            pcap_mobile: p1.map(|w| w.buf),
            proxy: self.proxy.as_ref().map(|p| p.stats()),
        }
    }
}

/// A listening server endpoint and an idle mobile endpoint for one connection, ISNs
/// drawn from `rng`, tracing variables when the TCP layer is traced.
fn endpoint_pair(f: &crate::config::FlowCfg, sport: u16, mport: u16, rng: &mut Rng, mask: LayerMask) -> [Tcp; 2] {
    let tcfg = build::tcp_config(f);
    let (iss_s, iss_m) = (rng.next_u64() as u32, rng.next_u64() as u32);
    let mut server = Tcp::new(tcfg, sport, mport, iss_s);
    let mut mobile = Tcp::new(tcfg, mport, sport, iss_m);
    if mask.has(Layer::Tcp) {
        server.trace = Some(Vec::new());
        mobile.trace = Some(Vec::new());
    }
    server.listen();
    [server, mobile]
}

fn media_result(m: &Media, end: Instant) -> MediaResult {
    let cutoff = end.nanos() - Duration::from_secs(5).nanos();
    let sent = m.sent_born.iter().filter(|&&t| t <= cutoff).count();
    let got = m.recv_born.iter().filter(|&&t| t <= cutoff).count();
    let loss = if sent > 0 { 1.0 - got as f64 / sent as f64 } else { 0.0 };
    delay_stats(m.sent_born.len() as u64, m.recv_born.len() as u64, &m.delays, loss)
}

/// Delay statistics over `delays` (ns, in arrival order).
fn delay_stats(sent: u64, received: u64, delays: &[i64], loss: f64) -> MediaResult {
    let mut d = delays.to_vec();
    d.sort_unstable();
    let q = |p: f64| (!d.is_empty()).then(|| d[((d.len() - 1) as f64 * p).round() as usize] as f64 * 1e-9);
    MediaResult {
        packets_sent: sent,
        packets_received: received,
        loss,
        delay_mean_s: (!d.is_empty()).then(|| d.iter().sum::<i64>() as f64 / d.len() as f64 * 1e-9),
        delay_p50_s: q(0.5),
        delay_p95_s: q(0.95),
        delay_max_s: d.last().map(|&x| x as f64 * 1e-9),
        delays_ns: delays.to_vec(),
    }
}

/// Parses, builds and runs a scenario.
pub fn run_scenario(sc: &Scenario) -> RunResult {
    Sim::new(sc).run()
}
