//! The receiver's side: data in and out of order (RFC 9293 §3.10.7.4, the
//! SACK blocks of RFC 2018 §4, DSACK of RFC 2883), the receive window (Linux's
//! with `rwnd = "linux"`), when to acknowledge (RFC 5681 §4.2 delayed ACKs, or
//! Linux's quick-ACK policy with `quickack`), ECN's echo (RFC 3168 §6.1.3), and
//! when the connection is done.
use super::super::compsack::OfoAck;
use super::*;

impl Tcp {
    /// How far beyond `rcv_nxt` a segment is kept: the receive buffer.
    pub(super) fn rcv_space(&self) -> u64 {
        self.lrw.as_ref().map_or(self.cfg.rcv_buf as u64, |l| l.rcvbuf())
    }

    /// Linux's receive window after a data segment (`tcp_event_data_recv`,
    /// `tcp_data_queue_ofo`, then `tcp_rcv_space_adjust` as the application
    /// reads): true if the window grew, which asks for a quick ACK.
    /// `released`: bytes this segment moved from the out-of-order queue to the
    /// receive queue (`tcp_ofo_queue`), unread, like it, when the ACK leaves.
    fn linux_rwnd_data(&mut self, now: Instant, seg: &TcpRepr, len: u32, in_order: bool, released: u64) -> bool {
        let hdr = self.hdr_len();
        let unread = self.readable() as u64;
        let Some(l) = self.lrw.as_deref_mut() else { return false };
        let this = if in_order { skb_truesize(len as u64, hdr) + l.held(released, hdr) } else { 0 };
        let held = this + l.held(self.ooo.bytes() + unread, hdr);
        let tsecr = seg.opts.timestamps.map_or(0, |(_, e)| e);
        let ts = self.tcb.ts(now);
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

    /// RFC 3168 §6.1.3 at the receiver (Linux `tcp_ecn_accept_cwr`,
    /// `tcp_ecn_check_ce`): a data segment with CWR ends the echo (and is
    /// acknowledged at once: the sender's window may be small); one marked CE
    /// starts it — ECE on every segment from now until a CWR — and the first mark
    /// is acknowledged at once.
    pub(super) fn ecn_receive(&mut self, seg: &TcpRepr, ce: bool) {
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

    pub(super) fn on_data(&mut self, now: Instant, seg: &TcpRepr, len: u32) {
        let s = unwrap_seq(self.rcv_nxt, self.irs, seg.seq);
        let e = s + len as u64;
        let had_holes = !self.ooo.is_empty();
        // `inet_csk_schedule_ack`: any data, or a FIN, asks for an ACK.
        self.ack_sched |= len > 0 || seg.flags.has(TcpFlags::FIN);
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
            let released = self.rcv_nxt - e;
            if let Some(c) = &mut self.comp {
                c.on_in_order(self.rcv_nxt, self.ooo.is_empty());
            }
            let grew = len > 0 && self.lrw.is_some() && self.linux_rwnd_data(now, seg, len, true, released);
            if self.acks.is_some() {
                self.linux_ack(now, had_holes, len, grew, seg.flags);
                // A hole filled with others left: unless more than one full
                // segment is unacknowledged, the kernel's ACK (at once) goes by
                // the compressed path, whose count starts for the new rcv_nxt.
                if self.comp.is_some()
                    && had_holes
                    && !self.ooo.is_empty()
                    && self.rcv_nxt - self.rcv_wup <= self.rcv_mss()
                {
                    self.comp_holds(now);
                }
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
            let (mut queued, mut flushed) = (false, false);
            if e - self.rcv_nxt <= self.rcv_space() {
                if self.sack_ok && self.comp.is_some() {
                    flushed = self.comp_list(now, s, e);
                }
                if self.sack_ok && self.lrw.is_some() && !self.ooo.contains(s) {
                    self.linux_rwnd_data(now, seg, len, false, 0);
                }
                if let Some(held) = self.ooo.end_of(s) {
                    self.note_dsack(s, e.min(held));
                }
                self.last_block = Some(self.ooo.insert(s, e));
                queued = true;
            }
            // Linux acknowledges out-of-order data at once (`__tcp_ack_snd_check`),
            // unless compressed SACKs hold the ACK (not for one beyond the window,
            // which enters quick-ACK mode). After a flush nothing more: the ACK it
            // sent cleared `ICSK_ACK_SCHED`, so `tcp_ack_snd_check` returns at
            // once and this segment waits for the next ACK.
            let deferred = flushed || (queued && self.comp_holds(now));
            if !deferred {
                self.ack_now = true;
            }
        } else if len > 0 {
            self.note_dsack(s, e);
            self.ack_now = true; // old duplicate
                                 // Linux: the sender is retransmitting; quick ACKs (`out_of_window`).
            let (w, mss) = (self.last_adv, self.cfg.mss as u64);
            if let Some(a) = &mut self.acks {
                a.enter_quickack(crate::tcp::delack::MAX_QUICKACKS, w, mss);
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
    fn linux_ack(&mut self, now: Instant, had_holes: bool, len: u32, grew: bool, flags: TcpFlags) {
        let (rto, srtt, w, mss) = (self.rtt.rto(), self.rtt.srtt, self.last_adv, self.cfg.mss as u64);
        let rcv_mss = self.rcv_mss();
        let hdr = self.hdr_len() - 20;
        // The application reads at once: all of it unless some is held out of order.
        let drained = self.ooo.is_empty() && self.rbuf.is_none();
        let Some(a) = &mut self.acks else { return };
        a.on_data(now, rto, w, mss);
        if len > 0 {
            let psh = flags.has(TcpFlags::PSH);
            let remnant = flags.0 & (TcpFlags::PSH | TcpFlags::FIN | TcpFlags::URG | TcpFlags::SYN) != 0;
            a.measure(len as u64, rcv_mss, hdr, psh, remnant);
        }
        if grew {
            // tcp_grow_window: `icsk_ack.quick |= 1`.
            a.quick |= 1;
        }
        self.unacked_segs += 1;
        if had_holes || a.in_quickack() || self.unacked_segs >= self.cfg.delack_count || a.read_acks(drained) {
            self.ack_now = true;
            return;
        }
        let t = a.timeout(srtt, (len as u64) < self.tcb.smss);
        match self.ack_deadline {
            Some(d) if d <= now + t / 4 => self.ack_now = true,
            Some(_) => {}
            None => self.ack_deadline = Some(self.tcb.timer(now, t)),
        }
    }

    /// The receiver's estimate of the peer's MSS (Linux `icsk_ack.rcv_mss`;
    /// without Linux's window, the MSS).
    fn rcv_mss(&self) -> u64 {
        self.lrw.as_ref().map_or(self.tcb.smss, |l| l.rcv_mss())
    }

    /// Compressed SACKs: out-of-order `[s, e)` enters the receiver's block
    /// list; a held ACK that must report the list as it was goes first (true).
    fn comp_list(&mut self, now: Instant, s: u64, e: u64) -> bool {
        let first = self.ooo.is_empty();
        let Some(c) = &mut self.comp else { return false };
        if !c.on_ofo(s, e, first) {
            return false;
        }
        c.flushed();
        let ack = self.pure_ack(now);
        self.queued = Some(Box::new(ack));
        true
    }

    /// Compressed SACKs: whether the ACK an out-of-order segment asks for is
    /// held (not in quick-ACK mode, SACK on).
    fn comp_holds(&mut self, now: Instant) -> bool {
        let quick = self.acks.as_ref().is_none_or(|a| a.in_quickack());
        if !self.sack_ok || quick {
            return false;
        }
        let rcv_rtt = self.lrw.as_ref().map_or(0, |l| l.rtt_us8());
        let srtt = self.rtt.srtt.map_or(0, |s| s.nanos() as u64 / 1000 * 8);
        let Some(c) = &mut self.comp else { return false };
        match c.on_ofo_ack(now, self.rcv_nxt, rcv_rtt, srtt) {
            OfoAck::Now => false,
            OfoAck::Held(arm) => {
                // The held ACK's timer takes the delayed-ACK timer's place,
                // which does not run now (the ACKs before went at once).
                if let (Some(t), None) = (arm, self.ack_deadline) {
                    self.ack_deadline = Some(t);
                }
                true
            }
        }
    }

    /// RFC 2883: the next ACK reports `[s, e)` as received twice (with `dsack`;
    /// Linux `tcp_dsack_set`).
    fn note_dsack(&mut self, s: u64, e: u64) {
        if self.cfg.dsack && self.sack_ok && s < e {
            self.dsack = Some((s, e));
        }
    }

    pub(super) fn check_done(&mut self) {
        // ACKs beyond snd_max are rejected, so an ACK past the FIN means it was sent.
        let our_fin_acked = self.app_limit.is_some() && self.tcb.snd_una > self.fin_off();
        if our_fin_acked && self.fin_rcvd && self.state == State::Established {
            self.state = State::Done;
            self.rto_deadline = None;
        }
    }
}
