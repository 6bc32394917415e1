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
use crate::app::media::MediaSource;
use crate::app::web::{Transaction, WebModel};
use crate::app::{probe::ProbeSource, UdpSource};
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
use apps::{Interactive, Web};

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

/// A media (UDP on/off) flow and what its receiver saw.
struct Media {
    id: usize,
    src: crate::app::UdpSource,
    sender: usize,
    /// The mobile host and its address (`mobile_addr`).
    mobile: u16,
    addr: [u8; 4],
    ident: u16,
    /// Birth times of the packets sent and of those received, for the loss ratio.
    sent_born: BornCount,
    recv_born: BornCount,
    delays: Vec<i64>,
    bytes: u64,
    start: Instant,
}

/// Counts birth times and, at the end, how many are at most `end − 5 s` (the
/// media loss ratio's cutoff), keeping only those of the last 5 s: a time at least
/// 5 s before the moment it is counted is certainly before the cutoff, since the
/// run ends no earlier. (A `Vec` of every birth time once made memory grow with
/// simulated time.)
#[derive(Default)]
struct BornCount {
    n: u64,
    before: u64,
    recent: VecDeque<i64>,
}

impl BornCount {
    fn push(&mut self, born: Instant, now: Instant) {
        self.n += 1;
        self.recent.push_back(born.nanos());
        let old = now.nanos() - LOSS_CUTOFF.nanos();
        while self.recent.front().is_some_and(|&b| b <= old) {
            self.recent.pop_front();
            self.before += 1;
        }
    }
    fn at_most(&self, cutoff: i64) -> u64 {
        self.before + self.recent.iter().filter(|&&t| t <= cutoff).count() as u64
    }
}

/// Media packets sent less than this before the end are not counted for loss.
const LOSS_CUTOFF: Duration = Duration::from_secs(5);

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

crate::described! {
    /// One flow's results. Labels say which column of the command line's summary
    /// tables shows a field ("header|format"; groups: `tcp` flows, `media` flows
    /// and interactive messages).
    #[derive(Clone, Debug, Default)]
    pub struct FlowResult {
        /// Index in the scenario's flow list.
        pub id: usize => (info, "count", "flow", "tcp media"),
        pub app: String => (info, "text", "app", "tcp media"),
        pub direction: String => (info, "text", "dir", "tcp media"),
        /// The mobile host (flow key `mobile`, address 10.0.1.(2 + k)).
        pub mobile: u16 => (info, "count", "mobile?", "tcp media"),
        /// TCP algorithms of the sender: the seeds' variant name for `reno` with one of
        /// their recoveries (`newreno`), else `CC+RECOVERY` (`cubic+sack`); `udp` for
        /// media and probes.
        pub variant: String => (info, "text", "tcp", "tcp"),
        pub start_s: f64 => (info, "s", "", ""),
        /// Application bytes delivered in order.
        pub bytes_delivered: u64 => (metric, "bytes", "delivered", "tcp"),
        /// Delivered bits per second from the start to completion (or the end).
        pub throughput_bps: f64 => (metric, "bit/s", "throughput|rate", "tcp"),
        /// Time from the start to the last byte (None: not finished).
        pub completion_s: Option<f64> => (metric, "s", "complete|s", "tcp"),
        /// Data segments (payload > 0) the sender sent again.
        pub tcp_retransmits: u64 => (metric, "count", "rexmits", "tcp"),
        /// SYNs and SYN-ACKs sent again, by either end (the connection's set-up;
        /// web flows: summed over their connections).
        pub tcp_syn_retransmits: u64 => (metric, "count", "SYN rexmit?", "tcp"),
        /// FINs sent again without data, by either end.
        pub tcp_fin_retransmits: u64 => (metric, "count", "FIN rexmit?", "tcp"),
        /// Expiries of the sender's retransmission timer: each resent data, a
        /// SYN-ACK or a FIN (so a timeout need not show in `tcp_retransmits`).
        pub tcp_timeouts: u64 => (metric, "count", "RTOs", "tcp"),
        /// Fast recoveries entered (losses found without a timeout).
        pub tcp_fast_retransmits: u64 => (metric, "count", "FR", "tcp"),
        /// Of the timeouts, those shown spurious and undone (timestamps, DSACK or
        /// F-RTO; Linux `TCPLossUndo` + `TCPSpuriousRTOs`).
        pub tcp_spurious_timeouts: u64 => (metric, "count", "spurious?", "tcp"),
        /// Tail loss probes sent (RACK-TLP; Linux `TCPLossProbes`).
        pub tcp_loss_probes: u64 => (metric, "count", "TLP?", "tcp"),
        /// Retransmissions found lost again (RACK; Linux `TCPLostRetransmit`).
        pub tcp_lost_retransmits: u64 => (metric, "count", "", ""),
        /// Loss episodes undone as needless (timeouts and fast recoveries).
        pub tcp_undos: u64 => (metric, "count", "undo?", "tcp"),
        /// DSACK blocks the sender received (RFC 2883; Linux `TCPDSACKRecv`).
        pub tcp_dsacks: u64 => (metric, "count", "", ""),
        /// Window reductions for an ECN echo (RFC 3168; Linux CWR entries).
        pub tcp_ecn_reductions: u64 => (metric, "count", "ECN?", "tcp"),
        /// Data segments the receiver got marked CE.
        pub tcp_ce_received: u64 => (metric, "count", "", ""),
        /// Slow starts ended by HyStart (CUBIC; Linux `TCPHystartTrainDetect` +
        /// `TCPHystartDelayDetect`).
        pub tcp_hystart_exits: u64 => (metric, "count", "", ""),
        /// The sender's pacing rate at the end (bit/s; BBR paces, the others do not).
        pub tcp_pacing_rate_bps: Option<f64> => (metric, "bit/s", "", ""),
        /// Mean of the RTT samples the sender's estimator took, the handshake's
        /// included: with timestamps one per ACK (the echo), without them one timed
        /// segment at a time (BSD, Karn's rule), with `rto = "linux"` the oldest
        /// segment each ACK newly covers. A capture's RTT (`thinwire analyze`,
        /// tcptrace) samples every data segment sent once, so the two differ.
        pub rtt_avg_s: Option<f64> => (metric, "s", "avg RTT|ms", "tcp"),
        pub segments_sent: u64 => (info, "count", "", ""),
        /// Web, http, ttcp: completed transactions (pages, downloads).
        pub transactions: Option<u64> => (info, "count", "", ""),
        /// Web, http, ttcp: each completed transaction's duration, from its first
        /// connection request to its last byte (ttcp: to the FIN).
        pub durations_s: Vec<f64> => (info, "list", "", ""),
        /// Media, probe: packets sent; interactive: messages written.
        pub packets_sent: Option<u64> => (metric, "count", "sent", "media"),
        pub packets_received: Option<u64> => (metric, "count", "received", "media"),
        /// Share of packets sent at least 5 s before the end that never arrived.
        pub loss: Option<f64> => (metric, "ratio", "loss|%", "media"),
        /// One-way delay (interactive: write to delivery) statistics.
        pub delay_mean_s: Option<f64> => (metric, "s", "mean delay|ms", "media"),
        pub delay_p50_s: Option<f64> => (metric, "s", "", ""),
        pub delay_p95_s: Option<f64> => (metric, "s", "p95 delay|ms", "media"),
        pub delay_max_s: Option<f64> => (metric, "s", "max delay|ms", "media"),
        /// Every received packet's one-way delay, in arrival order (ns).
        #[serde(skip)]
        pub delays_ns: Vec<i64> => (hidden, "ns", "", ""),
    }
}

impl FlowResult {
    /// Media statistics, for media, probe and interactive flows.
    /// The sender's counters (`snd`) and the receiver's (`rcv`).
    fn with_tcp(mut self, snd: &crate::tcp::TcpStats, rcv: &crate::tcp::TcpStats, pacing: Option<u64>) -> FlowResult {
        self.tcp_retransmits = snd.retransmits;
        self.tcp_syn_retransmits = snd.syn_retransmits + rcv.syn_retransmits;
        self.tcp_fin_retransmits = snd.fin_retransmits + rcv.fin_retransmits;
        self.tcp_timeouts = snd.timeouts;
        self.tcp_fast_retransmits = snd.fast_retransmits;
        self.tcp_spurious_timeouts = snd.spurious_timeouts;
        self.tcp_loss_probes = snd.loss_probes;
        self.tcp_lost_retransmits = snd.lost_retransmits;
        self.tcp_undos = snd.undos;
        self.tcp_dsacks = snd.dsacks_received;
        self.tcp_ecn_reductions = snd.ecn_reductions;
        self.tcp_ce_received = rcv.ce_received;
        self.tcp_hystart_exits = snd.hystart_exits;
        self.tcp_pacing_rate_bps = pacing.map(|r| r as f64 * 8.0);
        self.rtt_avg_s = (snd.rtt_samples > 0).then(|| snd.rtt_sum.as_secs_f64() / snd.rtt_samples as f64);
        self.segments_sent = snd.segments_sent;
        self
    }

    fn with_media(mut self, m: Option<MediaResult>) -> FlowResult {
        if let Some(m) = m {
            self.packets_sent = Some(m.packets_sent);
            self.packets_received = Some(m.packets_received);
            self.loss = Some(m.loss);
            self.delay_mean_s = m.delay_mean_s;
            self.delay_p50_s = m.delay_p50_s;
            self.delay_p95_s = m.delay_p95_s;
            self.delay_max_s = m.delay_max_s;
            self.delays_ns = m.delays_ns;
        }
        self
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// `stop = "end"`: every flow that ends by itself finished.
    Finished,
    /// `stop` is a duration and that time was reached.
    StopTime,
    /// `stop = "end"` but `max_time` came first: some flows did not finish.
    MaxTime,
    /// Nothing was left to happen while flows had not finished: they wait for ever
    /// (a window that never opens, a flow starting after `max_time`).
    Idle,
    /// Simulated time stopped advancing: [`STUCK_EVENTS`] events at one instant
    /// (a timer of zero length firing again and again). A model or range bug.
    Stuck,
    /// The caller's poll asked to stop (Ctrl-C).
    Interrupted,
}

impl EndReason {
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Finished => "finished",
            EndReason::StopTime => "stop",
            EndReason::MaxTime => "max_time",
            EndReason::Idle => "idle",
            EndReason::Stuck => "stuck",
            EndReason::Interrupted => "interrupted",
        }
    }
}

/// Events at one simulated instant after which a run counts as stuck.
pub const STUCK_EVENTS: u64 = 20_000_000;
/// How often (in events) a run asks its caller whether to stop.
pub const POLL_EVERY: u64 = 1 << 16;

#[derive(Clone, Debug)]
pub struct RunResult {
    /// Why the run ended.
    pub end: EndReason,
    /// Scenario flows that end by themselves but had not finished at the end.
    pub unfinished: Vec<usize>,
    pub events: u64,
    pub sim_time_s: f64,
    pub flows: Vec<FlowResult>,
    pub link: [LinkStats; 2],
    pub wired_drops: [u64; 2],
    /// The wired queues' counters (drops, the discipline's drops, ECN marks).
    pub wired: [crate::queue::wired::WiredStats; 2],
    /// Trace rows, when kept in memory (empty when streamed to `trace.parquet`).
    pub trace: TraceTable,
    /// Trace rows recorded, in memory or streamed.
    pub trace_rows: usize,
    /// pcap taps, when kept in memory.
    pub pcap_server: Option<Vec<u8>>,
    pub pcap_mobile: Option<Vec<u8>>,
    /// mm-link-format logs of the wireless link (down, up), when kept in memory.
    pub mm_logs: Option<[Vec<u8>; 2]>,
    /// Files streamed into the output folder ([`Sim::with_output_dir`]), complete.
    pub files: Vec<&'static str>,
    /// The first error writing a streamed file (file and reason); the run stopped
    /// at its next poll and the files are incomplete.
    pub output_error: Option<String>,
    /// The split-TCP proxy's counters, if the scenario has one.
    pub proxy: Option<crate::proxy::ProxyStats>,
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
            if let FlowCfg::Media(_) | FlowCfg::Probe(_) = f {
                let rng = Rng::stream(sc.seed, sc.run, &format!("flow.{i}.media"));
                let src = match f {
                    FlowCfg::Media(c) => UdpSource::Media(MediaSource::new(build::media(c), start, rng)),
                    FlowCfg::Probe(c) => UdpSource::Probe(ProbeSource::new(build::probe(c), start, rng)),
                    _ => unreachable!(),
                };
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
            let mut rng = Rng::stream(sc.seed, sc.run, &format!("flow.{i}.isn"));
            let chat = match f {
                FlowCfg::Interactive(c) => Some(Interactive::new(build::interactive(c))),
                _ => None,
            };
            let port = match (f, &chat) {
                (FlowCfg::Bulk(b), _) => b.port.unwrap_or(build::BULK_PORT),
                (_, Some(c)) => c.port(),
                _ => unreachable!("bulk or interactive"),
            };
            let [mut server, mut mobile] = endpoint_pair(f, port, 40000 + i as u16, &mut rng, mask);
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
                    p.trace = Some(vec![]);
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

    /// The wireless link, for tests that set it up differently.
    #[doc(hidden)]
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
        let Some(vars) = fl.ep[end].trace_vars() else { return };
        let id = fl.id as i32;
        for v in vars.drain(..) {
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

    // ----- media sources -----
    fn media_send(&mut self, m: usize) {
        let now = self.now();
        while let Some(size) = self.media[m].src.poll_packet(now) {
            let md = &mut self.media[m];
            let (src, dst) = if md.sender == 0 { (SERVER_ADDR, md.addr) } else { (md.addr, SERVER_ADDR) };
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
            md.sent_born.push(now, now);
            let sender = md.sender;
            tap(&mut self.pcap[sender], now, &pkt);
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
        let mut unfinished = vec![];
        for slot in &self.slots {
            match *slot {
                Slot::Tcp(t) if self.flows[t].bytes.is_some() && self.flows[t].completed.is_none() => {
                    unfinished.push(self.flows[t].id)
                }
                Slot::Web(w) if self.webs[w].unfinished() => unfinished.push(self.webs[w].id),
                _ => {}
            }
        }
        let mut flows = Vec::new();
        for slot in &self.slots {
            flows.push(match *slot {
                Slot::Tcp(t) => {
                    let f = &self.flows[t];
                    let recv = &f.ep[1 - f.sender];
                    let snd = &f.ep[f.sender];
                    let delivered = recv.delivered();
                    let span = (f.completed.unwrap_or(end) - f.start).as_secs_f64();
                    FlowResult {
                        id: f.id,
                        app: f.cfg.app().into(),
                        direction: f.cfg.direction().name().into(),
                        mobile: f.cfg.mobile(),
                        variant: snd.cfg.variant_name(),
                        start_s: f.start.as_secs_f64(),
                        bytes_delivered: delivered,
                        throughput_bps: if span > 0.0 { delivered as f64 * 8.0 / span } else { 0.0 },
                        completion_s: f.completed.map(|c| (c - f.start).as_secs_f64()),
                        ..FlowResult::default()
                    }
                    .with_tcp(snd.stats(), recv.stats(), snd.pacing_rate())
                    .with_media(f.chat.as_ref().map(|c| c.result()))
                }
                Slot::Web(w) => {
                    let wb = &self.webs[w];
                    let span = wb.last_done.map(|t| (t - wb.start).as_secs_f64()).unwrap_or(0.0);
                    // Every connection's counters; each connection's server sends.
                    let (mut snd, mut rcv) = (crate::tcp::TcpStats::default(), crate::tcp::TcpStats::default());
                    for &c in &wb.conns {
                        snd += self.flows[c].ep[0].stats();
                        rcv += self.flows[c].ep[1].stats();
                    }
                    FlowResult {
                        id: wb.id,
                        app: wb.cfg.app().into(),
                        direction: "down".into(),
                        mobile: wb.cfg.mobile(),
                        variant: build::tcp_config(&wb.cfg).variant_name(),
                        start_s: wb.start.as_secs_f64(),
                        bytes_delivered: wb.bytes_done,
                        throughput_bps: if span > 0.0 { wb.bytes_done as f64 * 8.0 / span } else { 0.0 },
                        completion_s: wb.last_done.map(|t| (t - wb.start).as_secs_f64()),
                        transactions: Some(wb.done),
                        durations_s: wb.durations.clone(),
                        ..FlowResult::default()
                    }
                    .with_tcp(&snd, &rcv, None)
                    .with_media(None)
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
                        mobile: m.mobile,
                        variant: "udp".into(),
                        start_s: m.start.as_secs_f64(),
                        bytes_delivered: m.bytes,
                        throughput_bps: if span > 0.0 { m.bytes as f64 * 8.0 / span } else { 0.0 },
                        completion_s: None,
                        segments_sent: m.sent_born.n,
                        ..FlowResult::default()
                    }
                    .with_media(Some(media_result(m, end)))
                }
            });
        }
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

/// A listening server endpoint and an idle mobile endpoint for one connection, ISNs
/// drawn from `rng`, tracing variables when the TCP layer is traced.
fn endpoint_pair(f: &crate::config::FlowCfg, sport: u16, mport: u16, rng: &mut Rng, mask: LayerMask) -> [Tcp; 2] {
    let tcfg = build::tcp_config(f);
    let (iss_s, iss_m) = (rng.next_u64() as u32, rng.next_u64() as u32);
    let mut server = Tcp::new(tcfg, sport, mport, iss_s);
    let mut mobile = Tcp::new(tcfg, mport, sport, iss_m);
    if mask.has(Layer::Tcp) {
        server.enable_trace();
        mobile.enable_trace();
    }
    server.listen();
    [server, mobile]
}

fn media_result(m: &Media, end: Instant) -> MediaResult {
    let cutoff = end.nanos() - LOSS_CUTOFF.nanos();
    let sent = m.sent_born.at_most(cutoff);
    let got = m.recv_born.at_most(cutoff);
    let loss = if sent > 0 { 1.0 - got as f64 / sent as f64 } else { 0.0 };
    delay_stats(m.sent_born.n, m.recv_born.n, &m.delays, loss)
}

/// Delay statistics over `delays` (ns, in arrival order).
fn delay_stats(sent: u64, received: u64, delays: &[i64], loss: f64) -> MediaResult {
    // Order statistics by selection, not a full sort (a sort of every delay was 2 %
    // of the study mix's instructions: bench/RESULTS.md).
    let mut d = delays.to_vec();
    let mut q = |p: f64| {
        let i = ((d.len().checked_sub(1)?) as f64 * p).round() as usize;
        Some(*d.select_nth_unstable(i).1 as f64 * 1e-9)
    };
    let (p50, p95) = (q(0.5), q(0.95));
    MediaResult {
        packets_sent: sent,
        packets_received: received,
        loss,
        delay_mean_s: (!d.is_empty()).then(|| d.iter().sum::<i64>() as f64 / d.len() as f64 * 1e-9),
        delay_p50_s: p50,
        delay_p95_s: p95,
        delay_max_s: d.iter().max().map(|&x| x as f64 * 1e-9),
        delays_ns: delays.to_vec(),
    }
}

/// Parses, builds and runs a scenario.
pub fn run_scenario(sc: &Scenario) -> RunResult {
    Sim::new(sc).run()
}

#[cfg(test)]
mod tests {
    use super::delay_stats;

    /// The selected order statistics are those of the sorted delays.
    #[test]
    fn delay_percentiles_match_a_sort() {
        let mut rng = crate::rng::Rng::stream(1, 0, "delays");
        for n in [0usize, 1, 2, 3, 10, 101, 1000] {
            let delays: Vec<i64> = (0..n).map(|_| rng.below(5000) as i64).collect();
            let r = delay_stats(n as u64, n as u64, &delays, 0.0);
            let mut s = delays.clone();
            s.sort_unstable();
            let at = |p: f64| (!s.is_empty()).then(|| s[((s.len() - 1) as f64 * p).round() as usize] as f64 * 1e-9);
            assert_eq!(r.delay_p50_s, at(0.5), "n = {n}");
            assert_eq!(r.delay_p95_s, at(0.95), "n = {n}");
            assert_eq!(r.delay_max_s, s.last().map(|&v| v as f64 * 1e-9), "n = {n}");
            assert_eq!(r.delays_ns, delays, "arrival order kept");
        }
    }
}
