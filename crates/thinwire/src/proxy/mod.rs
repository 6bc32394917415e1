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
//! `synack_retries` 5, `max_half_open` 256.
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
pub mod conn;
pub mod sched;
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

#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Wireless downlink rate, bytes per second.
    pub link_rate: u64,
    /// Typical round-trip time over the wireless link.
    pub link_rtt: Duration,
    pub headroom: f64,
    /// The aggregate's congestion controller (acb.rs); default `clamp`, the
    /// seeds' fixed window.
    pub cc: CcKind,
    /// Initial window of a controller other than `clamp`, in segments; default 10.
    pub initial_window: u32,
    /// Fixed window; default (1 + headroom)·link_rate·link_rtt.
    pub clamp: Option<u64>,
    /// Estimate the clamp on line: (1 + headroom)·link_rate·(minimum RTT sampled
    /// over the wireless leg), from the first sample on (until then as configured).
    pub estimate_clamp: bool,
    pub overprovision: f64,
    /// Allowance growth α in bytes per second; default one BDP per second.
    pub growth: Option<f64>,
    pub retransmit_at: u32,
    /// Feedback on another connection raises a segment's loss counter only if
    /// the acknowledged segment was sent at least this long after it (acb.rs).
    pub delack_allowance: Duration,
    pub min_rto: Duration,
    pub initial_rto: Duration,
    pub max_rto: Duration,
    pub mss: u32,
    /// SACK the mobile's out-of-order data (when the mobile offers SACK).
    pub sack_mobile: bool,
    /// (server port, priority class, tickets); other ports get `default_class`.
    pub classes: Vec<(u16, u8, u32)>,
    pub default_class: (u8, u32),
    pub wired_tcp: TcpConfig,
    /// SYN-ACK retransmissions before a mobile's unfinished handshake is
    /// dropped (Linux `tcp_synack_retries`); the first after `initial_rto`,
    /// doubling, at most `max_rto`.
    pub synack_retries: u32,
    /// Unfinished handshakes held per mobile; a new SYN beyond drops the oldest,
    /// so a SYN flood cannot hold a mobile's connection slots.
    pub max_half_open: usize,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        let mut wired = TcpConfig::profile("linux-2.4").expect("linux-2.4 profile");
        wired.recovery = RecoveryKind::Sack;
        wired.timestamps = false;
        wired.rcv_wnd_initial = None;
        wired.slow_start_after_idle = false;
        wired.delack_count = 1;
        ProxyConfig {
            link_rate: 4150,
            link_rtt: Duration::from_millis(1800),
            headroom: 0.3,
            cc: CcKind::Clamp,
            initial_window: 10,
            clamp: None,
            estimate_clamp: false,
            overprovision: 0.5,
            growth: None,
            retransmit_at: 3,
            delack_allowance: Duration::from_millis(200),
            min_rto: Duration::from_secs(3),
            initial_rto: Duration::from_secs(6),
            max_rto: Duration::from_secs(60),
            mss: 1460,
            sack_mobile: true,
            classes: vec![(23, 0, 100)],
            default_class: (1, 100),
            wired_tcp: wired,
            synack_retries: 5,
            max_half_open: 256,
        }
    }
}

impl ProxyConfig {
    pub fn bdp(&self) -> f64 {
        self.link_rate as f64 * self.link_rtt.as_secs_f64()
    }
    /// The aggregate's window: `clamp`, or (1 + headroom)·BDP; never below one
    /// segment, since a smaller window lets nothing through (a slow `link_rate`
    /// once deadlocked every connection).
    pub fn clamp_bytes(&self) -> u64 {
        self.clamp.unwrap_or(((1.0 + self.headroom) * self.bdp()).round() as u64).max(self.mss as u64)
    }
    pub fn target(&self) -> f64 {
        (1.0 + self.overprovision) * self.bdp()
    }
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

/// How long a closed connection of a stream-mode proxy answers late segments
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
    /// Stream mode: closed connections, oldest first, and slots free for reuse.
    /// A closed connection keeps answering late FINs for `LINGER`, then its slot
    /// and its 4-tuple are released, so a daemon's memory stays bounded by the
    /// connections of the last `LINGER`, not all it has ever carried. (The
    /// simulator keeps every connection, for its per-connection results.)
    closed: VecDeque<(usize, Instant)>,
    free: Vec<usize>,
    ident: u16,
    pub trace: Option<Vec<Event>>,
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
            [c.wired.poll_timeout(), c.persist, c.synack_at].into_iter().flatten().min()
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

    fn open(&mut self, now: Instant, key: Key, p: &Packet, r: &TcpRepr) {
        let (mobile, mport, server, sport) = key;
        let a = match self.by_mobile.get(&mobile) {
            Some(&a) => a,
            None => {
                let rtt = RttEstimator::new(
                    self.cfg.initial_rto,
                    Duration::from_millis(10),
                    self.cfg.min_rto,
                    self.cfg.max_rto,
                );
                let (cc, iw, mss) = (self.cfg.cc, self.cfg.initial_window, self.cfg.mss as u64);
                self.acbs.push(Acb::new(mobile, cc, self.cfg.clamp_bytes(), mss, iw, rtt));
                self.by_mobile.insert(mobile, self.acbs.len() - 1);
                self.acbs.len() - 1
            }
        };
        self.reap(now);
        // A full table of unfinished handshakes for this mobile: the oldest goes.
        let mut half = self.acbs[a].conns.iter().copied().filter(|&c| self.conns[c].half_open());
        if let Some(oldest) = half.next() {
            if 1 + half.count() >= self.cfg.max_half_open.max(1) {
                self.drop_half_open(oldest, now);
            }
        }
        let c = self.free.pop().unwrap_or(self.conns.len());
        let wired = if self.streams {
            self.cmds.push_back(Command::Connect { conn: c, mobile: (mobile, mport), server: (server, sport) });
            Wired::Stream(Stream::default())
        } else {
            let mut t = crate::tcp::Tcp::new(self.cfg.wired_tcp, mport, sport, r.seq);
            t.connect(now);
            Wired::Tcp(Box::new(t))
        };
        let (class, tickets) =
            self.cfg.classes.iter().find(|c| c.0 == sport).map(|c| (c.1, c.2)).unwrap_or(self.cfg.default_class);
        // RFC 9293 §3.7.1 as Linux reads the option (`tcp_parse_options`, and
        // `tcp_min_snd_mss` = 48): 0 means none (536), anything else at least 48.
        let offered = r.mss.filter(|&m| m > 0).unwrap_or(536).max(MIN_SND_MSS);
        let mss = (self.cfg.mss as u64).min(offered as u64);
        let conn = Conn {
            flow: p.meta.flow,
            mobile,
            server,
            mport,
            sport,
            acb: a,
            phase: Phase::Connecting,
            wired,
            down: self.streams.then(SendBuf::default),
            up: self.streams.then(RecvBuf::default),
            iss: 0,
            irs: r.seq,
            established: false,
            mss,
            sack: r.sack_permitted && self.cfg.sack_mobile,
            snd_una: 1,
            snd_nxt: 1,
            rwnd: r.window as u64,
            fin_at: None,
            fin_sent: false,
            fin_acked: false,
            rcv_nxt: 1,
            ooo: Default::default(),
            mobile_fin_at: None,
            mobile_fin_in: false,
            mobile_fin_acked: false,
            ack_owed: false,
            persist: None,
            persist_backoff: 0,
            synack_at: None,
            synack_timeouts: 0,
            class,
            tickets,
            pass: 0,
            allowance: 0.0,
            fc_at: now,
            last_cap: None,
            last_queue: 0,
        };
        if c == self.conns.len() {
            self.conns.push(conn);
        } else {
            self.conns[c] = conn;
        }
        self.by_key.insert(key, c);
        self.live.push(c);
        self.stats.connections += 1;
        self.acbs[a].conns.push(c);
        self.start_allowance(c, now);
        self.drain_wired(c, now);
    }

    /// A new connection's allowance: its share of the aggregate's buffer target.
    fn start_allowance(&mut self, c: usize, now: Instant) {
        let a = self.conns[c].acb;
        let n = self.acbs[a].conns.len().max(1) as f64;
        let lo = 2.0 * self.cfg.mss as f64;
        let w = (self.cfg.target() / n).max(lo);
        let conn = &mut self.conns[c];
        conn.allowance = w;
        conn.fc_at = now;
        conn.wired.set_window_cap(Some(w as u64));
        conn.last_cap = Some(w as u64);
        let flow = conn.flow as i32;
        self.log(now, EventKind::Window, flow, -1, 0, w as i64);
    }

    fn from_server(&mut self, c: usize, now: Instant, r: &TcpRepr, len: u32) {
        let conn = &mut self.conns[c];
        let mut seg = *r;
        if r.flags.has(TcpFlags::FIN) && !conn.fin_acked {
            // Hold the FIN: the wired leg must not acknowledge it yet.
            let off = (r.seq.wrapping_sub(conn.iss) as u64) + len as u64;
            if conn.phase == Phase::Open {
                conn.fin_at = Some(off);
            }
            seg.flags = TcpFlags(seg.flags.0 & !TcpFlags::FIN);
            if len == 0 && !seg.flags.has(TcpFlags::ACK) {
                return;
            }
        }
        let was_connecting = conn.phase == Phase::Connecting;
        let Some(t) = conn.wired.tcp() else { return };
        t.on_segment(now, &seg, len);
        if was_connecting
            && r.flags.has(TcpFlags::SYN)
            && r.flags.has(TcpFlags::ACK)
            && t.state == crate::tcp::State::Established
        {
            conn.phase = Phase::Open;
            conn.iss = r.seq;
            self.send_synack(c, now);
        }
        self.drain_wired(c, now);
    }

    /// Sends (or resends) the SYN-ACK and arms its timer: the first after
    /// `initial_rto`, doubling per expiry, at most `max_rto` (Linux
    /// `reqsk_timer_handler`: `TCP_TIMEOUT_INIT << num_timeout`, capped).
    fn send_synack(&mut self, c: usize, now: Instant) {
        let conn = &self.conns[c];
        let mut h = conn.header(0, TcpFlags::SYN | TcpFlags::ACK);
        h.ack = conn.irs.wrapping_add(1);
        h.mss = Some(self.cfg.mss as u16);
        h.sack_permitted = conn.sack;
        self.emit(c, Side::Wireless, h, 0, now);
        let k = self.conns[c].synack_timeouts.min(16);
        let wait = (self.cfg.initial_rto * (1i64 << k)).min(self.cfg.max_rto);
        self.conns[c].synack_at = Some(now + wait);
    }

    /// The SYN-ACK went unacknowledged: resend it, or after `synack_retries`
    /// resends drop the unfinished connection.
    fn synack_timeout(&mut self, c: usize, now: Instant) {
        let conn = &mut self.conns[c];
        conn.synack_at = None;
        if !conn.half_open() {
            return;
        }
        if conn.synack_timeouts >= self.cfg.synack_retries {
            return self.drop_half_open(c, now);
        }
        conn.synack_timeouts += 1;
        self.send_synack(c, now);
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

    fn from_mobile(&mut self, c: usize, now: Instant, r: &TcpRepr, len: u32, payload: Option<&[u8]>) {
        if is_syn(r) {
            // The mobile did not get our SYN-ACK.
            if self.conns[c].phase == Phase::Open && !self.conns[c].established {
                self.send_synack(c, now);
            }
            return;
        }
        let conn = &mut self.conns[c];
        if conn.phase != Phase::Open {
            return;
        }
        if r.flags.has(TcpFlags::ACK) {
            let acked =
                conn.snd_una + (r.ack.wrapping_sub(conn.iss.wrapping_add(conn.snd_una as u32)) as i32).max(0) as u64;
            if !conn.established && acked >= 1 {
                conn.established = true;
                conn.synack_at = None;
            }
            conn.rwnd = r.window as u64;
            let top = conn.snd_nxt;
            let acked = acked.min(top);
            let base = conn.iss;
            let sacks: Vec<(u64, u64)> = r
                .sack_blocks()
                .iter()
                .map(|&(l, e)| (off(base, conn.snd_una, l), off(base, conn.snd_una, e)))
                .collect();
            if acked > conn.snd_una {
                conn.snd_una = acked;
                if let Some(d) = &mut conn.down {
                    d.release(acked - 1);
                }
            }
            if conn.fin_sent && acked > conn.fin_at.unwrap_or(u64::MAX) && !conn.fin_acked {
                conn.fin_acked = true;
                self.release_fin(c, now);
            }
            let a = self.conns[c].acb;
            let rx = self.cfg.retransmit_at;
            let fb = self.acbs[a].feedback(c, acked, &sacks, now, rx, self.cfg.delack_allowance);
            if let Some(r) = fb.rtt {
                let f = self.conns[c].flow as i32;
                self.log(now, EventKind::Rtt, f, -1, 0, r.nanos());
                self.stats.rtt_samples += 1;
                self.stats.rtt_sum_ns += r.nanos();
                if self.cfg.estimate_clamp {
                    let min = self.acbs[a].min_rtt.unwrap_or(Duration::MAX);
                    let w = ((1.0 + self.cfg.headroom) * self.cfg.link_rate as f64 * min.as_secs_f64()).round() as u64;
                    let w = w.max(2 * self.cfg.mss as u64);
                    if w != self.acbs[a].window() {
                        self.acbs[a].set_clamp(w, now);
                        self.log(now, EventKind::Cwnd, -1, -1, 0, w as i64);
                    }
                }
            }
            for &(k, s, n) in &fb.counters {
                let f = self.conns[k].flow as i32;
                self.log(now, EventKind::Counter, f, s as i64, 0, n as i64);
            }
            if fb.progress && self.acbs[a].on_progress(now) {
                self.log(now, EventKind::Stall, -1, -1, 0, 0);
                let w = self.acbs[a].window() as i64;
                self.log(now, EventKind::Cwnd, -1, -1, 0, w);
            }
        }
        let conn = &mut self.conns[c];
        if len > 0 || r.flags.has(TcpFlags::FIN) {
            if conn.receive(r.seq, len, r.flags.has(TcpFlags::FIN), payload) {
                let (n, fin) = (conn.rcv_nxt - 1, conn.mobile_fin_in);
                conn.wired.set_app_data(Some(n), fin);
                self.wake(c);
                self.drain_wired(c, now);
            }
            self.flush_acks(c, now);
        }
    }

    /// The mobile has acknowledged our FIN: now the wired leg takes the server's.
    fn release_fin(&mut self, c: usize, now: Instant) {
        let conn = &mut self.conns[c];
        let Some(off) = conn.fin_at else { return };
        // A kernel socket acknowledged the server's FIN when it came.
        let Wired::Tcp(wired) = &mut conn.wired else { return self.drain_wired(c, now) };
        let h = TcpRepr {
            src_port: conn.sport,
            dst_port: conn.mport,
            seq: conn.iss.wrapping_add(off as u32),
            ack: wired.iss().wrapping_add(1 + wired.app_limit().unwrap_or(0) as u32),
            flags: TcpFlags(TcpFlags::FIN),
            window: 65535,
            ..Default::default()
        };
        let limit = wired.app_limit();
        wired.on_segment(now, &h, 0);
        // The wired leg closes when the mobile does, not on the server's FIN.
        wired.set_app_data(limit, conn.mobile_fin_in);
        self.drain_wired(c, now);
    }

    /// Sends the wired leg's segments to the server; closes a finished split.
    fn drain_wired(&mut self, c: usize, now: Instant) {
        while let Some(seg) = self.conns[c].wired.tcp().and_then(|t| t.poll_transmit(now)) {
            self.emit(c, Side::Wired, seg.repr, seg.len, now);
        }
        // The server acknowledged the wired leg's FIN: the mobile's FIN may be ACKed.
        let conn = &self.conns[c];
        if conn.mobile_fin_in && conn.wired.fin_acked() && !conn.mobile_fin_acked {
            self.conns[c].mobile_fin_acked = true;
            self.conns[c].ack_owed = true;
            self.flush_acks(c, now);
        }
        let conn = &self.conns[c];
        if conn.phase == Phase::Open && conn.wired.is_closed() && conn.fin_acked && conn.mobile_fin_in {
            self.close(c, now);
        }
    }

    fn flush_acks(&mut self, c: usize, now: Instant) {
        if !self.conns[c].ack_owed {
            return;
        }
        self.conns[c].ack_owed = false;
        let conn = &self.conns[c];
        let h = conn.header(conn.snd_nxt, TcpFlags::ACK);
        self.emit(c, Side::Wireless, h, 0, now);
    }

    fn close(&mut self, c: usize, now: Instant) {
        self.live.retain(|&x| x != c);
        if self.streams {
            self.cmds.push_back(Command::Close(c));
            self.closed.push_back((c, now));
        }
        let conn = &mut self.conns[c];
        conn.phase = Phase::Closed;
        conn.down = conn.down.take().map(|_| SendBuf::default());
        conn.up = conn.up.take().map(|_| RecvBuf::default());
        let a = conn.acb;
        let acb = &mut self.acbs[a];
        acb.conns.retain(|&x| x != c);
        acb.list.retain(|e| e.conn != c);
        if !acb.list.iter().any(|e| !e.sacked) {
            acb.deadline = None;
            acb.probing = false;
            acb.stalled = false;
            acb.backoff = 0;
        }
    }

    /// Stream mode: releases connections closed more than `LINGER` ago.
    fn reap(&mut self, now: Instant) {
        while let Some(&(c, at)) = self.closed.front() {
            if now - at < LINGER {
                break;
            }
            self.closed.pop_front();
            let conn = &self.conns[c];
            let key = (conn.mobile, conn.mport, conn.server, conn.sport);
            if self.by_key.get(&key) == Some(&c) {
                self.by_key.remove(&key);
            }
            self.free.push(c);
        }
    }

    /// Connection slots held (open, closed within `LINGER`, or free for reuse).
    pub fn slots(&self) -> usize {
        self.conns.len()
    }

    /// Sends what the aggregate's window and the scheduler allow, then updates the
    /// advertised windows.
    fn service(&mut self, a: usize, now: Instant) {
        loop {
            let mss = self.cfg.mss as u64;
            if !self.acbs[a].has_room(mss) {
                self.acbs[a].sent_until(true);
                break;
            }
            if let Some(e) = self.acbs[a].take_due(now) {
                self.emit_entry(&e, now);
                continue;
            }
            let cands: Vec<sched::Candidate> = self.acbs[a]
                .conns
                .iter()
                .filter(|&&c| self.conns[c].sendable().is_some())
                .map(|&c| (c, self.conns[c].class, self.acbs[a].sched.join(self.conns[c].class, self.conns[c].pass)))
                .collect();
            let Some((c, class, pass)) = self.acbs[a].sched.pick(&cands) else {
                self.acbs[a].sent_until(false);
                break;
            };
            let (s, e, fin) = self.conns[c].sendable().unwrap();
            let conn = &mut self.conns[c];
            conn.pass = Stride::charge(pass, conn.tickets, (e - s).max(1), conn.mss);
            conn.snd_nxt = e;
            if fin {
                conn.fin_sent = true;
            }
            let flow = conn.flow as i32;
            self.log(now, EventKind::Pick, flow, s as i64, (e - s - fin as u64) as i64, class as i64);
            self.acbs[a].push(c, s, e, fin, now);
            if self.acbs[a].deadline.is_none() {
                let f = self.cfg.initial_rto;
                self.acbs[a].arm_after_idle(now, f);
            }
            self.send_piece(c, s, e, fin, now);
        }
        for i in 0..self.acbs[a].conns.len() {
            let c = self.acbs[a].conns[i];
            self.flush_acks(c, now);
            self.persist(c, now);
        }
        self.flow_control(a, now);
    }

    /// The persist timer's next interval: the aggregate's RTO doubled per
    /// unanswered probe, within [`min_rto`, `max_rto`] (RFC 9293 §3.8.6.1; Linux
    /// `tcp_probe_timer`, capped at TCP_RTO_MAX).
    fn persist_interval(&self, c: usize) -> Duration {
        let a = self.conns[c].acb;
        let base = self.acbs[a].rtt.rto();
        let k = self.conns[c].persist_backoff.min(16);
        (base * (1i64 << k)).max(self.cfg.min_rto).min(self.cfg.max_rto)
    }

    /// Arms or stops a connection's persist timer after a round of sending.
    fn persist(&mut self, c: usize, now: Instant) {
        let shut = self.conns[c].window_shut();
        match (shut, self.conns[c].persist) {
            (true, None) => {
                self.conns[c].persist_backoff = 0;
                let t = now + self.persist_interval(c);
                self.conns[c].persist = Some(t);
            }
            (false, Some(_)) => {
                self.conns[c].persist = None;
                self.conns[c].persist_backoff = 0;
            }
            _ => {}
        }
    }

    /// A zero-window probe: an empty segment one byte below the mobile's window,
    /// which its TCP must answer with an ACK giving the window (Linux
    /// `tcp_xmit_probe_skb`); the next one after twice the interval.
    fn window_probe(&mut self, c: usize, now: Instant) {
        if !self.conns[c].window_shut() {
            self.conns[c].persist = None;
            return;
        }
        self.window_probes += 1;
        let conn = &self.conns[c];
        let h = conn.header(conn.snd_una - 1, TcpFlags::ACK);
        self.emit(c, Side::Wireless, h, 0, now);
        self.conns[c].persist_backoff += 1;
        let t = now + self.persist_interval(c);
        self.conns[c].persist = Some(t);
    }

    fn emit_entry(&mut self, e: &acb::Entry, now: Instant) {
        self.stats.retransmits += 1;
        let flow = self.conns[e.conn].flow as i32;
        self.log(now, EventKind::Retransmit, flow, e.start as i64, e.payload() as i64, e.tx as i64);
        self.send_piece(e.conn, e.start, e.end, e.fin, now);
    }

    fn send_piece(&mut self, c: usize, s: u64, e: u64, fin: bool, now: Instant) {
        let conn = &mut self.conns[c];
        let len = e - s - fin as u64;
        let flags = if fin {
            TcpFlags::FIN | TcpFlags::ACK
        } else if s + len == conn.avail_end() {
            TcpFlags::ACK | TcpFlags::PSH
        } else {
            TcpFlags::ACK
        };
        conn.ack_owed = false;
        let h = conn.header(s, flags);
        self.stats.segments_sent += 1;
        match &conn.down {
            Some(d) if len > 0 => {
                let data = d.read(s - 1, len as usize);
                self.emit_bytes(c, h, &data, now)
            }
            _ => self.emit(c, Side::Wireless, h, len as u32, now),
        }
    }

    fn flow_control(&mut self, a: usize, now: Instant) {
        let target = self.cfg.target();
        let alpha = self.cfg.growth.unwrap_or(self.cfg.bdp());
        let lo = 2.0 * self.cfg.mss as f64;
        let conns = self.acbs[a].conns.clone();
        let q: u64 = conns.iter().map(|&c| self.conns[c].unsent()).sum();
        let held: u64 = conns.iter().map(|&c| self.conns[c].held()).sum();
        self.stats.max_buffered = self.stats.max_buffered.max(held);
        let open: Vec<usize> = conns.into_iter().filter(|&c| self.conns[c].phase == Phase::Open).collect();
        let mean = open.iter().map(|&c| self.conns[c].allowance).sum::<f64>() / open.len().max(1) as f64;
        let stalled = self.acbs[a].stalled;
        for c in open {
            let conn = &mut self.conns[c];
            let dt = (now - conn.fc_at).as_secs_f64();
            conn.fc_at = now;
            conn.allowance = allowance_step(
                conn.allowance,
                alpha,
                dt,
                q as f64 * conn.allowance / mean.max(1.0),
                target,
                lo,
                65535.0,
            );
            let qc = conn.unsent();
            let cap = if stalled { 0 } else { (conn.allowance as u64).saturating_sub(qc) };
            let (flow, qchange, capchange) = (conn.flow as i32, qc != conn.last_queue, Some(cap) != conn.last_cap);
            conn.last_queue = qc;
            // A stream's read allowance counts from now, so it is set whether or
            // not the cap changed; the driver looks at the socket again whenever
            // it may read (it stops watching a socket it may not read, and a
            // stall's end changes no cap).
            if capchange || matches!(conn.wired, Wired::Stream(_)) {
                conn.last_cap = Some(cap);
                conn.wired.set_window_cap(Some(cap));
            }
            if conn.wired.stream().is_some_and(|s| s.read_allowance() > 0) {
                self.wake(c);
            }
            if qchange {
                self.log(now, EventKind::Queue, flow, -1, 0, qc as i64);
            }
            if capchange {
                self.log(now, EventKind::Window, flow, -1, 0, cap as i64);
                self.drain_wired(c, now);
            }
        }
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
            t.push(Event { at, kind, flow, seq, len, value });
        }
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
