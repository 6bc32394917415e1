//! `[[flow]]` sections, tagged by `app`: each application has its own fields (and
//! the common `start`, `link`, `mobile` and `direction`; TCP applications also
//! `tcp` and `port`: declared once, in `flow_app!`), and a
//! field of another application is an error naming the field and what the chosen
//! one takes. Defaults are the application models' own (`app::media::MediaConfig`,
//! `app::probe::ProbeConfig`, `app::session::SessionConfig`,
//! `app::interactive::InteractiveConfig`); `build.rs` applies what is set over them.
use super::units::{bad_tag, split_tag, tagged, tagged_enum, Bytes, Dur, Rate, Size};
use super::{cerr, ConfigError};
use crate::time::Duration;
use serde::{Deserialize, Deserializer};

/// Which way the data goes.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum Direction {
    /// Server to mobile host.
    #[default]
    #[serde(rename = "down")]
    Down,
    /// Mobile host to server.
    #[serde(rename = "up")]
    Up,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }
}

/// The link-layer session a flow uses on the shared wireless link.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum LinkSession {
    /// The configured link protocol.
    #[serde(rename = "arq")]
    Arq,
    /// No ARQ (seed 002 §III: media).
    #[serde(rename = "bypass")]
    Bypass,
}

/// `delayed_ack = { count, timeout }`.
#[derive(Clone, Debug, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DelAckCfg {
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub timeout: Option<Dur>,
}

/// `tcp = { ... }`: a profile ("default", "bsd", "linux-2.4", "linux") the other
/// fields override.
#[derive(Clone, Debug, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpCfg {
    #[serde(default)]
    pub profile: Option<String>,
    /// A shorthand for `cc` and `recovery`: "tahoe", "reno", "newreno", "sack";
    /// `cc` or `recovery`, if also given, replace its part (so a sweep can vary
    /// one over a scenario that names a variant).
    #[serde(default)]
    pub variant: Option<String>,
    /// Congestion control (`tcp/cc/`).
    #[serde(default)]
    pub cc: Option<crate::tcp::CcKind>,
    /// Loss recovery (`tcp/recovery/`).
    #[serde(default)]
    pub recovery: Option<crate::tcp::RecoveryKind>,
    #[serde(default)]
    pub mss: Option<u32>,
    #[serde(default)]
    pub sack: Option<bool>,
    #[serde(default)]
    pub timestamps: Option<bool>,
    #[serde(default)]
    pub window_scaling: Option<bool>,
    #[serde(default)]
    pub initial_window: Option<u32>,
    #[serde(default)]
    pub delayed_ack: Option<DelAckCfg>,
    #[serde(default)]
    pub min_rto: Option<Dur>,
    #[serde(default)]
    pub max_rto: Option<Dur>,
    #[serde(default)]
    pub initial_rto: Option<Dur>,
    #[serde(default)]
    pub timer_granularity: Option<Dur>,
    #[serde(default)]
    pub rcv_buf: Option<Size>,
    #[serde(default)]
    pub snd_buf: Option<Size>,
    #[serde(default)]
    pub source_quench: Option<bool>,
    #[serde(default)]
    pub rcv_wnd_initial: Option<Size>,
    #[serde(default)]
    pub slow_start_after_idle: Option<bool>,
    #[serde(default)]
    pub idle_restart: Option<crate::tcp::IdleRestart>,
    #[serde(default)]
    pub cwnd_clamp: Option<Size>,
    #[serde(default)]
    pub rto: Option<crate::tcp::rtt::RtoKind>,
    #[serde(default)]
    pub syn_linear_timeouts: Option<u32>,
    #[serde(default)]
    pub timer_wheel: Option<bool>,
    #[serde(default)]
    pub limited_transmit: Option<bool>,
    #[serde(default)]
    pub dsack: Option<bool>,
    #[serde(default)]
    pub frto: Option<bool>,
    #[serde(default)]
    pub ecn: Option<crate::tcp::Ecn>,
    #[serde(default)]
    pub quickack: Option<bool>,
    #[serde(default)]
    pub fin_with_data: Option<bool>,
    pub ts_recent_at_ack_point: Option<bool>,
    #[serde(default)]
    pub rwnd: Option<crate::tcp::Rwnd>,
    #[serde(default)]
    pub rcv_buf_max: Option<Size>,
    #[serde(default)]
    pub autotune: Option<bool>,
    #[serde(default)]
    pub push: Option<crate::tcp::Push>,
    #[serde(default)]
    pub comp_sack_nr: Option<u32>,
    #[serde(default)]
    pub comp_sack_delay: Option<Dur>,
}

/// Declares a `[[flow]]` application's configuration: the fields every
/// application has (`start`, `link`, `mobile`, `direction`), for a TCP
/// application `tcp` and `port` (`tcp(port N)`: N its default), then its own —
/// all optional, none other accepted. The common fields are written here once.
macro_rules! flow_app {
    ($(tcp(port $port:literal))? $(udp)?; $(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            #[serde(default)]
            pub start: Option<Dur>,
            #[serde(default)]
            pub link: Option<LinkSession>,
            /// The mobile host (0..=249, default 0): on a link its mobiles share, each
            /// mobile's flows take its own link-layer session (`link::wireless`).
            #[serde(default)]
            pub mobile: Option<u16>,
            /// Which way the data goes (default "down").
            #[serde(default)]
            pub direction: Option<Direction>,
            $(
                #[serde(default)]
                pub tcp: Option<TcpCfg>,
                #[doc = concat!("The server's port (default ", $port, ").")]
                #[serde(default)]
                pub port: Option<u16>,
            )?
            $($(#[$fm])* #[serde(default)] pub $f: $t,)*
        }
        impl $name {
            fn common(&self) -> Common<'_> {
                Common {
                    start: self.start,
                    link: self.link,
                    mobile: self.mobile,
                    direction: self.direction,
                    tcp: flow_app!(@tcp self.tcp.as_ref() $(, $port)?),
                    port: flow_app!(@tcp self.port $(, $port)?),
                }
            }
        }
    };
    // A TCP application's field (given its port's default), or None.
    (@tcp $e:expr) => { None };
    (@tcp $e:expr, $port:literal) => { $e };
}

/// What every application's configuration has.
struct Common<'a> {
    start: Option<Dur>,
    link: Option<LinkSession>,
    mobile: Option<u16>,
    direction: Option<Direction>,
    tcp: Option<&'a TcpCfg>,
    port: Option<u16>,
}

/// The applications: one line each gives the `FlowCfg` variant, its `app`
/// name in `APPS` and the parser of its section.
macro_rules! apps {
    ($($name:literal => $var:ident($cfg:ident),)+) => {
        tagged_enum! {
            /// One flow of the scenario.
            #[derive(Clone, Debug, PartialEq)]
            pub enum FlowCfg,
            pub const APPS,
            fn app,
            tag "app",
            what "a {} flow",
            kind "an application" {
                $($name => $var($cfg),)+
            }
        }

        impl FlowCfg {
            fn common(&self) -> Common<'_> {
                match self {
                    $(FlowCfg::$var(c) => c.common(),)+
                }
            }
        }
    };
}

flow_app! {
    tcp(port 5001);
    /// `app = "bulk"`: one TCP transfer of `bytes` (or unlimited) in `direction`.
    pub struct BulkCfg {
        pub bytes: Option<Bytes>,
        /// The mobile's application aborts the connection this long after the
        /// flow starts (a user stopping a download): a RST, and the flow ends
        /// unfinished (it counts as ended for `stop = "end"`).
        pub abort: Option<Dur>,
    }
}

flow_app! {
    udp;
    /// `app = "media"`: a UDP on/off speech source (seed 002 §III), bypassing the ARQ.
    pub struct MediaCfg {
        /// Sending rate while talking (default 56 kbit/s).
        pub rate: Option<Rate>,
        /// IP packet size (default 250 B).
        pub packet: Option<Size>,
        /// Mean talk-spurt length (default 1 s).
        pub talk: Option<Dur>,
        /// Mean silence length (default 1.35 s).
        pub silence: Option<Dur>,
    }
}

flow_app! {
    tcp(port 80);
    /// `app = "web"`: Mah's HTTP model, a connection per exchange.
    pub struct WebCfg {
        /// Pause between transactions (default 0 s).
        pub think: Option<Dur>,
        /// Transactions, then the flow is finished (default: unlimited).
        pub transactions: Option<u64>,
    }
}

flow_app! {
    tcp(port 5001);
    /// `app = "ttcp"` (seed 004 §VI-A): repeated downloads of `bytes`, a connection each.
    pub struct TtcpCfg {
        pub bytes: Option<Bytes>,
        /// Downloads, one after another (default 1).
        pub repeat: Option<u64>,
        pub think: Option<Dur>,
    }
}

flow_app! {
    tcp(port 80);
    /// `app = "http"` (seed 004 §VI-A): pages of `objects` objects of `bytes`.
    pub struct HttpCfg {
        pub bytes: Option<Bytes>,
        /// Objects per page (default 4).
        pub objects: Option<u64>,
        /// Request size (default 300 B).
        pub request: Option<Size>,
        /// HTTP/1.1 persistent connection per page (true) or HTTP/1.0 (false, default).
        pub persistent: Option<bool>,
        /// Each reply's first bytes written apart, before the rest (a server's status
        /// line and headers; default 0 B: the reply in one write).
        pub header: Option<Size>,
        pub think: Option<Dur>,
        /// Pause before each further request of a page (default 0 s).
        pub gap: Option<Dur>,
        /// Pages, then the flow is finished (default: unlimited).
        pub transactions: Option<u64>,
    }
}

flow_app! {
    tcp(port 23);
    /// `app = "interactive"` (seed 004 §IV): telnet-like messages on one connection.
    pub struct InteractiveCfg {
        /// Message size (default 40 B).
        pub packet: Option<Size>,
        /// Time between messages (default 1 s).
        pub interval: Option<Dur>,
        /// Messages, then the flow is finished (default: unlimited).
        pub messages: Option<u64>,
    }
}

flow_app! {
    udp;
    /// `app = "probe"` (seed 003 Fig. 2): UDP datagrams alone or in bursts.
    pub struct ProbeCfg {
        /// IP packet size (default 92 B).
        pub packet: Option<Size>,
        /// Packets per burst (default 1).
        pub burst: Option<u32>,
        /// Spacing between bursts, uniform in [min, max] (default ["5s", "10s"]).
        pub spacing: Option<Vec<Dur>>,
        /// Bursts, then the flow is finished (default: unlimited).
        pub messages: Option<u64>,
    }
}

apps! {
    "bulk" => Bulk(BulkCfg),
    "media" => Media(MediaCfg),
    "web" => Web(WebCfg),
    "ttcp" => Ttcp(TtcpCfg),
    "http" => Http(HttpCfg),
    "interactive" => Interactive(InteractiveCfg),
    "probe" => Probe(ProbeCfg),
}

impl FlowCfg {
    pub fn start(&self) -> Duration {
        self.common().start.map_or(Duration::ZERO, |d| d.0)
    }
    /// The link-layer session: as set, else bypass for media and the ARQ session
    /// for everything else (seed 002 §III).
    pub fn session(&self) -> LinkSession {
        let l = self.common().link;
        l.unwrap_or(if matches!(self, FlowCfg::Media(_)) { LinkSession::Bypass } else { LinkSession::Arq })
    }
    /// The mobile host the flow runs on (default 0).
    pub fn mobile(&self) -> u16 {
        self.common().mobile.unwrap_or(0)
    }
    /// The TCP settings of a TCP application (None: defaults, or not TCP).
    pub fn tcp(&self) -> Option<&TcpCfg> {
        self.common().tcp
    }
    pub fn direction(&self) -> Direction {
        self.common().direction.unwrap_or_default()
    }
    /// Bytes per transfer (bulk: the transfer; ttcp: each download; http: each object).
    pub fn bytes(&self) -> Option<u64> {
        match self {
            FlowCfg::Bulk(c) => c.bytes.and_then(|b| b.0),
            FlowCfg::Ttcp(c) => c.bytes.and_then(|b| b.0),
            FlowCfg::Http(c) => c.bytes.and_then(|b| b.0),
            _ => None,
        }
    }
    /// Whether the flow ends by itself (so `stop = "end"` can wait for it).
    pub fn finite(&self) -> bool {
        match self {
            FlowCfg::Bulk(c) => c.bytes.is_some_and(|b| b.0.is_some()),
            FlowCfg::Web(c) => c.transactions.is_some(),
            FlowCfg::Http(c) => c.transactions.is_some(),
            FlowCfg::Ttcp(_) => true,
            FlowCfg::Interactive(c) => c.messages.is_some(),
            FlowCfg::Media(_) | FlowCfg::Probe(_) => false,
        }
    }

    /// Checks values the types cannot, for flow `i`.
    pub(super) fn validate(&self, i: usize, stop_end: bool) -> Result<(), ConfigError> {
        let p = |k: &str| format!("flow[{i}].{k}");
        let port = self.common().port;
        if port == Some(0) {
            return Err(cerr(p("port"), "must be a TCP port between 1 and 65535"));
        }
        let downloads_only = !matches!(self, FlowCfg::Bulk(_) | FlowCfg::Media(_) | FlowCfg::Probe(_));
        if downloads_only && self.common().direction == Some(Direction::Up) {
            return Err(cerr(
                p("direction"),
                format!("a {} flow always downloads: use \"down\" or leave it out", self.app()),
            ));
        }
        let counts: &[(&str, Option<u64>)] = match self {
            FlowCfg::Web(c) => &[("transactions", c.transactions)],
            FlowCfg::Ttcp(c) => &[("repeat", c.repeat)],
            FlowCfg::Http(c) => &[("transactions", c.transactions), ("objects", c.objects)],
            FlowCfg::Interactive(c) => &[("messages", c.messages)],
            FlowCfg::Probe(c) => &[("messages", c.messages)],
            _ => &[],
        };
        for (k, n) in counts {
            if *n == Some(0) {
                return Err(cerr(p(k), "must be at least 1"));
            }
        }
        let positive: &[(&str, Option<Dur>)] = match self {
            FlowCfg::Media(c) => &[("talk", c.talk), ("silence", c.silence)],
            FlowCfg::Interactive(c) => &[("interval", c.interval)],
            _ => &[],
        };
        for (k, d) in positive {
            if d.is_some_and(|d| d.0.nanos() <= 0) {
                return Err(cerr(p(k), "must be a positive duration"));
            }
        }
        let non_negative: &[(&str, Option<Dur>)] = match self {
            FlowCfg::Web(c) => &[("think", c.think)],
            FlowCfg::Ttcp(c) => &[("think", c.think)],
            FlowCfg::Http(c) => &[("think", c.think), ("gap", c.gap)],
            _ => &[],
        };
        for (k, d) in non_negative {
            if d.is_some_and(|d| d.0.nanos() < 0) {
                return Err(cerr(p(k), "must not be negative"));
            }
        }
        match self {
            FlowCfg::Probe(c) => {
                if let Some(Size(s)) = c.packet {
                    if !(29..=65535).contains(&s) {
                        return Err(cerr(
                            p("packet"),
                            "must be between 29B and 65535B (an IP packet with a UDP header)",
                        ));
                    }
                }
                if c.burst == Some(0) {
                    return Err(cerr(p("burst"), "must be at least 1 packet"));
                }
                if let Some(v) = &c.spacing {
                    if v.len() != 2 || v[0].0 <= Duration::ZERO || v[1].0 < v[0].0 {
                        return Err(cerr(
                            p("spacing"),
                            "give a range [min, max] of positive durations, min ≤ max, e.g. [\"5s\", \"10s\"]",
                        ));
                    }
                }
            }
            FlowCfg::Media(c) => {
                if let Some(Size(s)) = c.packet {
                    if !(29..=65535).contains(&s) {
                        return Err(cerr(
                            p("packet"),
                            "must be between 29B and 65535B (an IP packet with a UDP header)",
                        ));
                    }
                }
            }
            FlowCfg::Interactive(c) => {
                if let Some(Size(s)) = c.packet {
                    if !(1..=65535).contains(&s) {
                        return Err(cerr(p("packet"), "must be a message of 1B to 65535B"));
                    }
                }
            }
            FlowCfg::Ttcp(TtcpCfg { bytes, .. }) | FlowCfg::Http(HttpCfg { bytes, .. })
                if bytes.is_none_or(|b| b.0.is_none() || b.0 == Some(0)) =>
            {
                return Err(cerr(
                    p("bytes"),
                    format!("a {} flow needs a finite size per download, e.g. bytes = \"10KB\"", self.app()),
                ));
            }
            _ => {}
        }
        if let Some(t) = self.tcp() {
            validate_tcp(t, i)?;
        }
        if stop_end && !matches!(self, FlowCfg::Media(_) | FlowCfg::Probe(_)) && !self.finite() {
            let what = match self {
                FlowCfg::Bulk(_) => "bytes = \"10MB\"",
                FlowCfg::Interactive(_) => "messages = 100",
                _ => "transactions = 10",
            };
            return Err(cerr(
                p(what.split(' ').next().unwrap()),
                format!(
                    "stop = \"end\" needs every flow to end by itself; give {what} or set stop to a duration such as \"2000s\""
                ),
            ));
        }
        Ok(())
    }
}

fn validate_tcp(t: &TcpCfg, i: usize) -> Result<(), ConfigError> {
    let p = |k: &str| format!("flow[{i}].tcp.{k}");
    if let Some(pr) = &t.profile {
        if crate::tcp::TcpConfig::profile(pr).is_none() {
            return Err(cerr(
                p("profile"),
                format!(
                    "{pr:?} is not a TCP profile; use one of {}",
                    crate::tcp::TcpConfig::PROFILES.map(|p| format!("{p:?}")).join(", ")
                ),
            ));
        }
    }
    if let Some(v) = &t.variant {
        if crate::tcp::Variant::parse(v).is_none() {
            return Err(cerr(
                p("variant"),
                format!("{v:?} is not a TCP variant; use one of \"tahoe\", \"reno\", \"newreno\", \"sack\""),
            ));
        }
    }
    if let Some(m) = t.mss {
        if !(64..=65495).contains(&m) {
            return Err(cerr(p("mss"), format!("{m} is not an MSS between 64 and 65495")));
        }
    }
    for (name, v) in [("rcv_buf", t.rcv_buf), ("snd_buf", t.snd_buf)] {
        if let Some(Size(b)) = v {
            if b == 0 || b > (1 << 30) {
                return Err(cerr(p(name), "must be between 1B and 1GiB"));
            }
        }
    }
    if t.syn_linear_timeouts.is_some_and(|n| n > 100) {
        return Err(cerr(p("syn_linear_timeouts"), "must be between 0 and 100"));
    }
    if t.initial_window.is_some_and(|w| w == 0 || w > 1000) {
        return Err(cerr(p("initial_window"), "must be between 1 and 1000 segments"));
    }
    // The kernel's sysctl is a byte (`tcp_comp_sack_nr`, 0 to 255).
    if t.comp_sack_nr.is_some_and(|n| n > 255) {
        return Err(cerr(p("comp_sack_nr"), "must be between 0 (off) and 255 ACKs"));
    }
    dur_within(&p("comp_sack_delay"), t.comp_sack_delay, Duration::ZERO, Duration::from_secs(1))?;
    // Timers below 1 ms stop simulated time from advancing in practice (a 0 s RTO
    // fired at the same instant for ever), so RTOs are 1 ms to 1,000,000 s.
    let ms = Duration::from_millis(1);
    let longest = Duration::from_secs(crate::units::MAX_DURATION_S);
    for (k, d) in [("min_rto", t.min_rto), ("max_rto", t.max_rto), ("initial_rto", t.initial_rto)] {
        dur_within(&p(k), d, ms, longest)?;
    }
    dur_within(&p("timer_granularity"), t.timer_granularity, Duration::ZERO, Duration::from_secs(10))?;
    if let Some(d) = &t.delayed_ack {
        if d.count.is_some_and(|c| c == 0 || c > 64) {
            return Err(cerr(p("delayed_ack.count"), "must be between 1 and 64 segments"));
        }
        dur_within(&p("delayed_ack.timeout"), d.timeout, ms, Duration::from_secs(10))?;
    }
    // A window below one minimal segment never lets a byte through (a run that
    // once ended at once with exit 0).
    for (k, v) in [("rcv_wnd_initial", t.rcv_wnd_initial), ("cwnd_clamp", t.cwnd_clamp), ("rcv_buf_max", t.rcv_buf_max)]
    {
        if v.is_some_and(|Size(b)| !(64..=1 << 30).contains(&b)) {
            return Err(cerr(p(k), "must be between 64B (one minimal segment) and 1GiB"));
        }
    }
    if t.cc == Some(crate::tcp::CcKind::Clamp) && t.cwnd_clamp.is_none() {
        return Err(cerr(p("cc"), "\"clamp\" is a fixed window: give its size as tcp.cwnd_clamp (e.g. \"9.7KB\")"));
    }
    // Contradictory pairs, with the profile's values for the one not given.
    let d = t.profile.as_deref().and_then(crate::tcp::TcpConfig::profile).unwrap_or_default();
    let min = t.min_rto.map_or(d.min_rto, |x| x.0);
    let max = t.max_rto.map_or(d.max_rto, |x| x.0);
    if min > max {
        let (k, other) = if t.min_rto.is_some() { ("min_rto", "max_rto") } else { ("max_rto", "min_rto") };
        return Err(cerr(
            p(k),
            format!(
                "min_rto ({}s) must not exceed max_rto ({}s); set {other} too",
                min.as_secs_f64(),
                max.as_secs_f64()
            ),
        ));
    }
    Ok(())
}

/// A duration field within `[lo, hi]`; the error names the range.
pub(super) fn dur_within(path: &str, d: Option<Dur>, lo: Duration, hi: Duration) -> Result<(), ConfigError> {
    if d.is_some_and(|d| d.0 < lo || d.0 > hi) {
        return Err(cerr(path, format!("must be between {} and {}", as_unit(lo), as_unit(hi))));
    }
    Ok(())
}

/// A whole number of seconds or milliseconds as written in a scenario ("10s", "1ms").
fn as_unit(d: Duration) -> String {
    let ms = d.nanos() / 1_000_000;
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
