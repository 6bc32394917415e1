//! The `thinwire proxy` daemon's configuration file: `[proxy]` with the same keys
//! as a scenario's (src/config/proxy.rs; the link rate defaults to seed 003/004's
//! "3+1" CS-2 link, 33.2 kbit/s, since there is no scenario link to take it from)
//! and `[daemon]` for interception, limits and timeouts. Defaults:
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `mobile_interface` | (required) | where the mobiles' packets arrive; only these are intercepted |
//! | `mobile_prefixes` | any | intercept only sources in these prefixes (e.g. `["10.0.1.0/24"]`) |
//! | `tun` | `"twproxy0"` | the TUN device the intercepted packets are routed into |
//! | `table` | 7100 | routing table for the interception (and `table + 1` for transparent replies) |
//! | `fwmark` | 7100 | mark of packets to the proxy's transparent sockets |
//! | `setup` | true | install (and remove on exit) the routing rules and the nftables table |
//! | `max_connections` | 4096 | proxied connections at once; beyond, new ones pass unproxied |
//! | `max_connections_per_mobile` | 256 | the same per mobile host; at the limit a SYN first drops the mobile's oldest handshake whose SYN-ACK went unanswered through a timeout (a flood's), then passes |
//! | `max_half_open_per_mobile` | 256 | unfinished handshakes held per mobile host; a new SYN beyond drops the oldest (RFC 4987 §3.4) |
//! | `max_buffer` | "64MB" | data held for all mobiles; beyond, new connections pass and servers are not read |
//! | `server_rcvbuf` | "16KB" | the server sockets' receive buffer (SO_RCVBUF): what the kernel holds beyond the proxy's allowance |
//! | `connect_timeout` | "10s" | a server that does not answer: RST to the mobile |
//! | `idle_timeout` | "10min" | a connection with no data either way is reset |
//! | `half_close_timeout` | "2min" | a connection closed in one direction only is reset |
//! | `drain_timeout` | "30s" | on SIGTERM, how long open connections may finish |
//! | `stats_interval` | "0s" (off) | a stats line in the log this often |
//! | `offload` | true | segmentation offload on the TUN device: mobiles' TCP super-packets are read whole and cut into segments, and the proxy's segments to one mobile sent at once are written as one (as a NIC's GSO/GRO; `thinwire-emu/src/gso.rs`) |
use super::proxy::{validate_proxy, ProxyCfg};
use super::units::{Dur, Size};
use super::{cerr, ConfigError};
use crate::time::Duration;
use serde::Deserialize;
use std::net::IpAddr;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonFile {
    #[serde(default)]
    pub proxy: ProxyCfg,
    pub daemon: DaemonCfg,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonCfg {
    pub mobile_interface: String,
    #[serde(default)]
    pub mobile_prefixes: Vec<String>,
    #[serde(default = "default_tun")]
    pub tun: String,
    #[serde(default = "default_table")]
    pub table: u32,
    #[serde(default = "default_table")]
    pub fwmark: u32,
    #[serde(default = "yes")]
    pub setup: bool,
    #[serde(default = "default_max_conns")]
    pub max_connections: usize,
    #[serde(default = "default_max_conns_mobile")]
    pub max_connections_per_mobile: usize,
    #[serde(default = "default_max_half_open")]
    pub max_half_open_per_mobile: usize,
    #[serde(default = "default_max_buffer")]
    pub max_buffer: Size,
    #[serde(default = "default_rcvbuf")]
    pub server_rcvbuf: Size,
    #[serde(default = "default_connect")]
    pub connect_timeout: Dur,
    #[serde(default = "default_idle")]
    pub idle_timeout: Dur,
    #[serde(default = "default_half")]
    pub half_close_timeout: Dur,
    #[serde(default = "default_drain")]
    pub drain_timeout: Dur,
    #[serde(default = "zero")]
    pub stats_interval: Dur,
    #[serde(default = "yes")]
    pub offload: bool,
}

fn default_tun() -> String {
    "twproxy0".into()
}
fn default_table() -> u32 {
    7100
}
fn yes() -> bool {
    true
}
fn default_max_conns() -> usize {
    4096
}
fn default_max_conns_mobile() -> usize {
    256
}
fn default_max_half_open() -> usize {
    256
}
fn default_max_buffer() -> Size {
    Size(64 << 20)
}
fn default_rcvbuf() -> Size {
    Size(16 << 10)
}
fn default_connect() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_idle() -> Dur {
    Dur(Duration::from_secs(600))
}
fn default_half() -> Dur {
    Dur(Duration::from_secs(120))
}
fn default_drain() -> Dur {
    Dur(Duration::from_secs(30))
}
fn zero() -> Dur {
    Dur(Duration::ZERO)
}

/// An address prefix (`10.0.1.0/24`, `fd00:1::/64`, or one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    pub fn parse(s: &str) -> Option<Prefix> {
        let (a, l) = s.split_once('/').unwrap_or((s, ""));
        let ip: std::net::IpAddr = a.trim().parse().ok()?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len = if l.is_empty() { max } else { l.trim().parse::<u8>().ok().filter(|&n| n <= max)? };
        Some(Prefix { addr: ip, len })
    }
    pub fn contains(&self, a: IpAddr) -> bool {
        let (p, x): (u128, u128) = match (self.addr, a) {
            (std::net::IpAddr::V4(p), std::net::IpAddr::V4(x)) => {
                ((u32::from(p) as u128) << 96, (u32::from(x) as u128) << 96)
            }
            (std::net::IpAddr::V6(p), std::net::IpAddr::V6(x)) => (u128::from(p), u128::from(x)),
            _ => return false,
        };
        let mask = if self.len == 0 { 0 } else { u128::MAX << (128 - self.len as u32) };
        p & mask == x & mask
    }
}

/// Parses and checks a daemon configuration file's text.
pub fn parse_daemon(text: &str, overrides: &[String]) -> Result<DaemonFile, ConfigError> {
    let mut value = super::toml_value(text)?;
    for o in overrides {
        super::apply_override(&mut value, o)?;
    }
    let f: DaemonFile = super::deserialize(value)?;
    validate_proxy(&f.proxy)?;
    let d = &f.daemon;
    let name_ok =
        |n: &str| !n.is_empty() && n.len() < 16 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !name_ok(&d.mobile_interface) {
        return Err(cerr(
            "daemon.mobile_interface",
            format!("{:?} is not an interface name (1-15 letters, digits, - _ .)", d.mobile_interface),
        ));
    }
    if !name_ok(&d.tun) {
        return Err(cerr("daemon.tun", format!("{:?} is not an interface name (1-15 letters, digits, - _ .)", d.tun)));
    }
    if d.tun == d.mobile_interface {
        return Err(cerr("daemon.tun", "must differ from mobile_interface"));
    }
    for (i, p) in d.mobile_prefixes.iter().enumerate() {
        if Prefix::parse(p).is_none() {
            return Err(cerr(
                format!("daemon.mobile_prefixes[{i}]"),
                format!("{p:?} is not an address prefix such as \"10.0.1.0/24\""),
            ));
        }
    }
    if d.table == 0 || d.table >= 252 && d.table <= 255 || d.table == u32::MAX {
        return Err(cerr("daemon.table", "must be a free routing table number (1-251 or 256 and above)"));
    }
    if d.fwmark == 0 {
        return Err(cerr("daemon.fwmark", "must not be 0"));
    }
    for (k, n) in [
        ("max_connections", d.max_connections),
        ("max_connections_per_mobile", d.max_connections_per_mobile),
        ("max_half_open_per_mobile", d.max_half_open_per_mobile),
    ] {
        if n == 0 || n > 1_000_000 {
            return Err(cerr(format!("daemon.{k}"), "must be between 1 and 1000000"));
        }
    }
    if d.max_buffer.0 < 65536 {
        return Err(cerr("daemon.max_buffer", "must be at least 64KB"));
    }
    if !(2048..=64 << 20).contains(&d.server_rcvbuf.0) {
        return Err(cerr("daemon.server_rcvbuf", "must be between 2KB and 64MB"));
    }
    for (k, v, zero_ok) in [
        ("connect_timeout", d.connect_timeout, false),
        ("idle_timeout", d.idle_timeout, false),
        ("half_close_timeout", d.half_close_timeout, false),
        ("drain_timeout", d.drain_timeout, true),
        ("stats_interval", d.stats_interval, true),
    ] {
        let ok = (if zero_ok { v.0 >= Duration::ZERO } else { v.0 > Duration::ZERO })
            && v.0 <= Duration::from_secs(7 * 86400);
        if !ok {
            let lo = if zero_ok { "0s" } else { "more than 0s" };
            return Err(cerr(format!("daemon.{k}"), format!("must be {lo} and at most 7 days")));
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quoted key with an escaped line break, unknown to the daemon file, is
    /// named on one line (found by the `daemon_config` fuzz target).
    #[test]
    fn unknown_key_with_a_line_break_is_named_on_one_line() {
        let e = parse_daemon("\"3n =3.2\\\\.\\nfetir\"=30", &[]).unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains("\\n"), "{e}");
        assert!(e.contains("unknown field `3n =3.2\\.\\nfetir`, expected"), "the whole message: {e}");
        let e = parse_daemon("[proxy]\n\"a\\r\\nb\" = 1", &[]).unwrap_err().to_string();
        assert!(!e.contains('\n') && !e.contains('\r'), "{e}");
    }
    #[test]
    fn a_minimal_file_takes_the_defaults() {
        let f = parse_daemon("[daemon]\nmobile_interface = \"eth1\"\n", &[]).unwrap();
        assert_eq!((f.daemon.tun.as_str(), f.daemon.max_connections, f.daemon.setup), ("twproxy0", 4096, true));
        assert_eq!(f.daemon.max_half_open_per_mobile, 256);
        assert!(f.proxy.clamp.is_none());
    }
    #[test]
    fn bad_files_name_the_key() {
        for (text, key) in [
            ("[daemon]\n", "daemon"),
            ("[daemon]\nmobile_interface = \"eth1\"\nmax_connections = 0\n", "daemon.max_connections"),
            (
                "[daemon]\nmobile_interface = \"eth1\"\nmax_half_open_per_mobile = 0\n",
                "daemon.max_half_open_per_mobile",
            ),
            (
                "[daemon]\nmobile_interface = \"eth1\"\nmobile_prefixes = [\"10.0.0.0/33\"]\n",
                "daemon.mobile_prefixes[0]",
            ),
            ("[daemon]\nmobile_interface = \"eth1\"\nidle_timeout = \"0s\"\n", "daemon.idle_timeout"),
            ("[daemon]\nmobile_interface = \"eth1\"\nbogus = 1\n", "daemon"),
            ("[daemon]\nmobile_interface = \"a b\"\n", "daemon.mobile_interface"),
            ("[proxy]\nclamp = \"1B\"\n[daemon]\nmobile_interface = \"eth1\"\n", "proxy.clamp"),
        ] {
            let e = parse_daemon(text, &[]).unwrap_err();
            assert!(e.path.starts_with(key), "{text:?}: {e:?}");
        }
    }
    #[test]
    fn prefixes_match_their_family_only() {
        let p = Prefix::parse("10.0.1.0/24").unwrap();
        assert!(p.contains(IpAddr::from([10, 0, 1, 77])));
        assert!(!p.contains(IpAddr::from([10, 0, 2, 1])));
        let v6 = Prefix::parse("fd00:1::/64").unwrap();
        assert!(v6.contains("fd00:1::2".parse::<IpAddr>().unwrap()));
        assert!(!v6.contains(IpAddr::from([10, 0, 1, 77])));
        assert!(Prefix::parse("0.0.0.0/0").unwrap().contains(IpAddr::from([1, 2, 3, 4])));
    }
}
