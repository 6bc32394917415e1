//! Scenario schema: TOML with units, parsed with `deny_unknown_fields`; every error
//! names the field path and what is accepted.
//!
//! The link protocol (`[wireless.arq] protocol`), the channel model (`model`) and
//! each flow's application (`app`) are tagged enums: each takes its own fields, and
//! a field that belongs to another is rejected with the field path and the list of
//! fields the chosen one takes. Files: `units.rs` (values with units), `link.rs`
//! (protocols and channels), `flow.rs` (applications and TCP), `proxy.rs`.
//!
//! Overrides (`--set KEY=VALUE`) are applied to the TOML tree before typing: dotted
//! paths, list items by index (`flow.0.bytes=1MB`); the value is read as a TOML
//! value when it parses as one, else as a string.
pub mod daemon;
pub mod flow;
pub mod link;
pub mod proxy;
pub mod queue;
pub mod units;

pub use flow::{Direction, FlowCfg, LinkSession, TcpCfg};
pub use link::{parse_policy, ChannelCfg, LinkCfg};
pub use proxy::{ProxyCfg, ProxyClass};
pub use queue::QueueCfg;
pub use units::{Bytes, Dur, DurRange, Limit, Rate, Size, Stop, Timer};

use crate::time::Duration;
use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wired {
    pub rate: Rate,
    pub delay: Dur,
    /// Both directions' queue (default drop-tail of 1000 packets).
    #[serde(default)]
    pub queue: Option<QueueCfg>,
    /// `[wired.down]` / `[wired.up]`: one direction's queue instead.
    #[serde(default)]
    pub down: Option<WiredDir>,
    #[serde(default)]
    pub up: Option<WiredDir>,
}
impl Default for Wired {
    fn default() -> Self {
        Wired { rate: Rate(10_000_000), delay: Dur(Duration::from_millis(1)), queue: None, down: None, up: None }
    }
}

/// One direction of the wired link (0 = down, from the server).
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WiredDir {
    #[serde(default)]
    pub queue: Option<QueueCfg>,
}

impl Wired {
    /// Direction `d`'s queue settings: its own, else `[wired] queue`.
    pub fn queue(&self, d: usize) -> Option<&QueueCfg> {
        let own = if d == 0 { &self.down } else { &self.up };
        own.as_ref().and_then(|o| o.queue.as_ref()).or(self.queue.as_ref())
    }
}

/// Per-direction overrides of `[wireless]`.
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct DirCfg {
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Dur>,
    #[serde(default)]
    pub channel: Option<ChannelCfg>,
    /// This direction's IP queues instead of `[wireless] queue`.
    #[serde(default)]
    pub queue: Option<QueueCfg>,
    /// This direction's bypass session's IP queue instead of `[wireless] bypass_queue`.
    #[serde(default)]
    pub bypass_queue: Option<QueueCfg>,
    /// A Mahimahi packet-delivery trace (file path) driving this direction's
    /// capacity instead of `rate` (`link::capacity`).
    #[serde(default)]
    pub delivery_trace: Option<String>,
    /// At the end of the delivery trace start again (default, as mm-link) or stop
    /// carrying anything (`false`, mm-link's `--once`).
    #[serde(default)]
    pub delivery_repeat: Option<bool>,
    /// The delivery trace as read when the scenario was parsed.
    #[serde(skip)]
    pub delivery: Option<std::sync::Arc<crate::link::capacity::DeliveryTrace>>,
}

impl DirCfg {
    /// Whether the delivery trace starts again at its end (default true, as mm-link).
    pub fn delivery_repeats(&self) -> bool {
        self.delivery_repeat.unwrap_or(true)
    }
}

/// How the two link-layer sessions (ARQ and bypass) share the radio, frame by frame.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum SchedulerCfg {
    #[default]
    #[serde(rename = "round-robin")]
    RoundRobin,
    #[serde(rename = "arq-first")]
    ArqFirst,
    #[serde(rename = "bypass-first")]
    BypassFirst,
}

/// Where frames wait for the radio.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum MuxCfg {
    /// The radio pulls the next frame from a session when it is free.
    #[default]
    #[serde(rename = "pull")]
    Pull,
    /// Sessions push frames as soon as they have them into one drop-tail frame
    /// queue served in order (ns-2's interface queue below the link layer), so ARQ
    /// timers also run while a frame waits in that queue.
    #[serde(rename = "shared-queue")]
    SharedQueue,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wireless {
    /// Both directions' rate, unless a direction gives its own (`rate` or
    /// `delivery_trace` in `[wireless.down]`/`[wireless.up]`).
    #[serde(default)]
    pub rate: Option<Rate>,
    pub delay: Dur,
    /// Largest frame payload (default 250 B). `gprs` sends each packet whole and
    /// does not use it.
    #[serde(default = "default_frame")]
    pub frame: Size,
    /// Link-layer header per frame (default 4 B; with `gprs` 0 B: seed 003's rates
    /// are IP throughput, and its "frame" is the whole packet). [`Wireless::header`].
    #[serde(default)]
    pub header: Option<Size>,
    /// Each session's IP queue, both directions (default drop-tail of 50
    /// packets; GPRS 120 KB).
    #[serde(default)]
    pub queue: Option<QueueCfg>,
    /// The bypass session's IP queue (media), both directions; default: as `queue`.
    #[serde(default)]
    pub bypass_queue: Option<QueueCfg>,
    #[serde(default)]
    pub channel: Option<ChannelCfg>,
    #[serde(default)]
    pub down: Option<DirCfg>,
    #[serde(default)]
    pub up: Option<DirCfg>,
    /// The link protocol (default raw).
    #[serde(default)]
    pub arq: Option<LinkCfg>,
    /// Default "round-robin"; "arq-first" and "bypass-first" are strict priorities.
    #[serde(default)]
    pub scheduler: Option<SchedulerCfg>,
    /// Default "pull".
    #[serde(default)]
    pub mux: Option<MuxCfg>,
    /// Frame queue limit for `mux = "shared-queue"`, in frames. Default 50.
    #[serde(default)]
    pub frame_queue: Option<u32>,
}
fn default_frame() -> Size {
    Size(250)
}
impl Wireless {
    /// The link-layer header per frame: as given, else 4 B (0 B with `gprs`).
    pub fn header(&self) -> Size {
        self.header.unwrap_or(if matches!(self.arq, Some(LinkCfg::Gprs(_))) { Size(0) } else { Size(4) })
    }

    /// The overrides of direction `d` (0 = `[wireless.down]`, 1 = `[wireless.up]`).
    pub fn dir(&self, d: usize) -> Option<&DirCfg> {
        if d == 0 {
            self.down.as_ref()
        } else {
            self.up.as_ref()
        }
    }

    /// Direction `d`'s IP queue settings: its own, else `[wireless] queue`.
    pub fn queue(&self, d: usize) -> Option<&QueueCfg> {
        self.dir(d).and_then(|s| s.queue.as_ref()).or(self.queue.as_ref())
    }

    /// Direction `d`'s bypass-session queue settings: its own `bypass_queue`,
    /// else `[wireless] bypass_queue`, else those of its ARQ session's queue.
    pub fn bypass_queue(&self, d: usize) -> Option<&QueueCfg> {
        self.dir(d).and_then(|s| s.bypass_queue.as_ref()).or(self.bypass_queue.as_ref()).or_else(|| self.queue(d))
    }

    /// The link protocol (raw when `[wireless.arq]` is absent).
    pub fn link(&self) -> LinkCfg {
        self.arq.clone().unwrap_or_default()
    }
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TraceCfg {
    /// Layers to record: any of `trace::LAYERS` ("tcp", "link", "queue", "channel", "proxy", "sojourn").
    #[serde(default)]
    pub layers: Vec<String>,
    /// Record pcap taps at the server and the mobile host.
    #[serde(default)]
    pub pcap: bool,
    /// Write mm-link-format logs of the wireless link (`trace::mahimahi`).
    #[serde(default)]
    pub mahimahi: bool,
    /// The wall-clock time the pcaps put at simulated time zero: a UTC date
    /// ("2026-11-27" or "2026-11-27T09:30:00Z") or Unix seconds. Default none: the
    /// Unix epoch (1970-01-01), as ns-3 stamps its captures, so a packet's
    /// timestamp is its simulated time (`time_s` in the trace).
    #[serde(default)]
    pub pcap_epoch: Option<toml::Value>,
}

impl TraceCfg {
    /// `pcap_epoch` in ns since the Unix epoch (0 without one).
    pub fn pcap_epoch_ns(&self) -> Result<i64, String> {
        let Some(v) = &self.pcap_epoch else { return Ok(0) };
        let bad = || {
            format!(
                "{v} is not a UTC date (\"2026-11-27\", \"2026-11-27T09:30:00Z\") or Unix seconds from 0 to 4294967295 (the pcap format's range)"
            )
        };
        let secs: i64 = match v {
            toml::Value::Integer(n) => *n,
            toml::Value::String(t) => parse_utc(t).ok_or_else(bad)?,
            _ => return Err(bad()),
        };
        if !(0..=u32::MAX as i64).contains(&secs) {
            return Err(bad());
        }
        Ok(secs * 1_000_000_000)
    }
}

/// "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ" (UTC) as Unix seconds.
fn parse_utc(t: &str) -> Option<i64> {
    let (date, time) = match t.split_once('T') {
        Some((d, rest)) => (d, Some(rest.strip_suffix('Z')?)),
        None => (t, None),
    };
    let mut d = date.split('-');
    let (y, m, day): (i64, i64, i64) = (d.next()?.parse().ok()?, d.next()?.parse().ok()?, d.next()?.parse().ok()?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if d.next().is_some()
        || !(1..=12).contains(&m)
        || date.len() != 10
        || !(1..=month_days[m as usize - 1]).contains(&day)
    {
        return None;
    }
    let secs = match time {
        None => 0,
        Some(tm) => {
            let p: Vec<i64> = tm.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            match p[..] {
                [h, mi, s] if h < 24 && mi < 60 && s < 60 && h >= 0 && mi >= 0 && s >= 0 => h * 3600 + mi * 60 + s,
                _ => return None,
            }
        }
    };
    // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) * 86_400 + secs)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_seed", deserialize_with = "u64_or_digits")]
    pub seed: u64,
    #[serde(default, deserialize_with = "u64_or_digits")]
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
/// A u64 from a TOML integer (at most 2^63 − 1) or, beyond that, a string of
/// decimal digits: seeds and run indices take every u64.
fn u64_or_digits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    const ACCEPT: &str = "must be an integer from 0 to 18446744073709551615";
    match toml::Value::deserialize(d)? {
        toml::Value::Integer(i) => u64::try_from(i).map_err(|_| serde::de::Error::custom(ACCEPT)),
        toml::Value::String(s) => s.trim().parse::<u64>().map_err(|_| serde::de::Error::custom(ACCEPT)),
        _ => Err(serde::de::Error::custom(ACCEPT)),
    }
}

/// Upper bound on simulated time when `stop = "end"` and no `max_time` is given.
pub const MAX_TIME: Duration = Duration::from_secs(100_000);

impl Scenario {
    /// When the run ends at the latest: the stop time, or `max_time` (default
    /// [`MAX_TIME`]) with `stop = "end"`.
    pub fn end_time(&self) -> Duration {
        match self.stop {
            Stop::At(d) => d,
            Stop::End => self.max_time.map(|d| d.0).unwrap_or(MAX_TIME),
        }
    }
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
    /// One line: line breaks in names the error quotes (a TOML key may hold an
    /// escaped one) are shown escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let esc = |s: &str| s.replace('\r', "\\r").replace('\n', "\\n");
        if self.path.is_empty() || self.path == "." {
            write!(f, "{}", esc(&self.message))
        } else {
            write!(f, "{}: {}", esc(&self.path), esc(&self.message))
        }
    }
}
/// Joins a multi-line message into one line.
fn one_line(m: &str) -> String {
    m.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(", ")
}
pub(crate) fn cerr(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { path: path.into(), message: message.into() }
}

/// Parses TOML text, applies `KEY=VALUE` overrides, and types the result. File
/// paths in the text and in the overrides are relative to the working directory.
pub fn parse_scenario(text: &str, overrides: &[String]) -> Result<Scenario, ConfigError> {
    parse(text, overrides, None, true)
}

/// As [`parse_scenario`] for the text of a scenario file: relative file paths in
/// the text ([`PATH_KEYS`]) are relative to `file`'s directory (in the overrides,
/// still to the working directory).
pub fn parse_scenario_file(text: &str, overrides: &[String], file: &Path) -> Result<Scenario, ConfigError> {
    parse(text, overrides, Some(file), true)
}

/// As [`parse_scenario`] (or, with `file`, [`parse_scenario_file`]) for a driver
/// that runs the scenario's links but not its flows (the emulator: real
/// applications are the traffic), so a scenario without flows, or with
/// `stop = "end"` and only media flows, is accepted. Flows present are still checked.
pub fn parse_links(text: &str, overrides: &[String], file: Option<&Path>) -> Result<Scenario, ConfigError> {
    parse(text, overrides, file, false)
}

/// Scenario keys holding file paths.
pub const PATH_KEYS: &[&[&str]] = &[
    &["wireless", "down", "delivery_trace"],
    &["wireless", "up", "delivery_trace"],
    &["wireless", "channel", "file"],
    &["wireless", "down", "channel", "file"],
    &["wireless", "up", "channel", "file"],
];

fn parse(text: &str, overrides: &[String], file: Option<&Path>, flows_run: bool) -> Result<Scenario, ConfigError> {
    let mut value = toml_value(text)?;
    if let Some(file) = file {
        rebase_paths(&mut value, file);
    }
    for o in overrides {
        apply_override(&mut value, o)?;
    }
    let mut sc: Scenario = deserialize(value)?;
    validate(&sc, flows_run)?;
    load_delivery_traces(&mut sc)?;
    load_channel_traces(&mut sc)?;
    Ok(sc)
}

/// A TOML document, or an error naming the line.
pub(crate) fn toml_value(text: &str) -> Result<toml::Value, ConfigError> {
    text.parse::<toml::Table>().map(toml::Value::Table).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" at line {l}")).unwrap_or_default();
        cerr("", format!("malformed TOML{at}: {}", one_line(e.message())))
    })
}

/// Deserializes a TOML value, with errors naming the field path.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(value: toml::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().to_string();
        // An error inside a tagged section carries the section's own field path.
        if let Some(rest) = msg.strip_prefix(units::INNER) {
            if let Some((inner, m)) = rest.split_once(units::INNER) {
                let full = match (path.as_str(), inner) {
                    (".", i) | ("", i) => i.to_string(),
                    (p, "") | (p, ".") => p.to_string(),
                    (p, i) if i.starts_with('[') => format!("{p}{i}"),
                    (p, i) => format!("{p}.{i}"),
                };
                return cerr(full, units::bare_message(m));
            }
        }
        cerr(path, units::bare_message(&msg))
    })
}

/// Makes the relative file paths of a scenario file's document absolute: relative
/// to the file's directory (resolved, symbolic links followed, as `realpath`
/// does; the directory as given if that fails). Values that are not non-empty
/// strings are left for the schema to reject. Returns the keys changed, dotted.
fn rebase_paths(doc: &mut toml::Value, file: &Path) -> Vec<String> {
    let mut dir: Option<std::path::PathBuf> = None;
    let mut changed = vec![];
    for &key in PATH_KEYS {
        let mut v = Some(&mut *doc);
        for part in key {
            v = v.and_then(|t| t.as_table_mut()).and_then(|t| t.get_mut(*part));
        }
        let Some(toml::Value::String(s)) = v else { continue };
        if s.is_empty() || Path::new(s.as_str()).is_absolute() {
            continue;
        }
        let d = dir.get_or_insert_with(|| {
            let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
            std::fs::canonicalize(file).map(|f| parent(&f)).unwrap_or_else(|_| parent(file))
        });
        *s = d.join(s.as_str()).to_string_lossy().into_owned();
        changed.push(key.join("."));
    }
    changed
}

/// The overrides that make the relative file paths of a scenario file's text
/// absolute, as [`parse_scenario_file`] does (`KEY="/abs/path"`): for a driver that
/// keeps the text and its overrides to run them again elsewhere (a sweep's runs,
/// an emulation's replay). Malformed TOML gives none (parsing reports it).
pub fn path_overrides(text: &str, file: &Path) -> Vec<String> {
    let Ok(mut doc) = toml_value(text) else { return vec![] };
    let keys = rebase_paths(&mut doc, file);
    keys.into_iter()
        .map(|k| {
            let v = k.split('.').try_fold(&doc, |t, p| t.get(p)).expect("a key just changed");
            format!("{k}={v}")
        })
        .collect()
}

/// Reads the delivery traces `[wireless.down]`/`[wireless.up]` name (a relative
/// path is relative to the working directory: [`parse_scenario_file`] has made
/// those of a scenario file relative to its directory).
/// A trace file a scenario names, as text; why not, in words. Only a regular
/// file is read: a FIFO or a device would block the run (or never end), a
/// directory is a mistake.
fn read_input_file(path: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file (a FIFO or device could block)" };
        return Err(format!("{what}; give a file"));
    }
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => "not UTF-8 text".to_string(),
        _ => e.to_string(),
    })
}

fn load_delivery_traces(sc: &mut Scenario) -> Result<(), ConfigError> {
    for (n, d) in [("down", &mut sc.wireless.down), ("up", &mut sc.wireless.up)] {
        let Some(d) = d.as_mut() else { continue };
        // An empty path means none (so `--set` can remove a trace).
        let Some(path) = d.delivery_trace.as_deref().filter(|p| !p.is_empty()) else {
            if d.delivery_repeat.is_some() {
                return Err(cerr(format!("wireless.{n}.delivery_repeat"), "needs delivery_trace"));
            }
            continue;
        };
        let key = format!("wireless.{n}.delivery_trace");
        if d.rate.is_some() {
            return Err(cerr(key, "give either rate or delivery_trace for one direction, not both"));
        }
        let text = read_input_file(path).map_err(|why| {
            cerr(key.clone(), format!("{path}: {why} (a Mahimahi delivery trace: one time in ms per line)"))
        })?;
        let t = crate::link::capacity::DeliveryTrace::parse(&text).map_err(|m| cerr(key, format!("{path}: {m}")))?;
        d.delivery = Some(std::sync::Arc::new(t));
    }
    Ok(())
}

/// Reads the frame-error traces of `model = "trace"` channels and checks that
/// each direction served finds its table in the file.
fn load_channel_traces(sc: &mut Scenario) -> Result<(), ConfigError> {
    let w = &mut sc.wireless;
    let own = [&w.down, &w.up].map(|d| d.as_ref().is_some_and(|d| d.channel.is_some()));
    // Which directions each channel section serves.
    let mut slots: Vec<(String, &mut ChannelCfg, Vec<usize>)> = vec![];
    let shared: Vec<usize> = (0..2).filter(|&d| !own[d]).collect();
    if let Some(c) = w.channel.as_mut() {
        slots.push(("wireless.channel".into(), c, shared));
    }
    for (n, d, dir) in [("down", w.down.as_mut(), 0usize), ("up", w.up.as_mut(), 1)] {
        if let Some(c) = d.and_then(|d| d.channel.as_mut()) {
            slots.push((format!("wireless.{n}.channel"), c, vec![dir]));
        }
    }
    for (path, cfg, dirs) in slots {
        let ChannelCfg::Trace(t) = cfg else { continue };
        let key = format!("{path}.file");
        if t.file.is_empty() {
            return Err(cerr(key, "must name a frame-error trace file"));
        }
        let text = read_input_file(&t.file)
            .map_err(|why| cerr(key.clone(), format!("{}: {why} (a frame-error trace: docs/scenario.md)", t.file)))?;
        let f = link::ChannelTraceFile::parse(&text).map_err(|m| cerr(key.clone(), format!("{}: {m}", t.file)))?;
        for d in dirs {
            let name = t.section.clone().unwrap_or_else(|| ["down", "up"][d].to_string());
            let has = if name == "down" { f.down.is_some() } else { f.up.is_some() };
            if !has {
                return Err(cerr(
                    key.clone(),
                    format!("{} has no [{name}] table for the {} direction", t.file, ["down", "up"][d]),
                ));
            }
        }
        t.loaded = Some(std::sync::Arc::new(f));
    }
    Ok(())
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

/// Mobile hosts a scenario or an emulation may have (flow `mobile` 0..=249; the
/// emulator's addresses 10.0.1.2..=10.0.1.251).
pub const MOBILES: u16 = 250;

/// Mobile `k`'s IPv4 address (flow key `mobile`): 10.0.1.(2 + k), in the
/// simulator as in the emulator's namespaces.
pub fn mobile_addr(k: u16) -> [u8; 4] {
    [10, 0, 1, 2 + k as u8]
}

/// The most `[[flow]]` tables a scenario may have.
pub const MAX_FLOWS: usize = 65535 - 40000 + 1;

fn validate(sc: &Scenario, flows_run: bool) -> Result<(), ConfigError> {
    let w = &sc.wireless;
    for (n, d) in [("down", &w.down), ("up", &w.up)] {
        let own =
            d.as_ref().is_some_and(|d| d.rate.is_some() || d.delivery_trace.as_deref().is_some_and(|t| !t.is_empty()));
        if !own && w.rate.is_none() {
            return Err(cerr(
                "wireless.rate",
                format!(
                    "missing: give [wireless] rate, or the {n}link its own ([wireless.{n}] rate or delivery_trace)"
                ),
            ));
        }
    }
    if w.frame.0 == 0 || w.frame.0 > 65535 {
        return Err(cerr("wireless.frame", "must be between 1B and 65535B"));
    }
    if w.header().0 > 65535 {
        return Err(cerr("wireless.header", "must be between 0B and 65535B"));
    }
    if w.frame_queue.is_some_and(|q| q > 1_000_000) {
        return Err(cerr("wireless.frame_queue", "must be between 1 and 1000000 frames"));
    }
    if let Some(c) = &w.channel {
        link::validate_channel(c, "wireless.channel")?;
    }
    for (n, d) in [("down", &w.down), ("up", &w.up)] {
        if let Some(c) = d.as_ref().and_then(|d| d.channel.as_ref()) {
            link::validate_channel(c, &format!("wireless.{n}.channel"))?;
        }
    }
    if let Some(a) = &w.arq {
        link::validate_link(a, "wireless.arq")?;
    }
    if w.frame_queue == Some(0) {
        return Err(cerr("wireless.frame_queue", "must be at least 1 frame"));
    }
    let queues = [
        ("wired.queue", sc.wired.queue.as_ref()),
        ("wired.down.queue", sc.wired.down.as_ref().and_then(|d| d.queue.as_ref())),
        ("wired.up.queue", sc.wired.up.as_ref().and_then(|d| d.queue.as_ref())),
        ("wireless.queue", w.queue.as_ref()),
        ("wireless.down.queue", w.down.as_ref().and_then(|d| d.queue.as_ref())),
        ("wireless.up.queue", w.up.as_ref().and_then(|d| d.queue.as_ref())),
        ("wireless.bypass_queue", w.bypass_queue.as_ref()),
        ("wireless.down.bypass_queue", w.down.as_ref().and_then(|d| d.bypass_queue.as_ref())),
        ("wireless.up.bypass_queue", w.up.as_ref().and_then(|d| d.bypass_queue.as_ref())),
    ];
    for (path, q) in queues {
        if let Some(q) = q {
            queue::validate_queue(q, path)?;
        }
    }
    let end = sc.end_time();
    // Flow N's mobile end takes port 40000 + N, and packets name their flow by
    // 16 bits: more flows would wrap both silently.
    if sc.flow.len() > MAX_FLOWS {
        return Err(cerr(
            "flow",
            format!("{} flows; at most {MAX_FLOWS} (flow N's mobile end takes port 40000 + N)", sc.flow.len()),
        ));
    }
    for (i, f) in sc.flow.iter().enumerate() {
        f.validate(i, flows_run && sc.stop == Stop::End)?;
        if f.mobile() >= MOBILES {
            return Err(cerr(format!("flow[{i}].mobile"), format!("must be between 0 and {}", MOBILES - 1)));
        }
        if f.mobile() > 0 && w.link().get().is_circuit() {
            return Err(cerr(
                format!("flow[{i}].mobile"),
                "a GSM RLP or IS-707 link is one mobile's circuit; several mobiles share raw, sr, asr, rlc or gprs",
            ));
        }
        // A flow starting at or after the end never runs (once a silent no-op).
        if flows_run && f.start() >= end {
            let k = if sc.stop == Stop::End { "max_time" } else { "stop" };
            return Err(cerr(
                format!("flow[{i}].start"),
                format!("{}s is not before the run's end ({k} = {}s)", f.start().as_secs_f64(), end.as_secs_f64()),
            ));
        }
    }
    if flows_run && sc.stop == Stop::End && !sc.flow.iter().any(|f| f.finite()) {
        return Err(cerr(
            "stop",
            "\"end\" needs at least one flow that ends by itself; media flows never end, so give a duration such as \"60s\"",
        ));
    }
    if let Some(p) = &sc.proxy {
        proxy::validate_proxy(p)?;
    }
    for t in &sc.trace.layers {
        if !crate::trace::LAYERS.contains(&t.as_str()) {
            return Err(cerr(
                "trace.layers",
                format!(
                    "{t:?} is not a layer; use {}",
                    crate::trace::LAYERS.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    sc.trace.pcap_epoch_ns().map_err(|e| cerr("trace.pcap_epoch", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quoted key holding a line break is named on one line, and the message
    /// after it is not lost (it was cut at the line break).
    #[test]
    fn keys_with_line_breaks_are_named_whole_on_one_line() {
        let base = "[wireless]\nrate = \"64kbps\"\n[wireless.arq]\nprotocol = \"sr\"\n";
        for (text, want) in [
            (format!("\"a\\nb\" = 1\n{base}"), "a\\nb: unknown field `a\\nb`, expected one of `name`"),
            (
                format!("{base}\"x\\ny\" = 2\n"),
                "wireless.arq.x\\ny: does not apply to protocol \"sr\", which takes window, ack_delay, timeout, renack",
            ),
        ] {
            let e = parse_scenario(&text, &[]).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.starts_with(want) && !e.contains("in `"), "{e}");
        }
    }
    const BASE: &str = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n";
    /// As many flows as there are mobile ports 40000 + N are accepted; one more is
    /// one clear error (it once wrapped the port and the packets' 16-bit flow).
    #[test]
    fn flows_beyond_the_mobile_ports_are_refused() {
        let flows = |n: usize| format!("{BASE}{}", "[[flow]]\napp = \"bulk\"\nbytes = \"1kB\"\n".repeat(n - 1));
        assert!(parse_scenario(&flows(MAX_FLOWS), &[]).is_ok());
        let e = parse_scenario(&flows(MAX_FLOWS + 1), &[]).unwrap_err().to_string();
        assert_eq!(e, "flow: 25537 flows; at most 25536 (flow N's mobile end takes port 40000 + N)");
    }
    /// A scenario file's relative paths are relative to its directory; absolute
    /// ones, those of overrides and those of text given directly are left alone.
    #[test]
    fn scenario_file_paths_are_relative_to_its_directory() {
        let dir = std::env::temp_dir().join(format!("thinwire-rebase-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/d.trace"), "1\n2\n").unwrap();
        let file = dir.join("sub/s.toml");
        let text = "[wireless]\nrate = \"1Mbps\"\ndelay = \"50ms\"\n[wireless.down]\ndelivery_trace = \"d.trace\"\n\
                    [wireless.up]\ndelivery_trace = \"../sub/d.trace\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1kB\"\n";
        let real = std::fs::canonicalize(dir.join("sub")).unwrap();
        let want = |p: &str| real.join(p).to_string_lossy().into_owned();
        let sc = parse_scenario_file(text, &[], &file).unwrap();
        assert_eq!(sc.wireless.down.as_ref().unwrap().delivery_trace.as_deref(), Some(want("d.trace").as_str()));
        assert_eq!(sc.wireless.up.as_ref().unwrap().delivery_trace.as_deref(), Some(want("../sub/d.trace").as_str()));
        // The same as overrides (TOML-quoted), for a driver that keeps text and overrides.
        let o = path_overrides(text, &file);
        assert_eq!(o.len(), 2);
        let again = parse_scenario(text, &o).unwrap();
        let traces = |sc: &Scenario| {
            [&sc.wireless.down, &sc.wireless.up].map(|d| d.as_ref().and_then(|d| d.delivery_trace.clone()))
        };
        assert_eq!(traces(&again), traces(&sc));
        // Overrides stay relative to the working directory; text given directly too.
        let e = parse_scenario_file(text, &["wireless.up.delivery_trace=\"d.trace\"".into()], &file).unwrap_err();
        assert!(e.to_string().starts_with("wireless.up.delivery_trace: d.trace: no such file"), "{e}");
        assert!(parse_scenario(text, &[]).is_err());
        assert!(path_overrides("x = [", &file).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
    fn err(extra: &str, o: &[&str]) -> ConfigError {
        parse_scenario(&format!("{BASE}{extra}"), &o.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err()
    }
    #[test]
    fn seeds_take_every_u64() {
        assert_eq!(parse_scenario(BASE, &["seed=\"18446744073709551615\"".into()]).unwrap().seed, u64::MAX);
        assert_eq!(parse_scenario(BASE, &["seed=9223372036854775807".into()]).unwrap().seed, i64::MAX as u64);
        for bad in ["seed=-1", "seed=\"18446744073709551616\"", "run=1.5"] {
            assert!(err("", &[bad]).message.contains("18446744073709551615"), "{bad}");
        }
    }
    #[test]
    fn values_out_of_range_are_errors_naming_the_range() {
        // Each of these once livelocked, wrapped or silently ended a run.
        let cases: &[(&str, &str, &str)] = &[
            ("flow.0.tcp.min_rto=\"0s\"", "flow[0].tcp.min_rto", "1ms"),
            ("flow.0.tcp.initial_rto=\"1e20s\"", "flow[0].tcp.initial_rto", "1000000s"),
            ("flow.0.tcp.timer_granularity=\"1e10s\"", "flow[0].tcp.timer_granularity", "1000000s"),
            ("flow.0.tcp.timer_granularity=\"11s\"", "flow[0].tcp.timer_granularity", "10s"),
            ("flow.0.bytes=\"1e20B\"", "flow[0].bytes", "1TB"),
            ("wireless.header=\"4294967296B\"", "wireless.header", "65535B"),
            ("flow.0.tcp.cwnd_clamp=\"0B\"", "flow[0].tcp.cwnd_clamp", "64B"),
            ("flow.0.tcp.cc=\"clamp\"", "flow[0].tcp.cc", "tcp.cwnd_clamp"),
            ("flow.0.tcp.rcv_wnd_initial=\"0B\"", "flow[0].tcp.rcv_wnd_initial", "64B"),
            ("stop=\"1e20s\"", "stop", "\"end\""),
            ("wireless.rate=\"2000Gbps\"", "wireless.rate", "1Tbps"),
            ("flow.0.start=\"200000s\"", "flow[0].start", "max_time = 100000s"),
        ];
        for (o, path, range) in cases {
            let e = err("", &[o]);
            assert_eq!(e.path, *path, "{o}: {e}");
            assert!(e.message.contains(range), "{o}: {e}");
        }
    }
    #[test]
    fn contradictory_rto_bounds_are_errors() {
        let e = err("", &["flow.0.tcp.min_rto=\"10s\"", "flow.0.tcp.max_rto=\"1s\""]);
        assert_eq!(e.path, "flow[0].tcp.min_rto", "{e}");
        // Against the profile's max_rto (64 s) when only min_rto is given.
        assert!(err("", &["flow.0.tcp.min_rto=\"100s\""]).message.contains("max_rto"));
        assert!(parse_scenario(BASE, &["flow.0.tcp.min_rto=\"2s\"".into()]).is_ok());
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
        assert_eq!(s.flow[0].bytes(), Some(2_000_000));
        assert_eq!(s.flow[0].tcp().unwrap().variant.as_deref(), Some("sack"));
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
