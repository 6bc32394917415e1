//! Per-connection TCP analysis of a packet trace, in the manner of tcptrace
//! (Ostermann, tcptrace 6.6.7 `-l -r`), for captures and simulated pcaps alike.
//!
//! Definitions (each direction counts the packets its host sent; the ACK-derived
//! numbers — RTT samples, duplicate ACKs, fast retransmits, timeouts — sit with the
//! host whose data was acknowledged, as in tcptrace's columns):
//! - sequence numbers are unwrapped to 64 bits and made relative to the first one
//!   seen in that direction (the ISN when the SYN was captured);
//! - a packet is a *retransmission* when any byte of its sequence range (SYN and FIN
//!   count one each) was sent before; `rexmit_bytes` is the overlap. Segments larger
//!   than the MSS (GRO/TSO captures) are ranges like any other, so they are never
//!   miscounted; `unique_bytes` is data never sent before;
//! - a data packet sent while the peer's last advertised window was zero is a
//!   zero-window probe, not a retransmission (tcptrace's rule);
//! - *RTT samples* follow Karn: an ACK that exactly acknowledges the end of a
//!   segment that was sent once, unless an earlier segment covered by the same ACK
//!   was sent (or retransmitted) later (tcptrace's rule); the SYN is a segment too;
//! - a *duplicate ACK* is a packet without data, SYN, FIN or RST repeating the
//!   previous ACK value and window while data is outstanding (RFC 5681 §2; tcptrace's
//!   BSD rule also counts FINs and only ACKs at whole-segment ends); the third in a
//!   row is a *triple duplicate ACK*;
//! - a retransmission covering the first unacknowledged byte starts a recovery
//!   episode: a *fast retransmit* when it is sent in answer to an ACK — within
//!   10 ms of the last ACK seen for this data (plus the smallest RTT sample when
//!   the capture point is not at the sender, told by the RTTs of both directions:
//!   at the sender, the peer's data shows the smaller ones) — whatever
//!   triggered it (three duplicate ACKs, SACK, RACK, early retransmit); a *timeout*
//!   otherwise (a timer sent it). The episode ends when the ACKs pass what was
//!   outstanding when it began. Within an episode, a retransmission of the first
//!   unacknowledged byte is another timeout when it is not ACK-clocked and at least
//!   200 ms (the smallest minimum RTO of common stacks) passed since the last
//!   progress and since the byte's previous retransmission; another fast
//!   retransmit when it is ACK-clocked after three duplicate ACKs received since
//!   the previous one (Reno leaves recovery on a partial ACK; SACK senders, both
//!   SYNs SACK-permitted, repeat none, RFC 6675); otherwise it answers a partial ACK
//!   or a loss RACK found and is not an event. Tail-loss probes that resend the
//!   first unacknowledged byte count as timeouts (a timer sent them);
//! - a timeout is *spurious* (Eifel, RFC 3522) when the first ACK that covers the
//!   retransmitted byte echoes a timestamp older than the retransmission's;
//!   detectable only when both hosts use timestamps;
//! - connections are keyed by their address/port pair; a SYN without ACK with a new
//!   ISN on a pair already in use starts a new connection.
use super::decode::{TcpPkt, ACK, FIN, PSH, RST, SYN};
use crate::fx::FxMap;
use crate::tcp::ranges::Ranges;
use std::collections::VecDeque;

const OFF: i64 = 1 << 40; // internal offsets stay positive even for bytes before the first seen

/// Statistics of one direction (the packets one host sent).
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub packets: u64,
    pub ack_pkts: u64,
    pub pure_acks: u64,
    pub sack_pkts: u64,
    pub dsack_pkts: u64,
    pub sack_blocks: u64,
    pub max_sack_blocks: u64,
    pub data_pkts: u64,
    pub data_bytes: u64,
    pub unique_bytes: u64,
    /// Segments that resent sequence space (tcptrace's "rexmt data pkts": SYNs and
    /// FINs sent again count, as their sequence numbers do).
    pub rexmit_pkts: u64,
    pub rexmit_bytes: u64,
    /// Of `rexmit_pkts`, those without data: SYNs (SYN-ACKs) and FINs sent again.
    pub syn_rexmit_pkts: u64,
    pub fin_rexmit_pkts: u64,
    pub zwnd_probe_pkts: u64,
    pub zwnd_probe_bytes: u64,
    pub out_of_order_pkts: u64,
    pub pushed_pkts: u64,
    pub syn_pkts: u64,
    pub fin_pkts: u64,
    pub rst_pkts: u64,
    pub mss_requested: Option<u16>,
    pub wscale_requested: Option<u8>,
    pub timestamps: bool,
    pub sack_requested: bool,
    pub max_segment: u64,
    pub min_segment: u64,
    pub win_max: u64,
    pub win_min: u64,
    pub win_zero: u64,
    pub win_sum: u128,
    pub win_n: u64,
    pub first_ns: i64,
    pub last_ns: i64,
    pub first_data_ns: Option<i64>,
    pub last_data_ns: Option<i64>,
    pub idle_max_ns: i64,
    pub rtt_samples: u64,
    pub rtt_min_ns: i64,
    pub rtt_max_ns: i64,
    pub rtt_sum_ns: f64,
    pub rtt_sum2: f64,
    pub rtt_3whs_ns: Option<i64>,
    pub dupacks: u64,
    pub triple_dupacks: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub spurious_timeouts: u64,
    /// Highest relative sequence number sent, SYN and FIN excluded.
    pub stream_length: u64,
}

#[derive(Clone, Copy, Debug)]
struct Seg {
    s: i64,
    e: i64,
    t: i64,
    rexmit: bool,
}

#[derive(Default)]
struct DirState {
    base: Option<u32>,
    hi: i64,
    syn_isn: Option<u32>,
    sent: Ranges,
    segs: VecDeque<Seg>,
    snd_max: i64,
    una: Option<i64>,
    /// ACKs this host sends about the peer's data: last value and window.
    last_ack: Option<i64>,
    last_win: u64,
    win_known: bool,
    /// Consecutive duplicate ACKs received for this host's data, and those since
    /// the last retransmission of the first unacknowledged byte.
    dups: u32,
    fresh_dups: u32,
    last_dup_t: i64,
    recovery: Option<i64>,
    last_una_rexmit: Option<i64>,
    eifel: Option<(i64, u32)>,
    /// Time of the last ACK that advanced `una`.
    progress_t: i64,
    last_una_rexmit_t: i64,
    /// When the last ACK for this host's data arrived.
    last_ack_t: Option<i64>,
    ws: u8,
    ws_req: bool,
    win_scaled_seen: bool,
    data_start: Option<i64>,
}

impl DirState {
    fn unwrap(&mut self, seq: u32) -> i64 {
        let base = *self.base.get_or_insert(seq);
        let rel = seq.wrapping_sub(base);
        let d = rel.wrapping_sub(self.hi as u32) as i32 as i64;
        let v = self.hi + d;
        if v > self.hi {
            self.hi = v;
        }
        v
    }
    /// The unwrapped value of an ACK number for this direction's data.
    fn unwrap_ack(&self, ack: u32) -> Option<i64> {
        let base = self.base?;
        let rel = ack.wrapping_sub(base);
        Some(self.hi + rel.wrapping_sub(self.hi as u32) as i32 as i64)
    }
}

/// What kind of sequence range a packet carried.
pub const KIND_NONE: u8 = 0;
pub const KIND_NEW: u8 = 1;
pub const KIND_REXMIT: u8 = 2;
pub const KIND_PROBE: u8 = 3;
pub const KIND_OUT_OF_ORDER: u8 = 4;

/// Events found: fast retransmit, timeout, spurious timeout.
pub const EV_FAST_RETRANSMIT: u8 = 0;
pub const EV_TIMEOUT: u8 = 1;
pub const EV_SPURIOUS_TIMEOUT: u8 = 2;

/// Per-packet and per-sample columns for plots (kept only when asked for).
#[derive(Default, Debug, Clone)]
pub struct Columns {
    pub t_ns: Vec<i64>,
    pub conn: Vec<u32>,
    pub dir: Vec<u8>,
    /// Relative sequence number of the first byte (-1 for packets without sequence space).
    pub seq: Vec<i64>,
    pub len: Vec<i64>,
    /// Relative ACK number in the peer's sequence space (-1 without ACK).
    pub ack: Vec<i64>,
    pub win: Vec<i64>,
    pub flags: Vec<u8>,
    pub kind: Vec<u8>,
    pub rtt_t_ns: Vec<i64>,
    pub rtt_conn: Vec<u32>,
    pub rtt_dir: Vec<u8>,
    pub rtt_ns: Vec<i64>,
    pub ev_t_ns: Vec<i64>,
    pub ev_conn: Vec<u32>,
    pub ev_dir: Vec<u8>,
    pub ev_kind: Vec<u8>,
    pub ev_seq: Vec<i64>,
}

pub struct Conn {
    pub id: u32,
    pub addr: [[u8; 16]; 2],
    pub v6: bool,
    pub port: [u16; 2],
    pub first_ns: i64,
    pub last_ns: i64,
    pub dirs: [DirStats; 2],
    st: [DirState; 2],
    /// RTT samples and events found in the last packet, for the columns.
    found: Vec<Found>,
}

#[derive(Clone, Copy, Debug)]
enum Found {
    Rtt { dir: u8, ns: i64 },
    Ev { dir: u8, kind: u8, seq: i64 },
}

impl Conn {
    /// Both SYNs seen and both FINs (or a reset).
    pub fn complete(&self) -> bool {
        self.dirs[0].syn_pkts > 0
            && self.dirs[1].syn_pkts > 0
            && ((self.dirs[0].fin_pkts > 0 && self.dirs[1].fin_pkts > 0)
                || self.dirs[0].rst_pkts + self.dirs[1].rst_pkts > 0)
    }
    /// The first sequence number seen from host `d` (its ISN when the SYN was captured):
    /// relative sequence and ACK numbers are counted from it.
    pub fn first_seq(&self, d: usize) -> Option<u32> {
        self.st[d].base
    }
    pub fn addr_string(&self, i: usize) -> String {
        let a = &self.addr[i];
        if !self.v6 {
            return format!("{}.{}.{}.{}", a[12], a[13], a[14], a[15]);
        }
        std::net::Ipv6Addr::from(*a).to_string()
    }
}

type Key = ([u8; 16], u16, [u8; 16], u16);

/// Tracks every TCP connection in a trace.
#[derive(Default)]
pub struct Tracker {
    pub conns: Vec<Conn>,
    map: FxMap<Key, u32>,
    last: Option<(Key, u32)>,
    pub cols: Option<Columns>,
}

fn key(p: &TcpPkt) -> Key {
    if (p.src, p.sport) <= (p.dst, p.dport) {
        (p.src, p.sport, p.dst, p.dport)
    } else {
        (p.dst, p.dport, p.src, p.sport)
    }
}

impl Tracker {
    pub fn new(keep_columns: bool) -> Tracker {
        Tracker { cols: keep_columns.then(Columns::default), ..Default::default() }
    }

    pub fn packet(&mut self, t: i64, p: &TcpPkt) {
        let k = key(p);
        let pure_syn = p.flags & SYN != 0 && p.flags & ACK == 0;
        // Consecutive packets mostly belong to the same connection: skip the map then.
        let cached = match &self.last {
            Some((lk, i)) if !pure_syn && *lk == k => Some(*i),
            _ => None,
        };
        let idx = if let Some(i) = cached {
            i
        } else {
            match self.map.get(&k) {
                Some(&i) => {
                    let c = &self.conns[i as usize];
                    let d = if (p.src, p.sport) == (c.addr[0], c.port[0]) { 0 } else { 1 };
                    let reuse = pure_syn
                        && (c.st[d].syn_isn.is_some_and(|isn| isn != p.seq)
                            || (c.st[d].syn_isn.is_none() && c.dirs[d].packets > 0));
                    if reuse {
                        self.new_conn(k, p, t)
                    } else {
                        i
                    }
                }
                None => self.new_conn(k, p, t),
            }
        };
        self.last = Some((k, idx));
        let c = &mut self.conns[idx as usize];
        let d = if (p.src, p.sport) == (c.addr[0], c.port[0]) { 0 } else { 1 };
        process(c, d, t, p, self.cols.as_mut());
    }

    fn new_conn(&mut self, k: Key, p: &TcpPkt, t: i64) -> u32 {
        let id = self.conns.len() as u32;
        self.conns.push(Conn {
            id,
            addr: [p.src, p.dst],
            v6: p.v6,
            port: [p.sport, p.dport],
            first_ns: t,
            last_ns: t,
            dirs: Default::default(),
            st: Default::default(),
            found: Vec::new(),
        });
        self.map.insert(k, id);
        id
    }
}

fn process(c: &mut Conn, d: usize, t: i64, p: &TcpPkt, cols: Option<&mut Columns>) {
    let o = 1 - d;
    c.last_ns = t;
    let found = &mut c.found;
    let [st0, st1] = &mut c.st;
    let (me, peer) = if d == 0 { (st0, st1) } else { (st1, st0) };
    let [d0, d1] = &mut c.dirs;
    let (ds, ps) = if d == 0 { (d0, d1) } else { (d1, d0) };
    let keep = cols.is_some();
    let syn = p.flags & SYN != 0;
    let fin = p.flags & FIN != 0;
    let rst = p.flags & RST != 0;
    let has_ack = p.flags & ACK != 0;
    let len = p.payload as i64;

    // Counters and options.
    if ds.packets == 0 {
        ds.first_ns = t;
    } else {
        ds.idle_max_ns = ds.idle_max_ns.max(t - ds.last_ns);
    }
    ds.last_ns = t;
    ds.packets += 1;
    if syn {
        ds.syn_pkts += 1;
        if me.syn_isn.is_none() {
            me.syn_isn = Some(p.seq);
        }
    }
    if fin {
        ds.fin_pkts += 1;
    }
    if rst {
        ds.rst_pkts += 1;
    }
    if let Some(m) = p.opts.mss {
        ds.mss_requested = Some(m);
    }
    if let Some(w) = p.opts.wscale {
        ds.wscale_requested = Some(w);
        me.ws = w;
        me.ws_req = true;
    }
    if p.opts.timestamps.is_some() {
        ds.timestamps = true;
    }
    if p.opts.sack_permitted {
        ds.sack_requested = true;
    }
    if len > 0 {
        ds.data_pkts += 1;
        ds.data_bytes += len as u64;
        if p.flags & PSH != 0 {
            ds.pushed_pkts += 1;
        }
        ds.max_segment = ds.max_segment.max(len as u64);
        ds.min_segment = if ds.min_segment == 0 { len as u64 } else { ds.min_segment.min(len as u64) };
        if ds.first_data_ns.is_none() {
            ds.first_data_ns = Some(t);
        }
        ds.last_data_ns = Some(t);
    }
    let eff_win = if has_ack || syn {
        let scale = if !syn && me.ws_req && peer.ws_req { me.ws } else { 0 };
        (p.win as u64) << scale
    } else {
        0
    };

    // Sequence space.
    let s = me.unwrap(p.seq);
    let span = len + syn as i64 + fin as i64;
    let mut kind = KIND_NONE;
    if span > 0 {
        let e = s + span;
        if !syn && peer.win_known && peer.last_win == 0 && ps.packets > 0 {
            kind = KIND_PROBE;
            ds.zwnd_probe_pkts += 1;
            ds.zwnd_probe_bytes += len as u64;
        } else {
            let rex = overlap(&me.sent, s + OFF, e + OFF) as i64;
            let mut unique = span - rex;
            if syn && ds.syn_pkts > 1 && rex > 0 {
                unique += 1;
            }
            if fin && ds.fin_pkts > 1 && rex > 0 {
                unique += 1;
            }
            unique -= syn as i64 + fin as i64;
            if unique > 0 {
                ds.unique_bytes += unique as u64;
            }
            if rex > 0 {
                kind = KIND_REXMIT;
                ds.rexmit_pkts += 1;
                ds.rexmit_bytes += rex as u64;
                if len == 0 {
                    if syn {
                        ds.syn_rexmit_pkts += 1;
                    } else if fin {
                        ds.fin_rexmit_pkts += 1;
                    }
                }
                for g in me.segs.iter_mut() {
                    if g.s < e && g.e > s {
                        g.rexmit = true;
                        g.t = t;
                    }
                }
                if let Some(ev) = classify_rexmit(me, ds, ps, ds.sack_requested && ps.sack_requested, s, e, t, p) {
                    if keep {
                        found.push(Found::Ev { dir: d as u8, kind: ev, seq: s });
                    }
                }
            } else if s < me.snd_max {
                kind = KIND_OUT_OF_ORDER;
                ds.out_of_order_pkts += 1;
                let i = me.segs.partition_point(|g| g.s < s);
                me.segs.insert(i, Seg { s, e, t, rexmit: false });
            } else {
                kind = KIND_NEW;
            }
            if e > me.snd_max {
                let ns = s.max(me.snd_max);
                if me.segs.back().is_none_or(|g| g.e <= ns) {
                    me.segs.push_back(Seg { s: ns, e, t, rexmit: false });
                }
                me.snd_max = e;
            }
            me.sent.insert((s + OFF) as u64, (e + OFF) as u64);
        }
        let data_start = *me.data_start.get_or_insert(s + syn as i64);
        let top = (s + syn as i64 + len - data_start).max(0) as u64;
        ds.stream_length = ds.stream_length.max(top);
    }

    // Window statistics and the ACK.
    if has_ack || syn {
        // As tcptrace: when both SYNs asked for window scaling, the statistics restart
        // at the first scaled advertisement (SYN windows are never scaled); the
        // minimum ignores zero windows, which are counted on their own.
        if eff_win > 0 && !syn && me.ws_req && peer.ws_req && !me.win_scaled_seen {
            me.win_scaled_seen = true;
            ds.win_max = eff_win;
            ds.win_min = eff_win;
            ds.win_sum = 0;
            ds.win_n = 0;
        }
        ds.win_max = ds.win_max.max(eff_win);
        if eff_win > 0 && (ds.win_min == 0 || eff_win < ds.win_min) {
            ds.win_min = eff_win;
        }
        if eff_win == 0 && has_ack {
            ds.win_zero += 1;
        }
        ds.win_sum += eff_win as u128;
        ds.win_n += 1;
    }
    let mut rel_ack = -1;
    if has_ack {
        ds.ack_pkts += 1;
        if len == 0 && !syn && !fin && !rst {
            ds.pure_acks += 1;
        }
        if let Some(a) = peer.unwrap_ack(p.ack) {
            rel_ack = a;
            let (rtt, spurious) = ack_in(peer, ps, me, a, t, len, eff_win, syn || fin || rst, p);
            if keep {
                if let Some(ns) = rtt {
                    found.push(Found::Rtt { dir: o as u8, ns });
                }
                if let Some(seq) = spurious {
                    found.push(Found::Ev { dir: o as u8, kind: EV_SPURIOUS_TIMEOUT, seq });
                }
            }
        }
        if p.opts.sack_len > 0 {
            ds.sack_pkts += 1;
            ds.sack_blocks += p.opts.sack_len as u64;
            ds.max_sack_blocks = ds.max_sack_blocks.max(p.opts.sack_len as u64);
            if is_dsack(p) {
                ds.dsack_pkts += 1;
            }
        }
    }
    me.last_win = eff_win;
    me.win_known = has_ack || syn;
    if let Some(cols) = cols {
        cols.t_ns.push(t);
        cols.conn.push(c.id);
        cols.dir.push(d as u8);
        cols.seq.push(if span > 0 { s } else { -1 });
        cols.len.push(len);
        cols.ack.push(rel_ack);
        cols.win.push(eff_win as i64);
        cols.flags.push(p.flags);
        cols.kind.push(kind);
        for f in c.found.drain(..) {
            match f {
                Found::Rtt { dir, ns } => {
                    cols.rtt_t_ns.push(t);
                    cols.rtt_conn.push(c.id);
                    cols.rtt_dir.push(dir);
                    cols.rtt_ns.push(ns);
                }
                Found::Ev { dir, kind, seq } => {
                    cols.ev_t_ns.push(t);
                    cols.ev_conn.push(c.id);
                    cols.ev_dir.push(dir);
                    cols.ev_kind.push(kind);
                    cols.ev_seq.push(seq);
                }
            }
        }
    }
}

fn overlap(r: &Ranges, s: i64, e: i64) -> u64 {
    let (s, e) = (s as u64, e as u64);
    let mut n = 0;
    let i = r.v.partition_point(|x| x.1 <= s);
    for &(a, b) in r.v.range(i..) {
        if a >= e {
            break;
        }
        n += b.min(e) - a.max(s);
    }
    n
}

/// Classifies a retransmission of `[s, e)`; returns the event it starts, if any.
#[allow(clippy::too_many_arguments)] // the state of both directions and the segment, all needed
fn classify_rexmit(
    me: &mut DirState,
    ds: &mut DirStats,
    ps: &DirStats,
    sack: bool,
    s: i64,
    e: i64,
    t: i64,
    p: &TcpPkt,
) -> Option<u8> {
    let una = me.una.unwrap_or_else(|| me.segs.front().map_or(s, |g| g.s));
    if !(s <= una && una < e) {
        return None;
    }
    // Sent in answer to an ACK (fast retransmit of any kind), or by a timer? At the
    // sender an ACK-clocked retransmission follows the ACK at once; at a capture
    // point nearer the receiver it follows about one RTT later. The capture is near
    // this sender when the peer's data sees much smaller RTTs than this data.
    let near_sender = ds.rtt_samples == 0 || (ps.rtt_samples > 0 && ps.rtt_min_ns.saturating_mul(2) < ds.rtt_min_ns);
    let rtt_floor = if near_sender { 0 } else { ds.rtt_min_ns };
    let ack_clocked = me.last_ack_t.is_some_and(|a| t - a <= rtt_floor.saturating_add(10_000_000));
    let since = t - me.progress_t.max(if me.last_una_rexmit == Some(una) { me.last_una_rexmit_t } else { i64::MIN });
    let ev = if me.recovery.is_none() {
        me.recovery = Some(me.snd_max);
        if ack_clocked {
            ds.fast_retransmits += 1;
            EV_FAST_RETRANSMIT
        } else {
            ds.timeouts += 1;
            EV_TIMEOUT
        }
    } else if !ack_clocked && since >= 200_000_000 {
        // A timeout within an episode starts a new one (go-back-N resends what was outstanding).
        me.recovery = Some(me.snd_max);
        ds.timeouts += 1;
        EV_TIMEOUT
    } else if ack_clocked && !sack && me.fresh_dups >= 3 {
        // Three fresh duplicate ACKs within an episode: Reno's next fast retransmit
        // (Reno leaves recovery on a partial ACK), or fast retransmit after a timeout.
        me.recovery = Some(me.snd_max);
        ds.fast_retransmits += 1;
        EV_FAST_RETRANSMIT
    } else {
        me.last_una_rexmit = Some(una);
        me.last_una_rexmit_t = t;
        me.fresh_dups = 0;
        return None;
    };
    me.fresh_dups = 0;
    me.last_una_rexmit = Some(una);
    me.last_una_rexmit_t = t;
    if ev == EV_TIMEOUT {
        me.eifel = p.opts.timestamps.map(|(v, _)| (una, v));
    }
    Some(ev)
}

/// An ACK `a` (in `snd`'s sequence space) sent by the host whose state is `rcv`.
/// Returns the RTT sample it gave and the sequence number of a timeout it showed spurious.
#[allow(clippy::too_many_arguments)]
fn ack_in(
    snd: &mut DirState,
    ss: &mut DirStats,
    rcv: &mut DirState,
    a: i64,
    t: i64,
    len: i64,
    win: u64,
    ctl: bool,
    p: &TcpPkt,
) -> (Option<i64>, Option<i64>) {
    let mut out = (None, None);
    let prev = rcv.last_ack;
    let dup = len == 0 && !ctl && prev == Some(a) && rcv.win_known && win == rcv.last_win && snd.snd_max > a;
    if dup {
        ss.dupacks += 1;
        snd.dups += 1;
        snd.fresh_dups += 1;
        snd.last_dup_t = t;
        if snd.dups == 3 {
            ss.triple_dupacks += 1;
        }
    } else if prev != Some(a) {
        snd.dups = 0;
        snd.fresh_dups = 0;
    }
    rcv.last_ack = Some(a);
    snd.last_ack_t = Some(t);
    if snd.una.is_none_or(|u| a > u) {
        // Pop the acknowledged segments; take an RTT sample per Karn and tcptrace.
        let mut latest = i64::MIN;
        let mut sample = None;
        while let Some(g) = snd.segs.front_mut() {
            if g.e <= a {
                if g.e == a && !g.rexmit && latest <= g.t {
                    sample = Some(t - g.t);
                }
                latest = latest.max(g.t);
                snd.segs.pop_front();
            } else {
                if g.s < a {
                    g.s = a;
                }
                break;
            }
        }
        if let Some(r) = sample {
            if ss.rtt_samples == 0 || r < ss.rtt_min_ns {
                ss.rtt_min_ns = r;
            }
            ss.rtt_max_ns = ss.rtt_max_ns.max(r);
            ss.rtt_sum_ns += r as f64;
            ss.rtt_sum2 += (r as f64) * (r as f64);
            ss.rtt_samples += 1;
            if ss.rtt_3whs_ns.is_none() && snd.una.is_none() && ss.syn_pkts > 0 {
                ss.rtt_3whs_ns = Some(r);
            }
            out.0 = Some(r);
        }
        snd.una = Some(a);
        snd.progress_t = t;
        snd.dups = 0;
        snd.fresh_dups = 0;
        if snd.recovery.is_some_and(|r| a >= r) {
            snd.recovery = None;
            snd.last_una_rexmit = None;
        }
        if let Some((u, tsv)) = snd.eifel {
            if a > u {
                if let Some((_, ecr)) = p.opts.timestamps {
                    if (ecr.wrapping_sub(tsv) as i32) < 0 {
                        ss.spurious_timeouts += 1;
                        out.1 = Some(u);
                    }
                }
                snd.eifel = None;
            }
        }
    }
    out
}

/// RFC 2883 D-SACK: the first block lies below the cumulative ACK or inside the second.
fn is_dsack(p: &TcpPkt) -> bool {
    let b = &p.opts.sack;
    let lt = |x: u32, y: u32| (x.wrapping_sub(y) as i32) < 0;
    let le = |x: u32, y: u32| !lt(y, x);
    if le(b[0].1, p.ack) {
        return true;
    }
    p.opts.sack_len > 1
        && ((le(b[1].0, b[0].0) && le(b[0].1, b[1].1))
            || (le(b[0].0, b[1].0) && lt(b[1].0, b[0].1))
            || (le(b[1].1, b[0].1) && lt(b[0].0, b[1].1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];
    const B: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2];
    const MS: i64 = 1_000_000;

    /// A packet from a (dir 0) or b (dir 1).
    fn pk(dir: usize, seq: u32, ack: Option<u32>, len: u32, flags: u8) -> TcpPkt {
        let (src, dst, sp, dp) = if dir == 0 { (A, B, 1000, 80) } else { (B, A, 80, 1000) };
        TcpPkt {
            src,
            dst,
            sport: sp,
            dport: dp,
            seq,
            ack: ack.unwrap_or(0),
            flags: flags | if ack.is_some() { ACK } else { 0 },
            win: 65535,
            payload: len,
            ..Default::default()
        }
    }

    /// Handshake with ISNs `ia` (a) and `ib` (b); returns the tracker.
    fn open(ia: u32, ib: u32) -> Tracker {
        let mut t = Tracker::new(true);
        t.packet(0, &pk(0, ia, None, 0, SYN));
        t.packet(100 * MS, &pk(1, ib, Some(ia.wrapping_add(1)), 0, SYN));
        t.packet(100 * MS, &pk(0, ia.wrapping_add(1), Some(ib.wrapping_add(1)), 0, 0));
        t
    }

    #[test]
    fn bulk_without_loss_counts_unique_bytes_and_karn_samples() {
        let (ia, ib) = (1000, 5000);
        let mut t = open(ia, ib);
        for i in 0..10u32 {
            t.packet((200 + i as i64) * MS, &pk(0, ia + 1 + i * 100, Some(ib + 1), 100, 0));
        }
        for i in 0..5u32 {
            t.packet((300 + i as i64) * MS, &pk(1, ib + 1, Some(ia + 1 + (2 * i + 2) * 100), 0, 0));
        }
        let s = &t.conns[0].dirs[0];
        assert_eq!((s.data_pkts, s.data_bytes, s.unique_bytes, s.rexmit_pkts), (10, 1000, 1000, 0));
        // SYN sample plus one per ACK (each ACK ends a segment sent once).
        let c = t.cols.as_ref().unwrap();
        assert_eq!(s.rtt_samples, 6, "{:?} {:?}", c.rtt_ns, c.rtt_dir);
        assert_eq!(s.rtt_3whs_ns, Some(100 * MS));
        assert_eq!(s.dupacks, 0);
        assert_eq!(t.conns[0].dirs[1].pure_acks, 5, "the SYN/ACK is not a pure ACK");
    }

    #[test]
    fn retransmission_overlap_and_gro_segments() {
        let (ia, ib) = (0xffff_ff00, 7); // wraps around 2^32 during the transfer
        let mut t = open(ia, ib);
        let s1 = ia.wrapping_add(1);
        t.packet(200 * MS, &pk(0, s1, Some(ib + 1), 1000, 0)); // one GRO segment of 1000 bytes
        t.packet(201 * MS, &pk(0, s1.wrapping_add(1000), Some(ib + 1), 500, 0));
        t.packet(900 * MS, &pk(0, s1.wrapping_add(500), Some(ib + 1), 700, 0)); // 500 old + 200 old: all retransmitted
        t.packet(901 * MS, &pk(0, s1.wrapping_add(1400), Some(ib + 1), 300, 0)); // 100 old, 200 new
        let s = &t.conns[0].dirs[0];
        assert_eq!(s.data_bytes, 2500);
        assert_eq!(s.unique_bytes, 1700);
        assert_eq!((s.rexmit_pkts, s.rexmit_bytes), (2, 800));
        assert_eq!(s.stream_length, 1700);
        let c = t.cols.as_ref().unwrap();
        assert_eq!(c.seq[c.seq.len() - 1], 1401, "relative sequence numbers survive the 2^32 wrap");
    }

    #[test]
    fn dupacks_fast_retransmit_and_timeout() {
        let (ia, ib) = (0, 0);
        let mut t = open(ia, ib);
        for i in 0..8u32 {
            t.packet(200 * MS + i as i64, &pk(0, 1 + i * 100, Some(1), 100, 0));
        }
        // Segment 2 lost: the receiver acks 201 once, then four duplicates.
        t.packet(300 * MS, &pk(1, 1, Some(201), 0, 0));
        for k in 0..4 {
            t.packet(301 * MS + k, &pk(1, 1, Some(201), 0, 0));
        }
        t.packet(302 * MS, &pk(0, 201, Some(1), 100, 0)); // fast retransmit
        t.packet(400 * MS, &pk(1, 1, Some(801), 0, 0)); // recovered
                                                        // Later: a timeout on segment 9 (no duplicate ACKs).
        t.packet(401 * MS, &pk(0, 801, Some(1), 100, 0));
        t.packet(1700 * MS, &pk(0, 801, Some(1), 100, 0));
        t.packet(1800 * MS, &pk(1, 1, Some(901), 0, 0));
        let s = &t.conns[0].dirs[0];
        assert_eq!((s.dupacks, s.triple_dupacks), (4, 1));
        assert_eq!((s.fast_retransmits, s.timeouts), (1, 1));
        assert_eq!((s.rexmit_pkts, s.rexmit_bytes), (2, 200));
        let c = t.cols.as_ref().unwrap();
        assert_eq!(c.ev_kind, vec![EV_FAST_RETRANSMIT, EV_TIMEOUT]);
        assert_eq!(c.ev_seq, vec![201, 801]);
        // The ACK of the retransmitted segments gives no RTT sample (Karn).
        assert!(c.rtt_ns.iter().all(|&r| r < 200 * MS));
    }

    #[test]
    fn window_change_is_not_a_dupack_and_zero_window_probe_is_not_a_retransmission() {
        let mut t = open(0, 0);
        t.packet(200 * MS, &pk(0, 1, Some(1), 100, 0));
        t.packet(200 * MS, &pk(0, 101, Some(1), 100, 0));
        t.packet(300 * MS, &pk(1, 1, Some(101), 0, 0));
        let mut upd = pk(1, 1, Some(101), 0, 0);
        upd.win = 1000;
        t.packet(301 * MS, &upd); // window update, same ACK
        let mut zero = pk(1, 1, Some(201), 0, 0);
        zero.win = 0;
        t.packet(302 * MS, &zero);
        t.packet(900 * MS, &pk(0, 201, Some(1), 1, 0)); // probe
        t.packet(2000 * MS, &pk(0, 201, Some(1), 1, 0)); // probe again
        let s = &t.conns[0].dirs[0];
        assert_eq!(s.dupacks, 0);
        assert_eq!((s.zwnd_probe_pkts, s.rexmit_pkts), (2, 0));
        assert_eq!(t.conns[0].dirs[1].win_zero, 1);
    }

    #[test]
    fn reused_port_pair_starts_a_new_connection() {
        let mut t = open(100, 200);
        t.packet(200 * MS, &pk(0, 101, Some(201), 0, FIN));
        t.packet(300 * MS, &pk(1, 201, Some(102), 0, FIN));
        t.packet(300 * MS, &pk(0, 102, Some(202), 0, 0));
        t.packet(5000 * MS, &pk(0, 9000, None, 0, SYN)); // same ports, new ISN
        t.packet(5100 * MS, &pk(1, 7000, Some(9001), 0, SYN));
        t.packet(5100 * MS, &pk(0, 9001, Some(7001), 10, 0));
        assert_eq!(t.conns.len(), 2);
        assert!(t.conns[0].complete());
        assert_eq!(
            (t.conns[1].dirs[0].packets, t.conns[1].dirs[0].unique_bytes, t.conns[1].dirs[0].rexmit_pkts),
            (2, 10, 0)
        );
        // A retransmitted SYN (same ISN) stays in the same connection, and is a timeout.
        let mut u = Tracker::new(false);
        u.packet(0, &pk(0, 5, None, 0, SYN));
        u.packet(3000 * MS, &pk(0, 5, None, 0, SYN));
        assert_eq!(u.conns.len(), 1);
        assert_eq!(
            (u.conns[0].dirs[0].rexmit_pkts, u.conns[0].dirs[0].timeouts, u.conns[0].dirs[0].unique_bytes),
            (1, 1, 0)
        );
    }

    #[test]
    fn eifel_detects_a_spurious_timeout() {
        let mut t = open(0, 0);
        let ts = |mut p: TcpPkt, v: u32, e: u32| {
            p.opts.timestamps = Some((v, e));
            p
        };
        t.packet(200 * MS, &ts(pk(0, 1, Some(1), 100, 0), 10, 0));
        t.packet(1500 * MS, &ts(pk(0, 1, Some(1), 100, 0), 20, 0)); // timeout
        t.packet(1600 * MS, &ts(pk(1, 1, Some(101), 0, 0), 30, 10)); // echoes the original: spurious
        assert_eq!((t.conns[0].dirs[0].timeouts, t.conns[0].dirs[0].spurious_timeouts), (1, 1));
        let mut u = open(0, 0);
        u.packet(200 * MS, &ts(pk(0, 1, Some(1), 100, 0), 10, 0));
        u.packet(1500 * MS, &ts(pk(0, 1, Some(1), 100, 0), 20, 0));
        u.packet(1600 * MS, &ts(pk(1, 1, Some(101), 0, 0), 30, 20)); // echoes the retransmission
        assert_eq!((u.conns[0].dirs[0].timeouts, u.conns[0].dirs[0].spurious_timeouts), (1, 0));
    }

    #[test]
    fn dsack_forms() {
        let mut p = pk(1, 1, Some(1000), 0, 0);
        p.opts.sack_len = 1;
        p.opts.sack = [(500, 600), (0, 0), (0, 0), (0, 0)];
        assert!(is_dsack(&p));
        p.opts.sack = [(1500, 1600), (0, 0), (0, 0), (0, 0)];
        assert!(!is_dsack(&p));
        p.opts.sack_len = 2;
        p.opts.sack = [(1500, 1600), (1400, 1700), (0, 0), (0, 0)];
        assert!(is_dsack(&p));
    }
}
