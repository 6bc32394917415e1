//! The retransmission timer: arming it, and what a timeout does (RFC 6298 §5;
//! with `rto = "linux"` Linux 6.x's `net/ipv4/tcp_timer.c`
//! `tcp_retransmit_timer`, with linear SYN timeouts as
//! `tcp_syn_ack_timeout` / `TCP_TIMEOUT_INIT` with `syn_linear_timeouts`). The
//! delayed-ACK deadline and the recovery's own timers (RACK, TLP) are polled here
//! too.
use super::*;

impl Tcp {
    pub(super) fn arm_rto(&mut self, now: Instant) {
        if self.tcb.wheel > Duration::ZERO {
            return self.arm_rto_on_wheel(now);
        }
        let g = self.cfg.timer_granularity;
        let d = Duration((now + self.rtt.rto()).nanos()).ceil_to(g);
        self.rto_deadline = Some(Instant(d.nanos()));
    }
    #[cold]
    #[inline(never)]
    fn arm_rto_on_wheel(&mut self, now: Instant) {
        self.rto_deadline = Some(self.tcb.timer(now, self.rtt.rto()));
    }
    pub fn poll_timeout(&self) -> Option<Instant> {
        use crate::time::earliest;
        earliest(earliest(self.rto_deadline, self.ack_deadline), earliest(self.tcb.recovery_deadline, self.paced))
    }
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.paced.is_some_and(|t| t <= now) {
            self.paced = None;
        }
        if let Some(d) = self.ack_deadline {
            if d <= now {
                self.ack_deadline = None;
                self.ack_timer_fired();
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
                    let left = Duration((head + self.rtt.rto()).nanos().saturating_sub(now.nanos()));
                    // On the wheel, tcp_rearm_rto: usecs_to_jiffies(max(delta_us, 1)).
                    let left = if self.tcb.wheel > Duration::ZERO { left.max(Duration(1)) } else { left };
                    self.rto_deadline = Some(self.tcb.timer(now, left));
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
    /// The ACK timer fired: the delayed ACK's (`ato` grows), or, holding
    /// compressed SACKs, theirs.
    fn ack_timer_fired(&mut self) {
        if let Some(c) = self.comp.as_deref_mut().filter(|c| c.armed()) {
            self.ack_now |= c.on_timer();
            return;
        }
        self.ack_now = true;
        let rto = self.rtt.rto();
        if let Some(a) = &mut self.acks {
            a.on_timer(rto);
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
        let was_in_loss = std::mem::replace(&mut self.tcb.in_loss, true);
        // F-RTO judges a timeout outside a fast recovery or a timeout's episode
        // (`new_recovery`: a state below Recovery; Loss is above it), and a
        // timeout repeated on the same `snd_una` (RFC 5682 §3.1 step 1, §3.2;
        // `tcp_enter_loss`; an ACK that advances resets the count,
        // `icsk_retransmits`).
        let frto = self.cfg.frto && (!(self.tcb.in_recovery || was_in_loss) || self.rto_retransmits > 0);
        self.rto_retransmits += 1;
        (self.tcb.tlp, self.tcb.probe) = (None, false);
        // A recovery that marks losses itself (RACK, RFC 8985 §6.3) resends what
        // it deems lost, with cwnd = what stays in flight + one segment (Linux
        // `tcp_enter_loss`); otherwise everything unacknowledged is sent again from
        // `snd_una` with cwnd of one segment.
        self.loss_by_recovery = self.recovery.on_rto(&mut self.tcb, now);
        // (F-RTO needs a recovery that chooses what to resend: RACK.)
        (self.tcb.frto, self.tcb.frto_new) = (frto && self.loss_by_recovery, false);
        // `tcp_enter_loss`: cwnd = packets in flight + 1, in packets (a short
        // segment still out counts as a whole one).
        let w = (if self.loss_by_recovery { self.tcb.pipe_segs() } else { 0 } + 1) * self.tcb.smss;
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
}
