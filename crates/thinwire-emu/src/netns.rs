//! The emulated hosts: a network namespace each for the mobile hosts and the server,
//! a TUN device in each whose other end is this process, addresses and routes.
//!
//! Addresses (as in the simulator): mobile 10.0.1.2 and fd00:1::2, server 10.0.0.1
//! and fd00::1; in each namespace the other host is reached through the TUN device
//! (host routes for both IP versions), MTU 1500. With several mobiles (`--mobiles
//! N`), mobile k (from 0) is 10.0.1.(2 + k) and fd00:1::(2 + k) (hexadecimal),
//! namespace `-m` for k = 0 and `-m<k>` after, and the server (or the gateway) has
//! a host route to each. With a gateway (`-g`, for a proxy
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

pub const SERVER_V4: &str = "10.0.0.1";
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

/// At most this many mobile hosts (their addresses are 10.0.1.2 to 10.0.1.251).
pub const MAX_MOBILES: usize = thinwire::config::MOBILES as usize;

/// Mobile `k`'s addresses (IPv4, IPv6).
pub fn mobile_addr(k: usize) -> (String, String) {
    assert!(k < MAX_MOBILES, "mobile {k}: at most {MAX_MOBILES}");
    let v4 = std::net::Ipv4Addr::from(thinwire::config::mobile_addr(k as u16));
    (v4.to_string(), format!("fd00:1::{:x}", 2 + k))
}

/// Which mobile an IP packet's destination (`dst`) or source address names, if any.
pub fn mobile_of(bytes: &[u8], dst: bool) -> Option<usize> {
    match bytes.first()? >> 4 {
        4 if bytes.len() >= 20 => mobile_of_addr(if dst { &bytes[16..20] } else { &bytes[12..16] }),
        6 if bytes.len() >= 40 => mobile_of_addr(if dst { &bytes[24..40] } else { &bytes[8..24] }),
        _ => None,
    }
}

/// Whether an IP packet's destination is a multicast or the broadcast address
/// (an IPv6 MLD report from the far end's device, say): meant for every mobile.
pub fn to_group(bytes: &[u8]) -> bool {
    match bytes.first().map(|b| b >> 4) {
        Some(4) if bytes.len() >= 20 => bytes[16] >= 224,
        Some(6) if bytes.len() >= 40 => bytes[24] == 0xff,
        _ => false,
    }
}

/// Which mobile an address (4 or 16 bytes) is, if any.
pub fn mobile_of_addr(a: &[u8]) -> Option<usize> {
    let k = match a.len() {
        4 => (a[..3] == [10, 0, 1]).then_some(a[3] as usize)?,
        16 => {
            let pre = [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            (a[..14] == pre).then_some(u16::from_be_bytes([a[14], a[15]]) as usize)?
        }
        _ => return None,
    };
    (2..2 + MAX_MOBILES).contains(&k).then(|| k - 2)
}

/// Removes namespaces of emulators whose process is gone.
pub fn remove_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix("tw") else { continue };
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        // `tw<pid><k>-m`: the last digit is the instance number.
        let role = name[2 + digits.len()..].to_string();
        let mobile_k = role.strip_prefix("-m").is_some_and(|k| k.chars().all(|c| c.is_ascii_digit()));
        if digits.len() < 2 || !(mobile_k || role == "-s" || role == "-g") {
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
    pub addr: (String, String),
    pub peer: (String, String),
    /// Which mobile host this is (None: the server or the gateway).
    pub mobile: Option<usize>,
    /// How many mobile hosts the emulation has.
    pub mobiles: usize,
}

fn pair(a: (&str, &str)) -> (String, String) {
    (a.0.to_string(), a.1.to_string())
}

impl Host {
    fn new(ns: String, dev: String, addr: (String, String), peer: (String, String), mobiles: usize) -> Host {
        Host { ns, dev, tun: None, addr, peer, mobile: None, mobiles }
    }

    /// What a command run on this host is told in its environment: THINWIRE_DEV
    /// (the emulated link's device), THINWIRE_ADDR / THINWIRE_ADDR6 (own addresses),
    /// THINWIRE_PEER / THINWIRE_PEER6 (the other host's: for the server and the
    /// gateway, mobile 0), e.g. for `ip route change $THINWIRE_PEER dev
    /// $THINWIRE_DEV initcwnd 2`; THINWIRE_MOBILES (how many mobile hosts) and, on
    /// a mobile host, THINWIRE_MOBILE (which one, from 0).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut e = vec![
            ("THINWIRE_DEV", self.dev.clone()),
            ("THINWIRE_ADDR", self.addr.0.clone()),
            ("THINWIRE_ADDR6", self.addr.1.clone()),
            ("THINWIRE_PEER", self.peer.0.clone()),
            ("THINWIRE_PEER6", self.peer.1.clone()),
            ("THINWIRE_MOBILES", self.mobiles.to_string()),
        ];
        if let Some(k) = self.mobile {
            e.push(("THINWIRE_MOBILE", k.to_string()));
        }
        e
    }
}

pub struct Hosts {
    /// Mobile hosts 0, 1, …
    pub mobiles: Vec<Host>,
    pub server: Host,
    /// A third namespace between the wireless link and the server (`--gateway`):
    /// the link's far end is its TUN device, and a veth pair joins it to the
    /// server, whose namespace then has no TUN device.
    pub gateway: Option<Host>,
    made: Vec<String>,
}

impl Hosts {
    /// Creates the namespaces and devices (instance `k` of this process) for
    /// `mobiles` mobile hosts (1 to MAX_MOBILES).
    pub fn create(k: u32, gateway: bool, mobiles: usize, offload: bool) -> Result<Hosts, String> {
        assert!((1..=MAX_MOBILES).contains(&mobiles));
        let tag = format!("tw{}{k}", std::process::id());
        let server = (SERVER_V4, SERVER_V6);
        let mut h = Hosts {
            mobiles: (0..mobiles)
                .map(|m| {
                    let n = if m == 0 { String::new() } else { m.to_string() };
                    let mut host =
                        Host::new(format!("{tag}-m{n}"), format!("{tag}m{n}"), mobile_addr(m), pair(server), mobiles);
                    host.mobile = Some(m);
                    host
                })
                .collect(),
            server: Host::new(format!("{tag}-s"), format!("{tag}s"), pair(server), mobile_addr(0), mobiles),
            gateway: None,
            made: vec![],
        };
        // On an error, dropping `h` removes what was made so far.
        for m in &mut h.mobiles {
            setup(m, &mut h.made, offload)?;
        }
        if !gateway {
            setup(&mut h.server, &mut h.made, offload)?;
            routes_to_mobiles(&h.server, mobiles, None)?;
            return Ok(h);
        }
        let mut g = Host::new(
            format!("{tag}-g"),
            format!("{tag}g"),
            pair((GATEWAY_W_V4, GATEWAY_W_V6)),
            mobile_addr(0),
            mobiles,
        );
        setup(&mut g, &mut h.made, offload)?;
        routes_to_mobiles(&g, mobiles, None)?;
        h.server.dev = format!("{tag}w");
        wire_gateway(&g, &h.server, &format!("{tag}v"), &mut h.made)?;
        routes_to_mobiles(&h.server, mobiles, Some((GATEWAY_S_V4, GATEWAY_S_V6)))?;
        // The mobiles reach the gateway's own address over the link too.
        for m in &h.mobiles {
            ip(&["-n", &m.ns, "route", "add", &format!("{GATEWAY_W_V4}/32"), "dev", &m.dev])?;
            ip(&["-n", &m.ns, "-6", "route", "add", &format!("{GATEWAY_W_V6}/128"), "dev", &m.dev])?;
        }
        h.gateway = Some(g);
        Ok(h)
    }

    /// Mobile host 0 (the only one unless `--mobiles`).
    pub fn mobile(&self) -> &Host {
        &self.mobiles[0]
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
    let out = Command::new("ip")
        .args(["netns", "exec", &g.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
        .output()
        .map_err(|e| format!("cannot run sysctl in {}: {e}", g.ns))?;
    if !out.status.success() {
        return Err(format!("sysctl in {}: {}", g.ns, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// Host routes on `h` to mobiles 1.. (mobile 0 is `h`'s peer, routed by `setup`)
/// through its TUN device, or to every mobile `via` a router.
fn routes_to_mobiles(h: &Host, mobiles: usize, via: Option<(&str, &str)>) -> Result<(), String> {
    let first = if via.is_some() { 0 } else { 1 };
    if mobiles <= first {
        return Ok(());
    }
    // One `ip -batch` per namespace: 250 mobiles cost one process, not 500.
    let mut batch = String::new();
    for m in first..mobiles {
        let (v4, v6) = mobile_addr(m);
        match via {
            Some((r4, r6)) => {
                batch += &format!("route add {v4}/32 via {r4}\nroute add {v6}/128 via {r6}\n");
            }
            None => batch += &format!("route add {v4}/32 dev {d}\nroute add {v6}/128 dev {d}\n", d = h.dev),
        }
    }
    ip_batch(&h.ns, &batch)
}

/// Runs `ip -n NS -batch -` on `commands` (one per line).
fn ip_batch(ns: &str, commands: &str) -> Result<(), String> {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    c.stdin.take().expect("stdin").write_all(commands.as_bytes()).map_err(|e| format!("ip -batch: {e}"))?;
    let out = c.wait_with_output().map_err(|e| format!("ip -batch: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(format!("ip -n {ns} -batch: {}", err.lines().next().unwrap_or("failed").trim()))
}

fn setup(host: &mut Host, made: &mut Vec<String>, offload: bool) -> Result<(), String> {
    let (me, peer) = (host.addr.clone(), host.peer.clone());
    ip(&["netns", "add", &host.ns])?;
    made.push(host.ns.clone());
    let tun = sys::tun_open(&host.dev, offload).map_err(|e| format!("cannot create TUN device {}: {e}", host.dev))?;
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
        for m in &mut self.mobiles {
            m.tun = None;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mobile_addresses_round_trip_through_packets() {
        for k in [0, 1, 13, MAX_MOBILES - 1] {
            let (v4, v6) = mobile_addr(k);
            let a4: std::net::Ipv4Addr = v4.parse().unwrap();
            let a6: std::net::Ipv6Addr = v6.parse().unwrap();
            assert_eq!(mobile_of_addr(&a4.octets()), Some(k));
            assert_eq!(mobile_of_addr(&a6.octets()), Some(k));
            let mut p4 = vec![0x45u8; 20];
            p4[16..20].copy_from_slice(&a4.octets());
            assert_eq!(mobile_of(&p4, true), Some(k));
            assert_eq!(mobile_of(&p4, false), None);
            let mut p6 = vec![0x60u8; 40];
            p6[8..24].copy_from_slice(&a6.octets());
            assert_eq!(mobile_of(&p6, false), Some(k));
        }
        // The gateway, the server, other subnets, truncated packets: no mobile.
        for a in ["10.0.1.1", "10.0.0.1", "10.0.2.2", "10.0.1.252"] {
            let a: std::net::Ipv4Addr = a.parse().unwrap();
            assert_eq!(mobile_of_addr(&a.octets()), None, "{a}");
        }
        assert_eq!(mobile_of(&[0x45, 0, 0], true), None);
        assert_eq!(mobile_of(&[], true), None);
    }
}
