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
use super::config::{IdleRestart, Push, TcpConfig};
use super::ranges::Ranges;
use super::recovery::{LossRecovery, NextSeg, Recovery};
use super::rtt::{RtoKind, RttEstimator};
use super::rwnd::{skb_truesize, LinuxRwnd};
use super::tcb::{Sent, Tcb};
use crate::time::{Duration, Instant};
use crate::wire::{TcpFlags, TcpRepr};

mod ack;
mod app;
#[cfg(feature = "testkit")]
pub use app::LinuxView;
mod input;
mod output;
mod receive;
mod stats;
mod timers;
mod undo;

pub use stats::{TcpStats, TcpVar, VarEvent};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynRcvd,
    Established,
    Done,
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
    /// When data was last sent (Linux `lsndtime`: the restart after idle and
    /// `CA_EVENT_TX_START`).
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
    /// Received data asks for an ACK (Linux `ICSK_ACK_SCHED`: in order, out of
    /// order, a duplicate, a FIN); the ACK that answers it spends a quick ACK.
    ack_sched: bool,
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
    /// `send_at` is sending a loss probe: Linux sends it with
    /// `__tcp_retransmit_skb`, which sets neither `TCPCB_SACKED_RETRANS` nor
    /// `retrans_out` (the probe's retransmission is no `Sent::extra`).
    probing: bool,
    /// Linux's receiver (`quickack`): an immediate ACK decided when data arrived
    /// with nothing of ours ready to carry it goes out alone, before whatever the
    /// application writes in reply (the kernel acknowledges in the softirq, before
    /// the process runs: a request's ACK precedes its response).
    ack_first: bool,
    /// Data waits for the pacing deadline (BBR).
    paced: Option<Instant>,
    /// Where the send queue's current chunk ends (`push = "chunk"`).
    chunk_end: u64,
    /// Linux's compressed SACKs (`comp_sack_nr`, with `quickack`).
    comp: Option<Box<super::compsack::CompSack>>,
    /// An ACK made while a segment was being taken in, before it changed
    /// anything (a compressed-SACK flush), sent before anything else.
    queued: Option<Box<Segment>>,
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
            probing: false,
            ack_first: false,
            paced: None,
            chunk_end: 0,
            comp: (cfg.comp_sack_nr > 0 && cfg.quickack)
                .then(|| Box::new(super::compsack::CompSack::new(cfg.comp_sack_nr, cfg.comp_sack_delay))),
            queued: None,
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
            ack_sched: false,
            acks: cfg.quickack.then(|| super::delack::LinuxAcks::new(cfg.delack_timeout)),
            ack_deadline: None,
            ack_now: false,
        };
        tcp.tcb.track_sent = cfg.rto == RtoKind::Linux || cfg.recovery == super::RecoveryKind::Rack;
        tcp.tcb.undo_enabled = cfg.rto == RtoKind::Linux;
        tcp.tcb.wheel = if cfg.timer_wheel { cfg.timer_granularity } else { Duration::ZERO };
        tcp.tcb.track_sent |= cfg.cc == super::CcKind::Bbr;
        tcp.tcb.rand ^= (iss as u64) << 17 | local_port as u64;
        tcp
    }

    // ----- helpers -----
    /// IP and TCP header bytes of a data segment (with the timestamp option).
    fn hdr_len(&self) -> u64 {
        40 + 12 * self.ts_ok as u64
    }
    fn data_end(&self) -> u64 {
        self.app_limit.map(|b| 1 + b).unwrap_or(u64::MAX / 2)
    }
    fn fin_off(&self) -> u64 {
        self.data_end()
    }
    /// Advertised window: free receive-buffer space. As in BSD (`sbspace`), the
    /// reassembly queue is not counted, so the right edge never moves left; the
    /// simulated application reads in-order data at once.
    /// With `rcv_wnd_initial` the window offered starts smaller and grows as data
    /// arrives (Linux's `rcv_ssthresh`).
    #[inline]
    fn adv_window(&self) -> u16 {
        if let Some(l) = &self.lrw {
            return self.linux_adv_window(l);
        }
        let mut w = self.rcv_ssthresh.min(self.wnd_cap.unwrap_or(u64::MAX));
        if let Some(r) = &self.rbuf {
            // With byte buffers the application may read late: unread bytes
            // occupy the buffer.
            w = w.min((self.cfg.rcv_buf as u64).saturating_sub(r.unread() as u64));
        }
        (w >> self.rcv_wscale).min(65535) as u16
    }

    /// `adv_window` with Linux's receive window (out of line: the seeds'
    /// profiles, most of the runs, take the short path above).
    #[inline(never)]
    fn linux_adv_window(&self, l: &LinuxRwnd) -> u16 {
        let held = self.rx_held + l.held(self.ooo.bytes() + self.readable() as u64, self.hdr_len());
        let cur = (self.rcv_wup + self.last_adv).saturating_sub(self.rcv_nxt);
        let w = l.select(held, cur, self.last_adv, self.rcv_wscale).min(self.wnd_cap.unwrap_or(u64::MAX));
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

    /// Writes the header of a segment into `r` (a default `TcpRepr`): filled
    /// where it lies, the segment returned, rather than built and copied.
    fn header(&self, r: &mut TcpRepr, now: Instant, seq_off: u64, flags: u8) {
        r.src_port = self.local_port;
        r.dst_port = self.remote_port;
        r.seq = self.iss.wrapping_add(seq_off as u32);
        r.flags = TcpFlags(flags);
        r.window = self.adv_window();
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
                r.opts.timestamps = Some((self.tcb.ts(now), self.ts_recent));
            }
        } else if self.ts_ok {
            r.opts.timestamps = Some((self.tcb.ts(now), self.ts_recent));
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
                    push((st, e), r);
                }
            }
            for &b in self.ooo.v.iter().rev() {
                push(b, r);
            }
            r.opts.sack_len = n as u8;
        }
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
}
