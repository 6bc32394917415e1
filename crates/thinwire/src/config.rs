//! Scenario schema: TOML with units, parsed with `deny_unknown_fields`; every error
//! names the field path and what is accepted.
//!
//! Overrides (`--set KEY=VALUE`) are applied to the TOML tree before typing: dotted
//! paths, list items by index (`flow.0.bytes=1MB`); the value is read as a TOML
//! value when it parses as one, else as a string.
use crate::time::Duration;
use crate::units;
use serde::{de, Deserialize, Deserializer};

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:path, $what:expr) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
unit_type!(Rate, u64, units::parse_rate, "a rate string such as \"64kbps\"");
unit_type!(Size, u64, units::parse_size, "a size string such as \"250B\" or \"10MB\"");
unit_type!(Dur, Duration, units::parse_duration, "a duration string such as \"50ms\"");
unit_type!(Timer, Option<Duration>, parse_timer, "a duration string such as \"200ms\", or \"off\"");

/// A timer setting: a positive duration, or "off" (the timer is not used).
fn parse_timer(s: &str) -> Result<Option<Duration>, String> {
    if s.trim() == "off" {
        return Ok(None);
    }
    let d = units::parse_duration(s).map_err(|e| format!("{e}, or \"off\""))?;
    if d <= Duration::ZERO {
        return Err(format!("{s:?} is not a positive duration; use e.g. \"200ms\", or \"off\""));
    }
    Ok(Some(d))
}

pub use crate::queue::Limit;

/// A queue limit: `"50pkt"` (packets) or a size (`"64KB"`).
impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if let Some(n) = s.trim().strip_suffix("pkt").or_else(|| s.trim().strip_suffix("packets")) {
            return n.trim().parse::<u32>().ok().filter(|&n| n > 0).map(Limit::Packets).ok_or_else(|| {
                de::Error::custom(format!("{s:?} is not a queue limit; use \"50pkt\" or a size such as \"64KB\""))
            });
        }
        units::parse_size(&s).ok().filter(|&b| b > 0).map(Limit::Bytes).ok_or_else(|| {
            de::Error::custom(format!("{s:?} is not a queue limit; use \"50pkt\" or a size such as \"64KB\""))
        })
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueCfg {
    pub limit: Limit,
}
impl Default for QueueCfg {
    fn default() -> Self {
        QueueCfg { limit: Limit::Packets(50) }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wired {
    pub rate: Rate,
    pub delay: Dur,
    #[serde(default)]
    pub queue: Option<QueueCfg>,
}
impl Default for Wired {
    fn default() -> Self {
        Wired { rate: Rate(10_000_000), delay: Dur(Duration::from_millis(1)), queue: None }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StateCfg {
    pub ber: f64,
    pub mean: Dur,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, tag = "model")]
pub enum ChannelCfg {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "uniform")]
    Uniform { p: f64 },
    #[serde(rename = "two-state")]
    TwoState { good: StateCfg, bad: StateCfg },
    #[serde(rename = "fading")]
    Fading {
        pe: f64,
        fdt: f64,
        #[serde(default)]
        frame_time: Option<Dur>,
    },
    #[serde(rename = "droplist")]
    DropList { frames: Vec<u64> },
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct DirCfg {
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Dur>,
    #[serde(default)]
    pub channel: Option<ChannelCfg>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
/// Link-layer protocol settings. Fields of other protocols than the one chosen are
/// ignored, so that a sweep can vary `protocol` over one base scenario.
pub struct ArqCfg {
    pub protocol: String,
    #[serde(default)]
    pub window: Option<u32>,
    #[serde(default)]
    pub ack_delay: Option<Dur>,
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// ASR policy "α+β", e.g. "3+2".
    #[serde(default)]
    pub policy: Option<String>,
    #[serde(default)]
    pub initial_srtt: Option<Dur>,
    #[serde(default)]
    pub renack: Option<Dur>,
    /// RLC: Table I column, "uniform" (default) or "two-state"; the fields below override it.
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub max_retransmissions: Option<u32>,
    #[serde(default)]
    pub poll_timer: Option<Timer>,
    /// RLC window-based polling threshold in percent, or 0 for none.
    #[serde(default)]
    pub poll_window: Option<u32>,
    #[serde(default)]
    pub poll_last_tx: Option<bool>,
    #[serde(default)]
    pub poll_last_retx: Option<bool>,
    #[serde(default)]
    pub poll_prohibit: Option<Timer>,
    #[serde(default)]
    pub status_missing: Option<bool>,
    #[serde(default)]
    pub status_periodic: Option<Timer>,
    #[serde(default)]
    pub status_prohibit: Option<Timer>,
    #[serde(default)]
    pub mrw_timer: Option<Dur>,
    #[serde(default)]
    pub pad: Option<bool>,
    /// IS-707: NAKs per recovery round, e.g. [1, 2, 3].
    #[serde(default)]
    pub nak_rounds: Option<Vec<u32>>,
    /// IS-707: how long each NAK round waits.
    #[serde(default)]
    pub nak_timer: Option<Dur>,
    /// IS-707: idle frames after the last data frame: a number or "unlimited".
    #[serde(default)]
    pub idle_frames: Option<IdleFrames>,
    /// GSM RLP: maximum retransmissions of a frame (and of a poll) before the link is reset.
    #[serde(default)]
    pub n2: Option<u32>,
    /// GSM RLP: acknowledgement timer T1.
    #[serde(default)]
    pub t1: Option<Dur>,
    /// GSM RLP: what exceeding N2 does, "reset" (default) or "drop-call".
    #[serde(default)]
    pub on_n2: Option<String>,
    /// GSM RLP: VJ TCP/IP header compression (RFC 1144) on the PPP link.
    #[serde(default)]
    pub header_compression: Option<bool>,
    /// GSM RLP: PPP reports damaged frames to the VJ decompressor (RFC 1144 toss).
    #[serde(default)]
    pub vj_toss_on_error: Option<bool>,
    /// GSM RLP: L2R relay rate at the network side (seed 000: 960 bytes/s = "7680bps").
    #[serde(default)]
    pub l2r_rate: Option<Rate>,
    /// GSM RLP: L2R buffer above which the network side's RLP signals "not ready".
    #[serde(default)]
    pub l2r_buffer: Option<Size>,
    /// GPRS: idle time after which the next packet pays a TBF set-up delay.
    #[serde(default)]
    pub tbf_idle: Option<Dur>,
    /// GPRS: set-up delay range [min, max] on the downlink / uplink.
    #[serde(default)]
    pub setup_down: Option<Vec<Dur>>,
    #[serde(default)]
    pub setup_up: Option<Vec<Dur>>,
    /// GPRS: packets the link layer holds (the rest wait in the interface queue).
    #[serde(default)]
    pub rlc_buffer: Option<u32>,
    /// GPRS: packets held longer than this are dropped when an outage ends.
    #[serde(default)]
    pub pdu_lifetime: Option<Dur>,
    /// GPRS: mean time between outages (exponential); absent: none.
    #[serde(default)]
    pub outage_every: Option<Dur>,
    /// GPRS: outage length range [min, max] (uniform).
    #[serde(default)]
    pub outage_duration: Option<Vec<Dur>>,
    /// GPRS: outages at fixed times, each [start, length], e.g. [["90s", "25s"]]
    /// (instead of random ones).
    #[serde(default)]
    pub outages: Option<Vec<Vec<Dur>>>,
    /// GPRS: uplink allocation period (ACK bunching); absent: none.
    #[serde(default)]
    pub uplink_period: Option<Dur>,
    /// GPRS: mean time between poor-radio periods; their length range; the rate share left.
    #[serde(default)]
    pub poor_every: Option<Dur>,
    #[serde(default)]
    pub poor_duration: Option<Vec<Dur>>,
    #[serde(default)]
    pub poor_share: Option<f64>,
}

/// `idle_frames = 5` or `idle_frames = "unlimited"`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum IdleFrames {
    Count(u32),
    Word(String),
}

impl Default for ArqCfg {
    fn default() -> Self {
        ArqCfg {
            protocol: "raw".into(),
            window: None,
            ack_delay: None,
            timeout: None,
            policy: None,
            initial_srtt: None,
            renack: None,
            preset: None,
            max_retransmissions: None,
            poll_timer: None,
            poll_window: None,
            poll_last_tx: None,
            poll_last_retx: None,
            poll_prohibit: None,
            status_missing: None,
            status_periodic: None,
            status_prohibit: None,
            mrw_timer: None,
            pad: None,
            nak_rounds: None,
            nak_timer: None,
            idle_frames: None,
            n2: None,
            t1: None,
            on_n2: None,
            header_compression: None,
            vj_toss_on_error: None,
            l2r_rate: None,
            l2r_buffer: None,
            tbf_idle: None,
            setup_down: None,
            setup_up: None,
            rlc_buffer: None,
            pdu_lifetime: None,
            outage_every: None,
            outage_duration: None,
            outages: None,
            uplink_period: None,
            poor_every: None,
            poor_duration: None,
            poor_share: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wireless {
    pub rate: Rate,
    pub delay: Dur,
    #[serde(default = "default_frame")]
    pub frame: Size,
    #[serde(default = "default_header")]
    pub header: Size,
    #[serde(default)]
    pub queue: Option<QueueCfg>,
    #[serde(default)]
    pub channel: Option<ChannelCfg>,
    #[serde(default)]
    pub down: Option<DirCfg>,
    #[serde(default)]
    pub up: Option<DirCfg>,
    #[serde(default)]
    pub arq: Option<ArqCfg>,
    /// How the two link-layer sessions (ARQ and bypass) share the radio, frame by
    /// frame: "round-robin" (default), "arq-first" or "bypass-first" (strict priority).
    #[serde(default)]
    pub scheduler: Option<String>,
    /// "pull" (default): the radio pulls the next frame from a session when it is
    /// free. "shared-queue": sessions push frames as soon as they have them into one
    /// drop-tail frame queue served in order (ns-2's interface queue below the link
    /// layer), so ARQ timers also run while a frame waits in that queue.
    #[serde(default)]
    pub mux: Option<String>,
    /// Frame queue limit for `mux = "shared-queue"`, in frames. Default 50.
    #[serde(default)]
    pub frame_queue: Option<u32>,
}
fn default_frame() -> Size {
    Size(250)
}
fn default_header() -> Size {
    Size(4)
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct DelAckCfg {
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub timeout: Option<Dur>,
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TcpCfg {
    /// Preset the other fields override: "default", "bsd" or "linux".
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub variant: Option<String>,
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
    pub cwnd_clamp: Option<Size>,
}

/// `bytes = "10MB"` or `bytes = "unlimited"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bytes(pub Option<u64>);
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "unlimited" {
            return Ok(Bytes(None));
        }
        units::parse_size(&s).map(|b| Bytes(Some(b))).map_err(|e| de::Error::custom(format!("{e}, or \"unlimited\"")))
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowCfg {
    pub app: String,
    #[serde(default)]
    pub bytes: Option<Bytes>,
    #[serde(default = "default_dir")]
    pub direction: String,
    #[serde(default)]
    pub start: Option<Dur>,
    #[serde(default)]
    pub tcp: Option<TcpCfg>,
    /// Link-layer session: "arq" (the configured protocol) or "bypass" (unreliable,
    /// no ARQ). Default: "arq" for bulk, "bypass" for media (seed 002 §III).
    #[serde(default)]
    pub link: Option<String>,
    /// Media: sending rate while talking (default 56 kbit/s).
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Media: IP packet size (default 250 B).
    #[serde(default)]
    pub packet: Option<Size>,
    /// Media: mean talk-spurt length (default 1 s).
    #[serde(default)]
    pub talk: Option<Dur>,
    /// Media: mean silence length (default 1.35 s).
    #[serde(default)]
    pub silence: Option<Dur>,
    /// Web: pause between transactions (default 0 s).
    #[serde(default)]
    pub think: Option<Dur>,
    /// Web and http: number of transactions (pages), then the flow is finished
    /// (default: unlimited).
    #[serde(default)]
    pub transactions: Option<u64>,
    /// ttcp: number of downloads, one connection each, one after another (default 1).
    #[serde(default)]
    pub repeat: Option<u64>,
    /// http: objects per page, each `bytes` long (default 4).
    #[serde(default)]
    pub objects: Option<u64>,
    /// http: request size (default 300 B).
    #[serde(default)]
    pub request: Option<Size>,
    /// http: HTTP/1.1 persistent connection per page (true) or HTTP/1.0, a
    /// connection per object (false, the default).
    #[serde(default)]
    pub persistent: Option<bool>,
    /// http: pause before each further request of a page, after the previous
    /// object arrived (browser parsing, default 0 s).
    #[serde(default)]
    pub gap: Option<Dur>,
    /// interactive: time between messages (default 1 s).
    #[serde(default)]
    pub interval: Option<Dur>,
    /// interactive: number of messages, then the flow is finished; probe: number of
    /// bursts (default: unlimited).
    #[serde(default)]
    pub messages: Option<u64>,
    /// The server's TCP port (default: bulk 5001, web/http 80, ttcp 5001,
    /// interactive 23); the proxy's priority classes go by it.
    #[serde(default)]
    pub port: Option<u16>,
    /// probe: packets per burst (default 1).
    #[serde(default)]
    pub burst: Option<u32>,
    /// probe: spacing between bursts, uniform in [min, max] (default ["5s", "10s"]).
    #[serde(default)]
    pub spacing: Option<Vec<Dur>>,
}

/// Fields each application takes (besides `app`, `start`, `tcp`).
pub const APP_FIELDS: &[(&str, &[&str])] = &[
    ("bulk", &["bytes", "direction", "link", "port"]),
    ("media", &["direction", "link", "rate", "packet", "talk", "silence"]),
    ("web", &["think", "transactions", "link", "port"]),
    ("ttcp", &["bytes", "repeat", "think", "link", "port"]),
    ("http", &["bytes", "objects", "request", "persistent", "think", "gap", "transactions", "link", "port"]),
    ("interactive", &["packet", "interval", "messages", "link", "port"]),
    ("probe", &["direction", "link", "packet", "burst", "spacing", "messages"]),
];

impl FlowCfg {
    /// The optional fields this flow sets.
    fn present(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let fields: [(&'static str, bool); 20] = [
            ("port", self.port.is_some()),
            ("gap", self.gap.is_some()),
            ("burst", self.burst.is_some()),
            ("spacing", self.spacing.is_some()),
            ("bytes", self.bytes.is_some()),
            ("direction", self.direction != "down"),
            ("tcp", self.tcp.is_some()),
            ("link", self.link.is_some()),
            ("rate", self.rate.is_some()),
            ("packet", self.packet.is_some()),
            ("talk", self.talk.is_some()),
            ("silence", self.silence.is_some()),
            ("think", self.think.is_some()),
            ("transactions", self.transactions.is_some()),
            ("repeat", self.repeat.is_some()),
            ("objects", self.objects.is_some()),
            ("request", self.request.is_some()),
            ("persistent", self.persistent.is_some()),
            ("interval", self.interval.is_some()),
            ("messages", self.messages.is_some()),
        ];
        for (k, p) in fields {
            if p {
                v.push(k);
            }
        }
        v
    }
    /// Whether the flow ends by itself (so `stop = "end"` can wait for it).
    pub fn finite(&self) -> bool {
        match self.app.as_str() {
            "bulk" => self.bytes.is_some_and(|b| b.0.is_some()),
            "web" | "http" => self.transactions.is_some(),
            "ttcp" => true,
            "interactive" => self.messages.is_some(),
            _ => false,
        }
    }
}
fn default_dir() -> String {
    "down".into()
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TraceCfg {
    /// Layers to record: any of "tcp", "link", "queue", "channel".
    #[serde(default)]
    pub layers: Vec<String>,
    /// Record pcap taps at the server and the mobile host.
    #[serde(default)]
    pub pcap: bool,
}

/// `stop = "end"` or a duration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    End,
    At(Duration),
}
impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "end" {
            return Ok(Stop::End);
        }
        units::parse_duration(&s)
            .ok()
            .filter(|d| d.nanos() > 0)
            .map(Stop::At)
            .ok_or_else(|| de::Error::custom(format!("{s:?} is not \"end\" or a positive duration such as \"60s\"")))
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub run: u64,
    #[serde(default = "default_stop")]
    pub stop: Stop,
    /// Upper bound on simulated time when `stop = "end"`. Default 100000 s.
    #[serde(default)]
    pub max_time: Option<Dur>,
    #[serde(default)]
    pub wired: Wired,
    pub wireless: Wireless,
    #[serde(default)]
    pub flow: Vec<FlowCfg>,
    #[serde(default)]
    pub trace: TraceCfg,
    /// A split-TCP proxy at the gateway (src/proxy); absent = none.
    #[serde(default)]
    pub proxy: Option<ProxyCfg>,
}

/// `[proxy]`: the split-TCP proxy's parameters (defaults in src/proxy/mod.rs).
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ProxyCfg {
    /// Fixed wireless-side window; default (1 + headroom)·link_rate·link_rtt.
    #[serde(default)]
    pub clamp: Option<Size>,
    /// Estimate the clamp from the minimum RTT measured (default false).
    #[serde(default)]
    pub estimate_clamp: Option<bool>,
    /// Default: the wireless downlink's rate.
    #[serde(default)]
    pub link_rate: Option<Rate>,
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
    #[serde(default)]
    pub min_rto: Option<Dur>,
    #[serde(default)]
    pub initial_rto: Option<Dur>,
    #[serde(default)]
    pub max_rto: Option<Dur>,
    #[serde(default)]
    pub mss: Option<u32>,
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
fn default_seed() -> u64 {
    1
}
fn default_stop() -> Stop {
    Stop::End
}

/// A configuration error: the field path and the message.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}
impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if self.path.is_empty() || self.path == "." {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}
/// Joins a multi-line message into one line.
fn one_line(m: &str) -> String {
    m.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(", ")
}
fn cerr(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { path: path.into(), message: message.into() }
}

/// Parses TOML text, applies `KEY=VALUE` overrides, and types the result.
pub fn parse_scenario(text: &str, overrides: &[String]) -> Result<Scenario, ConfigError> {
    let mut value: toml::Value = text.parse::<toml::Table>().map(toml::Value::Table).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" at line {l}")).unwrap_or_default();
        cerr("", format!("malformed TOML{at}: {}", one_line(e.message())))
    })?;
    for o in overrides {
        apply_override(&mut value, o)?;
    }
    let sc: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().to_string();
        let msg = msg.lines().next().unwrap_or("").split(" in `").next().unwrap_or("").trim().to_string();
        cerr(path, msg)
    })?;
    validate(&sc)?;
    Ok(sc)
}

fn apply_override(root: &mut toml::Value, o: &str) -> Result<(), ConfigError> {
    let (key, raw) =
        o.split_once('=').ok_or_else(|| cerr("--set", format!("{o:?} is not KEY=VALUE (e.g. flow.0.bytes=1MB)")))?;
    let key = key.trim();
    let val: toml::Value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(cerr("--set", format!("{key:?} is not a dotted field path")));
    }
    let mut cur = root;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(p.to_string(), val);
                    return Ok(());
                }
                let next_is_index = parts[i + 1].parse::<usize>().is_ok();
                t.entry(p.to_string()).or_insert_with(|| {
                    if next_is_index {
                        toml::Value::Array(vec![])
                    } else {
                        toml::Value::Table(Default::default())
                    }
                })
            }
            toml::Value::Array(a) => {
                let idx: usize = p
                    .parse()
                    .map_err(|_| cerr(parts[..i].join("."), format!("is a list; index it with a number, not {p:?}")))?;
                if idx >= a.len() {
                    return Err(cerr(
                        parts[..i].join("."),
                        format!("has {} item(s); index {idx} is out of range", a.len()),
                    ));
                }
                if last {
                    a[idx] = val;
                    return Ok(());
                }
                &mut a[idx]
            }
            _ => return Err(cerr(parts[..i].join("."), "is not a table or list, so it has no fields")),
        };
    }
    Ok(())
}

fn validate_channel(c: &ChannelCfg, path: &str) -> Result<(), ConfigError> {
    match c {
        ChannelCfg::Uniform { p } if !(0.0..=1.0).contains(p) => {
            Err(cerr(format!("{path}.p"), format!("{p} is not a probability in [0, 1]")))
        }
        ChannelCfg::TwoState { good, bad } => {
            for (n, s) in [("good", good), ("bad", bad)] {
                if !(0.0..=1.0).contains(&s.ber) {
                    return Err(cerr(
                        format!("{path}.{n}.ber"),
                        format!("{} is not a bit error rate in [0, 1]", s.ber),
                    ));
                }
                if s.mean.0.nanos() <= 0 {
                    return Err(cerr(format!("{path}.{n}.mean"), "must be a positive duration"));
                }
            }
            Ok(())
        }
        ChannelCfg::Fading { pe, fdt, .. } => {
            if !(*pe > 0.0 && *pe < 1.0) {
                return Err(cerr(format!("{path}.pe"), format!("{pe} is not a frame error rate in (0, 1)")));
            }
            if !(*fdt > 0.0) {
                return Err(cerr(format!("{path}.fdt"), format!("{fdt} is not a positive normalised Doppler")));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn validate(sc: &Scenario) -> Result<(), ConfigError> {
    let w = &sc.wireless;
    if w.frame.0 == 0 || w.frame.0 > 65535 {
        return Err(cerr("wireless.frame", "must be between 1B and 65535B"));
    }
    if let Some(c) = &w.channel {
        validate_channel(c, "wireless.channel")?;
    }
    for (n, d) in [("down", &w.down), ("up", &w.up)] {
        if let Some(c) = d.as_ref().and_then(|d| d.channel.as_ref()) {
            validate_channel(c, &format!("wireless.{n}.channel"))?;
        }
    }
    if let Some(a) = &w.arq {
        if !["raw", "sr", "asr", "rlc", "is707", "rlp-gsm", "gprs"].contains(&a.protocol.as_str()) {
            return Err(cerr("wireless.arq.protocol", format!("{:?} is not a link protocol; use one of \"raw\", \"sr\", \"asr\", \"rlc\", \"is707\", \"rlp-gsm\", \"gprs\"", a.protocol)));
        }
        for (k, r) in [
            ("setup_down", &a.setup_down),
            ("setup_up", &a.setup_up),
            ("outage_duration", &a.outage_duration),
            ("poor_duration", &a.poor_duration),
        ] {
            if let Some(v) = r {
                if v.len() != 2 || v[0].0 < Duration::ZERO || v[1].0 < v[0].0 {
                    return Err(cerr(
                        format!("wireless.arq.{k}"),
                        "give a range [min, max] of durations, min ≤ max, e.g. [\"300ms\", \"2s\"]",
                    ));
                }
            }
        }
        for (k, d) in [
            ("tbf_idle", a.tbf_idle),
            ("pdu_lifetime", a.pdu_lifetime),
            ("outage_every", a.outage_every),
            ("uplink_period", a.uplink_period),
            ("poor_every", a.poor_every),
        ] {
            if d.is_some_and(|d| d.0 <= Duration::ZERO) {
                return Err(cerr(format!("wireless.arq.{k}"), "must be a positive duration"));
            }
        }
        if let Some(list) = &a.outages {
            if a.outage_every.is_some() {
                return Err(cerr("wireless.arq.outages", "give either fixed outages or outage_every, not both"));
            }
            let mut last = Duration::ZERO;
            for (i, o) in list.iter().enumerate() {
                if o.len() != 2 || o[0].0 < last || o[1].0 <= Duration::ZERO {
                    return Err(cerr(format!("wireless.arq.outages[{i}]"), "give [start, length] with a positive length, in time order without overlap, e.g. [\"90s\", \"25s\"]"));
                }
                last = o[0].0 + o[1].0;
            }
        }
        if a.poor_share.is_some_and(|s| !(s > 0.0 && s <= 1.0)) {
            return Err(cerr("wireless.arq.poor_share", "must be a share of the rate in (0, 1]"));
        }
        if a.rlc_buffer == Some(0) {
            return Err(cerr("wireless.arq.rlc_buffer", "must be at least 1 packet"));
        }
        let gsm = a.protocol == "rlp-gsm";
        if let Some(o) = &a.on_n2 {
            if !["reset", "drop-call"].contains(&o.as_str()) {
                return Err(cerr("wireless.arq.on_n2", format!("{o:?}: use \"reset\" or \"drop-call\"")));
            }
        }
        if a.n2.is_some_and(|n| n == 0 || n > 255) {
            return Err(cerr("wireless.arq.n2", "must be between 1 and 255 retransmissions"));
        }
        if a.t1.is_some_and(|d| d.0 <= Duration::ZERO) {
            return Err(cerr("wireless.arq.t1", "must be a positive duration"));
        }
        if a.l2r_rate.is_some_and(|r| r.0 < 8) {
            return Err(cerr("wireless.arq.l2r_rate", "must be at least 8bps (one byte per second)"));
        }
        if a.l2r_buffer.is_some_and(|b| b.0 == 0 || b.0 > 1 << 20) {
            return Err(cerr("wireless.arq.l2r_buffer", "must be between 1B and 1MiB"));
        }
        if gsm && a.window.is_some_and(|w| w > 61) {
            return Err(cerr("wireless.arq.window", "GSM RLP (modulus 64) allows at most 61 frames"));
        }
        if let Some(IdleFrames::Word(w)) = &a.idle_frames {
            if w != "unlimited" {
                return Err(cerr(
                    "wireless.arq.idle_frames",
                    format!("{w:?}: give a number of frames or \"unlimited\""),
                ));
            }
        }
        if let Some(r) = &a.nak_rounds {
            if r.len() > 10 || r.iter().any(|&n| n == 0 || n > 10) {
                return Err(cerr(
                    "wireless.arq.nak_rounds",
                    "give at most 10 rounds of 1 to 10 NAKs each, e.g. [1, 2, 3]",
                ));
            }
        }
        if a.nak_timer.is_some_and(|d| d.0 <= Duration::ZERO) {
            return Err(cerr("wireless.arq.nak_timer", "must be a positive duration"));
        }
        if let Some(p) = &a.preset {
            if crate::link::rlc_am::RlcConfig::preset(p).is_none() {
                return Err(cerr(
                    "wireless.arq.preset",
                    format!("{p:?} is not an RLC preset; use \"uniform\" or \"two-state\" (seed 002 Table I)"),
                ));
            }
        }
        if a.poll_window.is_some_and(|p| p > 100) {
            return Err(cerr("wireless.arq.poll_window", "is a percentage of the window: 0 (off) to 100"));
        }
        if a.max_retransmissions.is_some_and(|x| x > 1000) {
            return Err(cerr("wireless.arq.max_retransmissions", "must be at most 1000"));
        }
        if a.mrw_timer.is_some_and(|d| d.0 <= Duration::ZERO) {
            return Err(cerr("wireless.arq.mrw_timer", "must be a positive duration"));
        }
        if let Some(p) = &a.policy {
            parse_policy(p).ok_or_else(|| {
                cerr("wireless.arq.policy", format!("{p:?} is not an ASR policy \"α+β\" such as \"3+2\""))
            })?;
        }
        if a.window == Some(0) {
            return Err(cerr("wireless.arq.window", "must be at least 1 frame"));
        }
    }
    if let Some(m) = &w.mux {
        if !["pull", "shared-queue"].contains(&m.as_str()) {
            return Err(cerr("wireless.mux", format!("{m:?} is not a multiplexer; use \"pull\" or \"shared-queue\"")));
        }
    }
    if w.frame_queue == Some(0) {
        return Err(cerr("wireless.frame_queue", "must be at least 1 frame"));
    }
    if let Some(s) = &w.scheduler {
        if !["round-robin", "arq-first", "bypass-first"].contains(&s.as_str()) {
            return Err(cerr(
                "wireless.scheduler",
                format!("{s:?} is not a scheduler; use \"round-robin\", \"arq-first\" or \"bypass-first\""),
            ));
        }
    }
    for (i, f) in sc.flow.iter().enumerate() {
        let Some((_, allowed)) = APP_FIELDS.iter().find(|(a, _)| *a == f.app) else {
            let names: Vec<String> = APP_FIELDS.iter().map(|(a, _)| format!("{a:?}")).collect();
            return Err(cerr(
                format!("flow[{i}].app"),
                format!("{:?} is not an application; use one of {}", f.app, names.join(", ")),
            ));
        };
        for k in f.present() {
            if k == "tcp" && f.app != "media" {
                continue;
            }
            if !allowed.contains(&k) {
                return Err(cerr(
                    format!("flow[{i}].{k}"),
                    format!("does not apply to a {} flow, which takes {}", f.app, allowed.join(", ")),
                ));
            }
        }
        if !["down", "up"].contains(&f.direction.as_str()) {
            return Err(cerr(format!("flow[{i}].direction"), format!("{:?} is not \"down\" or \"up\"", f.direction)));
        }
        if let Some(l) = &f.link {
            if !["arq", "bypass"].contains(&l.as_str()) {
                return Err(cerr(
                    format!("flow[{i}].link"),
                    format!("{l:?} is not a link session; use \"arq\" or \"bypass\""),
                ));
            }
        }
        if f.port == Some(0) {
            return Err(cerr(format!("flow[{i}].port"), "must be a TCP port between 1 and 65535"));
        }
        for (k, n) in
            [("transactions", f.transactions), ("repeat", f.repeat), ("objects", f.objects), ("messages", f.messages)]
        {
            if n == Some(0) {
                return Err(cerr(format!("flow[{i}].{k}"), "must be at least 1"));
            }
        }
        for (k, d) in [("talk", f.talk), ("silence", f.silence), ("interval", f.interval)] {
            if let Some(Dur(d)) = d {
                if d.nanos() <= 0 {
                    return Err(cerr(format!("flow[{i}].{k}"), "must be a positive duration"));
                }
            }
        }
        for (k, d) in [("think", f.think), ("gap", f.gap)] {
            if let Some(Dur(d)) = d {
                if d.nanos() < 0 {
                    return Err(cerr(format!("flow[{i}].{k}"), "must not be negative"));
                }
            }
        }
        match f.app.as_str() {
            "probe" => {
                if let Some(Size(p)) = f.packet {
                    if !(29..=65535).contains(&p) {
                        return Err(cerr(
                            format!("flow[{i}].packet"),
                            "must be between 29B and 65535B (an IP packet with a UDP header)",
                        ));
                    }
                }
                if f.burst == Some(0) {
                    return Err(cerr(format!("flow[{i}].burst"), "must be at least 1 packet"));
                }
                if let Some(v) = &f.spacing {
                    if v.len() != 2 || v[0].0 <= Duration::ZERO || v[1].0 < v[0].0 {
                        return Err(cerr(
                            format!("flow[{i}].spacing"),
                            "give a range [min, max] of positive durations, min ≤ max, e.g. [\"5s\", \"10s\"]",
                        ));
                    }
                }
            }
            "media" => {
                if let Some(Size(p)) = f.packet {
                    if !(29..=65535).contains(&p) {
                        return Err(cerr(
                            format!("flow[{i}].packet"),
                            "must be between 29B and 65535B (an IP packet with a UDP header)",
                        ));
                    }
                }
            }
            "interactive" => {
                if let Some(Size(p)) = f.packet {
                    if !(1..=65535).contains(&p) {
                        return Err(cerr(format!("flow[{i}].packet"), "must be a message of 1B to 65535B"));
                    }
                }
            }
            "ttcp" | "http" if f.bytes.is_none_or(|b| b.0.is_none() || b.0 == Some(0)) => {
                return Err(cerr(
                    format!("flow[{i}].bytes"),
                    format!("a {} flow needs a finite size per download, e.g. bytes = \"10KB\"", f.app),
                ));
            }
            _ => {}
        }
        if let Some(t) = &f.tcp {
            if let Some(p) = &t.profile {
                if crate::tcp::TcpConfig::profile(p).is_none() {
                    return Err(cerr(
                        format!("flow[{i}].tcp.profile"),
                        format!("{p:?} is not a TCP profile; use \"default\", \"bsd\" or \"linux\""),
                    ));
                }
            }
            if let Some(v) = &t.variant {
                if crate::tcp::Variant::parse(v).is_none() {
                    return Err(cerr(
                        format!("flow[{i}].tcp.variant"),
                        format!("{v:?} is not a TCP variant; use one of \"tahoe\", \"reno\", \"newreno\", \"sack\""),
                    ));
                }
            }
            if let Some(m) = t.mss {
                if !(64..=65495).contains(&m) {
                    return Err(cerr(format!("flow[{i}].tcp.mss"), format!("{m} is not an MSS between 64 and 65495")));
                }
            }
            for (name, v) in [("rcv_buf", t.rcv_buf), ("snd_buf", t.snd_buf)] {
                if let Some(Size(b)) = v {
                    if b == 0 || b > (1 << 30) {
                        return Err(cerr(format!("flow[{i}].tcp.{name}"), "must be between 1B and 1GiB"));
                    }
                }
            }
            if t.initial_window == Some(0) {
                return Err(cerr(format!("flow[{i}].tcp.initial_window"), "must be at least 1 segment"));
            }
        }
        if sc.stop == Stop::End && !["media", "probe"].contains(&f.app.as_str()) && !f.finite() {
            let what = match f.app.as_str() {
                "bulk" => "bytes = \"10MB\"",
                "interactive" => "messages = 100",
                _ => "transactions = 10",
            };
            return Err(cerr(format!("flow[{i}].{}", what.split(' ').next().unwrap()), format!("stop = \"end\" needs every flow to end by itself; give {what} or set stop to a duration such as \"2000s\"")));
        }
    }
    if sc.stop == Stop::End && !sc.flow.iter().any(|f| f.finite()) {
        return Err(cerr("stop", "\"end\" needs at least one flow that ends by itself; media flows never end, so give a duration such as \"60s\""));
    }
    if let Some(p) = &sc.proxy {
        validate_proxy(p)?;
    }
    for t in &sc.trace.layers {
        if !crate::trace::LAYERS.contains(&t.as_str()) {
            return Err(cerr(
                "trace.layers",
                format!("{t:?} is not a layer; use \"tcp\", \"link\", \"queue\", \"channel\", \"proxy\""),
            ));
        }
    }
    Ok(())
}

fn validate_proxy(p: &ProxyCfg) -> Result<(), ConfigError> {
    if p.clamp.is_some_and(|c| c.0 < 64 || c.0 > 1 << 24) {
        return Err(cerr("proxy.clamp", "must be between 64B and 16MiB"));
    }
    if p.link_rate.is_some_and(|r| r.0 < 8) {
        return Err(cerr("proxy.link_rate", "must be at least 8bps"));
    }
    for (k, d) in
        [("link_rtt", p.link_rtt), ("min_rto", p.min_rto), ("initial_rto", p.initial_rto), ("max_rto", p.max_rto)]
    {
        if d.is_some_and(|d| d.0 <= Duration::ZERO) {
            return Err(cerr(format!("proxy.{k}"), "must be a positive duration"));
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
    if p.retransmit_at.is_some_and(|n| n == 0 || n > 100) {
        return Err(cerr("proxy.retransmit_at", "must be between 1 and 100"));
    }
    if let Some(m) = p.mss {
        if !(64..=65495).contains(&m) {
            return Err(cerr("proxy.mss", format!("{m} is not an MSS between 64 and 65495")));
        }
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

/// Parses an ASR policy "α+β".
pub fn parse_policy(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('+')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    const BASE: &str = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n";
    fn err(extra: &str, o: &[&str]) -> ConfigError {
        parse_scenario(&format!("{BASE}{extra}"), &o.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err()
    }
    #[test]
    fn parses_minimal() {
        assert!(parse_scenario(BASE, &[]).is_ok());
    }
    #[test]
    fn unknown_key_names_path() {
        let e = err("[wired]\nrate = \"1Mbps\"\ndelay = \"1ms\"\nbogus = 1\n", &[]);
        assert_eq!(e.path, "wired.bogus");
        assert!(e.message.contains("unknown field `bogus`"), "{e}");
    }
    #[test]
    fn bad_unit_names_path() {
        let e = err("", &["wireless.rate=64 furlongs"]);
        assert_eq!(e.path, "wireless.rate");
        assert!(e.message.contains("rate"), "{e}");
    }
    #[test]
    fn zero_rate_rejected() {
        assert_eq!(err("", &["wireless.rate=0kbps"]).path, "wireless.rate");
    }
    #[test]
    fn override_list_item() {
        let s = parse_scenario(BASE, &["flow.0.bytes=2MB".into(), "flow.0.tcp.variant=sack".into()]).unwrap();
        assert_eq!(s.flow[0].bytes, Some(Bytes(Some(2_000_000))));
        assert_eq!(s.flow[0].tcp.as_ref().unwrap().variant.as_deref(), Some("sack"));
        assert!(err("", &["flow.3.bytes=1MB"]).message.contains("out of range"));
    }
    #[test]
    fn unknown_model() {
        let e = err("[wireless.channel]\nmodel = \"rayleigh\"\n", &[]);
        assert_eq!(e.path, "wireless.channel.model");
        assert!(e.message.contains("rayleigh"), "{e}");
    }
    #[test]
    fn rlc_settings_are_checked_and_applied_over_the_preset() {
        fn arq<'a>(o: &[&'a str]) -> Vec<&'a str> {
            let mut v = vec!["wireless.arq.protocol=rlc"];
            v.extend_from_slice(o);
            v
        }
        assert_eq!(err("", &arq(&["wireless.arq.preset=rayleigh"])).path, "wireless.arq.preset");
        assert_eq!(err("", &arq(&["wireless.arq.poll_window=120"])).path, "wireless.arq.poll_window");
        let e = err("", &arq(&["wireless.arq.status_prohibit=soon"]));
        assert!(e.path == "wireless.arq.status_prohibit" && e.message.contains("\"off\""), "{e}");
        assert_eq!(err("", &arq(&["wireless.arq.poll_timer=0ms"])).path, "wireless.arq.poll_timer");
    }
}
