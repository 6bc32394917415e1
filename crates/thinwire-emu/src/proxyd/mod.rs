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
//! - Threads: the event loop above, and one that writes its packets into the TUN
//!   device in the loop's order (tunw.rs), where the receiving host's stack runs.
mod admit;
mod log;
pub mod record;
mod setup;
pub mod sock;
mod stats;
mod tunw;
use sock::Sock;
use stats::Counters;

use crate::sys;
use log::Log;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
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

pub(crate) type Key = (IpAddress, u16, IpAddress, u16);

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
    /// With offload (`[daemon] offload`, fixed at start): the segments cut from
    /// a read, and the merging of what is written (`gso.rs`).
    segments: Vec<Vec<u8>>,
    co: Option<crate::gso::Coalescer>,
    /// The writes to `tun`, on a thread of their own (tunw.rs).
    tw: tunw::TunWriter,
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
    let tun = sys::tun_open(&d.tun, d.offload)
        .map_err(|e| EmuError::Usage(format!("cannot create TUN device {}: {e}", d.tun)))?;
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
    pcfg.burst = file.proxy.burst.unwrap_or_else(|| auto_burst(pcfg.link_rate, pcfg.mss));
    let rec = match &opts.out {
        Some(dir) => {
            let r = record::Recording::open(dir, &[&d.tun, &d.mobile_interface])
                .map_err(|e| EmuError::Usage(format!("--out {}: {e}", dir.display())))?;
            poll.add(r.wired_fd(), TOK_WIRED).map_err(|e| EmuError::Failed(format!("epoll: {e}")))?;
            Some(r)
        }
        None => None,
    };
    let tw = tunw::TunWriter::new(&tun).map_err(|e| EmuError::Failed(format!("cannot start the TUN writer: {e}")))?;
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
        buf: vec![0u8; 1 << 17],
        segments: vec![],
        co: file.daemon.offload.then(crate::gso::Coalescer::default),
        tw,
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
    dm.flush_tun();
    dm.tw.finish();
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
            // What this wake-up wrote goes to the writer before the daemon waits.
            self.tw.flush();
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
            let mut segments = std::mem::take(&mut self.segments);
            if crate::gso::packets_of(&self.buf[..n], self.co.is_some(), &mut segments).is_err() {
                segments.clear();
            }
            for bytes in segments.drain(..) {
                let Ok(p) = Packet::from_bytes(bytes, Meta::new(0, now)) else { continue };
                let copy = self.rec.is_some().then(|| p.clone());
                self.from_mobile(p, now);
                if let (Some(r), Some(p)) = (&mut self.rec, copy) {
                    r.wireless(now, &p, p.bytes.as_deref().map_or(&[][..], |b| &b[..]), true);
                }
                self.settle(now)?;
            }
            self.segments = segments;
        }
        Ok(())
    }

    fn pass(&mut self, p: Packet) {
        self.n.packets_passed += 1;
        self.write_tun(&p);
    }

    fn write_tun(&mut self, p: &Packet) {
        let bytes = p.emit();
        let tw = &mut self.tw;
        match &mut self.co {
            Some(co) => co.push(&bytes, &mut |b, k| tw.write(b, k)),
            None => tw.write(&bytes, 1),
        }
        if self.rec.is_some() {
            let now = self.now();
            if let Some(r) = &mut self.rec {
                r.wireless(now, p, &bytes, false);
            }
        }
    }

    /// Queues the run of segments being merged (with offload) for the writer.
    fn end_merged_run(&mut self) {
        let tw = &mut self.tw;
        if let Some(co) = &mut self.co {
            co.flush(&mut |b, k| tw.write(b, k));
        }
    }

    /// Hands everything written so far (a merged run included) to the writer.
    fn flush_tun(&mut self) {
        self.end_merged_run();
        self.tw.flush();
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
                // A merged run ends with the commands that made it.
                self.end_merged_run();
                return Ok(());
            }
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
}

/// The daemon's default `[proxy] burst`: the segments of about 1 ms at the
/// link rate, at least 1 and at most a 64 KB super-packet's — Linux's TSO
/// autosizing (`tcp_tso_autosize`: the pacing rate >> `sk_pacing_shift` 10,
/// capped by the GSO maximum; and at most 64, as `[proxy] burst`). With many
/// connections one segment per pick interleaves them segment by segment, so
/// the coalescer (gso.rs), which merges consecutive segments of a flow, merges
/// nothing, and every segment costs a TUN write and its own pass through the
/// mobile's stack: 100 connections over a 10 Gbit/s configuration carried 0.52
/// Gbit/s at 1, about 1.3–1.5 at 16 and 1.5–1.7 at 44 (bench/RESULTS.md,
/// 2026-11-28, fifth session). A slow link (the seeds' GPRS: 4 KB/s) keeps 1,
/// one segment per pick as in the model.
fn auto_burst(link_rate: u64, mss: u32) -> u32 {
    let mss = mss.max(1) as u64;
    (link_rate / 1000 / mss).clamp(1, (65_535 / mss).min(64)) as u32
}

fn ip(a: IpAddress) -> String {
    IpAddr::from(a).to_string()
}

#[cfg(test)]
mod tests {
    use super::auto_burst;

    /// About 1 ms of segments at the link rate, within [1, 64 KB].
    #[test]
    fn the_default_burst_follows_the_link_rate() {
        assert_eq!(auto_burst(4150, 1460), 1, "the seeds' GPRS");
        assert_eq!(auto_burst(12_500_000, 1460), 8, "100 Mbit/s: 12.5 KB per ms");
        assert_eq!(auto_burst(1_250_000_000, 1460), 44, "10 Gbit/s: capped at 64 KB");
        assert_eq!(auto_burst(1_250_000_000, 536), 64, "at most 64");
    }
}
