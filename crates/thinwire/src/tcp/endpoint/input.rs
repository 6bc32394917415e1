//! An incoming segment's way in: RST, the handshake in each state
//! (RFC 9293 §3.10.7; option negotiation of MSS, window scale, timestamps, SACK
//! and ECN as RFC 7323, 2018 and 3168 §6.1.1 say), the timestamp to echo
//! (RFC 7323 §4.3), and the answer to an unacceptable empty segment (RFC 9293
//! §3.10.7.4, rate-limited as Linux `tcp_oow_rate_limited`).
use super::*;

impl Tcp {
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
            State::Listen => self.cfg.ecn != crate::tcp::Ecn::Off && ece && cwr,
            _ => self.cfg.ecn == crate::tcp::Ecn::On && ece && !cwr,
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
}
