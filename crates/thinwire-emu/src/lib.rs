//! `thinwire emulate`: real Linux TCP and real applications over thinwire's link
//! models, in real time. Two network namespaces (mobile host, server) each hold a
//! TUN device whose other end is this process; every packet read from one is fed,
//! stamped with the monotonic time it was read, to the scenario's path
//! ([`RealtimePath`]: wireless link with its ARQ, channel and queues, then the
//! wired link), and what the path gives back is written to the other device when
//! it is due.
//!
//! Time: one thread waits in `epoll` on both devices, an absolute `timerfd` armed at
//! the path's next deadline, a `signalfd` and the mobile command's `pidfd`; on every
//! wake-up all due events run at their scheduled times (catch-up) and outputs are
//! written at once — with segmentation offload (`gso.rs`, the default) TCP
//! super-packets read are cut into segments first, and the segments of one flow
//! due at one wake-up are written as one (`writer.rs`). Each output's lateness
//! (write time − due time) is recorded (in a
//! fixed-size histogram, `latency.rs`); the timer slack is set to 1 ns. Randomness comes from the scenario's seed only, so a
//! run's decisions depend on nothing but the packets and their arrival times:
//! `schedule.log` records them and `replay` reproduces them exactly from
//! `inputs.pcapng`.
//!
//! Sources: seed 000 §4 (measurement platform, trace-based methodology, "trace
//! replay in simulators" in §6); Mahimahi (Netravali et al., USENIX ATC 2015) and
//! Rattan for the shape (namespaces, TUN, one event loop).
pub mod fabric;
pub mod gso;
pub mod latency;
pub mod logs;
pub mod netns;
pub mod proxyd;
pub mod sys;
pub mod tap;
mod writer;

use fabric::{Cell, Fabric, From};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command};
use thinwire::config::Scenario;
use thinwire::time::{Duration, Instant};

/// What to emulate.
pub struct Options {
    pub scenario: Scenario,
    /// Run in each mobile host's namespace; the emulation ends when they have all
    /// exited. None: an interactive shell (one mobile only).
    pub mobile: Option<String>,
    /// How many mobile hosts (1 to `netns::MAX_MOBILES`), each in its own
    /// namespace.
    pub mobiles: usize,
    /// How they meet the wireless link (`fabric.rs`).
    pub cell: Cell,
    /// UDP takes the link's bypass session (no ARQ), as the simulator's media.
    pub udp_bypass: bool,
    /// Run in the server's namespace for the whole emulation.
    pub server: Option<String>,
    /// Put a gateway namespace between the wireless link and the server (joined
    /// to it by a veth pair, which replaces the scenario's wired link) and run
    /// this command there for the whole emulation ("" for none): e.g. a proxy.
    pub gateway: Option<String>,
    /// End after this long even if the mobile command is still running.
    pub duration: Option<Duration>,
    /// Where to write captures, logs and trace rows (None: nowhere).
    pub out: Option<PathBuf>,
    /// Outputs later than this are counted as late.
    pub late_after: Duration,
    /// Send the commands' standard output to our standard error (when ours carries
    /// a report, e.g. JSON).
    pub commands_to_stderr: bool,
    /// Start the mobile command only once something listens on this TCP port in
    /// the server's namespace (the server command is up), waiting at most
    /// SERVER_READY_WAIT.
    pub server_ready: Option<u16>,
    /// Segmentation offload on the TUN devices (`gso.rs`): hosts hand over TCP
    /// super-packets, cut into segments before the path sees them, and segments
    /// of one flow due at one wake-up are written as one. Off: a packet per
    /// system call both ways (hosts segment in software; every segment reaches
    /// the receiving host's stack on its own).
    pub offload: bool,
}

/// How long `server_ready` waits for the server to listen.
pub const SERVER_READY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why an emulation could not run: `Usage` errors are the user's to fix (exit 2).
#[derive(Debug)]
pub enum EmuError {
    Usage(String),
    Failed(String),
}

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            EmuError::Usage(m) | EmuError::Failed(m) => f.write_str(m),
        }
    }
}

/// Lateness of the packets written, ns.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    pub count: u64,
    pub p50_ns: i64,
    pub p99_ns: i64,
    pub max_ns: i64,
    /// Outputs later than `late_after`.
    pub late: u64,
    /// How long packets waited in the TUN devices' queues before they were read
    /// (`tap.rs`): packets measured, p50, p99, max (ns). None: no tap could be
    /// opened.
    pub read_wait: Option<(u64, i64, i64, i64)>,
}

/// What an emulation did.
pub struct Report {
    pub duration_s: f64,
    /// Unix time (real-time clock) at the emulation's time zero, so samples a host
    /// stamps with Unix time (`date +%s.%N` before `ss -tin`) can be put on the
    /// emulation's time axis.
    pub start_unix_s: f64,
    /// Why it ended: "command exited", "duration", "signal N".
    pub ended: String,
    /// The mobile commands' exit status: the first that is not 0, else 0; 128 + N
    /// if signal N killed it (None: one was still running at the end, and stopped).
    pub mobile_status: Option<i32>,
    /// Each mobile command's status, likewise.
    pub mobile_statuses: Vec<Option<i32>>,
    /// The server command's exit status, likewise (None: none, or still running).
    pub server_status: Option<i32>,
    pub lateness: Lateness,
    /// Counters of all paths together.
    pub path: thinwire::realtime::PathStats,
    /// Per path (one per mobile with separate links, else one): the wireless
    /// link's counters per direction (0 = down).
    pub link: Vec<[thinwire::link::wireless::LinkStats; 2]>,
    /// Packets no mobile was addressed by (`fabric.rs`).
    pub unroutable: u64,
    /// Per path, each flow's mobile by flow number (`Fabric::flow_mobiles`).
    pub flow_mobiles: Vec<Vec<Option<usize>>>,
    /// Per path, one row per TCP conversation (with `out`: accumulated as the
    /// segments passed, `thinwire::trace::conn_table`).
    pub conns: Vec<Vec<thinwire::trace::conn_table::ConnRow>>,
    /// Packets a TUN device would not take (its queue full).
    pub write_drops: u64,
    /// Offload (`gso.rs`): super-packets read and the segments cut from them;
    /// super-packets written and the segments merged into them.
    pub gso_reads: u64,
    pub gso_segments: u64,
    pub gro_writes: u64,
    pub gro_segments: u64,
    /// Packets the mobiles (all together) and the server (or gateway) sent that
    /// their TUN device's kernel queue dropped before the emulator read them.
    pub tun_queue_drops: [u64; 2],
    /// Bytes read that held no IP packet.
    pub unparsable: u64,
    /// How long the gateway command took to finish after the emulation's end (the
    /// link kept running meanwhile; `duration_s` includes it). None: no gateway
    /// command, or it had exited.
    pub gateway_wind_down_s: Option<f64>,
    pub trace: thinwire::trace::TraceTable,
}

fn spawn(host: &netns::Host, cmd: &str, own_group: bool, to_stderr: bool) -> Result<Child, EmuError> {
    use std::os::fd::AsFd;
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &host.ns, "sh", "-c", cmd]);
    c.envs(host.env());
    if to_stderr {
        let err = std::io::stderr().as_fd().try_clone_to_owned();
        c.stdout(err.map_err(|e| EmuError::Failed(format!("cannot duplicate stderr: {e}")))?);
    }
    if own_group {
        c.process_group(0);
    }
    // Every signal with its default disposition and none blocked, as from a
    // login shell: Python (the CLI) ignores SIGPIPE and SIGXFSZ, and ignored
    // signals survive exec, so a command's processes would not die of them.
    // SAFETY: only sigaction and sigprocmask, async-signal-safe, between fork
    // and exec.
    unsafe {
        c.pre_exec(|| {
            // (32 and 33 are the C library's own, which it will not let go.)
            for sig in (1..32).chain(libc::SIGRTMIN()..=libc::SIGRTMAX()) {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
    c.spawn().map_err(|e| EmuError::Failed(format!("cannot start {cmd:?}: {e}")))
}

/// An exit status as a shell reports it: the code, or 128 + the signal that killed it.
fn shell_status(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Waits until a socket listens on TCP `port` in the server command's network
/// namespace (its /proc/PID/net/tcp and tcp6, state 0A), for SERVER_READY_WAIT at
/// most; a usage error if the server command exits first or never listens.
fn wait_listening(server: Option<&mut Child>, port: u16) -> Result<(), EmuError> {
    let Some(server) = server else {
        return Err(EmuError::Usage(format!("--server-ready {port}: there is no --server command to wait for")));
    };
    let pid = server.id();
    let want = format!(":{port:04X} ");
    let listening = || {
        ["tcp", "tcp6"].iter().any(|f| {
            std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).is_ok_and(|t| {
                t.lines().skip(1).any(|l| {
                    let mut cols = l.split_whitespace();
                    let local = cols.nth(1).unwrap_or("");
                    let state = cols.nth(1).unwrap_or("");
                    state == "0A" && format!("{local} ").ends_with(&want)
                })
            })
        })
    };
    let start = std::time::Instant::now();
    loop {
        if listening() {
            return Ok(());
        }
        if let Ok(Some(st)) = server.try_wait() {
            return Err(EmuError::Usage(format!(
                "--server-ready {port}: the server command exited (status {}) before anything listened on port {port}",
                shell_status(st)
            )));
        }
        if start.elapsed() >= SERVER_READY_WAIT {
            return Err(EmuError::Usage(format!(
                "--server-ready {port}: nothing listened on TCP port {port} in the server's namespace within {} s",
                SERVER_READY_WAIT.as_secs()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Ends a command: SIGTERM to its process group, SIGKILL after a second.
fn stop(child: &mut Child, group: bool) {
    stop_within(child, group, 100);
}

/// Like `stop`, waiting up to `ticks` × 10 ms after SIGTERM before SIGKILL.
fn stop_within(child: &mut Child, group: bool, ticks: u32) {
    let pid = child.id();
    let group_alive = || group && sys::group_alive(pid);
    // A command that has exited may have left processes in its group (a job it
    // put in the background): they get the SIGTERM too, not only the final
    // SIGKILL of the namespace's removal.
    if child.try_wait().ok().flatten().is_some() && !group_alive() {
        return;
    }
    let signal = |s| {
        if group {
            sys::kill_group(pid, s)
        } else {
            // SAFETY: signals one process of ours.
            unsafe { libc::kill(pid as i32, s) };
        }
    };
    signal(libc::SIGTERM);
    // With `group`, wait for the whole group: a shell that dies at once may leave
    // its children (a daemon draining, a script's trap) finishing their work.
    for _ in 0..ticks {
        if child.try_wait().ok().flatten().is_some() && !group_alive() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    signal(libc::SIGKILL);
    let _ = child.wait();
}

const TOK_SERVER: u64 = 1;
const TOK_TIMER: u64 = 2;
const TOK_SIGNAL: u64 = 3;
const TOK_SERVER_EXIT: u64 = 5;
const TOK_GATEWAY_EXIT: u64 = 6;
/// Mobile k's TUN device: TOK_MOBILE + k; its command's exit: TOK_EXIT + k.
const TOK_MOBILE: u64 = 1 << 20;
const TOK_EXIT: u64 = 2 << 20;

/// How long a gateway command (a proxy daemon) may take to finish after the
/// emulation's end, with the link still running: its connections close over the
/// link (the FIN exchange with the mobile's kernel), and it writes its outputs.
const GATEWAY_WIND_DOWN: Duration = Duration::from_secs(10);

/// Runs an emulation to its end; everything it created is gone when it returns.
pub fn emulate(opts: Options) -> Result<Report, EmuError> {
    if !(1..=netns::MAX_MOBILES).contains(&opts.mobiles) {
        return Err(EmuError::Usage(format!(
            "--mobiles {}: from 1 to {} mobile hosts",
            opts.mobiles,
            netns::MAX_MOBILES
        )));
    }
    if let Some(why) = fabric::cell_refusal(&opts.scenario, opts.mobiles, opts.cell) {
        return Err(EmuError::Usage(why));
    }
    if opts.mobiles > 1 && opts.mobile.is_none() {
        return Err(EmuError::Usage(format!(
            "--mobiles {}: give the mobiles a command (--mobile CMD, run on each with $THINWIRE_MOBILE = 0, 1, …); an interactive shell opens with one mobile only",
            opts.mobiles
        )));
    }
    if opts.scenario.proxy.is_some() {
        return Err(EmuError::Usage(
            "[proxy]: the emulator runs the scenario's links only; remove the [proxy] section".into(),
        ));
    }
    let missing = sys::missing_capabilities();
    if !missing.is_empty() {
        return Err(EmuError::Usage(format!(
            "emulate needs root: {} missing (network namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN); run it with sudo",
            missing.join(" and ")
        )));
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Err(EmuError::Usage("emulate needs iproute2's ip command (apt-get install iproute2)".into()));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(EmuError::Usage("emulate needs /dev/net/tun (the tun kernel module)".into()));
    }
    netns::remove_stale();
    static INSTANCE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10;
    let signals = sys::Signals::new().map_err(|e| EmuError::Failed(format!("cannot take signals: {e}")))?;
    let hosts =
        netns::Hosts::create(k, opts.gateway.is_some(), opts.mobiles, opts.offload).map_err(EmuError::Failed)?;
    let paths = if opts.cell == Cell::Shared { 1 } else { opts.mobiles };
    // A tap per device the hosts send into (`tap.rs`; none if it cannot be had),
    // before any command runs, so that every packet a host sends has its copy.
    let mut taps: Vec<Option<tap::Tap>> = hosts
        .mobiles
        .iter()
        .chain(std::iter::once(hosts.far_end()))
        .map(|h| tap::Tap::open(&h.ns, &h.dev).ok())
        .collect();
    let mut logs = match &opts.out {
        Some(d) => Some(
            logs::Logs::create(d, opts.gateway.is_some(), opts.mobiles, paths)
                .map_err(|e| EmuError::Usage(format!("--out {}: {e}", d.display())))?,
        ),
        None => None,
    };
    let mut server = match &opts.server {
        Some(c) => Some(spawn(&hosts.server, c, true, opts.commands_to_stderr)?),
        None => None,
    };
    let mut gateway = match (&opts.gateway, &hosts.gateway) {
        (Some(c), Some(g)) if !c.trim().is_empty() => match spawn(g, c, true, opts.commands_to_stderr) {
            Ok(c) => Some(c),
            Err(e) => {
                if let Some(s) = server.as_mut() {
                    stop(s, true);
                }
                return Err(e);
            }
        },
        _ => None,
    };
    if let Some(port) = opts.server_ready {
        if let Err(e) = wait_listening(server.as_mut(), port) {
            for c in [server.as_mut(), gateway.as_mut()].into_iter().flatten() {
                stop(c, true);
            }
            return Err(e);
        }
    }
    let interactive = opts.mobile.is_none();
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let mobile_cmd = opts.mobile.clone().unwrap_or_else(|| format!("exec {shell}"));
    let mut mobiles: Vec<Child> = Vec::with_capacity(opts.mobiles);
    for h in &hosts.mobiles {
        match spawn(h, &mobile_cmd, !interactive, opts.commands_to_stderr) {
            Ok(c) => mobiles.push(c),
            Err(e) => {
                for c in mobiles.iter_mut().chain([server.as_mut(), gateway.as_mut()].into_iter().flatten()) {
                    stop(c, true);
                }
                return Err(e);
            }
        }
    }
    let cmds = Commands { mobiles: &mut mobiles, server: server.as_mut(), gateway: gateway.as_mut() };
    let result = run_loop(&opts, &hosts, &signals, cmds, interactive, logs.as_mut(), &mut taps);
    // Statuses of commands that ended by themselves (not those we stop now).
    let exited = |c: &mut Child| c.try_wait().ok().flatten().map(shell_status);
    let mobile_statuses: Vec<Option<i32>> = mobiles.iter_mut().map(exited).collect();
    let mobile_status = mobile_statuses
        .iter()
        .copied()
        .collect::<Option<Vec<i32>>>()
        .map(|all| all.iter().copied().find(|&s| s != 0).unwrap_or(0));
    let server_status = server.as_mut().and_then(exited);
    for m in &mut mobiles {
        stop(m, !interactive);
    }
    if let Some(s) = server.as_mut() {
        stop(s, true);
    }
    // The gateway command had its wind-down with the link running (`run_loop`);
    // what is left of its group gets 1 s more.
    if let Some(g) = gateway.as_mut() {
        stop_within(g, true, 100);
    }
    let tun_queue_drops = [
        hosts.mobiles.iter().map(|h| netns::tun_queue_drops(h).unwrap_or(0)).sum(),
        netns::tun_queue_drops(hosts.far_end()).unwrap_or(0),
    ];
    drop(hosts);
    let mut report = result?;
    report.tun_queue_drops = tun_queue_drops;
    report.mobile_status = mobile_status;
    report.mobile_statuses = mobile_statuses;
    report.server_status = server_status;
    if let Some(l) = logs {
        l.finish().map_err(|e| EmuError::Failed(format!("writing the logs: {e}")))?;
    }
    Ok(report)
}

/// The commands an emulation runs, for its loop.
struct Commands<'a> {
    mobiles: &'a mut [Child],
    server: Option<&'a mut Child>,
    gateway: Option<&'a mut Child>,
}

fn run_loop(
    opts: &Options,
    hosts: &netns::Hosts,
    signals: &sys::Signals,
    cmds: Commands<'_>,
    interactive: bool,
    mut logs: Option<&mut logs::Logs>,
    taps: &mut [Option<tap::Tap>],
) -> Result<Report, EmuError> {
    let Commands { mobiles, mut server, mut gateway } = cmds;
    let fail = |what: &str, e: std::io::Error| EmuError::Failed(format!("{what}: {e}"));
    let tuns_m: Vec<&OwnedFd> = hosts.mobiles.iter().map(|h| h.tun.as_ref().expect("mobile TUN")).collect();
    let tun_s: &OwnedFd = hosts.far_end().tun.as_ref().expect("server or gateway TUN");
    let mut fabric = Fabric::new(
        &opts.scenario,
        opts.mobiles,
        opts.cell,
        opts.out.is_some(),
        hosts.gateway.is_some(),
        opts.udp_bypass,
    )
    .map_err(EmuError::Usage)?;
    if let (Some(_), Some(dir)) = (&logs, &opts.out) {
        let one = fabric.paths().len() == 1;
        for (k, path) in fabric.paths_mut().iter_mut().enumerate() {
            let pdir = if one { dir.clone() } else { logs::mobile_dir(dir, k) };
            path.record_decisions();
            path.record_taps();
            let file = |n: &str| -> Result<Box<dyn std::io::Write + Send>, EmuError> {
                let f = std::fs::File::create(pdir.join(n)).map_err(|e| fail(n, e))?;
                Ok(Box::new(std::io::BufWriter::new(f)))
            };
            let mm = thinwire::build::mm_logs(
                &opts.scenario,
                [file("mm-down.log")?, file("mm-up.log")?],
                "thinwire emulate",
            )
            .map_err(|e| fail("mm-down.log", e))?;
            path.set_mm_logs(mm);
            // The trace goes to disk as it is recorded (bounded memory).
            path.stream_trace(&pdir).map_err(|e| fail("trace.parquet", e))?;
        }
    }
    let timer = sys::Timer::new().map_err(|e| fail("timerfd", e))?;
    let poll = sys::Poll::new().map_err(|e| fail("epoll", e))?;
    let exit_fds = mobiles
        .iter()
        .map(|m| sys::pidfd_open(m.id()).map_err(|e| fail("pidfd_open", e)))
        .collect::<Result<Vec<_>, _>>()?;
    for (k, (tun, exit)) in tuns_m.iter().zip(&exit_fds).enumerate() {
        poll.add(tun.as_raw_fd(), TOK_MOBILE + k as u64).map_err(|e| fail("epoll", e))?;
        poll.add(exit.as_raw_fd(), TOK_EXIT + k as u64).map_err(|e| fail("epoll", e))?;
    }
    let mut running = mobiles.len();
    poll.add(tun_s.as_raw_fd(), TOK_SERVER).map_err(|e| fail("epoll", e))?;
    poll.add(timer.fd(), TOK_TIMER).map_err(|e| fail("epoll", e))?;
    poll.add(signals.fd(), TOK_SIGNAL).map_err(|e| fail("epoll", e))?;
    let server_exit = match server.as_deref() {
        Some(c) => Some(sys::pidfd_open(c.id()).map_err(|e| fail("pidfd_open", e))?),
        None => None,
    };
    if let Some(fd) = &server_exit {
        poll.add(fd.as_raw_fd(), TOK_SERVER_EXIT).map_err(|e| fail("epoll", e))?;
    }
    // A gateway command still running at the end gets SIGTERM and its wind-down
    // with the link still running (GATEWAY_WIND_DOWN); the emulation ends when it
    // exits. (Before, the link stopped first: a proxy's last connections could not
    // close, and it was killed before it wrote its outputs.)
    let gateway_pid = gateway.as_deref_mut().and_then(|g| g.try_wait().ok().flatten().is_none().then(|| g.id()));
    let gateway_exit = match gateway_pid {
        Some(pid) => Some(sys::pidfd_open(pid).map_err(|e| fail("pidfd_open", e))?),
        None => None,
    };
    // (why the emulation ended, when, when the wind-down gives up)
    let mut winding: Option<(String, Instant, Instant)> = None;
    let mut winding_started: Option<Instant> = None;
    let mut gateway_leader_gone = false;
    sys::set_timer_slack(1);
    let start = sys::monotonic_ns();
    let start_unix_s = sys::realtime_ns() as f64 / 1e9;
    let now = || Instant(sys::monotonic_ns() - start);
    let end_at = opts.duration.map(|d| Instant::ZERO + d);
    let mut lateness = latency::Histogram::new(opts.late_after.nanos());
    let mut read_wait = latency::Histogram::new(opts.late_after.nanos());
    let tapped = taps.iter().all(Option::is_some);
    let mut unparsable = 0u64;
    // A read holds one packet, or with offload a header and a super-packet of up
    // to 64 KB.
    let mut buf = vec![0u8; 1 << 17];
    let mut segments: Vec<Vec<u8>> = Vec::with_capacity(64);
    let (mut gso_reads, mut gso_segments) = (0u64, 0u64);
    let mut ready = Vec::new();
    let mut writer = writer::Writer::new(&tuns_m, std::slice::from_ref(&tun_s), opts.offload, start);
    // Writes every output due by now (merged where offload allows), in order.
    let drain = |fabric: &mut Fabric,
                 writer: &mut writer::Writer,
                 logs: &mut Option<&mut logs::Logs>,
                 lateness: &mut latency::Histogram| {
        while let Some((to, o)) = fabric.poll_output() {
            writer.push(to, &o, lateness, |bytes| {
                if let Some(l) = logs.as_deref_mut() {
                    l.output(o.at, to, bytes);
                }
            });
        }
        writer.flush(lateness);
    };
    let log_path = |fabric: &mut Fabric, logs: &mut Option<&mut logs::Logs>| {
        if let Some(l) = logs.as_deref_mut() {
            for p in fabric.paths_mut() {
                l.gateway(p.take_taps().into_iter().map(|(t, down, p)| (t, down, p.emit())).collect());
            }
            l.decisions(fabric.take_decisions());
        }
    };
    let ended = loop {
        let t = now();
        fabric.advance(t);
        drain(&mut fabric, &mut writer, &mut logs, &mut lateness);
        log_path(&mut fabric, &mut logs);
        let mut stop_now = None;
        if winding.is_none() && end_at.is_some_and(|e| t >= e) {
            stop_now = Some("duration".to_string());
        }
        if let Some((why, _, until)) = &winding {
            if t >= *until || (gateway_leader_gone && !gateway_pid.is_some_and(sys::group_alive)) {
                break why.clone();
            }
        }
        let mut end = winding.as_ref().map(|w| w.2).or(if stop_now.is_none() { end_at } else { Some(t) });
        if winding.is_some() && gateway_leader_gone {
            // Looked at again in 10 ms.
            end = end.map(|e| e.min(t + Duration::from_millis(10)));
        }
        let deadline = thinwire::time::earliest(fabric.next_deadline(), end);
        timer.set(deadline.map(|d| start + d.nanos())).map_err(|e| fail("timerfd", e))?;
        if stop_now.is_none() {
            poll.wait(&mut ready, -1).map_err(|e| fail("epoll_wait", e))?;
        } else {
            ready.clear();
        }
        for &tok in &ready {
            let mobile_tun = (TOK_MOBILE..TOK_MOBILE + tuns_m.len() as u64).contains(&tok);
            let mobile_exit = (TOK_EXIT..TOK_EXIT + tuns_m.len() as u64).contains(&tok);
            match tok {
                _ if mobile_tun || tok == TOK_SERVER => {
                    let (fd, from, ti) = if mobile_tun {
                        let k = (tok - TOK_MOBILE) as usize;
                        (tuns_m[k], From::Mobile(k), k)
                    } else {
                        (tun_s, From::Server, tuns_m.len())
                    };
                    // The copies of what is in the device's queue are in the tap.
                    if let Some(tap) = taps[ti].as_mut() {
                        tap.drain();
                    }
                    let skip = if opts.offload { gso::HDR } else { 0 };
                    while let Some(n) = sys::read_packet(fd, &mut buf).map_err(|e| fail("reading a TUN device", e))? {
                        let t = now();
                        if let Some(sent) = taps[ti].as_mut().and_then(|tap| tap.sent_at(&buf[skip.min(n)..n])) {
                            read_wait.record(sys::realtime_ns() - sent);
                        }
                        segments.clear();
                        if gso::packets_of(&buf[..n], opts.offload, &mut segments).is_err() {
                            unparsable += 1;
                            continue;
                        } else if segments.len() > 1 {
                            gso_reads += 1;
                            gso_segments += segments.len() as u64;
                        }
                        // Each segment as if read on its own at `t` (as `replay`
                        // feeds them from the log).
                        for bytes in segments.drain(..) {
                            fabric.advance(t);
                            drain(&mut fabric, &mut writer, &mut logs, &mut lateness);
                            if let Some(l) = logs.as_deref_mut() {
                                l.input(t, from, &bytes);
                            }
                            if let Err(fabric::Refused::Unparsable) = fabric.input(t, from, bytes) {
                                unparsable += 1;
                            }
                        }
                    }
                }
                TOK_TIMER => timer.clear(),
                TOK_SIGNAL => {
                    while let Some(s) = signals.take() {
                        // An interactive shell handles its own Ctrl-C.
                        if !(interactive && s == libc::SIGINT) {
                            // A second signal during the wind-down ends it at once.
                            if let Some((why, _, _)) = &winding {
                                stop_now = Some(why.clone());
                                winding = None;
                            } else {
                                stop_now = Some(format!("signal {s}"));
                            }
                        }
                    }
                }
                _ if mobile_exit => {
                    poll.remove(exit_fds[(tok - TOK_EXIT) as usize].as_raw_fd());
                    running -= 1;
                    if running == 0 {
                        let what = if mobiles.len() == 1 { "command exited" } else { "commands exited" };
                        stop_now = Some(what.to_string());
                    }
                }
                TOK_GATEWAY_EXIT => {
                    // The command's shell may go first (SIGTERM ends `sh -c` at
                    // once): the wind-down lasts while anything of its group runs.
                    if let Some(fd) = &gateway_exit {
                        poll.remove(fd.as_raw_fd());
                    }
                    // Reaped, so that the group's liveness is its other processes'.
                    if let Some(g) = gateway.as_deref_mut() {
                        let _ = g.try_wait();
                    }
                    gateway_leader_gone = true;
                }
                TOK_SERVER_EXIT => {
                    // A server that exits cleanly (a one-shot sink) lets the run go
                    // on; one that fails ends it.
                    let status = server.as_deref_mut().and_then(|c| c.try_wait().ok().flatten());
                    if let (Some(st), Some(fd)) = (status, &server_exit) {
                        poll.remove(fd.as_raw_fd());
                        if !st.success() {
                            stop_now = Some(format!("server command failed (status {})", shell_status(st)));
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(why) = stop_now {
            match (gateway_pid, &gateway_exit, &winding) {
                (Some(pid), Some(fd), None) if winding_started.is_none() => {
                    let t = now();
                    sys::kill_group(pid, libc::SIGTERM);
                    poll.add(fd.as_raw_fd(), TOK_GATEWAY_EXIT).map_err(|e| fail("epoll", e))?;
                    winding_started = Some(t);
                    winding = Some((why, t, t + GATEWAY_WIND_DOWN));
                }
                _ => break why,
            }
        }
    };
    let t_end = now();
    let gateway_wind_down_s = winding_started.map(|t0| (t_end - t0).as_secs_f64());
    fabric.advance(t_end);
    drain(&mut fabric, &mut writer, &mut logs, &mut lateness);
    if logs.is_some() {
        log_path(&mut fabric, &mut logs);
        for path in fabric.paths_mut() {
            path.finish_mm_logs(t_end).map_err(|e| fail("mm-down.log/mm-up.log", e))?;
            path.finish_trace().map_err(EmuError::Failed)?;
        }
    }
    let q = |p: f64| lateness.quantile(p);
    let late = lateness.above();
    let run_s = t_end.as_secs_f64();
    Ok(Report {
        duration_s: run_s,
        start_unix_s,
        ended,
        mobile_status: None,
        mobile_statuses: vec![],
        server_status: None,
        lateness: Lateness {
            count: lateness.count(),
            p50_ns: q(0.5),
            p99_ns: q(0.99),
            max_ns: lateness.max(),
            late,
            read_wait: tapped
                .then(|| (read_wait.count(), read_wait.quantile(0.5), read_wait.quantile(0.99), read_wait.max())),
        },
        link: fabric.paths().iter().map(|p| p.link_stats(run_s)).collect(),
        path: fabric.paths().iter().fold(thinwire::realtime::PathStats::default(), |mut a, p| {
            for i in 0..2 {
                a.inputs[i] += p.stats.inputs[i];
                a.outputs[i] += p.stats.outputs[i];
            }
            a.wired_drops += p.stats.wired_drops;
            a.link_drops += p.stats.link_drops;
            a
        }),
        unroutable: fabric.unroutable,
        flow_mobiles: fabric.flow_mobiles(),
        conns: fabric.paths().iter().map(|p| p.conn_rows()).collect(),
        write_drops: writer.drops,
        gso_reads,
        gso_segments,
        gro_writes: writer.merged().0,
        gro_segments: writer.merged().1,
        tun_queue_drops: [0; 2],
        unparsable,
        gateway_wind_down_s,
        trace: fabric.paths_mut()[0].take_trace(),
    })
}

/// How an emulation's path was made, for its replay.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// `--gateway`: no wired link in the path.
    pub gateway: bool,
    pub mobiles: usize,
    pub cell: Cell,
    /// `--udp-bypass`.
    pub udp_bypass: bool,
}

/// Replays an emulation's inputs (`inputs.pcapng`) through the scenario's paths
/// until `end` (the emulation's length): the schedule logs they would have
/// written, line by line, one per path.
pub fn replay(
    scenario: &Scenario,
    inputs: &std::path::Path,
    end: Instant,
    layout: Layout,
) -> Result<Vec<Vec<String>>, EmuError> {
    let f = std::fs::File::open(inputs).map_err(|e| EmuError::Usage(format!("{}: {e}", inputs.display())))?;
    replay_from(scenario, std::io::BufReader::new(f), end, layout)
        .map_err(|e| EmuError::Usage(format!("{}: {e}", inputs.display())))
}

/// As [`replay`], the inputs read from `src` (a pcapng: interfaces 0 to N − 1 are
/// the mobiles, N the server side). The inputs' times are taken as they are, but
/// never backwards (a damaged or edited file): a packet stamped before the one
/// before it is replayed at that packet's time.
pub fn replay_from<R: std::io::Read>(
    scenario: &Scenario,
    src: R,
    end: Instant,
    layout: Layout,
) -> Result<Vec<Vec<String>>, thinwire::pcap::CaptureError> {
    let mobiles = layout.mobiles.clamp(1, netns::MAX_MOBILES);
    let mut ins: Vec<(i64, From, Vec<u8>)> = vec![];
    let mut last = 0i64;
    thinwire::pcap::read_capture_from(src, |p| {
        let from = if (p.iface as usize) < mobiles { From::Mobile(p.iface as usize) } else { From::Server };
        last = last.max(p.t_ns);
        ins.push((last, from, p.data.to_vec()));
    })?;
    let mut fabric = Fabric::new(scenario, mobiles, layout.cell, false, layout.gateway, layout.udp_bypass)
        .map_err(thinwire::pcap::CaptureError)?;
    for p in fabric.paths_mut() {
        p.record_decisions();
    }
    let mut out = vec![vec![]; fabric.paths().len()];
    let mut take = |fabric: &mut Fabric| {
        for (k, ds) in fabric.take_decisions().into_iter().enumerate() {
            out[k].extend(ds.iter().map(|d| d.to_string()));
        }
    };
    for (t, from, bytes) in ins {
        let t = Instant(t);
        fabric.advance(t);
        while fabric.poll_output().is_some() {}
        // Bytes the emulator could not parse or route were logged too and refused
        // the same way.
        let _ = fabric.input(t, from, bytes);
        take(&mut fabric);
    }
    fabric.advance(end);
    while fabric.poll_output().is_some() {}
    take(&mut fabric);
    Ok(out)
}
