//! The emulated hosts: a network namespace each for the mobile host and the server,
//! a TUN device in each whose other end is this process, addresses and routes.
//!
//! Addresses (as in the simulator): mobile 10.0.1.2 and fd00:1::2, server 10.0.0.1
//! and fd00::1; in each namespace the other host is reached through the TUN device
//! (host routes for both IP versions), MTU 1500. There is no default route, so a
//! program that looks up a name (a DNS query to the machine's resolver) fails at
//! once instead of sending its query across the emulated link. Names carry this process's id
//! (`tw<pid><k>-m`, `-s`), so emulators run side by side; namespaces left behind by
//! a process that no longer exists (killed with SIGKILL) are removed at start.
//! Everything is removed when [`Hosts`] is dropped.
use crate::sys;
use std::os::fd::OwnedFd;
use std::process::Command;

pub const MOBILE_V4: &str = "10.0.1.2";
pub const SERVER_V4: &str = "10.0.0.1";
pub const MOBILE_V6: &str = "fd00:1::2";
pub const SERVER_V6: &str = "fd00::1";
pub const MTU: u32 = 1500;

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
    made: Vec<String>,
}

impl Hosts {
    /// Creates both namespaces and devices (instance `k` of this process).
    pub fn create(k: u32) -> Result<Hosts, String> {
        let tag = format!("tw{}{k}", std::process::id());
        let mut h = Hosts {
            mobile: Host::new(format!("{tag}-m"), format!("{tag}m"), (MOBILE_V4, MOBILE_V6), (SERVER_V4, SERVER_V6)),
            server: Host::new(format!("{tag}-s"), format!("{tag}s"), (SERVER_V4, SERVER_V6), (MOBILE_V4, MOBILE_V6)),
            made: vec![],
        };
        // On an error, dropping `h` removes what was made so far.
        setup(&mut h.mobile, &mut h.made)?;
        setup(&mut h.server, &mut h.made)?;
        Ok(h)
    }
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
        for ns in self.made.drain(..).rev() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}
