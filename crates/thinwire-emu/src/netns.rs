//! The emulated hosts: a network namespace each for the mobile host and the server,
//! a TUN device in each whose other end is this process, addresses and routes.
//!
//! Addresses (as in the simulator): mobile 10.0.1.2 and fd00:1::2, server 10.0.0.1
//! and fd00::1; in each namespace the other host is reached through the TUN device
//! (host routes for both IP versions), MTU 1500. With a gateway (`-g`, for a proxy
//! between the link and the server): the link's far end is the gateway's TUN
//! device (10.0.1.1, fd00:1::1), and a veth pair joins the gateway (10.0.0.2,
//! fd00::2) to the server (10.0.0.1, fd00::1); the gateway forwards. There is no default route, so a
//! program that looks up a name (a DNS query to the machine's resolver) fails at
//! once instead of sending its query across the emulated link. Names carry this process's id
//! (`tw<pid><k>-m`, `-s`), so emulators run side by side; namespaces left behind by
//! a process that no longer exists (killed with SIGKILL) are removed at start,
//! and the processes still running in them are killed.
//! Everything is removed when [`Hosts`] is dropped.
use crate::sys;
use std::os::fd::OwnedFd;
use std::process::Command;

pub const MOBILE_V4: &str = "10.0.1.2";
pub const SERVER_V4: &str = "10.0.0.1";
pub const MOBILE_V6: &str = "fd00:1::2";
pub const SERVER_V6: &str = "fd00::1";
pub const MTU: u32 = 1500;
/// With a gateway: its address on the wireless side (the mobile's router).
pub const GATEWAY_W_V4: &str = "10.0.1.1";
pub const GATEWAY_W_V6: &str = "fd00:1::1";
/// With a gateway: its address on the wired side (the server's router).
pub const GATEWAY_S_V4: &str = "10.0.0.2";
pub const GATEWAY_S_V6: &str = "fd00::2";

/// Runs `ip ARGS`; the error is its first line of complaint.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(format!("ip {}: {}", args.join(" "), err.lines().next().unwrap_or("failed").trim()))
}

/// Removes namespaces of emulators whose process is gone.
pub fn remove_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix("tw") else { continue };
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        // `tw<pid><k>-m`: the last digit is the instance number.
        if digits.len() < 2 || !(name.ends_with("-m") || name.ends_with("-s") || name.ends_with("-g")) {
            continue;
        }
        if let Ok(pid) = digits[..digits.len() - 1].parse::<u32>() {
            if !sys::alive(pid) {
                // Its commands outlived it (it was killed with SIGKILL): end them too.
                if let Ok(o) = Command::new("ip").args(["netns", "pids", &name]).output() {
                    for p in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                        if let Ok(p) = p.parse::<i32>() {
                            unsafe { libc::kill(p, libc::SIGKILL) };
                        }
                    }
                }
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
}

/// One end: its namespace and the TUN device whose other side we hold.
pub struct Host {
    pub ns: String,
    pub dev: String,
    pub tun: Option<OwnedFd>,
    /// Own and peer addresses (IPv4, IPv6).
    pub addr: (&'static str, &'static str),
    pub peer: (&'static str, &'static str),
}

impl Host {
    fn new(ns: String, dev: String, addr: (&'static str, &'static str), peer: (&'static str, &'static str)) -> Host {
        Host { ns, dev, tun: None, addr, peer }
    }

    /// What a command run on this host is told in its environment: THINWIRE_DEV
    /// (the emulated link's device), THINWIRE_ADDR / THINWIRE_ADDR6 (own addresses),
    /// THINWIRE_PEER / THINWIRE_PEER6 (the other host's), e.g. for
    /// `ip route change $THINWIRE_PEER dev $THINWIRE_DEV initcwnd 2`.
    pub fn env(&self) -> [(&'static str, &str); 5] {
        [
            ("THINWIRE_DEV", &self.dev),
            ("THINWIRE_ADDR", self.addr.0),
            ("THINWIRE_ADDR6", self.addr.1),
            ("THINWIRE_PEER", self.peer.0),
            ("THINWIRE_PEER6", self.peer.1),
        ]
    }
}

pub struct Hosts {
    pub mobile: Host,
    pub server: Host,
    /// A third namespace between the wireless link and the server (`--gateway`):
    /// the link's far end is its TUN device, and a veth pair joins it to the
    /// server, whose namespace then has no TUN device.
    pub gateway: Option<Host>,
    made: Vec<String>,
}

impl Hosts {
    /// Creates the namespaces and devices (instance `k` of this process).
    pub fn create(k: u32, gateway: bool) -> Result<Hosts, String> {
        let tag = format!("tw{}{k}", std::process::id());
        let mut h = Hosts {
            mobile: Host::new(format!("{tag}-m"), format!("{tag}m"), (MOBILE_V4, MOBILE_V6), (SERVER_V4, SERVER_V6)),
            server: Host::new(format!("{tag}-s"), format!("{tag}s"), (SERVER_V4, SERVER_V6), (MOBILE_V4, MOBILE_V6)),
            gateway: None,
            made: vec![],
        };
        // On an error, dropping `h` removes what was made so far.
        setup(&mut h.mobile, &mut h.made)?;
        if !gateway {
            setup(&mut h.server, &mut h.made)?;
            return Ok(h);
        }
        let mut g =
            Host::new(format!("{tag}-g"), format!("{tag}g"), (GATEWAY_W_V4, GATEWAY_W_V6), (MOBILE_V4, MOBILE_V6));
        setup(&mut g, &mut h.made)?;
        h.server.dev = format!("{tag}w");
        wire_gateway(&g, &h.server, &format!("{tag}v"), &mut h.made)?;
        // The mobile reaches the gateway's own address over the link too.
        ip(&["-n", &h.mobile.ns, "route", "add", &format!("{GATEWAY_W_V4}/32"), "dev", &h.mobile.dev])?;
        ip(&["-n", &h.mobile.ns, "-6", "route", "add", &format!("{GATEWAY_W_V6}/128"), "dev", &h.mobile.dev])?;
        h.gateway = Some(g);
        Ok(h)
    }

    /// The far end of the wireless link: the gateway's TUN device, or the server's.
    pub fn far_end(&self) -> &Host {
        self.gateway.as_ref().unwrap_or(&self.server)
    }
}

/// The server's namespace joined to the gateway's by a veth pair (`gdev` in the
/// gateway, the server's `dev`), subnets 10.0.0.0/24 and fd00::/64; the gateway
/// forwards, and the server reaches the mobile through it.
fn wire_gateway(g: &Host, s: &Host, gdev: &str, made: &mut Vec<String>) -> Result<(), String> {
    ip(&["netns", "add", &s.ns])?;
    made.push(s.ns.clone());
    ip(&["-n", &s.ns, "link", "set", "lo", "up"])?;
    ip(&["-n", &g.ns, "link", "add", gdev, "type", "veth", "peer", "name", &s.dev, "netns", &s.ns])?;
    for (ns, dev, v4, v6) in [(&g.ns, gdev, GATEWAY_S_V4, GATEWAY_S_V6), (&s.ns, s.dev.as_str(), SERVER_V4, SERVER_V6)]
    {
        ip(&["-n", ns, "link", "set", dev, "mtu", &MTU.to_string(), "up"])?;
        ip(&["-n", ns, "addr", "add", &format!("{v4}/24"), "dev", dev])?;
        ip(&["-n", ns, "-6", "addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"])?;
    }
    ip(&["-n", &s.ns, "route", "add", &format!("{MOBILE_V4}/32"), "via", GATEWAY_S_V4])?;
    ip(&["-n", &s.ns, "-6", "route", "add", &format!("{MOBILE_V6}/128"), "via", GATEWAY_S_V6])?;
    let out = Command::new("ip")
        .args(["netns", "exec", &g.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
        .output()
        .map_err(|e| format!("cannot run sysctl in {}: {e}", g.ns))?;
    if !out.status.success() {
        return Err(format!("sysctl in {}: {}", g.ns, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

fn setup(host: &mut Host, made: &mut Vec<String>) -> Result<(), String> {
    let (me, peer) = (host.addr, host.peer);
    ip(&["netns", "add", &host.ns])?;
    made.push(host.ns.clone());
    let tun = sys::tun_open(&host.dev).map_err(|e| format!("cannot create TUN device {}: {e}", host.dev))?;
    host.tun = Some(tun);
    let (ns, dev) = (host.ns.as_str(), host.dev.as_str());
    ip(&["link", "set", "dev", dev, "netns", ns])?;
    let mtu = MTU.to_string();
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    // No IPv6 link-local address: no router solicitations on the emulated link.
    ip(&["-n", ns, "link", "set", dev, "addrgenmode", "none"])?;
    ip(&["-n", ns, "link", "set", dev, "mtu", &mtu, "up"])?;
    ip(&["-n", ns, "addr", "add", &format!("{}/32", me.0), "dev", dev])?;
    ip(&["-n", ns, "-6", "addr", "add", &format!("{}/128", me.1), "dev", dev, "nodad"])?;
    ip(&["-n", ns, "route", "add", &format!("{}/32", peer.0), "dev", dev])?;
    ip(&["-n", ns, "-6", "route", "add", &format!("{}/128", peer.1), "dev", dev])?;
    Ok(())
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Closing a TUN descriptor removes its device; then the namespaces go.
        self.mobile.tun = None;
        self.server.tun = None;
        if let Some(g) = &mut self.gateway {
            g.tun = None;
        }
        // Whatever still runs in a namespace goes too: a command's children that
        // left its process group (`timeout`, `setsid`, daemons) would otherwise
        // outlive the emulation, holding its sockets and its output pipes.
        for ns in &self.made {
            kill_all_in(ns);
        }
        for ns in self.made.drain(..).rev() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

/// Packets the kernel dropped because a TUN device's queue was full — sent by
/// the host, never read by the emulator (`tx_dropped` of the device, as the
/// kernel's `tun_net_xmit` counts them). None if it cannot be read.
pub fn tun_queue_drops(host: &Host) -> Option<u64> {
    let path = format!("/sys/class/net/{}/statistics/tx_dropped", host.dev);
    let out = Command::new("ip").args(["netns", "exec", &host.ns, "cat", &path]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// SIGKILLs every process in namespace `ns` (`ip netns pids`), and waits up to
/// a second for them to be gone.
fn kill_all_in(ns: &str) {
    let pids = |ns: &str| -> Vec<u32> {
        Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    };
    let me = std::process::id();
    for _ in 0..20 {
        let left: Vec<u32> = pids(ns).into_iter().filter(|&p| p != me).collect();
        if left.is_empty() {
            return;
        }
        for p in left {
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
