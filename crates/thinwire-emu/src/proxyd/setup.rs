//! Interception set-up, in the daemon's network namespace (docs/proxy.md,
//! "Deployment", lists the same rules for doing it by hand with `setup = false`):
//!
//! - the TUN device `tun`, up, with reverse-path filtering off on it (it emits
//!   packets with the servers' and the mobiles' source addresses);
//! - `ip rule iif <mobile_interface> lookup <table>` and a default route into the
//!   TUN device in `table` (IPv4 and IPv6): what the mobiles send reaches the
//!   daemon; packets to this host's own addresses are delivered locally first
//!   (the `local` table comes before any rule), so the proxy is no relay to itself;
//! - `ip rule fwmark <fwmark> lookup <table + 1>` with `local default dev lo` in
//!   it, and an nftables table `inet thinwire_<tun>` that marks packets arriving
//!   on any other interface for a transparent socket (`socket transparent 1`):
//!   the servers' answers reach the daemon's sockets bound to mobile addresses;
//! - IPv4 and IPv6 forwarding on (the mobiles' other traffic, and what the
//!   daemon writes into the TUN device, is forwarded), and early demux off
//!   (`net.ipv4.ip_early_demux`, `tcp_early_demux`): with it the kernel attaches
//!   a packet the daemon sends to the mobile to the transparent socket with the
//!   same 4-tuple, and then drops it instead of forwarding it.
//!
//! Everything added is removed on drop; stale rules of a killed daemon with the
//! same table are removed first.
use crate::netns::ip;
use std::process::Command;
use thinwire::config::daemon::DaemonCfg;

pub struct Interception {
    tun: String,
    table: u32,
    fwmark: u32,
}

fn sysctl(key: &str, value: &str) -> Result<(), String> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| format!("cannot set {key}: {e}"))
}

fn nft(script: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run nft (install nftables): {e}"))?;
    child.stdin.take().expect("piped").write_all(script.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

impl Interception {
    pub fn install(d: &DaemonCfg) -> Result<Interception, String> {
        let me = Interception { tun: d.tun.clone(), table: d.table, fwmark: d.fwmark };
        me.remove_rules();
        let (t, lt, mark) = (d.table.to_string(), (d.table + 1).to_string(), d.fwmark.to_string());
        ip(&["link", "set", &d.tun, "up"])?;
        ip(&["link", "set", &d.tun, "addrgenmode", "none"]).ok();
        sysctl("net.ipv4.ip_forward", "1")?;
        sysctl("net.ipv6.conf.all.forwarding", "1")?;
        sysctl("net.ipv4.conf.all.rp_filter", "0")?;
        sysctl(&format!("net.ipv4.conf.{}.rp_filter", d.tun), "0")?;
        // Early demux would attach the wireless leg's packets (written into the
        // TUN device) to the transparent socket of the same 4-tuple, and the
        // forwarding path drops a packet with a socket attached.
        sysctl("net.ipv4.ip_early_demux", "0")?;
        sysctl("net.ipv4.tcp_early_demux", "0")?;
        for fam in ["-4", "-6"] {
            let prio = d.table.to_string();
            ip(&[fam, "rule", "add", "iif", &d.mobile_interface, "lookup", &t, "priority", &prio])?;
            ip(&[fam, "route", "replace", "default", "dev", &d.tun, "table", &t])?;
            let prio = (d.table - 1).to_string();
            ip(&[fam, "rule", "add", "fwmark", &mark, "lookup", &lt, "priority", &prio])?;
            ip(&[fam, "route", "replace", "local", "default", "dev", "lo", "table", &lt])?;
        }
        let script = format!(
            "table inet thinwire_{tun} {{\n  chain pre {{\n    type filter hook prerouting priority mangle; policy accept;\n    \
             iifname {{ \"{tun}\", \"{mif}\", \"lo\" }} return\n    \
             meta l4proto tcp socket transparent 1 meta mark set {mark} accept\n  }}\n}}\n",
            tun = d.tun,
            mif = d.mobile_interface,
        );
        nft(&script)?;
        Ok(me)
    }

    fn remove_rules(&self) {
        let (t, lt, mark) = (self.table.to_string(), (self.table + 1).to_string(), self.fwmark.to_string());
        for fam in ["-4", "-6"] {
            while ip(&[fam, "rule", "del", "lookup", &t]).is_ok() {}
            while ip(&[fam, "rule", "del", "fwmark", &mark, "lookup", &lt]).is_ok() {}
            let _ = ip(&[fam, "route", "flush", "table", &t]);
            let _ = ip(&[fam, "route", "flush", "table", &lt]);
        }
        let _ = nft(&format!("destroy table inet thinwire_{}\n", self.tun))
            .or_else(|_| nft(&format!("delete table inet thinwire_{}\n", self.tun)));
    }
}

impl Drop for Interception {
    fn drop(&mut self) {
        self.remove_rules();
    }
}
