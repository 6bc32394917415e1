//! `[proxy]`: the split-TCP proxy's parameters (defaults in src/proxy/mod.rs,
//! `ProxyConfig`; the link rate defaults to the wireless downlink's).
use super::units::{Dur, Rate, Size};
use super::{cerr, ConfigError};
use crate::time::Duration;
use serde::Deserialize;

/// `[proxy]`: the split-TCP proxy's parameters (defaults in src/proxy/mod.rs).
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ProxyCfg {
    /// The aggregate's congestion controller (`tcp.cc`'s names but `bbr`);
    /// default `clamp`, the seeds' fixed window.
    #[serde(default)]
    pub cc: Option<crate::tcp::CcKind>,
    /// Initial window of a controller other than `clamp`, in segments; default 10.
    #[serde(default)]
    pub initial_window: Option<u32>,
    /// Fixed wireless-side window; default (1 + headroom)·link_rate·link_rtt.
    #[serde(default)]
    pub clamp: Option<Size>,
    /// Estimate the clamp from the minimum RTT measured (default false).
    #[serde(default)]
    pub estimate_clamp: Option<bool>,
    /// Default: the wireless downlink's rate.
    #[serde(default)]
    pub link_rate: Option<Rate>,
    /// The wireless link's typical RTT (default 1.8 s). Given, it also sets the
    /// defaults of `min_rto` (5/3 of it, at least 200 ms) and `initial_rto`
    /// (10/3, at least 1 s) — the seeds' 3 s and 6 s at their 1.8 s.
    #[serde(default)]
    pub link_rtt: Option<Dur>,
    #[serde(default)]
    pub headroom: Option<f64>,
    #[serde(default)]
    pub overprovision: Option<f64>,
    /// Allowance growth α, bytes per second (given as a size, e.g. "7KB").
    #[serde(default)]
    pub growth: Option<Size>,
    #[serde(default)]
    pub retransmit_at: Option<u32>,
    /// Another connection's feedback counts toward a segment's loss counter
    /// only for segments sent this long after it; default 200 ms ("0s": the
    /// seed's rule as written).
    #[serde(default)]
    pub delack_allowance: Option<Dur>,
    #[serde(default)]
    pub min_rto: Option<Dur>,
    #[serde(default)]
    pub initial_rto: Option<Dur>,
    #[serde(default)]
    pub max_rto: Option<Dur>,
    #[serde(default)]
    pub mss: Option<u32>,
    /// Segments a scheduler pick sends from its connection in a row (default 1;
    /// the proxy daemon's default: about 1 ms at `link_rate`, 1–44 segments).
    #[serde(default)]
    pub burst: Option<u32>,
    /// Priority classes by server port; default `[{ port = 23, priority = 0 }]`.
    #[serde(default)]
    pub classes: Option<Vec<ProxyClass>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyClass {
    pub port: u16,
    #[serde(default)]
    pub priority: u8,
    #[serde(default = "default_tickets")]
    pub tickets: u32,
}
fn default_tickets() -> u32 {
    100
}

pub(super) fn validate_proxy(p: &ProxyCfg) -> Result<(), ConfigError> {
    if p.clamp.is_some_and(|c| c.0 < 64 || c.0 > 1 << 24) {
        return Err(cerr("proxy.clamp", "must be between 64B and 16MiB"));
    }
    if p.link_rate.is_some_and(|r| r.0 < 8) {
        return Err(cerr("proxy.link_rate", "must be at least 8bps"));
    }
    if p.link_rtt.is_some_and(|d| d.0 <= Duration::ZERO) {
        return Err(cerr("proxy.link_rtt", "must be a positive duration"));
    }
    // As TCP's: an RTO below 1 ms makes simulated time crawl or stop.
    let longest = Duration::from_secs(crate::units::MAX_DURATION_S);
    for (k, d) in [("min_rto", p.min_rto), ("initial_rto", p.initial_rto), ("max_rto", p.max_rto)] {
        super::flow::dur_within(&format!("proxy.{k}"), d, Duration::from_millis(1), longest)?;
    }
    if let (Some(lo), Some(hi)) = (p.min_rto, p.max_rto) {
        if lo.0 > hi.0 {
            return Err(cerr("proxy.min_rto", "must not exceed proxy.max_rto"));
        }
    }
    for (k, v) in [("headroom", p.headroom), ("overprovision", p.overprovision)] {
        if v.is_some_and(|v| !(0.0..=10.0).contains(&v)) {
            return Err(cerr(format!("proxy.{k}"), "must be a fraction between 0 and 10 (0.3 = 30 %)"));
        }
    }
    if p.growth.is_some_and(|g| g.0 == 0) {
        return Err(cerr("proxy.growth", "must be a positive size per second, e.g. \"7KB\""));
    }
    if p.delack_allowance.is_some_and(|d| d.0 < Duration::ZERO || d.0 > Duration::from_secs(10)) {
        return Err(cerr("proxy.delack_allowance", "must be a duration between 0s and 10s"));
    }
    if p.retransmit_at.is_some_and(|n| n == 0 || n > 100) {
        return Err(cerr("proxy.retransmit_at", "must be between 1 and 100"));
    }
    if p.cc == Some(crate::tcp::CcKind::Bbr) {
        return Err(cerr("proxy.cc", "\"bbr\" needs delivery-rate samples the aggregate does not keep; use \"clamp\", \"cubic\", \"reno\" or \"rfc5681\""));
    }
    let fixed = p.cc.is_none_or(|c| c == crate::tcp::CcKind::Clamp);
    if p.estimate_clamp == Some(true) && !fixed {
        return Err(cerr("proxy.estimate_clamp", "estimates the fixed window of cc = \"clamp\" only"));
    }
    if p.initial_window.is_some_and(|w| w == 0 || w > 1000) {
        return Err(cerr("proxy.initial_window", "must be between 1 and 1000 segments"));
    }
    if let Some(m) = p.mss {
        if !(64..=65495).contains(&m) {
            return Err(cerr("proxy.mss", format!("{m} is not an MSS between 64 and 65495")));
        }
    }
    if p.burst.is_some_and(|b| b == 0 || b > 64) {
        return Err(cerr("proxy.burst", "must be between 1 and 64 segments"));
    }
    if let Some(cs) = &p.classes {
        for (i, c) in cs.iter().enumerate() {
            if c.tickets == 0 {
                return Err(cerr(format!("proxy.classes[{i}].tickets"), "must be at least 1"));
            }
        }
    }
    Ok(())
}
