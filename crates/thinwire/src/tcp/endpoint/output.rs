//! What the endpoint sends next: pure ACKs, the SYN / SYN-ACK and FIN, new
//! data within min(cwnd, rwnd) (RFC 5681 §4.1 restart after idle, RFC 3042
//! limited transmit), the retransmissions the loss recovery chooses, the tail
//! loss probe (RFC 8985 §7.3, Linux `tcp_send_loss_probe`), header options (RFC
//! 7323, RFC 2018), ECT marking (RFC 3168 §6.1.2) and pacing (Linux
//! `tcp_pacing_check`).
use super::*;

impl Tcp {
    /// The next segment to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if std::mem::take(&mut self.rst_pending) {
            let seq = self.tcb.snd_nxt.max(1);
            return Some(self.emit(now, seq, 0, TcpFlags::RST, false));
        }
        if let Some(s) = self.queued.take() {
            return Some(*s);
        }
        match self.state {
            State::SynSent | State::SynRcvd if self.tcb.snd_max == 0 || self.syn_retx => {
                // SYN (active side) or SYN-ACK (passive side), first or again.
                self.syn_retx = false;
                let retx = self.tcb.snd_max > 0;
                self.syn_rexmits += retx as u32;
                self.tcb.stats.syn_retransmits += retx as u64;
                self.tcb.snd_nxt = 1;
                self.tcb.snd_max = 1;
                self.tcb.timing = if retx { None } else { Some((1, now)) };
                if self.rto_deadline.is_none() {
                    self.arm_rto(now);
                }
                let flags = if self.state == State::SynSent { TcpFlags::SYN } else { TcpFlags::SYN | TcpFlags::ACK };
                let seg = self.emit(now, 0, 0, flags, retx);
                if let (false, Some((tsval, _))) = (retx, seg.repr.opts.timestamps) {
                    // What the first SYN (SYN-ACK) carried, for the undo of its
                    // timeout (`tcp_try_undo_spurious_syn`).
                    self.first_syn_ts = tsval;
                }
                return Some(seg);
            }
            State::Established => {
                if std::mem::take(&mut self.ack_first) && self.ack_now {
                    return Some(self.pure_ack(now));
                }
                if let Some(s) = self.next_data(now) {
                    self.sent_burst = true;
                    return Some(s);
                }
                // The end of a burst (Linux `tcp_write_xmit`).
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
                if self.cc.kind() != crate::tcp::CcKind::Rfc5681 {
                    // Was the window the limit? (Only Linux's controllers ask.) What
                    // is in flight as the kernel counts it (`tcp_packets_in_flight`:
                    // not SACKed, not deemed lost): segments SACKed above a hole do
                    // not make a sender that ran out of data window-limited.
                    let limited = self.tcb.flight() >= self.tcb.cwnd && self.in_flight() >= self.tcb.cwnd;
                    if self.sent_burst || limited {
                        self.tcb.cwnd_validate(limited);
                    }
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

    /// Bytes in flight (Linux `tcp_packets_in_flight`) for the window test; the
    /// sequence space sent when nothing is SACKed or deemed lost.
    pub(super) fn in_flight(&self) -> u64 {
        if self.pipe_is_flight() {
            self.tcb.flight()
        } else {
            self.tcb.pipe_sent()
        }
    }

    /// Whether what is in flight is simply the sequence space sent: no segment
    /// SACKed or deemed lost (or none kept to tell).
    #[inline]
    pub(super) fn pipe_is_flight(&self) -> bool {
        let t = &self.tcb;
        !t.track_sent || (!t.in_recovery && !t.in_loss && t.scoreboard.bytes() == 0 && !t.maybe_extra)
    }

    /// An ACK without data, at the next sequence number.
    pub(super) fn pure_ack(&mut self, now: Instant) -> Segment {
        self.emit(now, self.tcb.snd_nxt.max(1).min(self.tcb.snd_max.max(1)), 0, TcpFlags::ACK, false)
    }

    fn emit(&mut self, now: Instant, seq: u64, len: u32, mut flags: u8, retransmission: bool) -> Segment {
        // RFC 3168 §6.1: ECN-setup SYN (ECE + CWR) and SYN-ACK (ECE); then ECE
        // while a CE mark waits for the sender's CWR, and CWR on the first new
        // segment after a reduction; ECT(0) on new data only (§6.1.5, Linux
        // `tcp_ecn_send`).
        let new_data = len > 0 && !retransmission && self.ecn_ok;
        if self.cfg.ecn != crate::tcp::Ecn::Off {
            if flags & TcpFlags::SYN != 0 {
                // A SYN sent again asks no more (Linux `tcp_ecn_clear_syn`, in
                // case a middlebox drops ECN-setup SYNs).
                if self.state == State::SynSent && self.cfg.ecn == crate::tcp::Ecn::On && !retransmission {
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
        // The header written where the segment returned lies (no copies).
        let mut seg =
            Segment { repr: TcpRepr::default(), len, retransmission, offset: seq.saturating_sub(1), ect: new_data };
        self.header(&mut seg.repr, now, seq, flags);
        let repr = &seg.repr;
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
            // Linux `tcp_dec_quickack_mode`: an ACK answering received data —
            // in order or not — spends a quick ACK (`inet_csk_ack_scheduled`).
            let answered = std::mem::take(&mut self.ack_sched);
            if let Some(a) = &mut self.acks {
                if answered {
                    a.on_ack_sent();
                }
                a.ack_went();
            }
            self.unacked_segs = 0;
            if let Some(c) = &mut self.comp {
                self.tcb.stats.acks_compressed += c.ack_sent() as u64;
            }
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
            if let Some(a) = &mut self.acks {
                a.on_data_sent(now);
            }
            if self.tcb.pacing_rate.is_some() {
                self.pace(now, len);
            }
            self.tcb.stats.data_bytes_sent += len as u64;
            if retransmission {
                self.tcb.stats.retransmits += 1;
                self.tcb.stats.retransmitted_bytes += len as u64;
            }
        }
        seg
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
        if let Some(last) = self.last_data_sent {
            // Rare work (after an idle period, or for a controller that asks)
            // kept out of this hot function.
            // Nothing in flight is possible only with nothing unacknowledged, or
            // where SACKs and loss marks count (checked before asking the
            // controller: a call per segment cost 1.5 % of the examples' time).
            let none_sent = self.tcb.snd_una == self.tcb.snd_max;
            let restart = !retx && self.cfg.slow_start_after_idle && none_sent && !self.tcb.cc_owns_cwnd;
            let tx_start = (none_sent || !self.pipe_is_flight()) && self.cc.wants_tx_start();
            if restart || tx_start {
                self.after_idle(now, last, restart, tx_start);
            }
        }
        self.last_data_sent = Some(now);
        if self.tcb.track_sent {
            // Linux `tcp_rate_skb_sent`: what the connection had delivered.
            let out = self.tcb.sent.len() as u64;
            let tx = self.tcb.rate.as_mut().map(|r| r.on_sent(now, out)).unwrap_or_default();
            if retx {
                // (Only RACK marks what it resends; a retransmission of the other
                // recoveries is no `extra`, nor is a loss probe's.)
                let rack = self.cfg.recovery == crate::tcp::RecoveryKind::Rack && !self.probing;
                let t = &mut self.tcb;
                for r in t.sent.iter_mut().take_while(|r| r.start < seq + len) {
                    if r.end > seq {
                        (r.xmit, r.retx, r.lost, r.unlisted, r.tx) = (now, true, false, false, tx);
                        if !r.marked && rack {
                            r.extra = true;
                            t.maybe_extra = true;
                        }
                    }
                }
            } else {
                self.tcb.sent.push_back(Sent {
                    start: seq,
                    end: seq + len + fin as u64,
                    xmit: now,
                    retx: false,
                    lost: false,
                    marked: false,
                    sacked: false,
                    extra: false,
                    unlisted: false,
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
        let push = match self.cfg.push {
            Push::Segment => seq + len == end || self.tcb.snd_max == seq + len,
            Push::Chunk => !retx && self.ends_chunk(seq, len, end),
        };
        if push {
            flags |= TcpFlags::PSH;
        }
        self.emit(now, seq, len as u32, flags, retx)
    }

    /// A data segment about to go out after the previous one at `last`:
    /// `restart`, new data with nothing unacknowledged, restarts the window after
    /// an idle period longer than the RTO (`idle_restart`; a controller that sets
    /// the window on every ACK, BBR, gets none: the kernel's
    /// `tcp_slow_start_after_idle_check` skips `cong_control`); then, with
    /// `tx_start` (the controller asks and something may be in flight),
    /// Linux `tcp_event_data_sent`'s `CA_EVENT_TX_START` when nothing is in
    /// flight (before this segment counts).
    #[inline(never)]
    fn after_idle(&mut self, now: Instant, last: Instant, restart: bool, tx_start: bool) {
        let idle = now - last;
        if restart && idle > self.rtt.rto() {
            match self.cfg.idle_restart {
                IdleRestart::Rfc5681 => {
                    // RFC 5681 §4.1: restart window = min(IW, cwnd).
                    let rw = self.tcb.cwnd.min(self.tcb.smss * self.cfg.initial_window as u64);
                    self.tcb.set_cwnd(now, rw);
                }
                IdleRestart::Linux => self.restart_after_idle(now, idle),
            }
        }
        if tx_start && self.in_flight() == 0 {
            self.cc.on_tx_start(&mut self.tcb, now, last);
        }
    }

    /// Linux `tcp_cwnd_restart` (RFC 2861 §3; Linux 2.4 the same): new data after
    /// an idle period longer than the RTO. ssthresh keeps three quarters of the
    /// window (`tcp_current_ssthresh`, unless a reduction is under way), and the
    /// window halves once per RTO of the idle period, the first included, down to
    /// the restart window min(IW, cwnd) — in whole segments, as the kernel counts.
    fn restart_after_idle(&mut self, now: Instant, idle: Duration) {
        let smss = self.tcb.smss;
        let mut cwnd = self.tcb.cwnd / smss;
        let restart = cwnd.min(self.cfg.initial_window as u64);
        if !(self.tcb.in_recovery || self.tcb.in_cwr) {
            let ss = self.tcb.ssthresh.max(((cwnd >> 1) + (cwnd >> 2)) * smss);
            self.tcb.set_ssthresh(now, ss);
        }
        let rto = self.rtt.rto();
        let mut left = idle - rto;
        while left > Duration::ZERO && cwnd > restart {
            cwnd >>= 1;
            left = left - rto;
        }
        self.tcb.set_cwnd(now, cwnd.max(restart) * smss);
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
            self.probing = true;
            let seg = self.send_at(now, start, end - start);
            self.probing = false;
            seg
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
        // Skip over SACKed data when resending after a timeout.
        while let Some(e) = self.tcb.scoreboard.end_of(self.tcb.snd_nxt) {
            self.tcb.snd_nxt = e;
        }
        let limit = self.send_limit();
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
        let fin_pending = self.close_when_done && self.app_limit.is_some() && !self.fin_sent;
        if fin_pending && self.tcb.snd_nxt == end {
            return Some(self.send_at(now, end, 0));
        }
        None
    }

    /// How far new data may go from `snd_nxt` now: the window from `snd_una`
    /// (RFC 3042's two extra segments with limited transmit).
    fn send_limit(&self) -> u64 {
        let t = &self.tcb;
        let mut limit = t.snd_una + self.window();
        if self.cfg.recovery == crate::tcp::RecoveryKind::Rack && self.sack_ok && t.snd_nxt == t.snd_max {
            // Linux `tcp_cwnd_test`: what is in flight (`tcp_packets_in_flight`:
            // not SACKed, not deemed lost) below cwnd — segments SACKed above a
            // hole make room before any recovery starts, as many as were SACKed
            // — and the receiver's window from `snd_una` (`tcp_snd_wnd_test`).
            let rwnd = t.snd_wnd.min(self.cfg.snd_buf as u64);
            limit = (t.snd_nxt + t.cwnd.saturating_sub(self.in_flight())).min(t.snd_una + rwnd);
        } else if self.cfg.limited_transmit && t.dupacks > 0 && !t.in_recovery && t.snd_nxt == t.snd_max {
            // RFC 3042: one new segment for each of the first two duplicate ACKs.
            let extra = t.smss * t.dupacks.min(2) as u64;
            let w = (t.cwnd + extra).min(t.snd_wnd).min(self.cfg.snd_buf as u64);
            limit = limit.max(t.snd_una + w);
        }
        limit
    }

    /// With `push = "chunk"`: whether new data segment `[seq, seq + len)`
    /// ends a chunk, the last segment of which alone carries PSH. Chunks lie
    /// in sequence space, as the kernel's send queue holds the data: each is
    /// `tso_segs` segments from where the previous one ended, sized when its
    /// first segment goes (the kernel sizes its skbs to `tcp_xmit_size_goal`
    /// as the application writes, and PSH stays on each skb's end when it is
    /// split for the window, `tso_fragment`, or into segments,
    /// `tcp_gso_segment`); the end of the data written ends one too. So a
    /// window that lets one segment of a chunk out sends it without PSH.
    /// Checked against Linux 6.18 captures (`docs/models.md`).
    #[inline(never)]
    fn ends_chunk(&mut self, seq: u64, len: u64, end: u64) -> bool {
        if seq >= self.chunk_end {
            self.chunk_end = seq + self.tso_segs() as u64 * self.tcb.smss;
        }
        let e = seq + len;
        e >= self.chunk_end || e >= end
    }

    /// Linux `tcp_tso_segs` / `tcp_tso_autosize` (sysctls `tcp_min_tso_segs`
    /// = 2, `sk_pacing_shift` = 10, a 64 KB GSO limit): about 1 ms of data at
    /// the pacing rate, at least 2 segments (BBR: 1 below 1.2 Mbit/s,
    /// `bbr_min_tso_segs`). Without a pacer the rate is the kernel's
    /// `tcp_update_pacing_rate`, which it computes for every flow: 200 % of
    /// cwnd per SRTT in slow start below half ssthresh, else 120 %.
    fn tso_segs(&self) -> u32 {
        let t = &self.tcb;
        let smss = t.smss.max(1);
        let (rate, min) = match t.pacing_rate {
            Some(r) => (r, if r < 150_000 { 1 } else { 2 }),
            None => {
                let segs = (t.cwnd / smss).max(t.flight() / smss) as u128;
                let pct: u128 = if t.cwnd < t.ssthresh / 2 { 200 } else { 120 };
                let rate = match self.rtt.srtt.filter(|s| s.nanos() > 0) {
                    Some(s) => {
                        (smss as u128 * segs * pct * 10_000_000 / s.nanos() as u128).min(u64::MAX as u128) as u64
                    }
                    None => u64::MAX,
                };
                (rate, 2)
            }
        };
        let bytes = (rate >> 10).min(65_536);
        ((bytes / smss) as u32).max(min)
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
}
