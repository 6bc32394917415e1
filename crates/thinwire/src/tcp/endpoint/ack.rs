//! The sender's side of an incoming ACK: RTT samples (RFC 6298, Karn, RFC 7323
//! RTTM; with `rto = "linux"` Linux's `tcp_ack_update_rtt`), the sent segments'
//! accounting for SACK and rate samples, duplicate ACKs (RFC 5681 §3.2), new
//! ACKs handed to the congestion controller or the loss recovery, and the ECN
//! reduction on ECE (RFC 3168 §6.1.2).
use super::*;

impl Tcp {
    /// `logged`: the RTT of the oldest segment the ACK covers, from the sent
    /// segments (`account_sent`, with `rto = "linux"`).
    pub(super) fn sample_rtt(&mut self, now: Instant, seg: &TcpRepr, acked_to: u64, logged: Option<Duration>) {
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
            Some((_, ecr)) if ecr != 0 => Some(Duration::from_millis((self.tcb.ts(now).wrapping_sub(ecr)) as i64)),
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
            let spurious = r.retx && ecr.is_some_and(|e| (e.wrapping_sub(tcb.ts(r.xmit)) as i32) < 0);
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

    pub(super) fn on_ack(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        // (The seeds' stacks track no segments and take none of this.)
        if !self.tcb.track_sent {
            self.process_ack(now, seg, len);
            return;
        }
        self.tcb.frto_new = false;
        self.tcb.delivered_segs.clear();
        // Linux `tcp_ack` with nothing outstanding (`prior_packets` 0: a request
        // reaching an idle server) goes to `no_queue`: no rate sample and no
        // `cong_control` (BBR would otherwise see its minimum RTT expire there).
        let prior_packets = self.tcb.snd_max > self.tcb.snd_una;
        let in_flight = if self.tcb.rate.is_some() { self.tcb.pipe_sent().div_ceil(self.tcb.smss) } else { 0 };
        if let Some(r) = &mut self.tcb.rate {
            r.start_ack(in_flight);
        }
        self.process_ack(now, seg, len);
        if let Some(r) = self.tcb.rate.as_mut().filter(|_| prior_packets) {
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
            if self.tcb.maybe_extra {
                self.tcb.maybe_extra = self.tcb.sent.iter().any(|r| r.extra && !r.sacked);
            }
            if self.tcb.in_loss {
                self.process_loss(now, seg, true, new_sack);
            }
            self.tcb.in_loss &= ack < self.tcb.recover;
            self.loss_by_recovery &= self.tcb.in_loss;
            let was_in_recovery = self.tcb.in_recovery;
            self.on_new_ack(now, seg, acked);
            let ended = was_in_recovery && !self.tcb.in_recovery;
            if ended && self.may_undo(seg) {
                // Linux `tcp_try_undo_recovery` at the end of a fast recovery.
                self.undo(now);
            } else if dsack {
                self.try_undo_dsack(now);
            }
            self.recovery.after_ack(&mut self.tcb, &mut self.cc, now);
            if ended && !self.tcb.in_recovery && self.cfg.rto == RtoKind::Linux {
                // Linux ends the recovery (`tcp_fastretrans_alert`) before it
                // sets the window for the ACK (`tcp_cong_control`): back in the
                // open state, the ACK that ended it grows the window too, by
                // what it delivered (`acked_sacked`: what it SACKed before
                // counted then).
                let delivered = self.tcb.delivered;
                self.grow(now, seg, delivered);
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
                // And restarts the timer when that RTT is of data sent before the
                // head was last sent (`tcp_clean_rtx_queue`: `FLAG_SET_XMIT_TIMER`
                // for `sack_rtt_us` older than the head; not for data sent after
                // it, or a recovery would push the timer on for ever).
                if self.tcb.sent.front().is_some_and(|h| r > now - h.xmit) {
                    self.arm_rto(now);
                }
            }
            self.tcb.rto_in = self.rto_deadline.map_or(Duration::ZERO, |d| d - now);
            self.recovery.on_ack(&mut self.tcb, &mut self.cc, now);
        }
        if self.tcb.in_loss {
            self.process_loss(now, seg, false, new_sack || is_dup);
            if !self.tcb.in_loss {
                // Undone (the ACK moved nothing, so the episode did not end).
                self.recovery.after_ack(&mut self.tcb, &mut self.cc, now);
            }
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
        // Linux grows the window by what the ACK delivered (`tcp_cong_control`:
        // `acked_sacked`), not by what it acknowledged: segments SACKed before
        // counted when they were SACKed.
        let by = if self.cfg.rto == RtoKind::Linux && self.sack_ok && self.tcb.track_sent {
            self.tcb.delivered
        } else {
            acked
        };
        self.grow(now, seg, by);
    }

    /// The window for an ACK that advanced `snd_una` outside a recovery: the end
    /// of an ECN reduction, an ECN reduction, or the controller's growth.
    fn grow(&mut self, now: Instant, seg: &TcpRepr, acked: u64) {
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
}
