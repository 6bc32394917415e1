//! `thinwire proxy`: the split-TCP proxy of seeds 003/004 as a Linux daemon,
//! running `thinwire::proxy::Proxy` (the simulator's code) in stream mode.
//!
//! - The mobiles' packets reach a TUN device by policy routing (setup.rs). TCP
//!   connections the proxy may carry are terminated there by the proxy's wireless
//!   leg (thinwire's own TCP: one aggregate window, SACK scoreboard and timer per
//!   mobile host); everything else is written back into the TUN device and
//!   forwarded unchanged.
//! - Toward each server the daemon opens a kernel socket bound transparently to
//!   the mobile's address (sock.rs) when the mobile's SYN comes; the mobile gets
//!   the SYN-ACK only when the server has accepted, a RST when it refused or did
//!   not answer within `connect_timeout`.
//! - A socket is read only as far as the proxy's allowance for its connection
//!   permits (none during a wireless stall), so the kernel's receive window is the
//!   proxy's flow control toward the server.
//! - Limits (`[daemon]`, config/daemon.rs): beyond the connection or buffer
//!   limits, or while draining, new connections pass through unproxied; a SYN to
//!   loopback, an unspecified or multicast address, or this host's own addresses
//!   gets a RST.
//! - Signals: SIGTERM/SIGINT stop taking new connections (they pass through) and
//!   let open ones finish for `drain_timeout`, then reset what is left; SIGHUP
//!   re-reads the configuration file's `[daemon]` limits and timeouts; SIGUSR1
//!   logs a stats snapshot (also every `stats_interval`).
//! - Logs: JSON lines on standard output (`event` names what happened).
mod log;
pub mod record;
mod setup;
pub mod sock;

use crate::sys;
use log::Log;
use sock::Read;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use thinwire::config::daemon::{parse_daemon, DaemonCfg, DaemonFile, Prefix};
use thinwire::proxy::{Command, Proxy, Side};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{IpAddress, Meta, Packet, TcpFlags, L4};

pub struct Options {
    /// The configuration file (re-read on SIGHUP).
    pub config: PathBuf,
    /// `KEY=VALUE` overrides applied to it (e.g. `daemon.mobile_interface=eth1`).
    pub overrides: Vec<String>,
    /// Stop after this long (tests); None: until a signal.
    pub duration: Option<Duration>,
    /// Write capture.pcapng and trace.rows here (record.rs).
    pub out: Option<PathBuf>,
}

/// Why the daemon could not run: a usage problem (exit 2) or a failure.
pub use crate::EmuError;

const TOK_TUN: u64 = 1;
const TOK_SIGNAL: u64 = 2;
const TOK_WIRED: u64 = 3;
const TOK_SOCK: u64 = 1 << 32;

/// The driver's side of one proxied connection.
struct Sock {
    fd: OwnedFd,
    connecting: bool,
    registered: bool,
    /// The last write did not take everything: wait for EPOLLOUT.
    blocked: bool,
    shut: bool,
    fin_acked: bool,
    opened: Instant,
    active: Instant,
    /// When one direction finished while the other is open.
    half: Option<Instant>,
    /// The connection's 4-tuple (mobile address, port, server address, port).
    key: Key,
}

pub(crate) type Key = (IpAddress, u16, IpAddress, u16);

#[derive(Default)]
struct Counters {
    proxied: u64,
    passed_limit: u64,
    refused_destination: u64,
    server_refused: u64,
    resets_from_mobile: u64,
    resets_from_server: u64,
    timeouts: u64,
    bytes_down: u64,
    bytes_up: u64,
    packets_passed: u64,
    tun_drops: u64,
}

struct Daemon {
    cfg: DaemonCfg,
    prefixes: Vec<Prefix>,
    proxy: Proxy,
    tun: OwnedFd,
    poll: sys::Poll,
    socks: HashMap<usize, Sock>,
    /// Connections passed through unproxied (a limit was hit), by 4-tuple.
    bypass: HashMap<(IpAddress, u16, IpAddress, u16), Instant>,
    local: HashSet<IpAddr>,
    start_ns: i64,
    log: Log,
    n: Counters,
    draining: Option<Instant>,
    buf: Vec<u8>,
    rec: Option<record::Recording>,
    write_failed: bool,
    next_flush: Instant,
}

fn load(opts: &Options) -> Result<DaemonFile, String> {
    let text = std::fs::read_to_string(&opts.config).map_err(|e| format!("{}: {e}", opts.config.display()))?;
    parse_daemon(&text, &opts.overrides).map_err(|e| format!("{}: {e}", opts.config.display()))
}

/// Runs the daemon until a signal (or `duration`); Ok(()) on a clean stop.
pub fn run(opts: Options) -> Result<(), EmuError> {
    let file = load(&opts).map_err(EmuError::Usage)?;
    let missing = sys::missing_capabilities();
    if missing.contains(&"CAP_NET_ADMIN") {
        return Err(EmuError::Usage("thinwire proxy needs CAP_NET_ADMIN (run it as root)".into()));
    }
    let d = file.daemon.clone();
    let prefixes = d.mobile_prefixes.iter().filter_map(|p| Prefix::parse(p)).collect();
    // Signals are taken (blocked, read from a descriptor) before anything is
    // installed and until everything is removed: one clean-up path whatever
    // arrives when — during set-up it waits, during the drain a second one stops
    // at once, during the removal it waits again. (Before, the mask was
    // restored before the rules were removed, and a second SIGTERM then killed
    // the daemon with its rules and nftables table left behind.)
    let signals = sys::Signals::of(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1])
        .map_err(|e| EmuError::Failed(format!("cannot take signals: {e}")))?;
    let tun = sys::tun_open(&d.tun).map_err(|e| EmuError::Usage(format!("cannot create TUN device {}: {e}", d.tun)))?;
    let interception = if d.setup {
        Some(setup::Interception::install(&d).map_err(EmuError::Usage)?)
    } else {
        crate::netns::ip(&["link", "set", &d.tun, "up"]).map_err(EmuError::Usage)?;
        None
    };
    let poll = sys::Poll::new().map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
    poll.add(tun.as_raw_fd(), TOK_TUN).map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
    poll.add(signals.fd(), TOK_SIGNAL).map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
    let mut pcfg = thinwire::build::proxy_config_from(&file.proxy, None);
    pcfg.max_half_open = d.max_half_open_per_mobile;
    let rec = match &opts.out {
        Some(dir) => {
            let r = record::Recording::open(dir, &[&d.tun, &d.mobile_interface])
                .map_err(|e| EmuError::Usage(format!("--out {}: {e}", dir.display())))?;
            poll.add(r.wired_fd(), TOK_WIRED).map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
            Some(r)
        }
        None => None,
    };
    let mut dm = Daemon {
        cfg: d,
        prefixes,
        proxy: Proxy::with_streams(pcfg),
        tun,
        poll,
        socks: HashMap::new(),
        bypass: HashMap::new(),
        local: sock::local_addresses().into_iter().collect(),
        start_ns: sys::monotonic_ns(),
        log: Log::stdout(),
        n: Counters::default(),
        draining: None,
        buf: vec![0u8; 65536],
        rec,
        write_failed: false,
        next_flush: Instant::ZERO,
    };
    if let Some(dir) = &opts.out {
        dm.proxy.enable_trace();
        let f = std::fs::File::create(dir.join("daemon.log"))
            .map_err(|e| EmuError::Usage(format!("--out {}: {e}", dir.display())))?;
        dm.log.also_to(f);
    }
    dm.log.event(
        "started",
        &[
            ("tun", dm.cfg.tun.as_str().into()),
            ("mobile_interface", dm.cfg.mobile_interface.as_str().into()),
            ("clamp", dm.proxy.cfg.clamp_bytes().into()),
        ],
    );
    let end = opts.duration.map(|d| Instant::ZERO + d);
    let r = dm.run_loop(&opts, &signals, end);
    dm.abort_all();
    dm.record_flush();
    dm.stats("stopped");
    drop(dm);
    drop(interception);
    // Signals that came during the clean-up are spent: the daemon is stopping.
    signals.discard_pending();
    r
}

impl Daemon {
    fn now(&self) -> Instant {
        Instant(sys::monotonic_ns() - self.start_ns)
    }

    fn run_loop(&mut self, opts: &Options, signals: &sys::Signals, end: Option<Instant>) -> Result<(), EmuError> {
        let mut ready = Vec::with_capacity(64);
        let mut next_stats = self.stats_due(Instant::ZERO);
        let mut next_house = Instant::ZERO;
        loop {
            let now = self.now();
            let mut wake = now + Duration::from_secs(1);
            if self.socks.values().any(|s| s.shut && !s.fin_acked) {
                wake = wake.min(now + Duration::from_millis(20));
            }
            for t in [self.proxy.poll_timeout(), next_stats, end].into_iter().flatten() {
                wake = wake.min(t);
            }
            let ms = ((wake - now).nanos().max(0) + 999_999) / 1_000_000;
            self.poll.wait(&mut ready, ms.min(1000) as i32).map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
            let now = self.now();
            for &tok in &ready {
                match tok {
                    TOK_TUN => self.read_tun(now)?,
                    TOK_WIRED => {
                        if let Some(r) = &mut self.rec {
                            r.poll_wired(now);
                        }
                    }
                    TOK_SIGNAL => {
                        while let Some(s) = signals.take() {
                            self.signal(s, now, opts);
                        }
                    }
                    t if t >= TOK_SOCK => self.service(((t - TOK_SOCK) as usize, true), now),
                    _ => {}
                }
            }
            if self.proxy.poll_timeout().is_some_and(|t| t <= now) {
                self.proxy.handle_timeout(now);
            }
            if now >= next_house {
                self.housekeeping(now);
                next_house = now + Duration::from_millis(20);
            }
            self.settle(now)?;
            if next_stats.is_some_and(|t| t <= now) {
                self.stats("stats");
                next_stats = self.stats_due(now);
            }
            if end.is_some_and(|e| now >= e) {
                return Ok(());
            }
            if let Some(t) = self.draining {
                if self.socks.is_empty() || now >= t {
                    return Ok(());
                }
            }
        }
    }

    fn stats_due(&self, now: Instant) -> Option<Instant> {
        let i = self.cfg.stats_interval.0;
        (i > Duration::ZERO).then(|| now + i)
    }

    fn signal(&mut self, s: i32, now: Instant, opts: &Options) {
        match s {
            libc::SIGHUP => match load(opts) {
                Ok(f) => {
                    let tun_changed =
                        f.daemon.tun != self.cfg.tun || f.daemon.mobile_interface != self.cfg.mobile_interface;
                    let mut d = f.daemon;
                    if tun_changed {
                        self.log.event(
                            "reload_warning",
                            &[("message", "tun and mobile_interface need a restart; kept".into())],
                        );
                        d.tun = self.cfg.tun.clone();
                        d.mobile_interface = self.cfg.mobile_interface.clone();
                    }
                    self.prefixes = d.mobile_prefixes.iter().filter_map(|p| Prefix::parse(p)).collect();
                    self.cfg = d;
                    self.local = sock::local_addresses().into_iter().collect();
                    self.log.event(
                        "reloaded",
                        &[
                            ("max_connections", self.cfg.max_connections.into()),
                            ("max_connections_per_mobile", self.cfg.max_connections_per_mobile.into()),
                        ],
                    );
                }
                Err(e) => self.log.event("reload_failed", &[("error", e.as_str().into())]),
            },
            libc::SIGUSR1 => self.stats("stats"),
            _ => {
                if self.draining.is_none() {
                    self.draining = Some(now + self.cfg.drain_timeout.0);
                    self.log.event("draining", &[("connections", self.socks.len().into())]);
                } else {
                    // A second signal: stop now.
                    self.draining = Some(now);
                }
            }
        }
    }

    fn read_tun(&mut self, now: Instant) -> Result<(), EmuError> {
        for _ in 0..256 {
            let n = match sys::read_packet(&self.tun, &mut self.buf) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => return Err(EmuError::Failed(format!("reading {}: {e}", self.cfg.tun))),
            };
            let bytes = self.buf[..n].to_vec();
            let Ok(p) = Packet::from_bytes(bytes, Meta::new(0, now)) else { continue };
            let copy = self.rec.is_some().then(|| p.clone());
            self.from_mobile(p, now);
            if let (Some(r), Some(p)) = (&mut self.rec, copy) {
                r.wireless(now, &p, p.bytes.as_deref().map_or(&[][..], |b| &b[..]), true);
            }
            self.settle(now)?;
        }
        Ok(())
    }

    /// A packet from a mobile: proxied, refused, or passed on.
    fn from_mobile(&mut self, mut p: Packet, now: Instant) {
        let L4::Tcp(r) = p.l4 else { return self.pass(p) };
        let key = (p.ip.src(), r.src_port, p.ip.dst(), r.dst_port);
        if self.proxy.tracks((key.0, key.1), (key.2, key.3)) {
            if r.flags.has(TcpFlags::RST) {
                self.n.resets_from_mobile += 1;
            }
            return self.proxy.on_packet(now, Side::Wireless, p);
        }
        let syn = r.flags.has(TcpFlags::SYN) && !r.flags.has(TcpFlags::ACK);
        if let Some(t) = self.bypass.get_mut(&key) {
            *t = now;
            return self.pass(p);
        }
        if !syn {
            // Not a connection we carry (late packets of a finished one, or one
            // that began before the daemon): the proxy answers or passes it.
            return self.proxy.on_packet(now, Side::Wireless, p);
        }
        if !self.prefixes.is_empty() && !self.prefixes.iter().any(|x| x.contains(key.0.into())) {
            return self.pass(p);
        }
        if let Some(why) = self.forbidden(key.2) {
            self.n.refused_destination += 1;
            self.log.event(
                "refused",
                &[("mobile", ip(key.0).into()), ("destination", ip(key.2).into()), ("why", why.into())],
            );
            return self.proxy.refuse(now, &p);
        }
        let limit = if self.draining.is_some() {
            Some("draining")
        } else if self.proxy.live_connections() >= self.cfg.max_connections {
            Some("max_connections")
        } else if self.proxy.mobile_connections(key.0) >= self.cfg.max_connections_per_mobile
            && !self.proxy.evict_stale_half_open(key.0, now)
        {
            Some("max_connections_per_mobile")
        } else if self.proxy.buffered() >= self.cfg.max_buffer.0 {
            Some("max_buffer")
        } else {
            None
        };
        if let Some(l) = limit {
            self.n.passed_limit += 1;
            self.log
                .event("passed", &[("mobile", ip(key.0).into()), ("server", ip(key.2).into()), ("limit", l.into())]);
            self.bypass.insert(key, now);
            return self.pass(p);
        }
        if let Some(r) = &mut self.rec {
            p.meta.flow = r.new_flow(key);
        }
        self.proxy.on_packet(now, Side::Wireless, p);
    }

    fn forbidden(&self, dst: IpAddress) -> Option<&'static str> {
        forbidden(IpAddr::from(dst), &self.local)
    }

    fn pass(&mut self, p: Packet) {
        self.n.packets_passed += 1;
        self.write_tun(&p);
    }

    fn write_tun(&mut self, p: &Packet) {
        let bytes = p.emit();
        match sys::write_packet(&self.tun, &bytes) {
            Ok(true) => {}
            _ => self.n.tun_drops += 1,
        }
        if self.rec.is_some() {
            let now = self.now();
            if let Some(r) = &mut self.rec {
                r.wireless(now, p, &bytes, false);
            }
        }
    }

    /// Moves the proxy's decisions into the trace and writes the files out.
    fn record_flush(&mut self) {
        let Some(r) = &mut self.rec else { return };
        while let Some(e) = self.proxy.poll_event() {
            r.proxy_event(&e);
        }
        if let Err(e) = r.flush() {
            if !self.write_failed {
                self.write_failed = true;
                self.log.event("write_failed", &[("error", e.to_string().into())]);
            }
        }
    }

    /// Runs the proxy's commands and sends its packets until nothing is left.
    fn settle(&mut self, now: Instant) -> Result<(), EmuError> {
        loop {
            let mut any = false;
            while let Some(cmd) = self.proxy.poll_command() {
                any = true;
                match cmd {
                    Command::Connect { conn, mobile, server } => self.connect(conn, mobile, server, now),
                    Command::Wake(c) => self.service((c, false), now),
                    Command::Reset(c) => {
                        if let Some(s) = self.socks.remove(&c) {
                            self.poll.remove(s.fd.as_raw_fd());
                            sock::abort_on_close(&s.fd);
                            self.ended(s.key, now);
                        }
                    }
                    Command::Close(c) => {
                        if let Some(s) = self.socks.remove(&c) {
                            self.poll.remove(s.fd.as_raw_fd());
                            self.log.event("closed", &[("conn", c.into()), ("mobile", ip(s.key.0).into())]);
                            self.ended(s.key, now);
                        }
                    }
                }
            }
            while let Some((side, p)) = self.proxy.poll_transmit() {
                any = true;
                // In stream mode only packets the proxy does not carry go to the
                // wired side: passed on unchanged.
                if side == Side::Wired {
                    self.n.packets_passed += 1;
                }
                self.write_tun(&p);
            }
            if !any {
                return Ok(());
            }
        }
    }

    fn connect(&mut self, c: usize, mobile: (IpAddress, u16), server: (IpAddress, u16), now: Instant) {
        let local = SocketAddr::new(mobile.0.into(), mobile.1);
        let remote = SocketAddr::new(server.0.into(), server.1);
        match sock::connect_transparent(local, remote, self.cfg.server_rcvbuf.0 as usize) {
            Ok(fd) => {
                self.n.proxied += 1;
                self.log.event(
                    "connect",
                    &[("conn", c.into()), ("mobile", local.to_string().into()), ("server", remote.to_string().into())],
                );
                let s = Sock {
                    fd,
                    connecting: true,
                    registered: false,
                    blocked: false,
                    shut: false,
                    fin_acked: false,
                    opened: now,
                    active: now,
                    half: None,
                    key: (mobile.0, mobile.1, server.0, server.1),
                };
                self.socks.insert(c, s);
                self.interest(c);
            }
            Err(e) => {
                self.log.event(
                    "connect_failed",
                    &[("conn", c.into()), ("server", remote.to_string().into()), ("error", e.to_string().into())],
                );
                self.n.server_refused += 1;
                self.proxy.stream_refused(c, now);
            }
        }
    }

    /// Moves what can move on connection `c`'s socket: completes a connect,
    /// writes the mobile's data, reads the server's within the allowance.
    fn service(&mut self, (c, from_poll): (usize, bool), now: Instant) {
        let Some(s) = self.socks.get_mut(&c) else { return };
        if s.connecting {
            if !from_poll {
                return;
            }
            match sock::take_error(&s.fd) {
                None => {
                    s.connecting = false;
                    s.active = now;
                    self.proxy.stream_connected(c, now, sock::random_u32());
                }
                Some(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => return,
                Some(e) => {
                    self.log.event("server_refused", &[("conn", c.into()), ("error", e.to_string().into())]);
                    self.n.server_refused += 1;
                    self.drop_sock(c);
                    self.proxy.stream_refused(c, now);
                    return;
                }
            }
        }
        // Upload.
        loop {
            let data = self.proxy.stream_upload(c, 65536);
            if data.is_empty() {
                break;
            }
            let s = self.socks.get_mut(&c).expect("present");
            match sock::write(&s.fd, &data) {
                Ok(0) => {
                    s.blocked = true;
                    break;
                }
                Ok(n) => {
                    s.blocked = n < data.len();
                    s.active = now;
                    self.n.bytes_up += n as u64;
                    self.proxy.stream_written(c, now, n);
                    if n < data.len() {
                        break;
                    }
                }
                Err(_) => return self.server_reset(c, now),
            }
        }
        let st = self.proxy.stream(c).cloned();
        let s = self.socks.get_mut(&c).expect("present");
        if let Some(st) = &st {
            if st.wants_shutdown() && !s.shut {
                sock::shutdown_write(&s.fd);
                s.shut = true;
                self.proxy.stream_shut(c);
            }
        }
        // Download, within the allowance.
        loop {
            let room = self.proxy.read_allowance(c) as usize;
            if room == 0 {
                break;
            }
            let Some(s) = self.socks.get_mut(&c) else { return };
            let want = room.min(self.buf.len());
            match sock::read(&s.fd, &mut self.buf[..want]) {
                Read::Data(n) => {
                    s.active = now;
                    self.n.bytes_down += n as u64;
                    let chunk = self.buf[..n].to_vec();
                    self.proxy.stream_data(c, now, &chunk);
                }
                Read::Eof => {
                    self.proxy.stream_eof(c, now);
                    break;
                }
                Read::WouldBlock => break,
                Read::Reset => return self.server_reset(c, now),
            }
        }
        if self.socks.contains_key(&c) {
            self.interest(c);
        }
    }

    fn server_reset(&mut self, c: usize, now: Instant) {
        self.n.resets_from_server += 1;
        self.log.event("server_reset", &[("conn", c.into())]);
        self.drop_sock(c);
        self.proxy.stream_reset(c, now);
    }

    fn drop_sock(&mut self, c: usize) {
        if let Some(s) = self.socks.remove(&c) {
            self.poll.remove(s.fd.as_raw_fd());
            self.ended(s.key, self.now());
        }
    }

    /// A connection is over: its trace rows stop after the proxy's linger time.
    fn ended(&mut self, key: Key, now: Instant) {
        if let Some(r) = &mut self.rec {
            r.end_flow(key, now);
        }
    }

    fn interest(&mut self, c: usize) {
        let Some(s) = self.socks.get_mut(&c) else { return };
        let mut ev = 0u32;
        if s.connecting {
            ev |= libc::EPOLLOUT as u32;
        } else {
            if self.proxy.read_allowance(c) > 0 {
                ev |= libc::EPOLLIN as u32;
            }
            if s.blocked {
                ev |= libc::EPOLLOUT as u32;
            }
        }
        if self.poll.interest(s.fd.as_raw_fd(), TOK_SOCK + c as u64, ev, &mut s.registered).is_err() {
            s.registered = false;
        }
    }

    /// FIN acknowledgements, timeouts, the bypass list.
    fn housekeeping(&mut self, now: Instant) {
        let mut fin = vec![];
        let mut abort = vec![];
        for (&c, s) in &mut self.socks {
            if s.shut && !s.fin_acked && sock::fin_acknowledged(&s.fd) {
                s.fin_acked = true;
                fin.push(c);
            }
            let st = self.proxy.stream(c);
            let one_way = st.is_some_and(|st| st.eof != st.shut);
            if one_way && s.half.is_none() {
                s.half = Some(now);
            }
            let why = if s.connecting && now - s.opened >= self.cfg.connect_timeout.0 {
                Some("connect_timeout")
            } else if now - s.active >= self.cfg.idle_timeout.0 {
                Some("idle_timeout")
            } else if s.half.is_some_and(|h| now - h >= self.cfg.half_close_timeout.0) {
                Some("half_close_timeout")
            } else {
                None
            };
            if let Some(w) = why {
                abort.push((c, w));
            }
        }
        for c in fin {
            self.proxy.stream_fin_acked(c, now);
        }
        for (c, why) in abort {
            self.n.timeouts += 1;
            self.log.event("timeout", &[("conn", c.into()), ("why", why.into())]);
            if let Some(s) = self.socks.get(&c) {
                sock::abort_on_close(&s.fd);
            }
            self.drop_sock(c);
            self.proxy.abort(c, now);
        }
        let keep = Duration::from_secs(300);
        self.bypass.retain(|_, t| now - *t < keep);
        if let Some(r) = &mut self.rec {
            r.forget_ended(now);
        }
        if now >= self.next_flush {
            self.next_flush = now + Duration::from_secs(1);
            self.record_flush();
        }
    }

    /// Resets every connection still open (at the end of a drain).
    fn abort_all(&mut self) {
        let now = self.now();
        let open: Vec<usize> = self.socks.keys().copied().collect();
        for c in open {
            if let Some(s) = self.socks.get(&c) {
                sock::abort_on_close(&s.fd);
            }
            self.drop_sock(c);
            self.proxy.abort(c, now);
        }
        let _ = self.settle(now);
    }

    fn stats(&mut self, event: &str) {
        let st = self.proxy.stats();
        let mobiles: Vec<String> = self
            .proxy
            .mobile_snapshots()
            .iter()
            .map(|m| {
                log::object(&[
                    ("mobile", ip(m.mobile).into()),
                    ("window", m.window.into()),
                    ("queued", m.queued.into()),
                    ("in_flight", m.in_flight.into()),
                    ("srtt_ms", m.srtt.map(|d| d.as_secs_f64() * 1e3).into()),
                    ("connections", m.connections.into()),
                    ("stalled", m.stalled.into()),
                ])
            })
            .collect();
        let n = &self.n;
        self.log.event(
            event,
            &[
                ("open", self.socks.len().into()),
                ("proxied", n.proxied.into()),
                ("passed_limit", n.passed_limit.into()),
                ("refused_destination", n.refused_destination.into()),
                ("server_refused", n.server_refused.into()),
                ("resets_from_mobile", n.resets_from_mobile.into()),
                ("resets_from_server", n.resets_from_server.into()),
                ("timeouts", n.timeouts.into()),
                ("bytes_down", n.bytes_down.into()),
                ("bytes_up", n.bytes_up.into()),
                ("packets_passed", n.packets_passed.into()),
                ("tun_drops", n.tun_drops.into()),
                ("buffered", self.proxy.buffered().into()),
                ("segments_sent", st.segments_sent.into()),
                ("retransmits", st.retransmits.into()),
                ("aggregate_timeouts", st.timeouts.into()),
                ("stalls", st.stalls.into()),
                ("half_open_dropped", self.proxy.half_open_dropped.into()),
                ("challenge_acks", self.proxy.challenge_acks.into()),
                ("rsts_ignored", self.proxy.rsts_ignored.into()),
                ("window_probes", self.proxy.window_probes.into()),
                ("mobiles", log::Value::Raw(format!("[{}]", mobiles.join(",")))),
            ],
        );
    }
}

fn ip(a: IpAddress) -> String {
    IpAddr::from(a).to_string()
}

/// The IPv4 address an IPv6 one stands for, if any: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, RFC 4291 §2.5.5.1) and the
/// NAT64 well-known prefix (`64:ff9b::/96`, RFC 6052) all reach an IPv4 host.
fn embedded_v4(a: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = a.segments();
    let v4 = || std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(v4()),
        [0, 0, 0, 0, 0, 0, _, _] if s[6] != 0 => Some(v4()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(v4()),
        _ => None,
    }
}

/// Why the proxy must not connect to `a` for a mobile (None: it may): loopback,
/// not a unicast address, or one of `local` — in any of its spellings.
fn forbidden(a: IpAddr, local: &HashSet<IpAddr>) -> Option<&'static str> {
    let forms = match a {
        IpAddr::V6(v6) => [Some(a), embedded_v4(v6).map(IpAddr::V4)],
        IpAddr::V4(_) => [Some(a), None],
    };
    for a in forms.into_iter().flatten() {
        if a.is_loopback() {
            return Some("loopback");
        }
        if a.is_unspecified() || a.is_multicast() || a == IpAddr::from([255, 255, 255, 255]) {
            return Some("not a unicast address");
        }
        if local.contains(&a) {
            return Some("the proxy's own address");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_unspecified_and_own_addresses_are_refused_in_every_spelling() {
        let local: HashSet<IpAddr> = ["10.0.0.2".parse().unwrap()].into_iter().collect();
        let refused = |s: &str| forbidden(s.parse().unwrap(), &local);
        for a in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1"] {
            assert_eq!(refused(a), Some("loopback"), "{a}");
        }
        for a in ["0.0.0.0", "::", "::ffff:0.0.0.0", "224.0.0.1", "::ffff:224.0.0.1", "64:ff9b::e000:1"] {
            assert_eq!(refused(a), Some("not a unicast address"), "{a}");
        }
        for a in ["10.0.0.2", "::ffff:10.0.0.2", "64:ff9b::a00:2"] {
            assert_eq!(refused(a), Some("the proxy's own address"), "{a}");
        }
        for a in ["10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "64:ff9b::a00:1"] {
            assert_eq!(refused(a), None, "{a}");
        }
    }
}
