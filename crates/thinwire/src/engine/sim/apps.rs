//! The simulator's drivers of request/response and interactive applications:
//! opening, feeding and closing their TCP connections. The applications and their
//! settings (with defaults) are described in app/session.rs (web, ttcp, http) and
//! app/interactive.rs.
//!
//! Sessions have the mobile host as the client. ttcp: each download on a fresh
//! connection the mobile opens; the server sends at once and closes; a download's
//! time runs from the SYN to the FIN reaching the mobile (the ttcp receiver's EOF),
//! so it includes connection set-up and termination as in seed 004's Fig. 9. http:
//! one request at a time (no pipelining); HTTP/1.0 a connection per object, closed
//! by the server; HTTP/1.1 one connection per page, the server waits idle for each
//! next request, and the client closes after the last object. interactive: messages
//! start one interval after the connection request; each message's latency runs
//! from the write to its last byte reaching the mobile's application in order.
use super::media::delay_stats;
use super::*;
use crate::app::{interactive::InteractiveConfig, session::SessionConfig};

/// Where a session's transactions come from.
pub(super) enum TxSource {
    Mah(WebModel),
    Fixed(Vec<(u64, u64)>),
}

impl TxSource {
    fn transaction(&mut self) -> Transaction {
        match self {
            TxSource::Mah(m) => m.transaction(),
            TxSource::Fixed(x) => Transaction { exchanges: x.clone() },
        }
    }
}

/// A session flow: transactions, each a series of request/response exchanges on
/// one connection per exchange (or one per transaction when persistent).
pub(super) struct Web {
    pub(super) id: usize,
    pub(super) cfg: crate::config::FlowCfg,
    /// Its TCP settings, resolved once for all its connections.
    tcp: crate::tcp::TcpConfig,
    source: TxSource,
    rng: Rng,
    think: Duration,
    gap: Duration,
    limit: Option<u64>,
    pub(super) start: Instant,
    persistent: bool,
    /// An exchange ends only when the server's FIN has reached the mobile (ttcp).
    wait_fin: bool,
    /// Bytes of each reply written before the rest (http's `header`).
    header: u64,
    server_port: u16,
    tx: Option<Transaction>,
    tx_start: Instant,
    /// Index of the exchange in progress within `tx`, and its connection (index
    /// into `flows`).
    step: usize,
    conn: Option<usize>,
    /// Request and response bytes of the exchanges so far on `conn`.
    req_cum: u64,
    /// The exchange whose request has been issued (the server answers only then).
    requested: Option<usize>,
    reply_cum: u64,
    /// Client port -> connection, for every connection not yet closed.
    pub(super) ports: crate::fx::FxMap<u16, usize>,
    pub(super) done: u64,
    pub(super) bytes_done: u64,
    pub(super) last_done: Option<Instant>,
    pub(super) durations: Vec<f64>,
    /// Every place in `flows` this session's connections have held.
    pub(super) conns: Vec<usize>,
    /// Places of connections that both ends have closed, oldest first: the next
    /// connection takes the first whose timers have all passed, so `flows` holds
    /// about as many connections as are open, however many a run opens.
    free: VecDeque<usize>,
    /// The counters of the connections whose places were taken: (server, mobile).
    pub(super) retired: [crate::tcp::TcpStats; 2],
}

impl Web {
    pub(super) fn new(sc: &Scenario, i: usize, f: &crate::config::FlowCfg, cfg: SessionConfig, start: Instant) -> Web {
        let source = match cfg.exchanges() {
            Some(x) => TxSource::Fixed(x),
            None => TxSource::Mah(WebModel::new(build::flow_stream(sc, i, "web"))),
        };
        Web {
            id: i,
            cfg: f.clone(),
            tcp: build::tcp_config(f),
            source,
            rng: build::flow_stream(sc, i, "isn"),
            think: cfg.think,
            gap: cfg.gap,
            limit: cfg.limit,
            start,
            persistent: cfg.persistent(),
            wait_fin: cfg.wait_fin(),
            header: cfg.reply_header(),
            server_port: cfg.port,
            tx: None,
            tx_start: start,
            step: 0,
            conn: None,
            req_cum: 0,
            requested: None,
            reply_cum: 0,
            ports: Default::default(),
            done: 0,
            bytes_done: 0,
            last_done: None,
            durations: vec![],
            conns: vec![],
            free: VecDeque::new(),
            retired: Default::default(),
        }
    }
    pub(super) fn finite(&self) -> bool {
        self.limit.is_some()
    }
    /// A finite session that has not done all its transactions.
    pub(super) fn unfinished(&self) -> bool {
        self.limit.is_some_and(|l| self.done < l)
    }
}

/// An interactive flow's message source and what the mobile's application saw.
pub(super) struct Interactive {
    port: u16,
    packet: u64,
    interval: Duration,
    limit: Option<u64>,
    written: u64,
    /// Writes not yet fully delivered: (time, stream offset of the last byte + 1).
    pending: VecDeque<(Instant, u64)>,
    pub(super) delays: Vec<i64>,
}

impl Interactive {
    pub(super) fn new(cfg: InteractiveConfig) -> Interactive {
        Interactive {
            packet: cfg.packet,
            interval: cfg.interval,
            limit: cfg.messages,
            port: cfg.port,
            written: 0,
            pending: VecDeque::new(),
            delays: vec![],
        }
    }
    pub(super) fn port(&self) -> u16 {
        self.port
    }
    pub(super) fn total(&self) -> Option<u64> {
        self.limit.map(|n| n * self.packet)
    }
    pub(super) fn first_tick(&self, start: Instant) -> Instant {
        start + self.interval
    }
    /// Delay statistics of the delivered messages.
    pub(super) fn result(&self) -> MediaResult {
        let sent = self.written / self.packet.max(1);
        delay_stats(
            sent,
            self.delays.len() as u64,
            &self.delays,
            if sent > 0 { 1.0 - self.delays.len() as f64 / sent as f64 } else { 0.0 },
        )
    }
}

impl Sim {
    /// Starts the next transaction, or the next exchange of the current one.
    pub(super) fn web_next(&mut self, w: usize) {
        let now = self.now();
        let web = &mut self.webs[w];
        if web.limit.is_some_and(|l| web.done >= l) {
            return;
        }
        if web.tx.is_none() {
            web.tx = Some(web.source.transaction());
            web.step = 0;
            web.tx_start = now;
        }
        let (req, _) = web.tx.as_ref().unwrap().exchanges[web.step];
        if let (true, Some(f)) = (web.persistent, web.conn) {
            // HTTP/1.1: the next request on the open connection.
            web.req_cum += req;
            web.requested = Some(web.step);
            let cum = web.req_cum;
            self.flows[f].ep[1].set_app_data(Some(cum), false);
            self.drain_tcp(f, 1);
            return;
        }
        // Client ports cycle through 32768..65535 (the Linux ephemeral range), one
        // sequence for the whole mobile host, so concurrent sessions never share a
        // connection's addresses and ports (the proxy and captures tell them apart).
        // Ports 40000 + N belong to the scenario's bulk and interactive flows.
        let fixed = 40000..40000 + self.slots.len() as u32;
        let mut mport = 32768 + self.next_client_port % 32768;
        self.next_client_port = self.next_client_port.wrapping_add(1);
        while fixed.contains(&(mport as u32)) {
            mport = 32768 + self.next_client_port % 32768;
            self.next_client_port = self.next_client_port.wrapping_add(1);
        }
        let web = &mut self.webs[w];
        let pair = build::tcp_pair_of(web.tcp, web.server_port, mport, &mut web.rng, self.rec.mask.has(Layer::Tcp));
        // A closed connection's place, once no timer event can name it any more
        // (one due at this instant may still be queued), taken over in place
        // (same session: same id, settings and mobile); else a new one.
        let f = match web.free.front() {
            Some(&f) if self.flows[f].timers_until < now => {
                web.free.pop_front();
                let fl = &mut self.flows[f];
                web.retired[0] += fl.ep[0].stats();
                web.retired[1] += fl.ep[1].stats();
                fl.ep = pair;
                fl.sched = [None, None];
                fl.timers_until = Instant::ZERO;
                fl.ident = [1, 1];
                fl.start = now;
                fl.completed = None;
                f
            }
            _ => {
                web.conns.push(self.flows.len());
                self.flows.push(Flow {
                    id: web.id,
                    cfg: web.cfg.clone(),
                    ep: pair,
                    sched: [None, None],
                    timers_until: Instant::ZERO,
                    ident: [1, 1],
                    start: now,
                    bytes: None,
                    sender: 0,
                    completed: None,
                    chat: None,
                    addr: super::mobile_addr(web.cfg.mobile()),
                });
                self.flows.len() - 1
            }
        };
        let ep = &mut self.flows[f].ep;
        ep[0].set_app_data(Some(0), false);
        ep[1].set_app_data(Some(req), false);
        ep[1].connect(now);
        let web = &mut self.webs[w];
        web.ports.insert(mport, f);
        web.conn = Some(f);
        web.req_cum = req;
        web.requested = Some(web.step);
        web.reply_cum = 0;
        self.drain_tcp(f, 1);
    }

    /// After a segment reached end `end` of session connection `f`.
    pub(super) fn web_progress(&mut self, w: usize, f: usize, end: usize) {
        let now = self.now();
        let web = &mut self.webs[w];
        let fl = &mut self.flows[f];
        if fl.ep[0].is_closed() && fl.ep[1].is_closed() {
            // Closed: no segment reaches it any more, and its place can be reused
            // (not while the session still counts on it).
            if web.ports.remove(&fl.ep[1].local_port()).is_some() && web.conn != Some(f) {
                web.free.push_back(f);
            }
        }
        if web.conn != Some(f) {
            return;
        }
        let n = web.tx.as_ref().unwrap().exchanges.len();
        let (_, reply) = web.tx.as_ref().unwrap().exchanges[web.step];
        let target = web.reply_cum + reply;
        if end == 0
            && web.requested == Some(web.step)
            && fl.ep[0].app_limit().unwrap_or(0) < target
            && fl.ep[0].delivered() >= web.req_cum
        {
            // The server answers; HTTP/1.0 and ttcp servers then close. A header
            // written apart leaves first, in a segment of its own.
            let close = !web.persistent;
            if web.header > 0 {
                fl.ep[0].set_app_data(Some(web.reply_cum + web.header.min(reply)), false);
                self.drain_tcp(f, 0);
            }
            self.flows[f].ep[0].set_app_data(Some(target), close);
        }
        let (web, fl) = (&mut self.webs[w], &mut self.flows[f]);
        if end == 1 && fl.ep[1].delivered() >= target && (!web.wait_fin || fl.ep[1].fin_received()) {
            web.reply_cum = target;
            web.step += 1;
            let last = web.step == n;
            if last || !web.persistent {
                fl.completed = Some(now);
                web.conn = None;
                // The HTTP/1.1 client closes after its last object.
                if web.persistent {
                    fl.ep[1].set_app_data(Some(web.req_cum), true);
                }
            }
            if !last {
                self.q.schedule(now + web.gap, Event::WebNext(w as u16));
                return;
            }
            web.done += 1;
            web.bytes_done += web.tx.take().unwrap().bytes_down();
            web.durations.push((now - web.tx_start).as_secs_f64());
            web.last_done = Some(now);
            if web.limit == Some(web.done) {
                self.pending_finite -= 1;
                return;
            }
            self.q.schedule(now + web.think, Event::WebNext(w as u16));
        }
    }

    /// An interactive flow's server writes its next message.
    pub(super) fn chat_tick(&mut self, f: usize) {
        let now = self.now();
        let fl = &mut self.flows[f];
        let Some(c) = fl.chat.as_mut() else { return };
        c.written += c.packet;
        c.pending.push_back((now, c.written));
        fl.ep[0].set_app_data(Some(c.written), false);
        if c.limit.is_none_or(|l| c.written < l * c.packet) {
            self.q.schedule(now + c.interval, Event::Tick(f as u16));
        }
        self.drain_tcp(f, 0);
    }

    /// Records the latency of every message the mobile's application now has.
    pub(super) fn chat_progress(&mut self, f: usize) {
        let now = self.now();
        let fl = &mut self.flows[f];
        let delivered = fl.ep[1].delivered();
        let Some(c) = fl.chat.as_mut() else { return };
        while let Some(&(t, end)) = c.pending.front() {
            if end > delivered {
                break;
            }
            c.delays.push((now - t).nanos());
            c.pending.pop_front();
        }
    }
}
