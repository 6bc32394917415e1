//! The TCP endpoint state machine (sans-IO).
//!
//! Sources: RFC 9293 (state machine), RFC 5681 (the duplicate-ACK test, delayed
//! ACKs), RFC 6298 (RTO, Karn), RFC 7323 (timestamps RTTM, window scale), RFC 2018
//! (SACK blocks, the scoreboard). How the window grows and what ssthresh becomes
//! after a loss is the congestion controller's (`cc/`, `tcp.cc`); when recovery
//! starts, what is resent in it and the window until it ends is the loss
//! recovery's (`recovery/`, `tcp.recovery`): each names its own sources.
//!
//! Simplifications, each documented: no persist timer (the simulated receiving
//! applications read at once, so the window only shrinks by out-of-order data);
//! TIME-WAIT lasts until the end of the run without a 2MSL timer; after an RTO
//! cwnd is one segment and ssthresh the controller's, and the SACK scoreboard is
//! cleared (RFC 2018 §8) — unless `rto = "linux"`, which keeps it and takes the
//! rest of Linux's timeout handling (`TcpConfig::rto`) and Linux's undo of needless
//! reductions (timestamps, DSACK). RFC 3042 limited transmit with
//! `limited_transmit`; Linux's linear SYN timeouts with `syn_linear_timeouts`; RFC
//! 2883 DSACK (the receiver) with `dsack`; RFC 5682 F-RTO with `frto` (the undo of
//! needless reductions and F-RTO in `endpoint/undo.rs`).
//!
//! Sequence space is kept as 64-bit offsets from the initial sequence numbers
//! (offset 0 is the SYN) and converted to 32-bit wire numbers at the edges.
//!
//! Data: the simulator's endpoints count bytes (`set_app_data`, `delivered`) and
//! the receiving application reads at once. With `use_byte_buffers` an endpoint
//! carries real bytes (src/tcp/buffer.rs): `write` / `close` on the sending side,
//! `segment_data` for each segment's payload, `on_segment_data` and `read` on the
//! receiving side; unread bytes then shrink the advertised window, reading opens it
//! (a window update when it grew by min(SMSS, half the buffer)), and the
//! application closes when it chooses (half-close is carried on).
use super::buffer::{RecvBuf, SendBuf};
use super::cc::{Cc, CongestionControl};
use super::config::TcpConfig;
use super::ranges::Ranges;
use super::recovery::{LossRecovery, NextSeg, Recovery};
use super::rtt::{RtoKind, RttEstimator};
use super::rwnd::{skb_truesize, LinuxRwnd};
use super::tcb::{Sent, Tcb};
use crate::time::{Duration, Instant};
use crate::wire::{TcpFlags, TcpRepr};

mod undo;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynRcvd,
    Established,
    Done,
}

/// A congestion-control or RTT variable that changed (for traces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// Traced sender variables and events; the events (`Timeout` onwards) carry their running count.
pub enum TcpVar {
    Cwnd,
    Ssthresh,
    Srtt,
    Rttvar,
    Rto,
    Timeout,
    FastRetransmit,
    EcnReduction,
    LossProbe,
    Undo,
    HystartExit,
    PacingRate,
}

#[derive(Clone, Copy, Debug)]
pub struct VarEvent {
    pub at: Instant,
    pub var: TcpVar,
    pub value: i64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpStats {
    pub segments_sent: u64,
    pub data_segments_sent: u64,
    pub data_bytes_sent: u64,
    /// Data segments (payload > 0) sent again.
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Expiries of the retransmission timer (the handshake's and a FIN's included).
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub rtt_samples: u64,
    pub rtt_sum: Duration,
    pub acks_sent: u64,
    /// Slow starts ended by HyStart (CUBIC).
    pub hystart_exits: u64,
    /// Tail loss probes sent (RACK-TLP), and losses they repaired.
    pub loss_probes: u64,
    pub probe_recoveries: u64,
    /// Loss episodes undone (Linux `tcp_undo_cwnd_reduction`): by timestamps
    /// (Eifel), by DSACKs of every retransmission, or by F-RTO.
    pub undos: u64,
    /// Of the timeouts, those undone as spurious (Linux `TCPLossUndo` +
    /// `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
    /// DSACK blocks received (RFC 2883; Linux `TCPDSACKRecv`) and sent
    /// (`TCPDSACKOldSent` + `TCPDSACKOfoSent`).
    pub dsacks_received: u64,
    pub dsacks_sent: u64,
    /// Retransmissions found lost again (RACK; Linux `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// ECN: reductions for an ECE (Linux `TCP_CA_CWR` entries), and data
    /// segments that arrived marked CE.
    pub ecn_reductions: u64,
    pub ce_received: u64,
    /// SYNs or SYN-ACKs sent again, and FINs sent again without data.
    pub syn_retransmits: u64,
    pub fin_retransmits: u64,
}

impl std::ops::AddAssign<&TcpStats> for TcpStats {
    /// Sums the counters (a web flow's connections).
    fn add_assign(&mut self, o: &TcpStats) {
        let TcpStats {
            segments_sent,
            data_segments_sent,
            data_bytes_sent,
            retransmits,
            retransmitted_bytes,
            syn_retransmits,
            fin_retransmits,
            timeouts,
            fast_retransmits,
            rtt_samples,
            rtt_sum,
            acks_sent,
            hystart_exits,
            loss_probes,
            probe_recoveries,
            undos,
            spurious_timeouts,
            dsacks_received,
            dsacks_sent,
            lost_retransmits,
            ecn_reductions,
            ce_received,
        } = o;
        self.segments_sent += segments_sent;
        self.data_segments_sent += data_segments_sent;
        self.data_bytes_sent += data_bytes_sent;
        self.retransmits += retransmits;
        self.retransmitted_bytes += retransmitted_bytes;
        self.syn_retransmits += syn_retransmits;
        self.fin_retransmits += fin_retransmits;
        self.timeouts += timeouts;
        self.fast_retransmits += fast_retransmits;
        self.rtt_samples += rtt_samples;
        self.rtt_sum += *rtt_sum;
        self.acks_sent += acks_sent;
        self.hystart_exits += hystart_exits;
        self.loss_probes += loss_probes;
        self.probe_recoveries += probe_recoveries;
        self.undos += undos;
        self.spurious_timeouts += spurious_timeouts;
        self.dsacks_received += dsacks_received;
        self.dsacks_sent += dsacks_sent;
        self.lost_retransmits += lost_retransmits;
        self.ecn_reductions += ecn_reductions;
        self.ce_received += ce_received;
    }
}

/// An outgoing segment: the header and the number of payload bytes (virtual, or
/// with byte buffers [`Tcp::segment_data`] gives them).
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub repr: TcpRepr,
    pub len: u32,
    pub retransmission: bool,
    /// Stream offset of the first payload byte (0 = the first data byte).
    pub offset: u64,
    /// The IP header carries ECT(0) (RFC 3168: new data of an ECN connection).
    pub ect: bool,
}

pub struct Tcp {
    pub(crate) cfg: TcpConfig,
    pub state: State,
    /// Window the receiver is willing to advertise now (grows from `rcv_wnd_initial`).
    rcv_ssthresh: u64,
    /// Ceiling on the advertised window set by the application (a split proxy's
    /// flow control, seed 004 §IV-D); None = the buffer alone decides.
    wnd_cap: Option<u64>,
    /// The window last advertised (to send a window update when it opens).
    last_adv: u64,
    /// Linux's receive window (`rwnd = "linux"`), and the memory of the last
    /// in-order segment until an ACK has gone out (the kernel acknowledges
    /// before the application reads it).
    lrw: Option<Box<LinuxRwnd>>,
    rx_held: u64,
    /// When data was last sent (for slow-start restart after idle).
    last_data_sent: Option<Instant>,
    local_port: u16,
    remote_port: u16,
    // --- sender ---
    iss: u32,
    /// Application bytes to send: None = unlimited.
    app_limit: Option<u64>,
    close_when_done: bool,
    fin_sent: bool,
    snd_wscale: u8,
    rcv_wscale: u8,
    pub rtt: RttEstimator,
    rto_deadline: Option<Instant>,
    syn_retx: bool,
    /// The application aborted: one RST still to send (`abort`).
    rst_pending: bool,
    /// SYNs (or SYN-ACKs) sent again.
    syn_rexmits: u32,
    /// The SYN (or SYN-ACK) timer fired (Linux: the request's `num_timeout`,
    /// which sets `undo_marker`), and the timestamp the first SYN (or
    /// SYN-ACK) carried (`snt_synack`, `retrans_stamp`).
    syn_timed_out: bool,
    first_syn_ts: u32,
    /// Timeouts since `snd_una` last advanced (Linux `icsk_retransmits`).
    rto_retransmits: u32,
    /// In it, the recovery chooses what to resend (it marked the losses).
    loss_by_recovery: bool,
    ts_ok: bool,
    sack_ok: bool,
    /// ECN negotiated (RFC 3168 §6.1.1), and the receiver's duty to echo a CE mark
    /// until a CWR arrives (Linux `TCP_ECN_DEMAND_CWR`).
    ecn_ok: bool,
    ece_pending: bool,
    ts_recent: u32,
    /// rcv_nxt when we last sent an ACK (RFC 7323's Last.ACK.sent, Linux
    /// `rcv_wup`).
    rcv_wup: u64,
    /// When an unacceptable empty segment was last answered.
    oow_ack_at: Option<Instant>,
    snd_wscale_peer_offered: bool,
    // --- receiver ---
    irs: u32,
    rcv_nxt: u64,
    ooo: Ranges,
    last_block: Option<(u64, u64)>,
    /// A duplicate segment's range, to report in the next ACK's first SACK block
    /// (RFC 2883 DSACK, with `dsack`).
    dsack: Option<(u64, u64)>,
    delivered: u64,
    fin_rcvd: bool,
    /// Sequence offset of a FIN that arrived beyond a hole (kept, as BSD's
    /// reassembly queue keeps it, until the hole fills).
    pending_fin: Option<u64>,
    unacked_segs: u32,
    /// Linux's ACK policy (`quickack`).
    acks: Option<super::delack::LinuxAcks>,
    ack_deadline: Option<Instant>,
    ack_now: bool,
    /// The sender's state that congestion control and loss recovery see.
    tcb: Tcb,
    /// Segments sent since the window's use was last validated.
    sent_burst: bool,
    /// The burst was a tail loss probe: no probe timer after it (Linux sends the
    /// probe with `push_one = 2`, which skips `tcp_schedule_loss_probe`).
    probe_burst: bool,
    /// Linux's receiver (`quickack`): an immediate ACK decided when data arrived
    /// with nothing of ours ready to carry it goes out alone, before whatever the
    /// application writes in reply (the kernel acknowledges in the softirq, before
    /// the process runs: a request's ACK precedes its response).
    ack_first: bool,
    /// Data waits for the pacing deadline (BBR).
    paced: Option<Instant>,
    cc: Cc,
    recovery: Recovery,
    /// Byte buffers when driven by real data (None: the simulator's counters).
    sbuf: Option<SendBuf>,
    rbuf: Option<RecvBuf>,
}

fn unwrap_seq(reference: u64, base: u32, wire: u32) -> u64 {
    let ref_wire = base.wrapping_add(reference as u32);
    let d = wire.wrapping_sub(ref_wire) as i32 as i64;
    (reference as i64 + d).max(0) as u64
}

impl Tcp {
    pub fn new(cfg: TcpConfig, local_port: u16, remote_port: u16, iss: u32) -> Tcp {
        let rtt =
            RttEstimator::new(cfg.initial_rto, cfg.timer_granularity, cfg.min_rto, cfg.max_rto).with_kind(cfg.rto);
        let smss = cfg.mss as u64;
        let rcv_ssthresh = cfg.rcv_wnd_initial.map_or(cfg.rcv_buf, |w| w.min(cfg.rcv_buf)) as u64;
        let mut tcp = Tcp {
            rcv_ssthresh,
            last_data_sent: None,
            wnd_cap: None,
            last_adv: 0,
            lrw: (cfg.rwnd == super::Rwnd::Linux)
                .then(|| Box::new(LinuxRwnd::new(cfg.rcv_buf, cfg.rcv_buf_max, cfg.autotune))),
            rx_held: 0,
            cfg,
            state: State::Closed,
            local_port,
            remote_port,
            iss,
            app_limit: Some(0),
            close_when_done: false,
            fin_sent: false,
            snd_wscale: 0,
            rcv_wscale: 0,
            rtt,
            tcb: Tcb::new(
                smss,
                cfg.cwnd_clamp.map_or(smss * cfg.initial_window as u64, |c| c as u64),
                cfg.cwnd_clamp.map(u64::from),
            ),
            sent_burst: false,
            probe_burst: false,
            ack_first: false,
            paced: None,
            cc: cfg.cc.make(&cfg),
            recovery: cfg.recovery.make(&cfg),
            rto_deadline: None,
            syn_retx: false,
            rst_pending: false,
            syn_rexmits: 0,
            syn_timed_out: false,
            first_syn_ts: 0,
            rto_retransmits: 0,
            loss_by_recovery: false,
            ts_ok: false,
            sack_ok: false,
            ecn_ok: false,
            ece_pending: false,
            ts_recent: 0,
            rcv_wup: 0,
            oow_ack_at: None,
            snd_wscale_peer_offered: false,
            irs: 0,
            rcv_nxt: 0,
            ooo: Ranges::default(),
            last_block: None,
            dsack: None,
            delivered: 0,
            sbuf: None,
            rbuf: None,
            fin_rcvd: false,
            pending_fin: None,
            unacked_segs: 0,
            acks: cfg.quickack.then(|| super::delack::LinuxAcks::new(cfg.delack_timeout)),
            ack_deadline: None,
            ack_now: false,
        };
        tcp.tcb.track_sent = cfg.rto == RtoKind::Linux || cfg.recovery == super::RecoveryKind::Rack;
        tcp.tcb.undo_enabled = cfg.rto == RtoKind::Linux;
        tcp.tcb.track_sent |= cfg.cc == super::CcKind::Bbr;
        tcp.tcb.rand ^= (iss as u64) << 17 | local_port as u64;
        tcp
    }

    // ----- application interface -----
    /// Sends `bytes` of application data (None = unlimited), then closes if `close`.
    pub fn set_app_data(&mut self, bytes: Option<u64>, close: bool) {
        self.app_limit = bytes;
        self.close_when_done = close;
    }
    /// Real data from here on: the endpoint keeps the bytes written with
    /// [`write`](Self::write) until they are acknowledged, and the bytes received
    /// (through [`on_segment_data`](Self::on_segment_data)) until
    /// [`read`](Self::read). Call before any data flows.
    pub fn use_byte_buffers(&mut self) {
        self.sbuf.get_or_insert_with(SendBuf::default);
        self.rbuf.get_or_insert_with(RecvBuf::default);
        if self.app_limit.is_none() {
            self.app_limit = Some(0);
        }
    }
    /// Queues application bytes to send; returns how many fit in the send buffer
    /// (`snd_buf` minus what is held unacknowledged).
    pub fn write(&mut self, data: &[u8]) -> usize {
        let Some(b) = &mut self.sbuf else { panic!("write needs use_byte_buffers") };
        if self.close_when_done {
            return 0;
        }
        let n = data.len().min((self.cfg.snd_buf as usize).saturating_sub(b.len()));
        b.push(&data[..n]);
        self.app_limit = Some(b.end());
        n
    }
    /// The application aborts the connection (RFC 9293 §3.10.5 ABORT; a user
    /// stopping a download): one RST at the next sequence number, then the
    /// endpoint is closed — it sends, answers and times nothing more.
    pub fn abort(&mut self) {
        if matches!(self.state, State::Closed | State::Listen) {
            self.state = State::Closed;
            return;
        }
        self.rst_pending = true;
        self.state = State::Closed;
        (self.rto_deadline, self.ack_deadline, self.tcb.recovery_deadline, self.paced) = (None, None, None, None);
        self.ack_now = false;
    }
    /// The application has no more to send: FIN after the data written.
    pub fn close(&mut self) {
        self.close_when_done = true;
        if self.app_limit.is_none() {
            self.app_limit = Some(0);
        }
    }
    /// The payload of a segment just returned by `poll_transmit`.
    pub fn segment_data(&self, seg: &Segment) -> Vec<u8> {
        match &self.sbuf {
            Some(b) if seg.len > 0 => b.read(seg.offset, seg.len as usize),
            _ => Vec::new(),
        }
    }
    /// Takes up to `max` bytes received in order; may open the window.
    pub fn read(&mut self, max: usize) -> Vec<u8> {
        let out = self.rbuf.as_mut().map(|r| r.read(max)).unwrap_or_default();
        if !out.is_empty() {
            self.maybe_window_update();
        }
        out
    }
    /// Bytes received in order and not read yet.
    pub fn readable(&self) -> usize {
        self.rbuf.as_ref().map_or(0, RecvBuf::unread)
    }
    /// Whether the endpoint keeps real bytes (`use_byte_buffers`).
    pub fn has_byte_buffers(&self) -> bool {
        self.sbuf.is_some()
    }
    /// Bytes written and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.sbuf.as_ref().map_or(0, SendBuf::len)
    }
    /// A segment with its payload bytes (byte buffers), or without (then its
    /// length alone counts, as in [`on_segment`](Self::on_segment)).
    pub fn on_segment_data(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) {
        let space = self.rcv_space();
        if let Some(r) = &mut self.rbuf {
            if !payload.is_empty() && matches!(self.state, State::SynRcvd | State::Established | State::Done) {
                let s = unwrap_seq(self.rcv_nxt, self.irs, seg.seq);
                let e = s + payload.len() as u64;
                if e > self.rcv_nxt && e - self.rcv_nxt <= space && s >= 1 {
                    r.insert(s - 1, payload);
                }
            }
        }
        self.on_segment(now, seg, payload.len() as u32);
        if let Some(r) = &mut self.rbuf {
            r.advance(self.delivered);
        }
    }
    pub fn connect(&mut self, now: Instant) {
        self.state = State::SynSent;
        self.trace_all(now);
        self.arm_rto(now);
    }
    pub fn listen(&mut self) {
        self.state = State::Listen;
    }
    /// Application bytes received in order.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// Application bytes acknowledged by the peer.
    pub fn acked_bytes(&self) -> u64 {
        self.tcb.snd_una.saturating_sub(1).min(self.app_limit.unwrap_or(u64::MAX))
    }
    /// Counters.
    pub fn stats(&self) -> &TcpStats {
        &self.tcb.stats
    }
    /// Starts recording the sender's variables ([`poll_event`](Self::poll_event)).
    pub fn enable_trace(&mut self) {
        self.tcb.trace.get_or_insert_with(Default::default);
    }
    /// The next variable change recorded, oldest first (None when there is none
    /// or tracing is off).
    pub fn poll_event(&mut self) -> Option<VarEvent> {
        self.tcb.trace.as_mut()?.pop_front()
    }
    /// The congestion controller's kind.
    pub fn cc_kind(&self) -> super::CcKind {
        self.cc.kind()
    }
    /// The loss-recovery algorithm's kind.
    pub fn recovery_kind(&self) -> super::RecoveryKind {
        self.recovery.kind()
    }
    pub fn cwnd(&self) -> u64 {
        self.tcb.cwnd
    }
    /// The pacing rate in bytes per second (BBR), if the sender paces.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.tcb.pacing_rate
    }
    /// BBR's bandwidth estimate (bytes per second) and mode.
    pub fn bbr_state(&self) -> Option<(u64, &'static str)> {
        match &self.cc {
            super::cc::Cc::Bbr(b) => Some(b.estimate(&self.tcb)),
            _ => None,
        }
    }
    /// ECN was negotiated (RFC 3168 §6.1.1).
    pub fn ecn_ok(&self) -> bool {
        self.ecn_ok
    }
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    pub fn ssthresh(&self) -> u64 {
        self.tcb.ssthresh
    }
    pub fn smss(&self) -> u64 {
        self.tcb.smss
    }
    pub fn is_closed(&self) -> bool {
        self.state == State::Done
    }
    /// The peer's FIN has arrived in order (the application saw end of file).
    pub fn fin_received(&self) -> bool {
        self.fin_rcvd
    }

    // ----- tracing helpers -----
    /// ICMP source quench, or BSD's `tcp_quench` on a local interface-queue drop
    /// (seed 000 §5.2, Fig. 7): the congestion window drops to one segment; ssthresh
    /// and recovery state are left alone, so the lost packet is still repaired by
    /// fast retransmit or the timer.
    pub fn source_quench(&mut self, now: Instant) {
        if self.state == State::Done {
            return;
        }
        let one = self.tcb.smss;
        self.tcb.set_cwnd(now, one);
    }

    fn trace_all(&mut self, now: Instant) {
        if self.tcb.trace.is_none() {
            return;
        }
        self.tcb.push_var(now, TcpVar::Cwnd, self.tcb.cwnd as i64);
        self.tcb.push_var(now, TcpVar::Rto, self.rtt.rto().nanos());
    }
    fn trace_rtt(&mut self, now: Instant) {
        if self.tcb.trace.is_none() {
            return;
        }
        if let Some(s) = self.rtt.srtt {
            self.tcb.push_var(now, TcpVar::Srtt, s.nanos());
        }
        self.tcb.push_var(now, TcpVar::Rttvar, self.rtt.rttvar.nanos());
        self.tcb.push_var(now, TcpVar::Rto, self.rtt.rto().nanos());
    }

    // ----- timers -----
    fn arm_rto(&mut self, now: Instant) {
        let g = self.cfg.timer_granularity;
        let d = Duration((now + self.rtt.rto()).nanos()).ceil_to(g);
        self.rto_deadline = Some(Instant(d.nanos()));
    }
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.rto_deadline, self.ack_deadline, self.tcb.recovery_deadline, self.paced].into_iter().flatten().min()
    }
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.paced.is_some_and(|t| t <= now) {
            self.paced = None;
        }
        if let Some(d) = self.ack_deadline {
            if d <= now {
                self.ack_deadline = None;
                self.ack_now = true;
                let rto = self.rtt.rto();
                if let Some(a) = &mut self.acks {
                    a.on_timer(rto);
                }
            }
        }
        if self.tcb.recovery_deadline.is_some_and(|d| d <= now) {
            self.tcb.recovery_deadline = None;
            if self.state == State::Established {
                self.recovery.on_timer(&mut self.tcb, &mut self.cc, now);
                if self.tcb.probe {
                    // The probe took the retransmission timer's place.
                    self.arm_rto(now);
                } else if std::mem::take(&mut self.tcb.rto_from_head) {
                    let head = self.tcb.sent.front().map_or(now, |r| r.xmit);
                    self.rto_deadline = Some((head + self.rtt.rto()).max(now));
                }
            }
        }
        if let Some(d) = self.rto_deadline {
            if d <= now {
                self.rto_deadline = None;
                self.on_rto(now);
            }
        }
    }
    fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynRcvd => {
                self.syn_retx = true;
                self.syn_timed_out = true;
                // Linux `tcp_syn_linear_timeouts`: the active opener's first SYN
                // timeouts do not back off (this is timeout number syn_rexmits + 1).
                let linear = self.state == State::SynSent && self.syn_rexmits < self.cfg.syn_linear_timeouts;
                if !linear {
                    self.rtt.on_timeout();
                }
                // Linux marks the SYN it had sent again lost again
                // (`tcp_mark_skb_lost`: `TCPLostRetransmit`; a SYN-ACK is the
                // request socket's, which counts no such thing).
                if self.state == State::SynSent && self.syn_rexmits > 0 && self.cfg.rto == RtoKind::Linux {
                    self.tcb.stats.lost_retransmits += 1;
                }
                self.tcb.stats.timeouts += 1;
                self.tcb.push_var(now, TcpVar::Timeout, self.tcb.stats.timeouts as i64);
                self.arm_rto(now);
                return;
            }
            State::Established => {}
            _ => return,
        }
        if self.tcb.snd_max <= self.tcb.snd_una {
            return;
        }
        self.tcb.stats.timeouts += 1;
        self.tcb.push_var(now, TcpVar::Timeout, self.tcb.stats.timeouts as i64);
        let linux = self.cfg.rto == RtoKind::Linux;
        // Linux `tcp_enter_loss` reduces ssthresh once per loss episode: not again
        // during a fast recovery, nor at a repeated timeout with no progress since.
        // (Nor during an ECN reduction of the window not yet acknowledged.)
        let episode = (self.tcb.snd_una < self.tcb.recover
            && (self.tcb.in_recovery || (self.tcb.in_loss && self.rto_retransmits > 0)))
            || (self.tcb.in_cwr && self.tcb.snd_una < self.tcb.cwr_high);
        if !(linux && episode) {
            if linux {
                // For an undo (`tcp_init_undo`): the window and threshold before,
                // and when the first retransmission leaves.
                self.tcb.init_undo(now);
            }
            let ssthresh = self.cc.ssthresh(&self.tcb);
            self.tcb.set_ssthresh(now, ssthresh);
        }
        if let Some(u) = self.tcb.undo.as_mut().filter(|_| linux) {
            u.timeouts += 1;
        }
        self.tcb.in_loss = true;
        // F-RTO judges a timeout outside a fast recovery, and a timeout repeated
        // on the same `snd_una` (RFC 5682 §3.1 step 1, §3.2; `tcp_enter_loss`).
        let frto = self.cfg.frto && (!self.tcb.in_recovery || self.rto_retransmits > 0);
        self.rto_retransmits += 1;
        (self.tcb.tlp, self.tcb.probe) = (None, false);
        // A recovery that marks losses itself (RACK, RFC 8985 §6.3) resends what
        // it deems lost, with cwnd = what stays in flight + one segment (Linux
        // `tcp_enter_loss`); otherwise everything unacknowledged is sent again from
        // `snd_una` with cwnd of one segment.
        self.loss_by_recovery = self.recovery.on_rto(&mut self.tcb, now);
        // (F-RTO needs a recovery that chooses what to resend: RACK.)
        (self.tcb.frto, self.tcb.frto_new) = (frto && self.loss_by_recovery, false);
        let w = if self.loss_by_recovery { self.tcb.pipe_sent() } else { 0 } + self.tcb.smss;
        self.tcb.force_cwnd(now, w);
        self.cc.on_rto(&mut self.tcb);
        self.rtt.on_timeout();
        self.tcb.push_var(now, TcpVar::Rto, self.rtt.rto().nanos());
        if !self.loss_by_recovery {
            self.tcb.snd_nxt = self.tcb.snd_una;
        }
        self.tcb.in_recovery = false;
        (self.tcb.in_cwr, self.tcb.queue_cwr) = (false, true);
        self.tcb.dupacks = 0;
        self.tcb.recover = self.tcb.snd_max;
        self.tcb.high_rxt = self.tcb.snd_una;
        self.tcb.rexmit = None;
        self.tcb.timing = None;
        if !linux {
            // RFC 2018 §8; Linux keeps what was SACKed and resends the rest.
            self.tcb.scoreboard.clear();
        }
        if self.fin_sent && self.tcb.snd_una <= self.fin_off() {
            self.fin_sent = false;
        }
        self.arm_rto(now);
    }

    // ----- helpers -----
    fn data_end(&self) -> u64 {
        self.app_limit.map(|b| 1 + b).unwrap_or(u64::MAX / 2)
    }
    fn fin_off(&self) -> u64 {
        self.data_end()
    }
    fn ts_now(now: Instant) -> u32 {
        super::tcb::ts_clock(now)
    }
    /// Advertised window: free receive-buffer space. As in BSD (`sbspace`), the
    /// reassembly queue is not counted, so the right edge never moves left; the
    /// simulated application reads in-order data at once.
    /// With `rcv_wnd_initial` the window offered starts smaller and grows as data
    /// arrives (Linux's `rcv_ssthresh`).
    fn adv_window(&self) -> u16 {
        if let Some(l) = &self.lrw {
            let held = self.rx_held + l.held(self.ooo.bytes() + self.readable() as u64, self.hdr_len());
            let cur = (self.rcv_wup + self.last_adv).saturating_sub(self.rcv_nxt);
            let w = l.select(held, cur, self.last_adv, self.rcv_wscale).min(self.wnd_cap.unwrap_or(u64::MAX));
            return (w >> self.rcv_wscale).min(65535) as u16;
        }
        let mut w = self.rcv_ssthresh.min(self.wnd_cap.unwrap_or(u64::MAX));
        if let Some(r) = &self.rbuf {
            // With byte buffers the application may read late: unread bytes
            // occupy the buffer.
            w = w.min((self.cfg.rcv_buf as u64).saturating_sub(r.unread() as u64));
        }
        (w >> self.rcv_wscale).min(65535) as u16
    }

    /// Caps the advertised window (None lifts the cap). When the window opens by
    /// at least min(SMSS, half the buffer) over the last one advertised, a window
    /// update is sent at once (RFC 1122 §4.2.3.3 receiver SWS avoidance), so a
    /// sender held at a zero window resumes without a persist probe.
    pub fn set_window_cap(&mut self, cap: Option<u64>) {
        self.wnd_cap = cap;
        self.maybe_window_update();
    }
    fn maybe_window_update(&mut self) {
        let now_adv = (self.adv_window() as u64) << self.rcv_wscale;
        let step = self.tcb.smss.min(self.cfg.rcv_buf as u64 / 2).max(1);
        if now_adv >= self.last_adv + step && self.state == State::Established {
            self.ack_now = true;
        }
    }
    /// Our FIN has been sent and acknowledged.
    pub fn fin_acked(&self) -> bool {
        self.fin_sent && self.app_limit.is_some() && self.tcb.snd_una > self.fin_off()
    }

    fn header(&self, now: Instant, seq_off: u64, flags: u8) -> TcpRepr {
        let mut r = TcpRepr {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss.wrapping_add(seq_off as u32),
            ack: 0,
            flags: TcpFlags(flags),
            window: self.adv_window(),
            ..Default::default()
        };
        if flags & TcpFlags::ACK != 0 {
            r.ack = self.irs.wrapping_add(self.rcv_nxt as u32);
        }
        let syn = flags & TcpFlags::SYN != 0;
        if syn {
            r.opts.mss = Some(self.cfg.mss as u16);
            r.window = match &self.lrw {
                // The passive side rounds to its MSS less the timestamp option.
                Some(l) => {
                    let ts = self.state == State::SynRcvd && self.ts_ok;
                    l.syn_window(self.cfg.mss as u64 - 12 * ts as u64) as u16
                }
                None => self.rcv_ssthresh.min(65535) as u16,
            };
            let offer_ws = self.cfg.window_scaling && (self.state == State::SynSent || self.snd_wscale_offered());
            if offer_ws {
                r.opts.wscale = Some(self.rcv_wscale_for_buf());
            }
            let passive = self.state == State::SynRcvd;
            r.opts.sack_permitted = if passive { self.sack_ok } else { self.cfg.sack };
            let ts = if passive { self.ts_ok } else { self.cfg.timestamps };
            if ts {
                r.opts.timestamps = Some((Self::ts_now(now), self.ts_recent));
            }
        } else if self.ts_ok {
            r.opts.timestamps = Some((Self::ts_now(now), self.ts_recent));
        }
        if !syn && self.sack_ok && (!self.ooo.is_empty() || self.dsack.is_some()) && flags & TcpFlags::ACK != 0 {
            let max = TcpRepr::max_sack_blocks(self.ts_ok);
            let mut n = 0;
            // RFC 2883: a duplicate's range goes first, whatever the other blocks.
            if let Some((s, e)) = self.dsack {
                r.opts.sack[0] = (self.irs.wrapping_add(s as u32), self.irs.wrapping_add(e as u32));
                n = 1;
            }
            let first = n;
            let mut push = |blk: (u64, u64), r: &mut TcpRepr| {
                if n < max
                    && !r.opts.sack[first..n]
                        .contains(&(self.irs.wrapping_add(blk.0 as u32), self.irs.wrapping_add(blk.1 as u32)))
                {
                    r.opts.sack[n] = (self.irs.wrapping_add(blk.0 as u32), self.irs.wrapping_add(blk.1 as u32));
                    n += 1;
                }
            };
            if let Some((s, _)) = self.last_block {
                if let Some(e) = self.ooo.end_of(s) {
                    let st = self.ooo.v.iter().find(|b| b.0 <= s && s < b.1).unwrap().0;
                    push((st, e), &mut r);
                }
            }
            for &b in self.ooo.v.iter().rev() {
                push(b, &mut r);
            }
            r.opts.sack_len = n as u8;
        }
        r
    }
    fn snd_wscale_offered(&self) -> bool {
        self.snd_wscale_peer_offered
    }
    fn rcv_wscale_for_buf(&self) -> u8 {
        if let Some(l) = &self.lrw {
            return l.wscale();
        }
        let mut s = 0u8;
        while s < 14 && (self.cfg.rcv_buf as u64 >> s) > 65535 {
            s += 1;
        }
        s
    }

    // ----- output -----
    /// The next segment to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if std::mem::take(&mut self.rst_pending) {
            let seq = self.tcb.snd_nxt.max(1);
            return Some(self.emit(now, seq, 0, TcpFlags::RST, false));
        }
        match self.state {
            State::SynSent | State::SynRcvd if self.tcb.snd_max == 0 || self.syn_retx => {
                // SYN (active side) or SYN-ACK (passive side), first or again.
                self.syn_retx = false;
                let retx = self.tcb.snd_max > 0;
                self.syn_rexmits += retx as u32;
                self.tcb.stats.syn_retransmits += retx as u64;
                if !retx {
                    self.first_syn_ts = Self::ts_now(now);
                }
                self.tcb.snd_nxt = 1;
                self.tcb.snd_max = 1;
                self.tcb.timing = if retx { None } else { Some((1, now)) };
                if self.rto_deadline.is_none() {
                    self.arm_rto(now);
                }
                let flags = if self.state == State::SynSent { TcpFlags::SYN } else { TcpFlags::SYN | TcpFlags::ACK };
                return Some(self.emit(now, 0, 0, flags, retx));
            }
            State::Established => {
                if std::mem::take(&mut self.ack_first) && self.ack_now {
                    return Some(self.pure_ack(now));
                }
                if let Some(s) = self.next_data(now) {
                    self.sent_burst = true;
                    return Some(s);
                }
                // The end of a burst (Linux `tcp_write_xmit`): was the window the
                // limit? (Only Linux's controllers ask.)
                let limited = self.tcb.flight() >= self.tcb.cwnd;
                if self.sent_burst && self.tcb.track_sent && !std::mem::take(&mut self.probe_burst) {
                    // Linux schedules the loss probe after every burst too, no later
                    // than the retransmission timer would fire counted from the
                    // first unacknowledged segment's transmission
                    // (`tcp_schedule_loss_probe` after `tcp_write_xmit`:
                    // `tcp_rto_delta_us`).
                    let head = self.tcb.sent.front().map_or(now, |r| r.xmit);
                    self.tcb.rto_in = (head + self.rtt.rto()) - now;
                    self.recovery.on_sent(&mut self.tcb, now);
                }
                if (self.sent_burst || limited) && self.cc.kind() != super::CcKind::Rfc5681 {
                    self.tcb.cwnd_validate(limited);
                }
                self.sent_burst = false;
            }
            _ => {}
        }
        if self.ack_now && matches!(self.state, State::Established | State::Done) {
            return Some(self.pure_ack(now));
        }
        None
    }

    /// An ACK without data, at the next sequence number.
    fn pure_ack(&mut self, now: Instant) -> Segment {
        self.emit(now, self.tcb.snd_nxt.max(1).min(self.tcb.snd_max.max(1)), 0, TcpFlags::ACK, false)
    }

    fn emit(&mut self, now: Instant, seq: u64, len: u32, mut flags: u8, retransmission: bool) -> Segment {
        // RFC 3168 §6.1: ECN-setup SYN (ECE + CWR) and SYN-ACK (ECE); then ECE
        // while a CE mark waits for the sender's CWR, and CWR on the first new
        // segment after a reduction; ECT(0) on new data only (§6.1.5, Linux
        // `tcp_ecn_send`).
        let new_data = len > 0 && !retransmission && self.ecn_ok;
        if self.cfg.ecn != super::Ecn::Off {
            if flags & TcpFlags::SYN != 0 {
                // A SYN sent again asks no more (Linux `tcp_ecn_clear_syn`, in
                // case a middlebox drops ECN-setup SYNs).
                if self.state == State::SynSent && self.cfg.ecn == super::Ecn::On && !retransmission {
                    flags |= TcpFlags::ECE | TcpFlags::CWR;
                } else if self.state == State::SynRcvd && self.ecn_ok {
                    flags |= TcpFlags::ECE;
                }
            } else {
                if self.ece_pending {
                    flags |= TcpFlags::ECE;
                }
                if new_data && std::mem::take(&mut self.tcb.queue_cwr) {
                    flags |= TcpFlags::CWR;
                }
            }
        }
        let repr = self.header(now, seq, flags);
        self.tcb.stats.segments_sent += 1;
        if flags & (TcpFlags::ACK | TcpFlags::SYN) == TcpFlags::SYN && self.lrw.is_some() {
            // The SYN's window is the first `rcv_wnd` (Linux `tcp_connect_init`).
            self.last_adv = repr.window as u64;
        }
        if flags & TcpFlags::ACK != 0 {
            self.rcv_wup = self.rcv_nxt;
            self.rx_held = 0;
            self.last_adv = (repr.window as u64) << if flags & TcpFlags::SYN != 0 { 0 } else { self.rcv_wscale };
            self.ack_now = false;
            self.ack_deadline = None;
            if self.unacked_segs > 0 {
                if let Some(a) = &mut self.acks {
                    a.on_ack_sent();
                }
            }
            self.unacked_segs = 0;
            if self.dsack.is_some() && flags & TcpFlags::SYN == 0 {
                self.dsack = None;
                self.tcb.stats.dsacks_sent += 1;
            }
            if len == 0 && flags & (TcpFlags::SYN | TcpFlags::FIN) == 0 {
                self.tcb.stats.acks_sent += 1;
            }
        }
        if len > 0 {
            self.tcb.stats.data_segments_sent += 1;
            if self.tcb.pacing_rate.is_some() {
                self.pace(now, len);
            }
            self.tcb.stats.data_bytes_sent += len as u64;
            if retransmission {
                self.tcb.stats.retransmits += 1;
                self.tcb.stats.retransmitted_bytes += len as u64;
            }
        }
        Segment { repr, len, retransmission, offset: seq.saturating_sub(1), ect: new_data }
    }

    /// Sends the segment starting at `seq` (data or FIN), updating send state.
    fn send_at(&mut self, now: Instant, seq: u64, max_len: u64) -> Segment {
        let end = self.data_end();
        let retx = seq < self.tcb.snd_max;
        let linux = self.cfg.rto == RtoKind::Linux;
        if retx && linux && seq == self.tcb.snd_una {
            // Linux `tcp_xmit_retransmit_queue`: resending the first unacknowledged
            // segment restarts the timer.
            self.arm_rto(now);
        }
        if seq >= end {
            // FIN
            self.fin_sent = true;
            self.tcb.snd_nxt = self.tcb.snd_nxt.max(end + 1);
            self.tcb.snd_max = self.tcb.snd_max.max(end + 1);
            if self.rto_deadline.is_none() {
                self.arm_rto(now);
            }
            self.tcb.stats.fin_retransmits += retx as u64;
            return self.emit(now, end, 0, TcpFlags::FIN | TcpFlags::ACK, retx);
        }
        let len = max_len.min(self.tcb.smss).min(end - seq);
        // The last data segment of a closed stream carries the FIN.
        let fin = self.cfg.fin_with_data && seq + len == end && self.close_when_done && self.app_limit.is_some();
        if retx && (self.tcb.in_recovery || self.tcb.in_loss) {
            // Linux `undo_retrans`: retransmissions a DSACK may yet show needless.
            if let Some(u) = &mut self.tcb.undo {
                u.retrans = Some(u.retrans.unwrap_or(0) + len.div_ceil(self.tcb.smss));
            }
        }
        if !retx
            && self.cfg.slow_start_after_idle
            && self.tcb.snd_una == self.tcb.snd_max
            && self.last_data_sent.is_some_and(|t| now - t > self.rtt.rto())
        {
            // RFC 5681 §4.1: restart window = min(IW, cwnd) after an idle RTO.
            let rw = self.tcb.cwnd.min(self.tcb.smss * self.cfg.initial_window as u64);
            self.tcb.set_cwnd(now, rw);
        }
        self.last_data_sent = Some(now);
        if self.tcb.track_sent {
            // Linux `tcp_rate_skb_sent`: what the connection had delivered.
            let out = self.tcb.sent.len() as u64;
            let tx = self.tcb.rate.as_mut().map(|r| r.on_sent(now, out)).unwrap_or_default();
            if retx {
                for r in self.tcb.sent.iter_mut().take_while(|r| r.start < seq + len) {
                    if r.end > seq {
                        (r.xmit, r.retx, r.lost, r.tx) = (now, true, false, tx);
                    }
                }
            } else {
                self.tcb.sent.push_back(Sent {
                    start: seq,
                    end: seq + len + fin as u64,
                    xmit: now,
                    retx: false,
                    lost: false,
                    sacked: false,
                    tx,
                });
            }
        }
        // With `rto = "linux"` every segment is timed (`sent`); otherwise one at a time.
        if !linux {
            if retx {
                self.tcb.timing = None;
            } else if self.tcb.timing.is_none() && !self.ts_ok {
                self.tcb.timing = Some((seq + len, now));
            }
        }
        self.tcb.snd_nxt = self.tcb.snd_nxt.max(seq + len + fin as u64);
        self.tcb.snd_max = self.tcb.snd_max.max(seq + len + fin as u64);
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        let mut flags = TcpFlags::ACK;
        if fin {
            self.fin_sent = true;
            flags |= TcpFlags::FIN;
        }
        if seq + len == end || self.tcb.snd_max == seq + len {
            flags |= TcpFlags::PSH;
        }
        self.emit(now, seq, len as u32, flags, retx)
    }

    fn window(&self) -> u64 {
        self.tcb.cwnd.min(self.tcb.snd_wnd).min(self.cfg.snd_buf as u64)
    }

    /// A tail loss probe (RFC 8985 §7.3, Linux `tcp_send_loss_probe`): one new
    /// segment if the application and the receiver's window allow, whatever cwnd;
    /// else the last segment sent, again. The retransmission timer restarts.
    fn send_probe(&mut self, now: Instant) -> Option<Segment> {
        let end = self.data_end();
        let t = &self.tcb;
        let seg = if t.snd_nxt == t.snd_max
            && t.snd_max < end
            && t.snd_max + t.smss.min(end - t.snd_max) <= t.snd_una + t.snd_wnd
        {
            let s = t.snd_max;
            self.send_at(now, s, self.tcb.smss)
        } else {
            let &Sent { start, end, .. } = self.tcb.sent.back()?;
            self.send_at(now, start, end - start)
        };
        self.tcb.tlp = Some((self.tcb.snd_max, seg.retransmission));
        self.probe_burst = true;
        self.tcb.stats.loss_probes += 1;
        self.tcb.push_var(now, TcpVar::LossProbe, self.tcb.stats.loss_probes as i64);
        self.arm_rto(now);
        Some(seg)
    }

    fn next_data(&mut self, now: Instant) -> Option<Segment> {
        if self.pacing_holds(now) {
            return None;
        }
        if std::mem::take(&mut self.tcb.probe) {
            if let Some(s) = self.send_probe(now) {
                return Some(s);
            }
        }
        if let Some(s) = self.tcb.rexmit.take() {
            if s >= self.tcb.snd_una && s < self.tcb.snd_max {
                let hole_end = self.tcb.hole_end(s, u64::MAX);
                return Some(self.send_at(now, s, hole_end - s));
            }
        }
        if self.tcb.in_recovery || self.loss_by_recovery || self.tcb.in_cwr {
            let data_end = self.data_end();
            match self.recovery.next_segment(&mut self.tcb, data_end) {
                NextSeg::Default => {}
                NextSeg::Send(seq, len) => return Some(self.send_at(now, seq, len)),
                NextSeg::Wait => return None,
            }
        }
        let end = self.data_end();
        let fin_pending = self.close_when_done && self.app_limit.is_some() && !self.fin_sent;
        // Skip over SACKed data when resending after a timeout.
        while let Some(e) = self.tcb.scoreboard.end_of(self.tcb.snd_nxt) {
            self.tcb.snd_nxt = e;
        }
        let mut limit = self.tcb.snd_una + self.window();
        if self.cfg.limited_transmit
            && self.tcb.dupacks > 0
            && !self.tcb.in_recovery
            && self.tcb.snd_nxt == self.tcb.snd_max
        {
            // RFC 3042: one new segment for each of the first two duplicate ACKs.
            let extra = self.tcb.smss * self.tcb.dupacks.min(2) as u64;
            let w = (self.tcb.cwnd + extra).min(self.tcb.snd_wnd).min(self.cfg.snd_buf as u64);
            limit = limit.max(self.tcb.snd_una + w);
        }
        if self.tcb.snd_nxt < end {
            let avail = end - self.tcb.snd_nxt;
            let want = avail.min(self.tcb.smss);
            if self.tcb.snd_nxt + want <= limit || (self.tcb.snd_nxt == self.tcb.snd_una && limit > self.tcb.snd_nxt) {
                let room = (limit - self.tcb.snd_nxt).min(want).max(1);
                let hole_end = self.tcb.hole_end(self.tcb.snd_nxt, u64::MAX);
                return Some(self.send_at(now, self.tcb.snd_nxt, room.min(hole_end - self.tcb.snd_nxt)));
            }
            return None;
        }
        if fin_pending && self.tcb.snd_nxt == end {
            return Some(self.send_at(now, end, 0));
        }
        None
    }

    /// Linux's internal pacing (`tcp_pacing_check`): with a pacing rate, data
    /// that could go now waits for the departure time of the last segment sent
    /// (a wake-up is asked for).
    fn pacing_holds(&mut self, now: Instant) -> bool {
        if self.tcb.pacing_rate.is_none() || self.tcb.next_send <= now {
            return false;
        }
        let t = &self.tcb;
        let data =
            t.snd_max < self.data_end() || t.rexmit.is_some() || t.probe || t.in_recovery || self.loss_by_recovery;
        if data && t.flight() < t.cwnd.min(t.snd_wnd.max(t.smss)) {
            self.paced = Some(t.next_send);
            return true;
        }
        false
    }

    /// Linux `tcp_update_skb_after_send`: the next departure is `len` bytes at the
    /// pacing rate after this one (less up to half of it for the time the
    /// schedule had fallen behind), from the tenth data segment on.
    fn pace(&mut self, now: Instant, len: u32) {
        let t = &mut self.tcb;
        let prior = t.next_send;
        t.next_send = t.next_send.max(now);
        let Some(rate) = t.pacing_rate.filter(|&r| r > 0) else { return };
        if t.stats.data_segments_sent < 10 {
            return;
        }
        let len_ns = (len as u64 * 1_000_000_000 / rate) as i64;
        let credit = (t.next_send - prior).nanos();
        t.next_send += Duration(len_ns - credit.min(len_ns / 2));
    }

    // ----- input -----
    /// Processes an incoming segment with `len` payload bytes.
    pub fn on_segment(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        self.on_segment_ecn(now, seg, len, false);
    }

    /// [`on_segment`](Self::on_segment) for a segment whose IP header says
    /// Congestion Experienced (`ce`, RFC 3168).
    pub fn on_segment_ecn(&mut self, now: Instant, seg: &TcpRepr, len: u32, ce: bool) {
        let f = seg.flags;
        if f.has(TcpFlags::RST) {
            self.state = State::Done;
            return;
        }
        match self.state {
            State::Closed => return,
            State::Listen => {
                if !f.has(TcpFlags::SYN) {
                    return;
                }
                self.irs = seg.seq;
                self.rcv_nxt = 1;
                self.negotiate(now, seg);
                self.state = State::SynRcvd;
                if let Some((v, _)) = seg.opts.timestamps {
                    self.ts_recent = v;
                }
                return;
            }
            State::SynSent => {
                if !(f.has(TcpFlags::SYN) && f.has(TcpFlags::ACK)) {
                    return;
                }
                if seg.ack != self.iss.wrapping_add(1) {
                    return;
                }
                self.irs = seg.seq;
                self.rcv_nxt = 1;
                self.negotiate(now, seg);
                if let Some((v, _)) = seg.opts.timestamps {
                    self.ts_recent = v;
                }
                self.tcb.snd_una = 1;
                self.tcb.snd_nxt = 1;
                self.tcb.snd_wnd = (seg.window as u64) << self.snd_wscale;
                self.sample_rtt(now, seg, 1, None);
                self.handshake_done(now);
                self.rto_deadline = None;
                self.state = State::Established;
                self.ack_now = true;
                // Linux's client acknowledges the SYN-ACK at once, alone
                // (`tcp_rcv_synsent_state_process`: `tcp_send_ack`, unless a write
                // is already waiting in connect); the application's first data
                // follows in a segment of its own (a capture of curl's GET).
                self.ack_first = self.cfg.quickack;
                return;
            }
            State::SynRcvd => {
                if f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK) {
                    self.syn_retx = true;
                    return;
                }
                if !f.has(TcpFlags::ACK) {
                    return;
                }
                if unwrap_seq(self.tcb.snd_una, self.iss, seg.ack) < 1 {
                    return;
                }
                self.tcb.snd_una = 1;
                self.tcb.snd_nxt = self.tcb.snd_nxt.max(1);
                self.sample_rtt(now, seg, 1, None);
                // Linux `tcp_try_undo_spurious_syn`: the ACK echoes the first
                // SYN-ACK's timestamp, so that one arrived and its timeout was
                // spurious.
                if self.ts_ok && seg.opts.timestamps.is_some_and(|(_, ecr)| ecr == self.first_syn_ts) {
                    self.syn_timed_out = false;
                }
                self.handshake_done(now);
                self.rto_deadline = None;
                self.state = State::Established;
            }
            State::Established | State::Done => {
                if f.has(TcpFlags::SYN) {
                    self.ack_now = true;
                    return;
                } // retransmitted SYN-ACK: our ACK was lost
            }
        }
        if let Some((v, _)) = seg.opts.timestamps {
            let s = unwrap_seq(self.rcv_nxt, self.irs, seg.seq);
            let fresh = if self.cfg.ts_recent_at_ack_point {
                // RFC 7323 §4.3 and Linux (`tcp_sequence`, then
                // `tcp_replace_ts_recent`): only a segment that reaches the last
                // ACK sent, SEG.SEQ <= Last.ACK.sent <= SEG.SEQ + SEG.LEN (FIN
                // counted; the RFC has < on the right, the kernel <=). Under delayed ACKs
                // the first unacknowledged segment's value is echoed; a
                // duplicate ending before that point (a retransmission whose
                // original arrived) refreshes nothing, so its DSACK echoes the
                // older value and the sender's sample spans both transmissions.
                let end = s + len as u64 + f.has(TcpFlags::FIN) as u64;
                s <= self.rcv_wup && end >= self.rcv_wup
            } else {
                s <= self.rcv_nxt
            };
            if fresh {
                self.ts_recent = v;
            }
        }
        if f.has(TcpFlags::ACK) {
            self.on_ack(now, seg, len);
        }
        if len == 0 && !f.has(TcpFlags::FIN) && self.rcv_nxt > 1 {
            // An empty segment below the receive window — a zero-window probe
            // or a keep-alive (one byte before the edge) — is not acceptable and
            // is answered with an ACK that gives the window (RFC 9293 §3.10.7.4;
            // Linux `tcp_validate_incoming` → `tcp_send_dupack`). Linux measures
            // it against the last ACK sent (`tcp_sequence`: end_seq before
            // rcv_wup), not rcv_nxt, so a pure ACK that crossed our data is
            // still acceptable.
            // At most one such answer per 500 ms (Linux `tcp_oow_rate_limited`,
            // `tcp_invalid_ratelimit`), so two peers whose pure ACKs both went
            // stale cannot ping-pong.
            let s = unwrap_seq(self.rcv_nxt, self.irs, seg.seq);
            let limited = self.oow_ack_at.is_some_and(|t| now - t < Duration::from_millis(500));
            if s < self.rcv_wup && !self.fin_rcvd && !limited {
                self.oow_ack_at = Some(now);
                self.ack_now = true;
            }
        }
        if len > 0 && self.ecn_ok {
            self.ecn_receive(seg, ce);
        }
        if len > 0 || f.has(TcpFlags::FIN) {
            self.on_data(now, seg, len);
            // Not for a FIN: the kernel then waits for the application's close
            // (`tcp_fin` enters pingpong mode, which ends the quick ACKs), and
            // its FIN carries the ACK.
            self.ack_first = self.cfg.quickack
                && self.ack_now
                && len > 0
                && !f.has(TcpFlags::FIN)
                && self.tcb.snd_max >= self.data_end();
        }
        self.check_done();
    }

    fn negotiate(&mut self, now: Instant, seg: &TcpRepr) {
        let peer_mss = seg.opts.mss.unwrap_or(536) as u64;
        // RFC 3168 §6.1.1: the passive side accepts an ECN-setup SYN (ECE and
        // CWR) unless ECN is off; the active side, having asked, takes a SYN-ACK
        // with ECE and without CWR.
        let (ece, cwr) = (seg.flags.has(TcpFlags::ECE), seg.flags.has(TcpFlags::CWR));
        self.ecn_ok = match self.state {
            State::Listen => self.cfg.ecn != super::Ecn::Off && ece && cwr,
            _ => self.cfg.ecn == super::Ecn::On && ece && !cwr,
        };
        self.sack_ok = self.cfg.sack && seg.opts.sack_permitted;
        self.tcb.sack_ok = self.sack_ok;
        self.ts_ok = self.cfg.timestamps && seg.opts.timestamps.is_some();
        self.snd_wscale_peer_offered = seg.opts.wscale.is_some();
        if let (true, Some(ws)) = (self.cfg.window_scaling, seg.opts.wscale) {
            self.snd_wscale = ws.min(14);
            self.rcv_wscale = self.rcv_wscale_for_buf();
        }
        self.tcb.smss = self.cfg.mss.min(peer_mss as u32) as u64 - if self.ts_ok { 12 } else { 0 };
        self.tcb.cwnd = self.cfg.cwnd_clamp.map_or(self.tcb.smss * self.cfg.initial_window as u64, |c| c as u64);
        self.trace_all(now);
    }

    /// With `rto = "linux"`, Linux's state when the handshake completes
    /// (`tcp_init_metrics`, `tcp_init_transfer`): the 3 s fallback RTO without an
    /// RTT sample; a window of one segment after two or more SYNs (or SYN-ACKs)
    /// sent again when a timer fired for them and that timeout was not found
    /// spurious (`total_retrans > 1 && undo_marker`; RFC 5681 §3.1 asks for one
    /// after any).
    fn handshake_done(&mut self, now: Instant) {
        if self.cfg.rto == RtoKind::Linux {
            self.rtt.fallback(Duration::from_secs(3));
            if self.syn_rexmits > 1 && self.syn_timed_out {
                let one = self.tcb.smss;
                self.tcb.set_cwnd(now, one);
            }
        }
        self.cc.init(&mut self.tcb, now);
        if let Some(l) = self.lrw.as_deref_mut() {
            let advmss = self.cfg.mss as u64 - 12 * self.ts_ok as u64;
            l.established(now, advmss, self.rcv_wscale, self.last_adv, self.delivered);
        }
    }

    /// IP and TCP header bytes of a data segment (with the timestamp option).
    fn hdr_len(&self) -> u64 {
        40 + 12 * self.ts_ok as u64
    }
    /// How far beyond `rcv_nxt` a segment is kept: the receive buffer.
    fn rcv_space(&self) -> u64 {
        self.lrw.as_ref().map_or(self.cfg.rcv_buf as u64, |l| l.rcvbuf())
    }

    /// Linux's receive window after a data segment (`tcp_event_data_recv`,
    /// `tcp_data_queue_ofo`, then `tcp_rcv_space_adjust` as the application
    /// reads): true if the window grew, which asks for a quick ACK.
    fn linux_rwnd_data(&mut self, now: Instant, seg: &TcpRepr, len: u32, in_order: bool) -> bool {
        let hdr = self.hdr_len();
        let unread = self.readable() as u64;
        let Some(l) = self.lrw.as_deref_mut() else { return false };
        let this = if in_order { skb_truesize(len as u64, hdr) } else { 0 };
        let held = this + l.held(self.ooo.bytes() + unread, hdr);
        let tsecr = seg.opts.timestamps.map_or(0, |(_, e)| e);
        let ts = super::tcb::ts_clock(now);
        let grew = l.on_data(now, len as u64, hdr, in_order, held, self.last_adv, tsecr, ts, self.rcv_nxt);
        if in_order {
            self.rx_held = this;
            l.on_read(now, self.delivered - unread);
        }
        // Out of order the ACK goes at once; the quick ACK asked for is the next.
        if grew && !in_order {
            if let Some(a) = &mut self.acks {
                a.quick |= 1;
            }
        }
        grew
    }

    /// `logged`: the RTT of the oldest segment the ACK covers, from the sent
    /// segments (`account_sent`, with `rto = "linux"`).
    fn sample_rtt(&mut self, now: Instant, seg: &TcpRepr, acked_to: u64, logged: Option<Duration>) {
        let linux = self.cfg.rto == RtoKind::Linux;
        // The timed segment (without timestamps; always the SYN).
        let timed = match self.tcb.timing {
            Some((s, t)) if acked_to >= s && (linux || !self.ts_ok) => {
                self.tcb.timing = None;
                Some(now - t)
            }
            _ => None,
        };
        let ts = || match seg.opts.timestamps {
            Some((_, ecr)) if ecr != 0 => Some(Duration::from_millis((Self::ts_now(now).wrapping_sub(ecr)) as i64)),
            _ => None,
        };
        let sample = if linux {
            timed.or(logged).or_else(|| if self.ts_ok { ts() } else { None })
        } else if self.ts_ok {
            ts()
        } else {
            timed
        };
        if let Some(r) = sample {
            self.take_rtt_sample(now, r);
        }
    }

    fn take_rtt_sample(&mut self, now: Instant, r: Duration) {
        self.cc.on_rtt(&mut self.tcb, now, r);
        self.rtt.sample_at(r, self.tcb.snd_una, self.tcb.snd_nxt);
        self.tcb.srtt = self.rtt.srtt;
        self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(r, |m| m.min(r)));
        self.tcb.stats.rtt_samples += 1;
        self.tcb.stats.rtt_sum += r;
        self.trace_rtt(now);
    }

    /// Updates the sent segments for an ACK: those now SACKed, then those
    /// cumulatively acknowledged (dropped), each noted in `delivered_segs` once —
    /// except a retransmission whose ACK echoes a timestamp older than it (the
    /// original's ACK: Linux `tcp_skb_spurious_retrans`, `ecr`). Returns the RTT
    /// of the oldest segment acknowledged, unless one of those acknowledged was
    /// ever sent again (Karn; Linux `tcp_clean_rtx_queue`), and the RTT of the
    /// oldest segment newly SACKed that was never sent again (Linux
    /// `sack_rtt_us`, the sample when nothing is cumulatively acknowledged).
    fn account_sent(
        &mut self,
        now: Instant,
        ack: u64,
        new_sack: bool,
        ecr: Option<u32>,
    ) -> (Option<Duration>, Option<Duration>) {
        // A segment that carried the FIN ends one past the data; SACK blocks
        // cover the data.
        let fin_end = self.data_end() + 1;
        let tcb = &mut self.tcb;
        tcb.delivered_segs.clear();
        let mut first_sackt = None;
        if new_sack {
            for r in tcb.sent.iter_mut().filter(|r| !r.sacked) {
                if tcb.scoreboard.end_of(r.start).is_some_and(|e| e >= r.end || (r.end == fin_end && e + 1 == r.end)) {
                    r.sacked = true;
                    if !r.retx {
                        first_sackt = Some(first_sackt.map_or(r.xmit, |t: Instant| t.min(r.xmit)));
                    }
                    tcb.delivered_segs.push((r.xmit, r.end, r.retx));
                    if let Some(rate) = &mut tcb.rate {
                        rate.on_delivered(now, r.xmit, r.end, r.retx, &r.tx);
                    }
                }
            }
        }
        let (mut first, mut retransmitted) = (None, false);
        while let Some(r) = tcb.sent.front() {
            if r.end > ack {
                break;
            }
            let spurious = r.retx && ecr.is_some_and(|e| (e.wrapping_sub(super::tcb::ts_clock(r.xmit)) as i32) < 0);
            if !r.sacked && !spurious {
                tcb.delivered_segs.push((r.xmit, r.end, r.retx));
            }
            if !r.sacked {
                if let Some(rate) = &mut tcb.rate {
                    rate.on_delivered(now, r.xmit, r.end, r.retx && !spurious, &r.tx);
                }
            }
            retransmitted |= r.retx;
            first = first.or(Some(r.xmit));
            tcb.sent.pop_front();
        }
        (first.filter(|_| !retransmitted).map(|t| now - t), first_sackt.map(|t| now - t))
    }

    fn on_ack(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        // (The seeds' stacks track no segments and take none of this.)
        if !self.tcb.track_sent {
            self.process_ack(now, seg, len);
            return;
        }
        self.tcb.frto_new = false;
        self.tcb.delivered_segs.clear();
        let in_flight = if self.tcb.rate.is_some() { self.tcb.pipe_sent().div_ceil(self.tcb.smss) } else { 0 };
        if let Some(r) = &mut self.tcb.rate {
            r.start_ack(in_flight);
        }
        self.process_ack(now, seg, len);
        if let Some(r) = &mut self.tcb.rate {
            r.min_rtt = match (r.min_rtt, self.tcb.min_rtt) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            r.generate(now);
            self.cc.cong_control(&mut self.tcb, now);
        }
        if !self.tcb.in_recovery && !self.tcb.in_loss {
            // Back in the open state: no episode's retransmission to compare
            // timestamps with (Linux clears `retrans_stamp`).
            if let Some(u) = &mut self.tcb.undo {
                u.stamp = None;
            }
        }
    }

    fn process_ack(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        let ack = unwrap_seq(self.tcb.snd_una, self.iss, seg.ack);
        if ack > self.tcb.snd_max {
            self.ack_now = true;
            return;
        }
        let old_wnd = self.tcb.snd_wnd;
        self.tcb.snd_wnd = (seg.window as u64) << self.snd_wscale;
        // Bytes delivered so far (acknowledged or SACKed), for RFC 6937's DeliveredData.
        let mut held = self.tcb.snd_una;
        let (mut new_sack, mut dsack) = (false, false);
        if self.sack_ok {
            let before = self.tcb.scoreboard.bytes();
            held += before;
            let blocks = seg.sack_blocks();
            dsack = self.check_dsack(blocks, ack);
            for &(l, r) in &blocks[dsack as usize..] {
                let (l, r) = (unwrap_seq(self.tcb.snd_una, self.iss, l), unwrap_seq(self.tcb.snd_una, self.iss, r));
                if r > self.tcb.snd_una && r <= self.tcb.snd_max && l < r {
                    self.tcb.scoreboard.insert(l.max(self.tcb.snd_una), r);
                }
            }
            new_sack = self.tcb.scoreboard.bytes() != before;
        }
        if ack > self.tcb.snd_una {
            let acked = ack - self.tcb.snd_una;
            self.tcb.snd_una = ack;
            if let Some(b) = &mut self.sbuf {
                b.release(ack - 1);
            }
            if self.tcb.snd_nxt < ack {
                self.tcb.snd_nxt = ack;
            }
            if self.tcb.high_rxt < ack {
                self.tcb.high_rxt = ack;
            }
            self.tcb.scoreboard.trim_below(ack);
            self.tcb.delivered =
                if self.sack_ok { ack + self.tcb.scoreboard.bytes() } else { ack }.saturating_sub(held);
            let ecr = seg.opts.timestamps.map(|t| t.1).filter(|&e| self.ts_ok && e != 0);
            let (acked_rtt, sack_rtt) =
                if self.tcb.track_sent { self.account_sent(now, ack, new_sack, ecr) } else { (None, None) };
            let logged = acked_rtt.or(sack_rtt);
            self.sample_rtt(now, seg, ack, logged);
            self.tcb.dupacks = 0;
            if self.tcb.track_sent {
                // This ACK restarts the timer.
                self.tcb.rto_in = self.rtt.rto();
                self.recovery.on_ack(&mut self.tcb, &mut self.cc, now);
            }
            self.rto_retransmits = 0;
            if self.tcb.in_loss {
                self.process_loss(now, seg, true, new_sack);
            }
            self.tcb.in_loss &= ack < self.tcb.recover;
            self.loss_by_recovery &= self.tcb.in_loss;
            let was_in_recovery = self.tcb.in_recovery;
            self.on_new_ack(now, seg, acked);
            if was_in_recovery && !self.tcb.in_recovery && self.may_undo(seg) {
                // Linux `tcp_try_undo_recovery` at the end of a fast recovery.
                self.undo(now);
            } else if dsack {
                self.try_undo_dsack(now);
            }
            if self.tcb.snd_una >= self.tcb.snd_max {
                self.rto_deadline = None;
            } else {
                self.arm_rto(now);
            }
            return;
        }
        let is_dup = ack == self.tcb.snd_una
            && self.tcb.snd_max > self.tcb.snd_una
            && len == 0
            && !seg.flags.has(TcpFlags::FIN | TcpFlags::SYN)
            && (self.tcb.snd_wnd == old_wnd || new_sack)
            // An ACK that only reports a duplicate is no sign of loss (Linux
            // `FLAG_DSACKING_ACK`).
            && (new_sack || !dsack);
        if self.tcb.track_sent && new_sack {
            let (_, sack_rtt) = self.account_sent(now, self.tcb.snd_una, true, None);
            if let Some(r) = sack_rtt.filter(|_| self.cfg.rto == RtoKind::Linux) {
                // Linux takes the SACK's RTT when nothing is cumulatively
                // acknowledged (`tcp_ack_update_rtt`), so the timer follows a
                // growing queue during a recovery.
                self.take_rtt_sample(now, r);
            }
            self.tcb.rto_in = self.rto_deadline.map_or(Duration::ZERO, |d| d - now);
            self.recovery.on_ack(&mut self.tcb, &mut self.cc, now);
        }
        if self.tcb.in_loss {
            self.process_loss(now, seg, false, new_sack || is_dup);
        } else if dsack {
            self.try_undo_dsack(now);
        }
        if !is_dup {
            if self.ecn_ok {
                self.ecn_reduction(now, seg, false);
            }
            return;
        }
        self.tcb.dupacks += 1;
        // Without SACK a duplicate ACK stands for one segment delivered.
        self.tcb.delivered = if self.sack_ok {
            (self.tcb.snd_una + self.tcb.scoreboard.bytes()).saturating_sub(held)
        } else {
            self.tcb.smss
        };
        self.recovery.on_dupack(&mut self.tcb, &mut self.cc, now);
        if self.ecn_ok {
            self.ecn_reduction(now, seg, false);
        }
    }

    fn on_new_ack(&mut self, now: Instant, seg: &TcpRepr, acked: u64) {
        if self.tcb.in_recovery {
            self.recovery.on_recovery_ack(&mut self.tcb, now, acked);
            return;
        }
        if self.tcb.in_cwr && self.tcb.snd_una > self.tcb.cwr_high {
            // The reduction's end (`tcp_end_cwnd_reduction`); the window grows
            // again from this ACK on.
            self.tcb.in_cwr = false;
            let ssthresh = self.tcb.ssthresh;
            self.tcb.set_cwnd(now, ssthresh);
        }
        // (Only a connection that negotiated ECN reduces for it.)
        if !(self.ecn_ok && self.ecn_reduction(now, seg, true)) {
            self.cc.on_ack(&mut self.tcb, now, acked);
        }
    }

    /// RFC 3168 §6.1.2 at the sender: an ACK with ECE outside any reduction starts
    /// one (`LossRecovery::on_ece`); every ACK in it sets the window
    /// (`on_cwr_ack`). Returns whether the window is being reduced.
    fn ecn_reduction(&mut self, now: Instant, seg: &TcpRepr, advanced: bool) -> bool {
        let t = &self.tcb;
        if t.in_recovery || t.in_loss {
            return false;
        }
        if !t.in_cwr && self.ecn_ok && seg.flags.has(TcpFlags::ECE) {
            self.recovery.on_ece(&mut self.tcb, &mut self.cc, now);
        }
        if self.tcb.in_cwr {
            self.recovery.on_cwr_ack(&mut self.tcb, now, advanced);
        }
        self.tcb.in_cwr
    }

    /// RFC 3168 §6.1.3 at the receiver (Linux `tcp_ecn_accept_cwr`,
    /// `tcp_ecn_check_ce`): a data segment with CWR ends the echo (and is
    /// acknowledged at once: the sender's window may be small); one marked CE
    /// starts it — ECE on every segment from now until a CWR — and the first mark
    /// is acknowledged at once.
    fn ecn_receive(&mut self, seg: &TcpRepr, ce: bool) {
        if seg.flags.has(TcpFlags::CWR) {
            self.ece_pending = false;
            self.ack_now = true;
        }
        if ce {
            self.tcb.stats.ce_received += 1;
            if !self.ece_pending {
                let (w, mss) = (self.last_adv, self.cfg.mss as u64);
                if let Some(a) = &mut self.acks {
                    a.enter_quickack(2, w, mss);
                }
            }
            self.ack_now |= !self.ece_pending;
            self.ece_pending = true;
        }
    }

    fn on_data(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        let s = unwrap_seq(self.rcv_nxt, self.irs, seg.seq);
        let e = s + len as u64;
        let had_holes = !self.ooo.is_empty();
        if len > 0 && e > self.rcv_nxt && self.lrw.is_none() {
            // Linux tcp_grow_window: two segments more per data segment, up to the buffer.
            self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.cfg.mss as u64).min(self.cfg.rcv_buf as u64);
        }
        if e > self.rcv_nxt && s <= self.rcv_nxt {
            if s < self.rcv_nxt {
                self.note_dsack(s, self.rcv_nxt);
            }
            self.rcv_nxt = e;
            while let Some(end) = self.ooo.pop_at(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(end);
            }
            let data_end = self.rcv_nxt;
            self.delivered = data_end - 1;
            let grew = len > 0 && self.lrw.is_some() && self.linux_rwnd_data(now, seg, len, true);
            if self.acks.is_some() {
                self.linux_ack(now, had_holes, len, grew);
            } else if had_holes {
                self.ack_now = true;
            } else {
                self.unacked_segs += 1;
                if self.unacked_segs >= self.cfg.delack_count {
                    self.ack_now = true;
                } else if self.ack_deadline.is_none() {
                    self.ack_deadline = Some(Instant((now + self.cfg.delack_timeout).nanos()));
                }
            }
        } else if s > self.rcv_nxt && len > 0 {
            if e - self.rcv_nxt <= self.rcv_space() {
                if self.sack_ok && self.lrw.is_some() && !self.ooo.contains(s) {
                    self.linux_rwnd_data(now, seg, len, false);
                }
                if let Some(held) = self.ooo.end_of(s) {
                    self.note_dsack(s, e.min(held));
                }
                self.last_block = Some(self.ooo.insert(s, e));
            }
            self.ack_now = true;
        } else if len > 0 {
            self.note_dsack(s, e);
            self.ack_now = true; // old duplicate
                                 // Linux: the sender is retransmitting; quick ACKs (`out_of_window`).
            let (w, mss) = (self.last_adv, self.cfg.mss as u64);
            if let Some(a) = &mut self.acks {
                a.enter_quickack(super::delack::MAX_QUICKACKS, w, mss);
            }
        }
        if seg.flags.has(TcpFlags::FIN) && e > self.rcv_nxt {
            self.pending_fin = Some(e);
        }
        let fin_now = (seg.flags.has(TcpFlags::FIN) && e == self.rcv_nxt) || self.pending_fin == Some(self.rcv_nxt);
        if fin_now && !self.fin_rcvd {
            self.fin_rcvd = true;
            self.rcv_nxt += 1;
            self.pending_fin = None;
        }
        if seg.flags.has(TcpFlags::FIN) || fin_now {
            self.ack_now = true;
            // Passive close: once the peer has closed, the simulated application
            // closes after sending what it has already given us. With byte buffers
            // the application decides (a half-close is carried on).
            if self.fin_rcvd && self.app_limit.is_some() && self.sbuf.is_none() {
                self.close_when_done = true;
            }
        }
    }

    /// In-order data under Linux's ACK policy (`tcp_event_data_recv`,
    /// `__tcp_ack_snd_check`, `tcp_send_delayed_ack`): at once when a hole was
    /// filled, in quick-ACK mode, or at the `delack_count`-th segment; else by the
    /// adaptive timer, an earlier deadline kept (or the ACK sent at once if that
    /// deadline is within a quarter of the new timeout).
    fn linux_ack(&mut self, now: Instant, had_holes: bool, len: u32, grew: bool) {
        let (rto, srtt, w, mss) = (self.rtt.rto(), self.rtt.srtt, self.last_adv, self.cfg.mss as u64);
        let Some(a) = &mut self.acks else { return };
        a.on_data(now, rto, w, mss);
        if grew {
            // tcp_grow_window: `icsk_ack.quick |= 1`.
            a.quick |= 1;
        }
        self.unacked_segs += 1;
        if had_holes || a.quick > 0 || self.unacked_segs >= self.cfg.delack_count {
            self.ack_now = true;
            return;
        }
        let t = a.timeout(srtt, (len as u64) < self.tcb.smss);
        match self.ack_deadline {
            Some(d) if d <= now + t / 4 => self.ack_now = true,
            Some(_) => {}
            None => self.ack_deadline = Some(now + t),
        }
    }

    /// RFC 2883: the next ACK reports `[s, e)` as received twice (with `dsack`;
    /// Linux `tcp_dsack_set`).
    fn note_dsack(&mut self, s: u64, e: u64) {
        if self.cfg.dsack && self.sack_ok && s < e {
            self.dsack = Some((s, e));
        }
    }

    fn check_done(&mut self) {
        // ACKs beyond snd_max are rejected, so an ACK past the FIN means it was sent.
        let our_fin_acked = self.app_limit.is_some() && self.tcb.snd_una > self.fin_off();
        if our_fin_acked && self.fin_rcvd && self.state == State::Established {
            self.state = State::Done;
            self.rto_deadline = None;
        }
    }
}

impl Tcp {
    /// Initial send sequence number (for relative sequence numbers in traces).
    pub fn iss(&self) -> u32 {
        self.iss
    }
    pub fn local_port(&self) -> u16 {
        self.local_port
    }
    /// Application bytes given to TCP so far (None = unlimited).
    pub fn app_limit(&self) -> Option<u64> {
        self.app_limit
    }
}
