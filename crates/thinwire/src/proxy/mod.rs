//! A transparent split-TCP proxy for the wired/wireless border, sans-IO (seed 003
//! §V "TCP clamp"; seed 004 §IV: flow aggregation, scheduling, flow control and
//! loss recovery). It takes IP packets from either side and a clock, and gives
//! back IP packets for either side and its next wake-up; it knows nothing of the
//! simulator, so a real proxy can drive it from sockets or netfilter.
//!
//! - **Split** (conn.rs): the mobile's SYN is not forwarded; the wired leg (a full
//!   TCP endpoint, `wired_tcp`) opens the connection to the server with the
//!   mobile's address, port and ISN, and when the server answers, the wireless
//!   leg answers the mobile with the server's ISN — one sequence space per
//!   direction across the split. A refusal (RST) reaches the mobile as the
//!   server's RST. The wired leg ACKs data as soon as it is queued at the proxy
//!   ("early ACK", every segment: `wired_tcp.delayed_ack` count 1), but never a
//!   FIN: a FIN is acknowledged only when the other end has acknowledged the
//!   proxy's. RSTs pass through unchanged (same sequence space) and end the split.
//! - **Aggregate** (acb.rs): all connections to one mobile share an Aggregate
//!   Control Block: a fixed window `clamp` (seed 003 §V: the link's
//!   bandwidth-delay product plus ~30 %), one RTT estimate and timer, one list of
//!   unacknowledged segments, counter-based loss recovery, linear back-off.
//! - **Scheduler** (sched.rs): whenever the aggregate's outstanding data is at
//!   least one MSS below the window, the highest-priority class with sendable data
//!   wins, stride scheduling by tickets inside the class; each connection's
//!   receive window at the mobile is respected.
//! - **Flow control** (acb.rs): the window advertised to each wired sender keeps
//!   the aggregate's buffer near (1 + β)·BDP, and is zero during a link stall.
//! - **Tracing**: every queue length, advertised window, scheduler pick, counter,
//!   retransmission, timeout, stall, window change and RTT sample is an [`Event`].
//!
//! Parameters ([`ProxyConfig`], defaults for seed 003/004's "3+1" CS-2 link):
//! `link_rate` 4150 B/s, `link_rtt` 1.8 s, `headroom` 0.3, `clamp` = (1 +
//! headroom)·link_rate·link_rtt = 9.7 KB unless given; `overprovision` β 0.5;
//! `growth` α = one BDP per second; `retransmit_at` 3; `delack_allowance` 200 ms
//! (the mobile's longest usual delayed ACK; acb.rs); `min_rto` 3 s (the
//! uplink's TBF set-up and the mobile's delayed ACK add up to ~1 s of jitter the
//! RTT variance rarely sees: at 1 s, web sessions timed out spuriously),
//! `sack_mobile` true (SACK the mobile's data); `initial_rto` 6 s (also the least wait for a first segment after idle: with
//! set-ups in both directions it can take over 3 s to be acknowledged), `max_rto` 60 s; `mss` 1460; classes: port 23 (telnet)
//! priority 0, everything else priority 1, 100 tickets each; wired leg: SACK,
//! initial window 2, no timestamps, 64 KB buffer, ACK every segment;
//! `synack_retries` 5, `max_half_open` 256; `burst` 1 (segments a scheduler
//! pick sends in a row).
//!
//! Toward the mobile the wireless leg answers as a kernel would (RFC 9293, RFC
//! 5961, Linux `tcp_input.c`, `inet_connection_sock.c`): the SYN-ACK is resent
//! after `initial_rto`, doubling up to `max_rto`, `synack_retries` times, then
//! the unfinished connection is dropped silently (`reqsk_timer_handler`); a new
//! SYN beyond `max_half_open` unfinished ones of a mobile drops the oldest (RFC
//! 4987 §3.4); the mobile's MSS option 0 counts as none (536) and any other is
//! at least 48 (`tcp_min_snd_mss`); its data beyond the window offered is
//! trimmed (§3.10.7.4); a shut window is probed (persist timer, §3.8.6.1, RTO
//! doubling per unanswered probe); a RST resets only at exactly the next
//! sequence number, elsewhere in the window it draws a challenge ACK (RFC 5961
//! §3.2).
//!
//! Simplifications: the wireless leg offers neither timestamps nor window scaling, and keeps no per-connection
//! congestion state (the aggregate's is the only one); UDP and connections the
//! proxy did not see open pass through untouched.
//!
//! The clamp is configured, or with `estimate_clamp` estimated on line as
//! (1 + headroom)·link_rate·min RTT: the minimum RTT, not the smoothed one, since
//! with a window above the BDP the RTT grows with the window and the estimate
//! would feed on itself.
pub mod acb;
mod config;
pub mod conn;
pub mod sched;
mod service;
mod split;
mod streams;
pub mod wired;

use crate::fx::FxMap;
use crate::tcp::buffer::{RecvBuf, SendBuf};
use crate::tcp::rtt::RttEstimator;
use crate::tcp::{CcKind, RecoveryKind, TcpConfig};
use crate::time::{Duration, Instant};
use crate::wire::IpAddress;
use crate::wire::{Packet, TcpFlags, TcpRepr, L4};

/// The smallest MSS the proxy sends to a mobile (Linux `tcp_min_snd_mss`).
const MIN_SND_MSS: u16 = 48;
use acb::{allowance_step, Acb};
pub use config::ProxyConfig;
use conn::{Conn, Phase};
use sched::Stride;
use std::collections::VecDeque;
pub use streams::MobileSnapshot;
pub use wired::{Command, Stream, Wired};

/// Which side of the proxy a packet comes from or goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Wired,
    Wireless,
}

/// A traced proxy decision. `flow` is the packet flow id of the connection (or
/// −1 for the aggregate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Data queued for the connection, not yet sent to the mobile (value = bytes).
    Queue,
    /// Window advertised to the wired sender (value = bytes).
    Window,
    /// The scheduler sent this piece (seq = offset, len, value = class).
    Pick,
    /// A loss counter rose (seq = offset, value = counter).
    Counter,
    /// A segment was sent again (seq, len, value = transmission count).
    Retransmit,
    /// The aggregate timer expired (value = consecutive timeouts).
    Timeout,
    /// The link stalled (value 1) or recovered (0).
    Stall,
    /// The aggregate's usable window (value = bytes).
    Cwnd,
    /// An RTT sample over the wireless leg (value = ns).
    Rtt,
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub at: Instant,
    pub kind: EventKind,
    pub flow: i32,
    pub seq: i64,
    pub len: i64,
    pub value: i64,
}

crate::described! {
    /// The split-TCP proxy's counters, as reported in results.
    #[derive(Clone, Debug, Default)]
    pub struct ProxyStats {
        /// Connections split.
        pub connections: u64 => (info, "count", "", ""),
        /// Segments sent to the mobiles.
        pub segments_sent: u64 => (info, "count", "", ""),
        pub retransmits: u64 => (info, "count", "", ""),
        /// Aggregate timer expiries.
        pub timeouts: u64 => (info, "count", "", ""),
        /// Link stalls (a run of timeouts).
        pub stalls: u64 => (info, "count", "", ""),
        /// Most data held for one mobile host at once (queued or unacknowledged).
        pub max_buffered: u64 => (info, "bytes", "", ""),
        /// Mean RTT over the wireless leg.
        pub rtt_avg_s: Option<f64> => (info, "s", "", ""),
        /// RTT samples over the wireless leg: count and sum.
        #[serde(skip)]
        pub rtt_samples: u64 => (hidden, "count", "", ""),
        #[serde(skip)]
        pub rtt_sum_ns: i64 => (hidden, "ns", "", ""),
        /// The last aggregate's window at the end (the estimate with `estimate_clamp`).
        pub clamp: u64 => (info, "bytes", "", ""),
    }
}

type Key = (IpAddress, u16, IpAddress, u16);

/// How long a closed connection answers late segments
/// (its FIN retransmitted) before its slot is reused: RFC 9293's 2·MSL with an
/// MSL of 30 s, as Linux's TIME_WAIT (60 s).
pub const LINGER: Duration = Duration::from_secs(60);

pub struct Proxy {
    pub cfg: ProxyConfig,
    conns: Vec<Conn>,
    /// Connections not yet closed (the others keep answering late FINs only).
    live: Vec<usize>,
    by_key: FxMap<Key, usize>,
    acbs: Vec<Acb>,
    by_mobile: FxMap<IpAddress, usize>,
    out: VecDeque<(Side, Packet)>,
    /// Stream mode (the daemon): wired legs are kernel sockets driven through
    /// `cmds`, and the wireless leg carries real bytes.
    streams: bool,
    cmds: VecDeque<Command>,
    /// Closed connections, oldest first, and slots free for reuse. A closed
    /// connection keeps answering late FINs for `LINGER`, then its slot and its
    /// 4-tuple are released (at the next connection's open), so memory stays
    /// bounded by the connections of the last `LINGER`, not all the proxy has
    /// ever carried — the daemon's, and a long simulated run's.
    closed: VecDeque<(usize, Instant)>,
    free: Vec<usize>,
    ident: u16,
    /// Trace events not yet taken ([`poll_event`](Self::poll_event)); None when
    /// not tracing.
    trace: Option<VecDeque<Event>>,
    pub stats: ProxyStats,
    /// RSTs from mobiles answered with a challenge ACK (RFC 5961 §3.2), and
    /// those ignored as outside the window.
    pub challenge_acks: u64,
    pub rsts_ignored: u64,
    /// Unfinished handshakes dropped: SYN-ACK retransmissions exhausted, or
    /// evicted by a newer SYN beyond `max_half_open`.
    pub half_open_dropped: u64,
    /// Zero-window probes sent to mobiles (RFC 9293 §3.8.6.1).
    pub window_probes: u64,
    /// The scheduler's candidates during a service round (kept between rounds
    /// for its allocation only; service.rs).
    cands: sched::Candidates,
}

impl Proxy {
    pub fn new(cfg: ProxyConfig) -> Proxy {
        Proxy {
            cfg,
            conns: vec![],
            live: vec![],
            by_key: FxMap::default(),
            acbs: vec![],
            by_mobile: FxMap::default(),
            out: VecDeque::new(),
            streams: false,
            cmds: VecDeque::new(),
            closed: VecDeque::new(),
            free: vec![],
            ident: 1,
            trace: None,
            stats: ProxyStats::default(),
            challenge_acks: 0,
            rsts_ignored: 0,
            half_open_dropped: 0,
            window_probes: 0,
            cands: sched::Candidates::default(),
        }
    }

    /// A proxy whose wired legs are byte streams over kernel sockets (the daemon):
    /// see [`Command`] and the `stream_*` methods.
    pub fn with_streams(cfg: ProxyConfig) -> Proxy {
        Proxy { streams: true, ..Proxy::new(cfg) }
    }

    /// The next packet to send, and the side it goes to.
    pub fn poll_transmit(&mut self) -> Option<(Side, Packet)> {
        self.out.pop_front()
    }

    /// Counters, with the current window of the most recent aggregate.
    pub fn stats(&self) -> ProxyStats {
        let s = &self.stats;
        ProxyStats {
            clamp: self.acbs.last().map_or(self.cfg.clamp_bytes(), |a| a.window()),
            rtt_avg_s: (s.rtt_samples > 0).then(|| s.rtt_sum_ns as f64 * 1e-9 / s.rtt_samples as f64),
            ..s.clone()
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let a = self.acbs.iter().filter_map(|a| a.deadline).min();
        // Per connection: its wired leg's timer, persist timer and SYN-ACK timer.
        let c = self.live.iter().filter_map(|&c| {
            let c = &self.conns[c];
            crate::time::earliest(crate::time::earliest(c.wired.poll_timeout(), c.persist), c.synack_at)
        });
        a.into_iter().chain(c).min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        for c in self.live.clone() {
            if self.conns[c].phase == Phase::Closed {
                continue;
            }
            if self.conns[c].persist.is_some_and(|t| t <= now) {
                self.window_probe(c, now);
            }
            if self.conns[c].synack_at.is_some_and(|t| t <= now) {
                self.synack_timeout(c, now);
                if self.conns[c].phase == Phase::Closed {
                    continue;
                }
            }
            if self.conns[c].wired.poll_timeout().is_some_and(|t| t <= now) {
                if let Some(t) = self.conns[c].wired.tcp() {
                    t.handle_timeout(now);
                }
                self.drain_wired(c, now);
            }
        }
        for a in 0..self.acbs.len() {
            if self.acbs[a].deadline.is_none_or(|t| t > now) {
                continue;
            }
            let (min, max) = (self.cfg.min_rto, self.cfg.max_rto);
            match self.acbs[a].on_timeout(now, min, max) {
                Some(e) => {
                    self.stats.timeouts += 1;
                    let backoff = self.acbs[a].backoff;
                    if backoff == 1 {
                        self.stats.stalls += 1;
                        self.log(now, EventKind::Stall, -1, -1, 0, 1);
                    }
                    self.log(now, EventKind::Timeout, -1, -1, 0, backoff as i64);
                    self.log(now, EventKind::Cwnd, -1, -1, 0, self.cfg.mss as i64);
                    self.emit_entry(&e, now);
                }
                None => self.acbs[a].deadline = None,
            }
            self.service(a, now);
        }
    }

    /// Takes a packet arriving from `from`.
    pub fn on_packet(&mut self, now: Instant, from: Side, p: Packet) {
        let L4::Tcp(r) = p.l4 else { return self.pass(from, p) };
        let key = match from {
            Side::Wireless => (p.ip.src(), r.src_port, p.ip.dst(), r.dst_port),
            Side::Wired => (p.ip.dst(), r.dst_port, p.ip.src(), r.src_port),
        };
        let existing = self
            .by_key
            .get(&key)
            .copied()
            .filter(|&c| self.conns[c].phase != Phase::Closed || !is_syn(&r) || from == Side::Wired);
        if from == Side::Wireless && is_syn(&r) && existing.is_none() {
            return self.open(now, key, &p, &r);
        }
        let Some(c) = existing else { return self.pass(from, p) };
        if self.conns[c].phase == Phase::Closed {
            // Late retransmissions after the close: answer a FIN so the peer can finish.
            if r.flags.has(TcpFlags::FIN) && from == Side::Wireless {
                self.conns[c].ack_owed = true;
                self.flush_acks(c, now);
            }
            return;
        }
        if r.flags.has(TcpFlags::RST) {
            if from == Side::Wireless {
                // RFC 5961 §3.2 (as Linux `tcp_validate_incoming`): only a RST at
                // exactly the next expected sequence number resets; one elsewhere
                // in the window gets a challenge ACK, one outside it nothing.
                let conn = &self.conns[c];
                let d = r.seq.wrapping_sub(conn.irs.wrapping_add(conn.rcv_nxt as u32)) as i32;
                if d != 0 {
                    if d > 0 && (d as u64) < conn.window_to_mobile().max(1) as u64 {
                        self.challenge_acks += 1;
                        self.conns[c].ack_owed = true;
                        self.flush_acks(c, now);
                    } else {
                        self.rsts_ignored += 1;
                    }
                    return;
                }
            }
            if let (Side::Wired, Some(t)) = (from, self.conns[c].wired.tcp()) {
                t.on_segment(now, &r, 0);
            }
            if self.streams {
                self.cmds.push_back(Command::Reset(c));
            } else {
                self.out.push_back((other(from), p));
            }
            return self.close(c, now);
        }
        match from {
            Side::Wired => self.from_server(c, now, &r, p.payload_len),
            Side::Wireless => self.from_mobile(c, now, &r, p.payload_len, p.l4_payload()),
        }
        let a = self.conns[c].acb;
        self.service(a, now);
    }

    fn pass(&mut self, from: Side, p: Packet) {
        self.out.push_back((other(from), p));
    }

    /// Forgets an unfinished handshake as a kernel listener does (the mobile is
    /// told nothing); the server's connection is reset.
    pub(crate) fn drop_half_open(&mut self, c: usize, now: Instant) {
        self.half_open_dropped += 1;
        if self.streams {
            self.cmds.push_back(Command::Reset(c));
        } else if let Some(t) = self.conns[c].wired.tcp() {
            t.abort();
            while let Some(seg) = self.conns[c].wired.tcp().and_then(|t| t.poll_transmit(now)) {
                self.emit(c, Side::Wired, seg.repr, seg.len, now);
            }
        }
        self.close(c, now);
    }

    /// Connection slots held (open, closed within `LINGER`, or free for reuse).
    pub fn slots(&self) -> usize {
        self.conns.len()
    }

    fn emit(&mut self, c: usize, to: Side, h: TcpRepr, len: u32, now: Instant) {
        let conn = &self.conns[c];
        let (src, dst) = match to {
            Side::Wired => (conn.mobile, conn.server),
            Side::Wireless => (conn.server, conn.mobile),
        };
        let p = Packet::new(src, dst, self.ident, L4::Tcp(h), len, conn.flow, now);
        self.ident = self.ident.wrapping_add(1);
        self.out.push_back((to, p));
    }

    /// A wireless-leg segment with real payload bytes.
    fn emit_bytes(&mut self, c: usize, h: TcpRepr, data: &[u8], now: Instant) {
        let conn = &self.conns[c];
        let meta = crate::wire::Meta::new(conn.flow, now);
        let p = Packet::tcp_with_payload(conn.server, conn.mobile, self.ident, h, data, meta);
        self.ident = self.ident.wrapping_add(1);
        self.out.push_back((Side::Wireless, p));
    }

    /// Tells a stream driver to look at the connection again.
    fn wake(&mut self, c: usize) {
        if self.streams && self.cmds.back() != Some(&Command::Wake(c)) {
            self.cmds.push_back(Command::Wake(c));
        }
    }

    fn log(&mut self, at: Instant, kind: EventKind, flow: i32, seq: i64, len: i64, value: i64) {
        if let Some(t) = &mut self.trace {
            t.push_back(Event { at, kind, flow, seq, len, value });
        }
    }

    /// Starts recording the proxy's decisions as [`Event`]s.
    pub fn enable_trace(&mut self) {
        self.trace.get_or_insert_with(VecDeque::new);
    }

    /// The next trace event, oldest first (None when there is none or tracing is off).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.trace.as_mut()?.pop_front()
    }

    /// Connections seen (open or closed), for inspection.
    pub fn connections(&self) -> impl Iterator<Item = &Conn> {
        self.conns.iter()
    }
    /// The aggregate of a mobile host.
    pub fn aggregate(&self, mobile: IpAddress) -> Option<&Acb> {
        self.by_mobile.get(&mobile).map(|&a| &self.acbs[a])
    }
}

fn is_syn(r: &TcpRepr) -> bool {
    r.flags.has(TcpFlags::SYN) && !r.flags.has(TcpFlags::ACK)
}
fn other(s: Side) -> Side {
    match s {
        Side::Wired => Side::Wireless,
        Side::Wireless => Side::Wired,
    }
}
/// A wire sequence number as an offset from `base`, near `reference`.
fn off(base: u32, reference: u64, wire: u32) -> u64 {
    let d = wire.wrapping_sub(base.wrapping_add(reference as u32)) as i32 as i64;
    (reference as i64 + d).max(0) as u64
}
