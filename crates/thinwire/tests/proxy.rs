//! End-to-end tests of the split-TCP proxy (src/proxy) between real TCP endpoints:
//! servers — wired link (20 ms) — proxy — slow wireless link — one mobile host.
//! The harness here is independent of the simulator's engine: the proxy is driven
//! only through its sans-IO interface.
use std::collections::BTreeMap;
use thinwire::proxy::{EventKind, Proxy, ProxyConfig, Side};
use thinwire::tcp::{CcKind, Tcp, TcpConfig};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, TcpFlags, L4};

const SERVER: [u8; 4] = [10, 0, 0, 1];
const MOBILE: [u8; 4] = [10, 0, 1, 2];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum To {
    Server,
    Mobile,
    ProxyWired,
    ProxyWireless,
    Gateway(usize),
}

/// Drops a wireless packet: (direction 0 = down / 1 = up, index in that direction, send time).
type Loss = Box<dyn FnMut(usize, u64, Instant) -> bool>;

struct Net {
    now: Instant,
    q: BTreeMap<(i64, u64), (To, Packet)>,
    n: u64,
    /// (server, mobile) endpoints, one pair per connection; mobile port 40000 + i.
    eps: Vec<(Tcp, Tcp)>,
    proxy: Option<Proxy>,
    rate: [u64; 2],
    /// One-way latency per direction (seed 003: 600–3000 ms down, 400–1300 ms up).
    delay: [Duration; 2],
    free: [Instant; 2],
    sent: [u64; 2],
    loss: Loss,
    /// Byte ranges (stream offsets) the servers sent, per connection, and those
    /// that reached the mobile.
    server_sent: Vec<Vec<(u64, u64)>>,
    mobile_got: Vec<Vec<(u64, u64)>>,
    fin_violation: bool,
    /// The proxy's trace events so far.
    log: Vec<thinwire::proxy::Event>,
    mobile_cfg: TcpConfig,
    server_cfg: TcpConfig,
    /// Rewrite the MSS option of the mobiles' SYNs (a misbehaving mobile).
    syn_mss: Option<u16>,
    /// A drop-tail queue of this many packets before each radio direction
    /// (None: unlimited), and the departure times of the packets in it.
    queue_limit: Option<usize>,
    departures: [std::collections::VecDeque<Instant>; 2],
}

fn linux() -> TcpConfig {
    TcpConfig::profile("linux-2.4").unwrap()
}

impl Net {
    fn new(proxy: Option<ProxyConfig>, loss: Loss) -> Net {
        let proxy = proxy.map(|c| {
            let mut p = Proxy::new(c);
            p.enable_trace();
            p
        });
        Net {
            now: Instant::ZERO,
            q: BTreeMap::new(),
            n: 0,
            eps: vec![],
            proxy,
            rate: [4150, 1400],
            delay: [Duration::from_millis(700), Duration::from_millis(500)],
            free: [Instant::ZERO; 2],
            sent: [0; 2],
            loss,
            server_sent: vec![],
            mobile_got: vec![],
            fin_violation: false,
            log: vec![],
            mobile_cfg: linux(),
            server_cfg: linux(),
            syn_mss: None,
            queue_limit: None,
            departures: Default::default(),
        }
    }

    /// A connection: the mobile opens it at `at`; `down` bytes from the server,
    /// `up` bytes from the mobile, each side closing after its data; port 5001
    /// unless given.
    fn conn(&mut self, down: u64, up: u64, port: u16) -> usize {
        let i = self.eps.len();
        let mport = 40000 + i as u16;
        let mut s = Tcp::new(self.server_cfg, port, mport, 3_000_000_000 + i as u32 * 7919);
        let mut m = Tcp::new(self.mobile_cfg, mport, port, 4_294_000_000u32.wrapping_add(i as u32 * 104729));
        s.set_app_data(Some(down), true);
        m.set_app_data(Some(up), true);
        s.listen();
        m.connect(self.now);
        self.eps.push((s, m));
        self.server_sent.push(vec![]);
        self.mobile_got.push(vec![]);
        self.flush();
        i
    }

    fn push(&mut self, at: Instant, to: To, p: Packet) {
        self.n += 1;
        self.q.insert((at.nanos(), self.n), (to, p));
    }

    fn radio(&mut self, d: usize, p: Packet, to: To) {
        let now = self.now;
        let q = &mut self.departures[d];
        while q.front().is_some_and(|&t| t <= now) {
            q.pop_front();
        }
        if self.queue_limit.is_some_and(|l| q.len() >= l) {
            return;
        }
        let start = self.now.max(self.free[d]);
        let done = start + Duration::transmission(p.size() as u64, self.rate[d] * 8);
        self.free[d] = done;
        self.departures[d].push_back(start);
        let idx = self.sent[d];
        self.sent[d] += 1;
        if !(self.loss)(d, idx, start) {
            self.push(done + self.delay[d], to, p);
        }
    }

    fn from_server(&mut self, p: Packet) {
        let wired = self.now + Duration::from_millis(20);
        if self.proxy.is_some() {
            self.push(wired, To::ProxyWired, p)
        } else {
            self.push(wired, To::Gateway(0), p)
        }
    }
    fn from_mobile(&mut self, p: Packet) {
        if self.proxy.is_some() {
            self.radio(1, p, To::ProxyWireless)
        } else {
            self.radio(1, p, To::Gateway(1))
        }
    }

    fn flush(&mut self) {
        let now = self.now;
        for i in 0..self.eps.len() {
            while let Some(seg) = self.eps[i].0.poll_transmit(now) {
                if seg.len > 0 {
                    let o = seg.repr.seq.wrapping_sub(self.eps[i].0.iss()) as u64;
                    self.server_sent[i].push((o, o + seg.len as u64));
                }
                let p = Packet::new(SERVER, MOBILE, 0, L4::Tcp(seg.repr), seg.len, i as u16, now);
                self.from_server(p);
            }
            while let Some(mut seg) = self.eps[i].1.poll_transmit(now) {
                if seg.repr.flags.has(TcpFlags::SYN) && self.syn_mss.is_some() {
                    seg.repr.opts.mss = self.syn_mss;
                }
                let p = Packet::new(MOBILE, SERVER, 0, L4::Tcp(seg.repr), seg.len, i as u16, now);
                self.from_mobile(p);
            }
            // Never early-ACK a FIN: the server's FIN is acknowledged only once the
            // mobile has it.
            if self.eps[i].0.fin_acked() && !self.eps[i].1.fin_received() {
                self.fin_violation = true;
            }
        }
        while let Some((side, p)) = self.proxy.as_mut().and_then(|x| x.poll_transmit()) {
            match side {
                Side::Wired => self.push(now + Duration::from_millis(20), To::Server, p),
                Side::Wireless => self.radio(0, p, To::Mobile),
            }
        }
        while let Some(e) = self.proxy.as_mut().and_then(|x| x.poll_event()) {
            self.log.push(e);
        }
    }

    fn conn_of(&self, p: &Packet) -> usize {
        let L4::Tcp(r) = p.l4 else { unreachable!() };
        let mport = if p.ip.src() == MOBILE.into() { r.src_port } else { r.dst_port };
        (mport - 40000) as usize
    }

    fn step(&mut self) -> bool {
        let mut next = self.q.keys().next().map(|k| Instant(k.0));
        for (s, m) in &self.eps {
            for t in [s.poll_timeout(), m.poll_timeout()].into_iter().flatten() {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        }
        if let Some(t) = self.proxy.as_ref().and_then(|p| p.poll_timeout()) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let Some(t) = next else { return false };
        self.now = t.max(self.now);
        let now = self.now;
        if let Some(&k) = self.q.keys().next().filter(|k| k.0 <= now.nanos()) {
            let (to, p) = self.q.remove(&k).unwrap();
            let i = self.conn_of(&p);
            let L4::Tcp(r) = p.l4 else { unreachable!() };
            match to {
                To::Server => self.eps[i].0.on_segment(now, &r, p.payload_len),
                To::Mobile => {
                    if p.payload_len > 0 {
                        let o = r.seq.wrapping_sub(self.eps[i].0.iss()) as u64;
                        self.mobile_got[i].push((o, o + p.payload_len as u64));
                    }
                    self.eps[i].1.on_segment(now, &r, p.payload_len)
                }
                To::Gateway(0) => self.radio(0, p, To::Mobile),
                To::Gateway(_) => self.push(now + Duration::from_millis(20), To::Server, p),
                To::ProxyWired => self.proxy.as_mut().unwrap().on_packet(now, Side::Wired, p),
                To::ProxyWireless => self.proxy.as_mut().unwrap().on_packet(now, Side::Wireless, p),
            }
        }
        for (s, m) in &mut self.eps {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            if m.poll_timeout().is_some_and(|t| t <= now) {
                m.handle_timeout(now);
            }
        }
        if let Some(p) = self.proxy.as_mut() {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
        }
        self.flush();
        true
    }

    fn run_until(&mut self, end: Instant, done: impl Fn(&Net) -> bool) {
        while self.now < end && !done(self) {
            if !self.step() {
                break;
            }
        }
    }
    fn run(&mut self, secs: i64) {
        let end = self.now + Duration::from_secs(secs);
        self.run_until(end, |n| n.all_closed());
    }
    fn all_closed(&self) -> bool {
        self.eps.iter().all(|(s, m)| s.is_closed() && m.is_closed())
    }

    fn events(&self, k: EventKind) -> Vec<thinwire::proxy::Event> {
        self.log.iter().filter(|e| e.kind == k).copied().collect()
    }

    /// Every connection delivered exactly its bytes both ways, in order, and
    /// closed at both ends; the mobile only ever received bytes the server sent.
    fn assert_exact(&self, sizes: &[(u64, u64)]) {
        for (i, &(down, up)) in sizes.iter().enumerate() {
            let (s, m) = &self.eps[i];
            assert_eq!(m.delivered(), down, "conn {i}: mobile got {} of {down}", m.delivered());
            assert_eq!(s.delivered(), up, "conn {i}: server got {} of {up}", s.delivered());
            assert!(s.is_closed() && m.is_closed(), "conn {i} not closed: server {:?}, mobile {:?}", s.state, m.state);
            for &(a, b) in &self.mobile_got[i] {
                assert!(
                    self.server_sent[i].iter().any(|&(x, y)| x <= a && b <= y) || covered(&self.server_sent[i], a, b),
                    "conn {i}: bytes {a}..{b} never sent by the server"
                );
            }
        }
        assert!(!self.fin_violation, "a FIN was acknowledged before the other end had it");
    }
}

fn covered(r: &[(u64, u64)], a: u64, b: u64) -> bool {
    let mut v: Vec<(u64, u64)> = r.to_vec();
    v.sort();
    let mut at = a;
    for (x, y) in v {
        if x <= at && y > at {
            at = y;
        }
        if at >= b {
            return true;
        }
    }
    at >= b
}

fn no_loss() -> Loss {
    Box::new(|_, _, _| false)
}

#[test]
fn download_through_the_proxy_is_byte_exact_and_early_acked() {
    let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
    net.conn(100_000, 0, 5001);
    // Early ACK: the server sees all its data acknowledged long before the mobile has it.
    net.run_until(Instant::ZERO + Duration::from_secs(200), |n| n.eps[0].0.acked_bytes() == 100_000);
    let server_done = net.now;
    net.run(200);
    net.assert_exact(&[(100_000, 0)]);
    let mobile_done = net.now;
    assert!(mobile_done - server_done > Duration::from_secs(3), "server {server_done:?}, mobile {mobile_done:?}");
    let p = net.proxy.as_ref().unwrap();
    // The clamp bounds what is in flight; flow control bounds what the proxy holds.
    let picks = net.events(EventKind::Pick);
    assert!(picks.len() >= 100_000 / 1460);
    let bound = p.cfg.target() + p.cfg.clamp_bytes() as f64 + 2.0 * 1460.0;
    assert!(p.stats.max_buffered as f64 <= bound, "held {} B, bound {bound}", p.stats.max_buffered);
    assert_eq!(p.stats.retransmits, 0);
    // 100 KB at 4.15 KB/s: about 24 s plus start-up; slow start is gone.
    let t = net.now.as_secs_f64();
    assert!(t < 30.0, "took {t:.1} s");
}

#[test]
fn clamped_window_beats_slow_start_for_short_downloads_unless_the_receiver_window_is_small() {
    let time = |proxy: bool, rcv_wnd_initial: Option<u32>| {
        let mut net = Net::new(proxy.then(ProxyConfig::default), no_loss());
        net.mobile_cfg.rcv_wnd_initial = rcv_wnd_initial;
        net.conn(15_000, 0, 5001);
        net.run(100);
        net.assert_exact(&[(15_000, 0)]);
        net.now.as_secs_f64()
    };
    let gain_open = time(false, None) - time(true, None);
    let gain_linux = time(false, Some(5392)) - time(true, Some(5392));
    // Seed 004 §VI-A: skipping slow start pays off, but Linux's 5392-byte initial
    // receive window keeps the proxy from filling the pipe at once.
    assert!(gain_open > 1.0, "gain with an open receive window {gain_open:.2} s");
    assert!(gain_linux < gain_open - 0.3, "gain with 5392 B {gain_linux:.2} s vs {gain_open:.2} s");
}

#[test]
fn scattered_losses_are_repaired_by_counters_without_timeouts() {
    // Losses while data keeps flowing (not among the last segments, whose loss
    // no later ACK can reveal: only the timer finds those).
    let loss: Loss = Box::new(|d, i, _| d == 0 && i % 11 == 5 && i < 90);
    let mut net = Net::new(Some(ProxyConfig::default()), loss);
    net.conn(150_000, 0, 5001);
    net.run(400);
    net.assert_exact(&[(150_000, 0)]);
    let p = net.proxy.as_ref().unwrap();
    assert!(p.stats.retransmits >= 5, "{:?}", p.stats);
    assert_eq!(p.stats.timeouts, 0, "{:?}", p.stats);
    // Every retransmission was decided by a counter reaching 3.
    let counters = net.events(EventKind::Counter);
    assert!(counters.iter().filter(|e| e.value == 3).count() as u64 >= p.stats.retransmits);
}

#[test]
fn a_stall_zeroes_the_windows_probes_linearly_and_recovers() {
    // A 30 s blackout from 10 s: every packet sent in it, both ways, is lost.
    let loss: Loss =
        Box::new(|_, _, t| t >= Instant::ZERO + Duration::from_secs(10) && t < Instant::ZERO + Duration::from_secs(40));
    let mut net = Net::new(Some(ProxyConfig::default()), loss);
    net.conn(200_000, 0, 5001);
    net.run(600);
    net.assert_exact(&[(200_000, 0)]);
    let tos = net.events(EventKind::Timeout);
    assert!(tos.len() >= 3, "{} timeouts", tos.len());
    let gaps: Vec<f64> = tos.windows(2).map(|w| (w[1].at - w[0].at).as_secs_f64()).collect();
    // Linear back-off: each wait one base interval longer than the last.
    for w in gaps.windows(2) {
        assert!((w[1] - w[0] - gaps[0]).abs() < 0.05 * gaps[0] + 0.02, "gaps {gaps:?}");
    }
    let stall = net.events(EventKind::Stall);
    assert_eq!(stall.iter().map(|e| e.value).collect::<Vec<_>>(), vec![1, 0]);
    let wins = net.events(EventKind::Window);
    // The wired sender is held at a zero window for the whole stall.
    let at_stall = wins.iter().rfind(|e| e.at <= stall[0].at).unwrap();
    assert_eq!(at_stall.value, 0);
    assert!(wins.iter().filter(|e| e.at > stall[0].at && e.at < stall[1].at).all(|e| e.value == 0));
    // Recovery: within a few seconds of the link's return the proxy sends again.
    let back = Instant::ZERO + Duration::from_secs(40);
    assert!(stall[1].at - back < Duration::from_secs(tos.len() as i64 * 4 + 4), "recovered at {:?}", stall[1].at);
}

#[test]
fn upload_through_the_proxy_is_byte_exact_with_losses() {
    let loss: Loss = Box::new(|d, i, _| d == 1 && i % 9 == 4);
    let mut net = Net::new(Some(ProxyConfig::default()), loss);
    net.conn(0, 40_000, 5001);
    net.run(400);
    net.assert_exact(&[(0, 40_000)]);
    let with_sack = net.now;
    // The proxy SACKs the mobile's data; without that, the same losses take longer.
    let loss: Loss = Box::new(|d, i, _| d == 1 && i % 9 == 4);
    let mut net = Net::new(Some(ProxyConfig { sack_mobile: false, ..ProxyConfig::default() }), loss);
    net.conn(0, 40_000, 5001);
    net.run(400);
    net.assert_exact(&[(0, 40_000)]);
    assert!(with_sack + Duration::from_secs(1) < net.now, "with SACK {with_sack:?}, without {:?}", net.now);
}

#[test]
fn requests_and_replies_on_several_connections_share_one_aggregate() {
    let loss: Loss = Box::new(|d, i, _| i % 17 == 3 && d == 0);
    let mut net = Net::new(Some(ProxyConfig::default()), loss);
    for k in 0..3 {
        net.conn(30_000 + k * 5000, 300 + k * 100, 80);
    }
    net.run(600);
    net.assert_exact(&[(30_000, 300), (35_000, 400), (40_000, 500)]);
    let p = net.proxy.as_ref().unwrap();
    assert_eq!(p.stats.connections, 3);
    assert!(p.aggregate(MOBILE.into()).unwrap().entries().is_empty());
}

/// Connections closed more than `LINGER` (60 s) ago give their places to later
/// ones: the proxy holds the connections of the last minute, not every one it
/// has carried (the simulator's proxy once kept them all, 2.3 KB each: a
/// 200,000 s web session through it held 286 MB).
#[test]
fn closed_connections_give_their_places_to_later_ones() {
    let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
    let mut sizes = vec![];
    for wave in 0..5u64 {
        for k in 0..3 {
            let size = (4_000 + 1000 * wave + 100 * k, 200 + k);
            net.conn(size.0, size.1, 80);
            sizes.push(size);
        }
        net.run(80);
        assert!(net.all_closed(), "wave {wave} unfinished at {:?}", net.now);
        // Idle until the closed ones have lingered.
        net.now += Duration::from_secs(61);
    }
    net.assert_exact(&sizes);
    let p = net.proxy.as_ref().unwrap();
    assert_eq!(p.stats.connections, 15);
    assert!(p.slots() <= 6, "{} connection slots for 15 connections, 3 at a time", p.slots());
}

#[test]
fn two_downloads_started_apart_share_the_link_fairly() {
    let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
    net.conn(300_000, 0, 5001);
    let t20 = Instant::ZERO + Duration::from_secs(20);
    net.run_until(t20, |_| false);
    net.conn(300_000, 0, 5001);
    // A new connection starts at its share of the buffer target, T/n, at once.
    let t = net.proxy.as_ref().unwrap().cfg.target();
    net.run_until(t20 + Duration::from_secs(5), |n| n.events(EventKind::Window).iter().any(|e| e.flow == 1));
    let first = net.events(EventKind::Window).into_iter().find(|e| e.flow == 1).unwrap();
    assert_eq!(first.value, (t / 2.0) as i64);
    let a0 = net.eps[0].1.delivered();
    let t50 = t20 + Duration::from_secs(30);
    net.run_until(t50, |_| false);
    let got = [net.eps[0].1.delivered() - a0, net.eps[1].1.delivered()];
    let share = got[1] as f64 / (got[0] + got[1]) as f64;
    assert!((0.4..0.6).contains(&share), "second flow's share {share:.2} ({got:?})");
    net.run(600);
    net.assert_exact(&[(300_000, 0), (300_000, 0)]);
}

#[test]
fn the_interactive_class_goes_first() {
    let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
    net.conn(200_000, 0, 5001);
    net.run_until(Instant::ZERO + Duration::from_secs(15), |_| false);
    let t0 = net.now;
    net.conn(200, 0, 23);
    net.run_until(t0 + Duration::from_secs(60), |n| n.eps[1].1.delivered() == 200);
    let wait = (net.now - t0).as_secs_f64();
    // Handshake plus the reply: a few one-way trips, not the bulk flow's backlog.
    assert!(wait < 6.0, "interactive reply after {wait:.1} s");
    net.run(600);
    net.assert_exact(&[(200_000, 0), (200, 0)]);
}

#[test]
fn resets_cross_the_proxy_in_both_directions() {
    for from_server in [true, false] {
        let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
        net.conn(100_000, 0, 5001);
        net.run_until(Instant::ZERO + Duration::from_secs(8), |_| false);
        let (s, m) = &net.eps[0];
        let (from, ep, src, dst) = if from_server { (0, s, SERVER, MOBILE) } else { (1, m, MOBILE, SERVER) };
        let mut h = thinwire::wire::TcpRepr {
            src_port: ep.local_port(),
            dst_port: if from == 0 { 40000 } else { 5001 },
            flags: TcpFlags(TcpFlags::RST),
            ..Default::default()
        };
        h.seq = ep.iss().wrapping_add(1);
        let p = Packet::new(src, dst, 0, L4::Tcp(h), 0, 0, net.now);
        if from_server {
            net.eps[0].0.on_segment(net.now, &h, 0);
            net.from_server(p);
        } else {
            net.eps[0].1.on_segment(net.now, &h, 0);
            net.from_mobile(p);
        }
        net.run(60);
        assert!(
            net.eps[0].0.is_closed() && net.eps[0].1.is_closed(),
            "reset from {}: not closed",
            if from_server { "server" } else { "mobile" }
        );
        let p = net.proxy.as_ref().unwrap();
        assert!(p.aggregate(MOBILE.into()).unwrap().conns.is_empty());
    }
}

#[test]
fn a_capped_receive_window_closes_and_reopens_with_a_window_update() {
    // Hand-driven handshake between two endpoints, then data against a cap.
    let t = Instant::ZERO;
    let mut open = linux();
    open.rcv_wnd_initial = None; // the window is the cap alone
    let mut rx = Tcp::new(open, 40000, 80, 1000);
    let mut tx = Tcp::new(linux(), 80, 40000, 9000);
    tx.set_app_data(Some(50_000), true);
    tx.listen();
    rx.connect(t);
    let pump = |a: &mut Tcp, b: &mut Tcp| {
        let mut n = 0;
        while let Some(s) = a.poll_transmit(t) {
            b.on_segment(t, &s.repr, s.len);
            n += 1;
        }
        n
    };
    pump(&mut rx, &mut tx); // SYN
    pump(&mut tx, &mut rx); // SYN-ACK
    rx.set_window_cap(Some(0));
    pump(&mut rx, &mut tx); // ACK advertising a zero window
    assert_eq!(pump(&mut tx, &mut rx), 0, "the sender must hold at a zero window");
    let mut last = None;
    while let Some(s) = rx.poll_transmit(t) {
        last = Some(s);
    }
    assert!(last.is_none(), "no update while the window stays shut");
    rx.set_window_cap(Some(4000));
    let upd = rx.poll_transmit(t).expect("a window update when the window opens");
    assert_eq!((upd.len, upd.repr.window), (0, 4000));
    tx.on_segment(t, &upd.repr, 0);
    let mut sent = 0;
    while let Some(s) = tx.poll_transmit(t) {
        sent += s.len;
    }
    assert!(sent > 0 && sent <= 4000, "sent {sent} into a 4000-byte window");
    // A small opening (less than an MSS) does not trigger an update on its own.
    rx.set_window_cap(Some(4100));
    assert!(rx.poll_transmit(t).is_none());
    rx.set_window_cap(Some(4000 + 1460));
    assert!(rx.poll_transmit(t).is_some());
}

#[test]
fn the_clamp_can_be_estimated_from_the_minimum_rtt() {
    let cfg = ProxyConfig { estimate_clamp: true, clamp: Some(30_000), ..ProxyConfig::default() };
    let mut net = Net::new(Some(cfg), no_loss());
    net.conn(100_000, 0, 5001);
    net.run(200);
    net.assert_exact(&[(100_000, 0)]);
    let p = net.proxy.as_ref().unwrap();
    let min = net.events(EventKind::Rtt).iter().map(|e| e.value).min().unwrap() as f64 * 1e-9;
    let want = (1.3 * 4150.0 * min).round() as u64;
    assert_eq!(p.stats().clamp, want);
    // The harness's link: ~0.35 s to send a segment, 0.7 s down, 0.5 s up.
    assert!((1.5..2.2).contains(&min), "min RTT {min:.2} s");
    // Starting from a 30 KB guess, the window comes down to the estimate at once.
    let cw = net.events(EventKind::Cwnd);
    assert!(cw.first().is_some_and(|e| e.value as u64 == want || e.value < 30_000));
}

/// The aggregate's window is a congestion controller's (`proxy.cc`): the seeds'
/// `clamp` keeps the fixed window through a loss; Linux's Reno starts from ten
/// segments, grows while the window is the limit, and halves once at the loss
/// (one reduction for the episode); CUBIC grows and reduces by 0.7.
#[test]
fn the_aggregate_runs_any_congestion_controller() {
    for cc in [CcKind::Clamp, CcKind::Reno, CcKind::Cubic] {
        let loss: Loss = Box::new(|d, i, _| d == 0 && i == 60);
        let cfg = ProxyConfig { cc, ..ProxyConfig::default() };
        let clamp = cfg.clamp_bytes();
        let mut net = Net::new(Some(cfg), loss);
        net.conn(200_000, 0, 5001);
        let mut w = vec![];
        for k in 1..1000 {
            net.run_until(Instant::ZERO + Duration::from_millis(250 * k), |n| n.all_closed());
            w.push(net.proxy.as_ref().unwrap().stats().clamp);
            if net.all_closed() {
                break;
            }
        }
        net.assert_exact(&[(200_000, 0)]);
        let p = net.proxy.as_ref().unwrap();
        assert_eq!((p.stats.retransmits, p.stats.timeouts), (1, 0), "{cc:?}");
        let drops: Vec<(u64, u64)> = w.windows(2).filter(|x| x[1] < x[0]).map(|x| (x[0], x[1])).collect();
        if cc == CcKind::Clamp {
            assert!(w.iter().all(|&x| x == clamp), "{w:?}");
            continue;
        }
        assert_eq!(w[0], 10 * 1460, "{cc:?}: the initial window");
        assert!(w.iter().max() > Some(&(2 * w[0])), "{cc:?} grows: {w:?}");
        let [(before, after)] = drops[..] else { panic!("{cc:?}: one reduction, {drops:?}") };
        let beta = if cc == CcKind::Reno { 0.5 } else { 0.7 };
        assert!((after as f64 - beta * before as f64).abs() <= 1460.0, "{cc:?}: {before} -> {after}");
    }
}

/// A stall under a controller other than `clamp`: the first timeout takes the
/// controller's threshold and the window restarts from one segment when the
/// probe is answered (Linux `tcp_enter_loss`), then slow start regrows it; the
/// seeds' `clamp` returns to its full window at once.
#[test]
fn after_a_stall_a_controller_restarts_from_one_segment() {
    for (cc, restart) in [(CcKind::Clamp, None), (CcKind::Reno, Some(1460))] {
        let loss: Loss = Box::new(|_, _, t| {
            t >= Instant::ZERO + Duration::from_secs(10) && t < Instant::ZERO + Duration::from_secs(40)
        });
        let cfg = ProxyConfig { cc, ..ProxyConfig::default() };
        let clamp = cfg.clamp_bytes();
        let mut net = Net::new(Some(cfg), loss);
        net.conn(200_000, 0, 5001);
        net.run(600);
        net.assert_exact(&[(200_000, 0)]);
        let stall = net.events(EventKind::Stall);
        let back = stall.iter().find(|e| e.value == 0).expect("recovered").at;
        let cw = net.events(EventKind::Cwnd);
        let at_back = cw.iter().rfind(|e| e.at <= back).unwrap().value as u64;
        assert_eq!(at_back, restart.unwrap_or(clamp), "{cc:?}");
        let end = net.proxy.as_ref().unwrap().stats().clamp;
        assert!(end > at_back || restart.is_none(), "{cc:?}: slow start after the stall, {at_back} -> {end}");
    }
}

/// RFC 9293 §3.7.1 and Linux (`tcp_parse_options`, `tcp_min_snd_mss`): a SYN's
/// MSS option of 0 is ignored (536 B, the default), and any other is raised to
/// 48 B at least. An MSS of 0 once made the daemon loop on zero-length pieces,
/// frozen for every user (issue "… a proxy daemon that no mobile can stall").
#[test]
fn an_absurd_mss_from_a_mobile_is_sanitised() {
    for (mss, most) in [(0u16, 536u64), (1, 48), (47, 48), (200, 200)] {
        let mut net = Net::new(Some(ProxyConfig::default()), Box::new(|_, _, _| false));
        net.syn_mss = Some(mss);
        net.conn(20_000, 0, 5001);
        net.run(600);
        net.assert_exact(&[(20_000, 0)]);
        let biggest = net.mobile_got[0].iter().map(|&(a, b)| b - a).max().unwrap();
        assert_eq!(biggest, most, "MSS option {mss}");
    }
}

/// RFC 5961 §3.2: a RST from the mobile's side resets a proxied connection only
/// at exactly the next expected sequence number; elsewhere in the window it gets
/// a challenge ACK, outside it nothing (a blind RST once killed the connection:
/// the daemon reset the server's socket and the real mobile hung). Either way
/// the download goes on and completes.
#[test]
fn a_blind_rst_from_the_mobile_side_does_not_reset_the_connection() {
    for (offset, challenged) in [(1000u32, true), (3_000_000, false), (u32::MAX - 5, false)] {
        let mut net = Net::new(Some(ProxyConfig::default()), no_loss());
        net.conn(100_000, 0, 5001);
        net.run_until(Instant::ZERO + Duration::from_secs(8), |_| false);
        let m = &net.eps[0].1;
        let h = thinwire::wire::TcpRepr {
            src_port: m.local_port(),
            dst_port: 5001,
            flags: TcpFlags(TcpFlags::RST),
            seq: m.iss().wrapping_add(1).wrapping_add(offset),
            ..Default::default()
        };
        let p = Packet::new(MOBILE, SERVER, 0, L4::Tcp(h), 0, 0, net.now);
        net.from_mobile(p);
        net.run(600);
        net.assert_exact(&[(100_000, 0)]);
        let px = net.proxy.as_ref().unwrap();
        assert_eq!((px.challenge_acks, px.rsts_ignored), (challenged as u64, !challenged as u64), "offset {offset}");
    }
}

/// RFC 9293 §3.8.6.1: the mobile shuts its window, then opens it, but its
/// window update is lost on the uplink. Without probing the proxy waited for
/// ever (a real mobile stalled past its 90 s timeout); with the persist timer its
/// zero-window probes — backing off while the window stays shut — draw an ACK
/// carrying the open window, and the download completes.
#[test]
fn a_lost_window_update_is_recovered_by_zero_window_probes() {
    let t = |s: i64| Instant::ZERO + Duration::from_secs(s);
    // The uplink loses everything from 30 s to 45 s: the window update, and the
    // answers to the probes in between.
    let loss: Loss = Box::new(move |d, _, at| d == 1 && at >= t(30) && at < t(45));
    let mut net = Net::new(Some(ProxyConfig::default()), loss);
    net.conn(60_000, 0, 5001);
    net.run_until(t(4), |_| false);
    net.eps[0].1.set_window_cap(Some(0));
    net.run_until(t(30), |_| false);
    let got_shut = net.eps[0].1.delivered();
    assert!(got_shut < 60_000, "the window shut before the end: {got_shut}");
    let probes_while_shut = net.proxy.as_ref().unwrap().window_probes;
    net.eps[0].1.set_window_cap(None);
    net.run(600);
    net.assert_exact(&[(60_000, 0)]);
    let px = net.proxy.as_ref().unwrap();
    // Backing off: over 26 s of a shut window a handful of probes, not one per RTO.
    assert!((2..=6).contains(&probes_while_shut), "{probes_while_shut} probes while shut");
    assert!(px.window_probes > probes_while_shut, "a probe found the open window");
}

/// Issue: 100 concurrent 3 KB downloads over a 20 Mbit/s link with a
/// 50-packet drop-tail queue took minutes through the proxy daemon (without it,
/// 2.5 s): the burst overflows the queue, the tails of short connections are
/// lost, no later feedback raises their counters, and timeouts recovered one
/// segment each, backing off. Mobiles and servers are Linux 6.x (`linux`); the
/// proxy is configured for the link. It must deliver everything within twice
/// the time end-to-end TCP takes on the same link. (This harness has not
/// reproduced the daemon's minutes: 1.83 s against 1.40 s end to end, with or
/// without the RACK rule of acb.rs, whose own test shows the mechanism; the
/// guard stays.)
#[test]
fn a_burst_of_queue_drops_on_many_short_downloads_is_recovered_as_fast_as_end_to_end() {
    let time = |proxy: bool| {
        let cfg = ProxyConfig {
            link_rate: 2_500_000,
            link_rtt: Duration::from_millis(25),
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            ..ProxyConfig::default()
        };
        let mut net = Net::new(proxy.then_some(cfg), no_loss());
        (net.rate, net.delay, net.queue_limit) = ([2_500_000; 2], [Duration::from_millis(10); 2], Some(50));
        let linux6 = TcpConfig::profile("linux").unwrap();
        (net.mobile_cfg, net.server_cfg) = (linux6, linux6);
        for _ in 0..100 {
            net.conn(3000, 0, 80);
        }
        net.run_until(Instant::ZERO + Duration::from_secs(600), |n| n.eps.iter().all(|e| e.1.delivered() == 3000));
        let t = net.now.as_secs_f64();
        net.run(600);
        net.assert_exact(&[(3000, 0); 100]);
        (t, net.proxy.map_or(0, |p| p.stats.timeouts))
    };
    let ((direct, _), (proxied, timeouts)) = (time(false), time(true));
    assert!(proxied <= 2.0 * direct, "proxied {proxied:.2} s ({timeouts} timeouts), end to end {direct:.2} s");
}

/// Runs of consecutive scheduler picks of one connection, in pick order, over
/// the picks made from 10 s on (the wired legs' slow starts over, the proxy
/// holds data of every connection) until the first of `n` connections is done.
fn pick_runs(picks: &[thinwire::proxy::Event], n: usize) -> Vec<usize> {
    let flows = 0..n as i32;
    let started = picks.iter().position(|p| p.at >= Instant::ZERO + Duration::from_secs(10)).unwrap();
    let ending = flows.map(|f| picks.iter().rposition(|p| p.flow == f).unwrap()).min().unwrap();
    let mut runs = vec![];
    let mut cur = (picks[started].flow, 0);
    for p in &picks[started..ending] {
        if p.flow == cur.0 {
            cur.1 += 1;
        } else {
            runs.push(cur.1);
            cur = (p.flow, 1);
        }
    }
    runs
}

#[test]
fn a_burst_sends_a_picks_segments_in_a_row_and_the_shares_hold() {
    let shares = |burst: u32| {
        let cfg = ProxyConfig { burst, clamp: Some(60_000), ..ProxyConfig::default() };
        // From 5 s on (the handshakes done), four of five packets from the
        // mobile lost: each ACK that arrives opens the window by several
        // segments at once.
        let loss: Loss = Box::new(|d, i, t| d == 1 && t >= Instant::ZERO + Duration::from_secs(5) && i % 5 != 0);
        let mut net = Net::new(Some(cfg), loss);
        for _ in 0..3 {
            net.conn(150_000, 0, 5001);
        }
        net.run_until(Instant::ZERO + Duration::from_secs(40), |_| false);
        let got: Vec<u64> = net.eps.iter().map(|e| e.1.delivered()).collect();
        let runs = pick_runs(&net.events(EventKind::Pick), 3);
        net.run(600);
        net.assert_exact(&[(150_000, 0); 3]);
        (got, runs)
    };
    let mean = |r: &[usize]| r.iter().sum::<usize>() as f64 / r.len() as f64;
    let frac = |g: &[u64]| g.iter().map(|&x| x as f64 / g.iter().sum::<u64>() as f64).collect::<Vec<_>>();
    let (got4, runs) = shares(4);
    let fours = runs.iter().filter(|&&r| r == 4).count();
    assert!(mean(&runs) >= 2.5 && fours * 3 >= runs.len(), "{runs:?}");
    // One pick per segment, as before bursts: the connections alternate (but
    // while one alone has data).
    let (got1, runs) = shares(1);
    assert!(mean(&runs) < 1.3 && runs[1..].iter().all(|&r| r <= 2), "{runs:?}");
    // The stride scheduler charges every byte of a burst: the split of the
    // link between the connections is the one without bursts.
    for (a, b) in frac(&got4).iter().zip(frac(&got1)) {
        assert!((a - b).abs() < 0.03, "with bursts {got4:?}, without {got1:?}");
    }
}
