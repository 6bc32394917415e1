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
use crate::link::path::WiredTimer;
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
mod links;
mod media;
mod results;
mod setup;
mod tcp;
use apps::{Interactive, Web};
pub use media::MediaResult;
use media::{BornCount, Media};
pub use results::{EndReason, FlowResult, RunResult};

pub const SERVER_ADDR: [u8; 4] = [10, 0, 0, 1];

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Event {
    FlowStart(u16),
    /// The mobile's application aborts flow `.0` (`abort` of a bulk flow).
    FlowAbort(u16),
    /// A TCP end's timer: connection (index in `flows`, which a session's many
    /// connections reach beyond 16 bits), end.
    TcpTimer(u32, u8),
    MediaNext(u16),
    WebNext(u16),
    Tick(u16),
    /// A wired link's packet arrives, or its transmitter is free.
    Wired(WiredTimer),
    Link(LinkTimer),
    ProxyTimer,
}

impl From<LinkTimer> for Event {
    fn from(t: LinkTimer) -> Event {
        Event::Link(t)
    }
}

impl From<WiredTimer> for Event {
    fn from(t: WiredTimer) -> Event {
        Event::Wired(t)
    }
}

pub use crate::link::wireless::LinkStats;

struct Flow {
    /// Index in the scenario's flow list (carried by packets and traces).
    id: usize,
    cfg: crate::config::FlowCfg,
    ep: [Tcp; 2],
    sched: [Option<Instant>; 2],
    /// The latest time a `TcpTimer` of this connection was scheduled for: once
    /// it has passed, no event names it, and a session may reuse its place.
    timers_until: Instant,
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
        // The link may send an idle stretch's frames ahead of their wake-ups,
        // up to the next event (`WirelessLink::run_ahead`).
        self.q.allow_run_ahead(self.max_time);
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
            Event::Wired(t) => {
                let now = self.now();
                crate::link::path::wired_timer(self, now, t);
            }
            Event::ProxyTimer => self.proxy_timer(),
            Event::Link(t) => {
                let now = self.now();
                crate::link::path::link_timer(self, now, t);
            }
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
