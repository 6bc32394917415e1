//! The endpoint's application side: data to send (counted, or real bytes
//! with byte buffers), connect / listen / close / abort, reading, and the state a
//! driver or trace may ask for. Sources: RFC 9293 §3.10 (the user calls);
//! ICMP source quench as seed 000 §5.2 describes BSD's `tcp_quench`.
use super::*;

impl Tcp {
    /// Sends `bytes` of application data (None = unlimited), then closes if `close`.
    pub fn set_app_data(&mut self, bytes: Option<u64>, close: bool) {
        self.check_app_limited();
        self.app_limit = bytes;
        self.close_when_done = close;
    }

    /// Linux `tcp_rate_check_app_limited`, at each write of the application
    /// (`tcp_sendmsg_locked`) where delivery rates are sampled (BBR): with less
    /// than a segment unsent, the window not full and every segment deemed lost
    /// sent again, the sender was application-limited, and the rate samples of
    /// what is in flight now, until it is delivered, say so. (The kernel's other
    /// condition, nothing in the host's qdisc or NIC queue, always holds here.)
    fn check_app_limited(&mut self) {
        if self.tcb.rate.is_none() {
            return;
        }
        let t = &self.tcb;
        let unsent = self.data_end().saturating_sub(t.snd_max);
        // In segments, as the rate samples count it (`on_ack`).
        let in_flight = self.in_flight().div_ceil(t.smss);
        let lost_ok = self.pipe_is_flight() || {
            let (lost, retrans) = t.lost_and_retrans_out();
            lost <= retrans
        };
        if unsent < t.smss && in_flight < t.cwnd / t.smss && lost_ok {
            if let Some(r) = self.tcb.rate.as_mut() {
                r.mark_app_limited(in_flight);
            }
        }
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
        let end = b.end();
        self.check_app_limited();
        self.app_limit = Some(end);
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
            // Linux `tcp_cleanup_rbuf`: an owed ACK of pushed data goes when the
            // application has read everything.
            let drained = self.ooo.is_empty() && self.readable() == 0;
            if self.ack_sched && self.acks.as_ref().is_some_and(|a| a.read_acks(drained)) {
                self.ack_now = true;
            }
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
    pub fn cc_kind(&self) -> crate::tcp::CcKind {
        self.cc.kind()
    }
    /// The loss-recovery algorithm's kind.
    pub fn recovery_kind(&self) -> crate::tcp::RecoveryKind {
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
            crate::tcp::cc::Cc::Bbr(b) => Some(b.estimate(&self.tcb)),
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

    pub(super) fn trace_all(&mut self, now: Instant) {
        if self.tcb.trace.is_none() {
            return;
        }
        self.tcb.push_var(now, TcpVar::Cwnd, self.tcb.cwnd as i64);
        self.tcb.push_var(now, TcpVar::Rto, self.rtt.rto().nanos());
    }
    pub(super) fn trace_rtt(&mut self, now: Instant) {
        if self.tcb.trace.is_none() {
            return;
        }
        if let Some(s) = self.rtt.srtt {
            self.tcb.push_var(now, TcpVar::Srtt, s.nanos());
        }
        self.tcb.push_var(now, TcpVar::Rttvar, self.rtt.rttvar.nanos());
        self.tcb.push_var(now, TcpVar::Rto, self.rtt.rto().nanos());
    }

    /// Initial send sequence number (for relative sequence numbers in traces).
    pub fn iss(&self) -> u32 {
        self.iss
    }
    pub fn local_port(&self) -> u16 {
        self.local_port
    }
    /// The timer wheel's jiffies counter at simulated time 0, as a time (see
    /// `tcp/wheel.rs`; `build` draws one per connection): the wheel's buckets end
    /// at `k·tick − phase`.
    pub fn set_wheel_phase(&mut self, phase: Duration) {
        self.tcb.wheel_phase = phase;
    }
    /// The timestamp clock's phase (see `Tcb::ts_phase`; `build` draws one per
    /// connection): its milliseconds start at `k·1 ms − phase`.
    pub fn set_ts_phase(&mut self, phase: Duration) {
        self.tcb.ts_phase = phase;
    }
    /// Application bytes given to TCP so far (None = unlimited).
    pub fn app_limit(&self) -> Option<u64> {
        self.app_limit
    }
}

/// The sender's state in the terms of Linux's `struct tcp_sock`, for comparing
/// the model with a kernel's traced state segment by segment (testkit).
#[cfg(feature = "testkit")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxView {
    /// Segments sent and not cumulatively acknowledged (`packets_out`), of them
    /// SACKed (`sacked_out`), deemed lost (`lost_out`), sent again with that
    /// transmission still out (`retrans_out`: a lost one resent, or one resent
    /// while not deemed lost, `Sent::extra`).
    pub packets_out: u64,
    pub sacked_out: u64,
    pub lost_out: u64,
    pub retrans_out: u64,
    /// `icsk_ca_state`: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
    pub ca_state: u8,
    /// cwnd and ssthresh in segments (`snd_cwnd`, `snd_ssthresh`).
    pub cwnd: u64,
    pub ssthresh: u64,
    /// SRTT, the RTO's variance term (`rttvar_us`) and the RTO (`icsk_rto`, with
    /// its backoff), µs.
    pub srtt_us: u64,
    pub rttvar_us: u64,
    pub rto_us: u64,
    /// The smallest RTT seen (`tcp_min_rtt`), µs.
    pub min_rtt_us: u64,
}

#[cfg(feature = "testkit")]
impl Tcp {
    /// See [`LinuxView`].
    pub fn linux_view(&self) -> LinuxView {
        let t = &self.tcb;
        let sacked = t.sent.iter().filter(|r| r.sacked).count() as u64;
        let ca_state = if t.in_loss {
            4
        } else if t.in_recovery {
            3
        } else if t.in_cwr {
            2
        } else if sacked > 0 || t.dupacks > 0 {
            1
        } else {
            0
        };
        let (lost_out, retrans_out) = t.lost_and_retrans_out();
        LinuxView {
            packets_out: t.sent.len() as u64,
            sacked_out: sacked,
            lost_out,
            retrans_out,
            ca_state,
            cwnd: t.cwnd / t.smss,
            ssthresh: t.ssthresh / t.smss,
            srtt_us: self.rtt.srtt.map_or(0, |s| s.nanos() as u64 / 1000),
            rttvar_us: self.rtt.rttvar.nanos() as u64 / 1000,
            rto_us: self.rtt.rto().nanos() as u64 / 1000,
            min_rtt_us: t.min_rtt.map_or(0, |m| m.nanos() as u64 / 1000),
        }
    }
}
