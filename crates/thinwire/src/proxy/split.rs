//! The split exchange (seed 003 §V; RFC 9293, RFC 5961, Linux `tcp_input.c`,
//! `inet_connection_sock.c` for the wireless leg's answers): a mobile's SYN opens
//! the wired leg to the server; the server's answer becomes the SYN-ACK to the
//! mobile (resent, given up, evicted beyond `max_half_open`); each side's data,
//! ACKs, FINs and RSTs are carried across; closed connections linger, then are
//! reaped. The parameters are [`ProxyConfig`](super::ProxyConfig)'s.
use super::*;

impl Proxy {
    pub(super) fn open(&mut self, now: Instant, key: Key, p: &Packet, r: &TcpRepr) {
        let (mobile, mport, server, sport) = key;
        let a = match self.by_mobile.get(&mobile) {
            Some(&a) => a,
            None => {
                let rtt = RttEstimator::new(
                    self.cfg.initial_rto,
                    Duration::from_millis(10),
                    self.cfg.min_rto,
                    self.cfg.max_rto,
                );
                let (cc, iw, mss) = (self.cfg.cc, self.cfg.initial_window, self.cfg.mss as u64);
                self.acbs.push(Acb::new(mobile, cc, self.cfg.clamp_bytes(), mss, iw, rtt));
                self.by_mobile.insert(mobile, self.acbs.len() - 1);
                self.acbs.len() - 1
            }
        };
        self.reap(now);
        // A full table of unfinished handshakes for this mobile: the oldest goes.
        let mut half = self.acbs[a].conns.iter().copied().filter(|&c| self.conns[c].half_open());
        if let Some(oldest) = half.next() {
            if 1 + half.count() >= self.cfg.max_half_open.max(1) {
                self.drop_half_open(oldest, now);
            }
        }
        let c = self.free.pop().unwrap_or(self.conns.len());
        let wired = if self.streams {
            self.cmds.push_back(Command::Connect { conn: c, mobile: (mobile, mport), server: (server, sport) });
            Wired::Stream(Stream::default())
        } else {
            let mut t = crate::tcp::Tcp::new(self.cfg.wired_tcp, mport, sport, r.seq);
            t.connect(now);
            Wired::Tcp(Box::new(t))
        };
        let (class, tickets) =
            self.cfg.classes.iter().find(|c| c.0 == sport).map(|c| (c.1, c.2)).unwrap_or(self.cfg.default_class);
        // RFC 9293 §3.7.1 as Linux reads the option (`tcp_parse_options`, and
        // `tcp_min_snd_mss` = 48): 0 means none (536), anything else at least 48.
        let offered = r.opts.mss.filter(|&m| m > 0).unwrap_or(536).max(MIN_SND_MSS);
        let mss = (self.cfg.mss as u64).min(offered as u64);
        let conn = Conn {
            flow: p.meta.flow,
            serial: self.stats.connections,
            mobile,
            server,
            mport,
            sport,
            acb: a,
            phase: Phase::Connecting,
            wired,
            down: self.streams.then(SendBuf::default),
            up: self.streams.then(RecvBuf::default),
            iss: 0,
            irs: r.seq,
            established: false,
            mss,
            sack: r.opts.sack_permitted && self.cfg.sack_mobile,
            snd_una: 1,
            snd_nxt: 1,
            rwnd: r.window as u64,
            fin_at: None,
            fin_sent: false,
            fin_acked: false,
            rcv_nxt: 1,
            ooo: Default::default(),
            mobile_fin_at: None,
            mobile_fin_in: false,
            mobile_fin_acked: false,
            ack_owed: false,
            persist: None,
            persist_backoff: 0,
            synack_at: None,
            synack_timeouts: 0,
            class,
            tickets,
            pass: 0,
            allowance: 0.0,
            fc_at: now,
            last_cap: None,
            last_queue: 0,
        };
        if c == self.conns.len() {
            self.conns.push(conn);
        } else {
            self.conns[c] = conn;
        }
        self.by_key.insert(key, c);
        self.live.push(c);
        self.stats.connections += 1;
        self.acbs[a].conns.push(c);
        self.start_allowance(c, now);
        self.drain_wired(c, now);
    }

    /// A new connection's allowance: its share of the aggregate's buffer target.
    pub(super) fn start_allowance(&mut self, c: usize, now: Instant) {
        let a = self.conns[c].acb;
        let n = self.acbs[a].conns.len().max(1) as f64;
        let lo = 2.0 * self.cfg.mss as f64;
        let w = (self.cfg.target() / n).max(lo);
        let conn = &mut self.conns[c];
        conn.allowance = w;
        conn.fc_at = now;
        conn.wired.set_window_cap(Some(w as u64));
        conn.last_cap = Some(w as u64);
        let flow = conn.flow as i32;
        self.log(now, EventKind::Window, flow, -1, 0, w as i64);
    }

    pub(super) fn from_server(&mut self, c: usize, now: Instant, r: &TcpRepr, len: u32) {
        let conn = &mut self.conns[c];
        let mut seg = *r;
        if r.flags.has(TcpFlags::FIN) && !conn.fin_acked {
            // Hold the FIN: the wired leg must not acknowledge it yet.
            let off = (r.seq.wrapping_sub(conn.iss) as u64) + len as u64;
            if conn.phase == Phase::Open {
                conn.fin_at = Some(off);
            }
            seg.flags = TcpFlags(seg.flags.0 & !TcpFlags::FIN);
            if len == 0 && !seg.flags.has(TcpFlags::ACK) {
                return;
            }
        }
        let was_connecting = conn.phase == Phase::Connecting;
        let Some(t) = conn.wired.tcp() else { return };
        t.on_segment(now, &seg, len);
        if was_connecting
            && r.flags.has(TcpFlags::SYN)
            && r.flags.has(TcpFlags::ACK)
            && t.state == crate::tcp::State::Established
        {
            conn.phase = Phase::Open;
            conn.iss = r.seq;
            self.send_synack(c, now);
        }
        self.drain_wired(c, now);
    }

    /// Sends (or resends) the SYN-ACK and arms its timer: the first after
    /// `initial_rto`, doubling per expiry, at most `max_rto` (Linux
    /// `reqsk_timer_handler`: `TCP_TIMEOUT_INIT << num_timeout`, capped).
    pub(super) fn send_synack(&mut self, c: usize, now: Instant) {
        let conn = &self.conns[c];
        let mut h = conn.header(0, TcpFlags::SYN | TcpFlags::ACK);
        h.ack = conn.irs.wrapping_add(1);
        h.opts.mss = Some(self.cfg.mss as u16);
        h.opts.sack_permitted = conn.sack;
        self.emit(c, Side::Wireless, h, 0, now);
        let k = self.conns[c].synack_timeouts.min(16);
        let wait = (self.cfg.initial_rto * (1i64 << k)).min(self.cfg.max_rto);
        self.conns[c].synack_at = Some(now + wait);
    }

    /// The SYN-ACK went unacknowledged: resend it, or after `synack_retries`
    /// resends drop the unfinished connection.
    pub(super) fn synack_timeout(&mut self, c: usize, now: Instant) {
        let conn = &mut self.conns[c];
        conn.synack_at = None;
        if !conn.half_open() {
            return;
        }
        if conn.synack_timeouts >= self.cfg.synack_retries {
            return self.drop_half_open(c, now);
        }
        conn.synack_timeouts += 1;
        self.send_synack(c, now);
    }

    pub(super) fn from_mobile(&mut self, c: usize, now: Instant, r: &TcpRepr, len: u32, payload: Option<&[u8]>) {
        if is_syn(r) {
            // The mobile did not get our SYN-ACK.
            if self.conns[c].phase == Phase::Open && !self.conns[c].established {
                self.send_synack(c, now);
            }
            return;
        }
        let conn = &mut self.conns[c];
        if conn.phase != Phase::Open {
            return;
        }
        if r.flags.has(TcpFlags::ACK) {
            let acked =
                conn.snd_una + (r.ack.wrapping_sub(conn.iss.wrapping_add(conn.snd_una as u32)) as i32).max(0) as u64;
            if !conn.established && acked >= 1 {
                conn.established = true;
                conn.synack_at = None;
            }
            conn.rwnd = r.window as u64;
            let top = conn.snd_nxt;
            let acked = acked.min(top);
            let base = conn.iss;
            let sacks: Vec<(u64, u64)> = r
                .sack_blocks()
                .iter()
                .map(|&(l, e)| (off(base, conn.snd_una, l), off(base, conn.snd_una, e)))
                .collect();
            if acked > conn.snd_una {
                conn.snd_una = acked;
                if let Some(d) = &mut conn.down {
                    d.release(acked - 1);
                }
            }
            if conn.fin_sent && acked > conn.fin_at.unwrap_or(u64::MAX) && !conn.fin_acked {
                conn.fin_acked = true;
                self.release_fin(c, now);
            }
            let a = self.conns[c].acb;
            let rx = self.cfg.retransmit_at;
            let fb = self.acbs[a].feedback(c, acked, &sacks, now, rx, self.cfg.delack_allowance);
            if let Some(r) = fb.rtt {
                let f = self.conns[c].flow as i32;
                self.log(now, EventKind::Rtt, f, -1, 0, r.nanos());
                self.stats.rtt_samples += 1;
                self.stats.rtt_sum_ns += r.nanos();
                if self.cfg.estimate_clamp {
                    let min = self.acbs[a].min_rtt.unwrap_or(Duration::MAX);
                    let w = ((1.0 + self.cfg.headroom) * self.cfg.link_rate as f64 * min.as_secs_f64()).round() as u64;
                    let w = w.max(2 * self.cfg.mss as u64);
                    if w != self.acbs[a].window() {
                        self.acbs[a].set_clamp(w, now);
                        self.log(now, EventKind::Cwnd, -1, -1, 0, w as i64);
                    }
                }
            }
            for &(k, s, n) in &fb.counters {
                let f = self.conns[k].flow as i32;
                self.log(now, EventKind::Counter, f, s as i64, 0, n as i64);
            }
            if fb.progress && self.acbs[a].on_progress(now) {
                self.log(now, EventKind::Stall, -1, -1, 0, 0);
                let w = self.acbs[a].window() as i64;
                self.log(now, EventKind::Cwnd, -1, -1, 0, w);
            }
        }
        let conn = &mut self.conns[c];
        if len > 0 || r.flags.has(TcpFlags::FIN) {
            if conn.receive(r.seq, len, r.flags.has(TcpFlags::FIN), payload) {
                let (n, fin) = (conn.rcv_nxt - 1, conn.mobile_fin_in);
                conn.wired.set_app_data(Some(n), fin);
                self.wake(c);
                self.drain_wired(c, now);
            }
            self.flush_acks(c, now);
        }
    }

    /// The mobile has acknowledged our FIN: now the wired leg takes the server's.
    pub(super) fn release_fin(&mut self, c: usize, now: Instant) {
        let conn = &mut self.conns[c];
        let Some(off) = conn.fin_at else { return };
        // A kernel socket acknowledged the server's FIN when it came.
        let Wired::Tcp(wired) = &mut conn.wired else { return self.drain_wired(c, now) };
        let h = TcpRepr {
            src_port: conn.sport,
            dst_port: conn.mport,
            seq: conn.iss.wrapping_add(off as u32),
            ack: wired.iss().wrapping_add(1 + wired.app_limit().unwrap_or(0) as u32),
            flags: TcpFlags(TcpFlags::FIN),
            window: 65535,
            ..Default::default()
        };
        let limit = wired.app_limit();
        wired.on_segment(now, &h, 0);
        // The wired leg closes when the mobile does, not on the server's FIN.
        wired.set_app_data(limit, conn.mobile_fin_in);
        self.drain_wired(c, now);
    }

    /// Sends the wired leg's segments to the server; closes a finished split.
    pub(super) fn drain_wired(&mut self, c: usize, now: Instant) {
        while let Some(seg) = self.conns[c].wired.tcp().and_then(|t| t.poll_transmit(now)) {
            self.emit(c, Side::Wired, seg.repr, seg.len, now);
        }
        // The server acknowledged the wired leg's FIN: the mobile's FIN may be ACKed.
        let conn = &self.conns[c];
        if conn.mobile_fin_in && conn.wired.fin_acked() && !conn.mobile_fin_acked {
            self.conns[c].mobile_fin_acked = true;
            self.conns[c].ack_owed = true;
            self.flush_acks(c, now);
        }
        let conn = &self.conns[c];
        if conn.phase == Phase::Open && conn.wired.is_closed() && conn.fin_acked && conn.mobile_fin_in {
            self.close(c, now);
        }
    }

    pub(super) fn flush_acks(&mut self, c: usize, now: Instant) {
        if !self.conns[c].ack_owed {
            return;
        }
        self.conns[c].ack_owed = false;
        let conn = &self.conns[c];
        let h = conn.header(conn.snd_nxt, TcpFlags::ACK);
        self.emit(c, Side::Wireless, h, 0, now);
    }

    pub(super) fn close(&mut self, c: usize, now: Instant) {
        self.live.retain(|&x| x != c);
        if self.streams {
            self.cmds.push_back(Command::Close(c));
        }
        self.closed.push_back((c, now));
        let conn = &mut self.conns[c];
        conn.phase = Phase::Closed;
        conn.down = conn.down.take().map(|_| SendBuf::default());
        conn.up = conn.up.take().map(|_| RecvBuf::default());
        let a = conn.acb;
        let acb = &mut self.acbs[a];
        acb.conns.retain(|&x| x != c);
        acb.remove_conn(c);
        if !acb.any_unsacked() {
            acb.deadline = None;
            acb.probing = false;
            acb.stalled = false;
            acb.backoff = 0;
        }
    }

    /// Releases connections closed more than `LINGER` ago.
    pub(super) fn reap(&mut self, now: Instant) {
        while let Some(&(c, at)) = self.closed.front() {
            if now - at < LINGER {
                break;
            }
            self.closed.pop_front();
            let conn = &self.conns[c];
            let key = (conn.mobile, conn.mport, conn.server, conn.sport);
            if self.by_key.get(&key) == Some(&c) {
                self.by_key.remove(&key);
            }
            self.free.push(c);
        }
    }
}
