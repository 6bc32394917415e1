//! The aggregate service (seed 004 §IV): whenever a mobile's aggregate has room,
//! the scheduler picks what to send (sched.rs); lost segments are sent again; a
//! shut window at the mobile is probed (RFC 9293 §3.8.6.1, persist timer); and
//! the windows advertised to the wired senders keep the aggregate's buffer near
//! (1 + β)·BDP (flow control, acb.rs).
use super::*;

impl Proxy {
    /// Sends what the aggregate's window and the scheduler allow, then updates the
    /// advertised windows.
    pub(super) fn service(&mut self, a: usize, now: Instant) {
        // The scheduler's candidates — every connection with something to send,
        // with the pass it would continue from — are listed once, and after
        // each pick only the picked connection's entry changes: sending one
        // connection's piece changes no other connection's `sendable`, and the
        // class's virtual time moves to the picked pass, which is at most every
        // other candidate's of that class, so their `join` stays. (Listed afresh
        // for every segment, the list cost O(connections) per segment: a third
        // of the daemon's CPU with 100 connections.) They are kept in a heap
        // in pick order, so a pick costs O(log n), not a scan of them all. A
        // retransmission lists them afresh.
        //
        // With `burst` > 1 a pick sends up to that many segments of its
        // connection in a row (each charged to its pass); meanwhile the
        // connection is out of the candidates. A retransmission, or the window
        // full, ends the burst (the candidates are listed afresh next time).
        let mut cands = std::mem::take(&mut self.cands);
        let mut listed = false;
        let mut burst: Option<(usize, u8, u32)> = None;
        loop {
            let mss = self.cfg.mss as u64;
            if !self.acbs[a].has_room(mss) {
                self.acbs[a].sent_until(true);
                break;
            }
            if let Some(e) = self.acbs[a].take_due(now) {
                self.emit_entry(&e, now);
                listed = false;
                burst = None;
                continue;
            }
            if !listed {
                self.list_candidates(a, &mut cands);
                listed = true;
            }
            let (c, class, pass, left) = match burst.take() {
                Some((c, class, left)) => (c, class, self.conns[c].pass, left),
                None => {
                    #[cfg(debug_assertions)]
                    {
                        let mut fresh = sched::Candidates::default();
                        self.list_candidates(a, &mut fresh);
                        debug_assert_eq!(
                            fresh.sorted(),
                            cands.sorted(),
                            "the kept candidates are the ones listed afresh"
                        );
                    }
                    let Some((c, class, pass)) = self.acbs[a].sched.pick(&mut cands) else {
                        self.acbs[a].sent_until(false);
                        break;
                    };
                    (c, class, pass, self.cfg.burst)
                }
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
            // The pick took it out; it goes back with its new pass while it
            // has more to send (or goes on sending in a burst).
            if self.conns[c].sendable().is_some() {
                if left > 1 {
                    burst = Some((c, class, left - 1));
                } else {
                    let conn = &self.conns[c];
                    cands.push((c, class, self.acbs[a].sched.join(class, conn.pass)), conn.serial);
                }
            }
        }
        self.cands = cands;
        for i in 0..self.acbs[a].conns.len() {
            let c = self.acbs[a].conns[i];
            self.flush_acks(c, now);
            self.persist(c, now);
        }
        self.flow_control(a, now);
    }

    /// Every connection of aggregate `a` with something to send, as the
    /// scheduler's candidates (into `out`, cleared first).
    fn list_candidates(&self, a: usize, out: &mut sched::Candidates) {
        out.clear();
        let acb = &self.acbs[a];
        for &c in acb.conns.iter().filter(|&&c| self.conns[c].sendable().is_some()) {
            let conn = &self.conns[c];
            out.push((c, conn.class, acb.sched.join(conn.class, conn.pass)), conn.serial);
        }
    }

    /// The persist timer's next interval: the aggregate's RTO doubled per
    /// unanswered probe, within [`min_rto`, `max_rto`] (RFC 9293 §3.8.6.1; Linux
    /// `tcp_probe_timer`, capped at TCP_RTO_MAX).
    pub(super) fn persist_interval(&self, c: usize) -> Duration {
        let a = self.conns[c].acb;
        let base = self.acbs[a].rtt.rto();
        let k = self.conns[c].persist_backoff.min(16);
        (base * (1i64 << k)).max(self.cfg.min_rto).min(self.cfg.max_rto)
    }

    /// Arms or stops a connection's persist timer after a round of sending.
    pub(super) fn persist(&mut self, c: usize, now: Instant) {
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
    pub(super) fn window_probe(&mut self, c: usize, now: Instant) {
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

    pub(super) fn emit_entry(&mut self, e: &acb::Entry, now: Instant) {
        self.stats.retransmits += 1;
        let flow = self.conns[e.conn].flow as i32;
        self.log(now, EventKind::Retransmit, flow, e.start as i64, e.payload() as i64, e.tx as i64);
        self.send_piece(e.conn, e.start, e.end, e.fin, now);
    }

    pub(super) fn send_piece(&mut self, c: usize, s: u64, e: u64, fin: bool, now: Instant) {
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

    pub(super) fn flow_control(&mut self, a: usize, now: Instant) {
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
}
