//! `[wireless.arq]` (tagged by `protocol`) and channel models (tagged by `model`):
//! each protocol and model has its own fields, and a field of another one is an
//! error naming the field and what the chosen one takes. Defaults are the models'
//! own (`SrConfig`, `RlcConfig::preset`, `Is707Config`, `RlpConfig`/`CsdConfig`,
//! `GprsConfig::downlink`/`uplink`); `build.rs` applies what is set over them.
use super::units::{bad_tag, split_tag, tagged, tagged_enum, Dur, DurRange, NoFields, Rate, Size, Timer};
use super::{cerr, ConfigError};
use crate::time::Duration;
use serde::{de, Deserialize, Deserializer};

tagged_enum! {
    /// The link-layer protocol of the wireless link and its settings.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub enum LinkCfg,
    pub const PROTOCOLS,
    fn protocol,
    tag "protocol",
    what "protocol {:?}",
    kind "a link protocol" {
        /// No ARQ.
        #[default]
        "raw" => Raw,
        /// Selective Repeat with a fixed timeout (seed 002 §IV).
        "sr" => Sr(SrCfg),
        /// Adaptive Selective Repeat (seed 002 §V).
        "asr" => Asr(AsrCfg),
        /// UMTS RLC acknowledged mode (seed 002 §VI, TS 25.322).
        "rlc" => Rlc(RlcCfg),
        /// IS-707 RLP (seed 001).
        "is707" => Is707(Is707Cfg),
        /// GSM RLP under PPP/VJ and L2R (seed 000).
        "rlp-gsm" => RlpGsm(RlpGsmCfg),
        /// A GPRS link (seeds 003/004).
        "gprs" => Gprs(GprsCfg),
    }
}

impl LinkCfg {
    /// A circuit of one mobile (GSM RLP, IS-707): several mobiles cannot share it.
    pub fn is_circuit(&self) -> bool {
        matches!(self, LinkCfg::RlpGsm(_) | LinkCfg::Is707(_))
    }
}

/// `protocol = "sr"`: defaults window 127, ack_delay 500 ms, timeout 1.1 s, renack
/// unset (multireject by detection; a duration selects the timer rule).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SrCfg {
    #[serde(default)]
    pub window: Option<u32>,
    #[serde(default)]
    pub ack_delay: Option<Dur>,
    #[serde(default)]
    pub timeout: Option<Dur>,
    #[serde(default)]
    pub renack: Option<Dur>,
}

/// `protocol = "asr"`: SR's window and ACK delay, the policy "α+β" (default 3+2),
/// the initial srtt (1.1 s) and renack (unset: multireject by detection).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AsrCfg {
    #[serde(default)]
    pub window: Option<u32>,
    #[serde(default)]
    pub ack_delay: Option<Dur>,
    #[serde(default)]
    pub policy: Option<Policy>,
    #[serde(default)]
    pub initial_srtt: Option<Dur>,
    #[serde(default)]
    pub renack: Option<Dur>,
}

/// An ASR timeout policy "α+β": rtxto = α·srtt + β·srttvar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy(pub u32, pub u32);
impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_policy(&s)
            .map(|(a, b)| Policy(a, b))
            .ok_or_else(|| de::Error::custom(format!("{s:?} is not an ASR policy \"α+β\" such as \"3+2\"")))
    }
}

/// Parses an ASR policy "α+β".
pub fn parse_policy(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('+')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Seed 002 Table I's RLC settings (its two columns), and `typical`: polls on the
/// last PDU as deployed TS 25.322 configurations set (`link/rlc_am.rs`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum RlcPreset {
    #[serde(rename = "uniform")]
    Uniform,
    #[serde(rename = "two-state")]
    TwoState,
    #[serde(rename = "typical")]
    Typical,
}

impl RlcPreset {
    pub fn name(self) -> &'static str {
        match self {
            RlcPreset::Uniform => "uniform",
            RlcPreset::TwoState => "two-state",
            RlcPreset::Typical => "typical",
        }
    }
}

/// `protocol = "rlc"`: Table I column `preset` (default "uniform"); the fields
/// override it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RlcCfg {
    #[serde(default)]
    pub preset: Option<RlcPreset>,
    #[serde(default)]
    pub window: Option<u32>,
    #[serde(default)]
    pub pad: Option<bool>,
    #[serde(default)]
    pub max_retransmissions: Option<u32>,
    #[serde(default)]
    pub poll_timer: Option<Timer>,
    /// Window-based polling threshold in percent, or 0 for none.
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
}

/// `idle_frames = 5` or `idle_frames = "unlimited"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleFrames {
    Count(u32),
    Unlimited,
}
impl<'de> Deserialize<'de> for IdleFrames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u32),
            Word(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Count(n)) => Ok(IdleFrames::Count(n)),
            Ok(Raw::Word(w)) if w == "unlimited" => Ok(IdleFrames::Unlimited),
            Ok(Raw::Word(w)) => Err(de::Error::custom(format!("{w:?}: give a number of frames or \"unlimited\""))),
            Err(_) => Err(de::Error::custom("give a number of frames or \"unlimited\"")),
        }
    }
}

/// `protocol = "is707"`: NAK rounds (default [1, 2, 3]), the NAK timer, idle frames.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Is707Cfg {
    /// NAKs per recovery round, e.g. [1, 2, 3].
    #[serde(default)]
    pub nak_rounds: Option<Vec<u32>>,
    /// How long each NAK round waits.
    #[serde(default)]
    pub nak_timer: Option<Dur>,
    /// Idle frames after the last data frame: a number or "unlimited".
    #[serde(default)]
    pub idle_frames: Option<IdleFrames>,
}

/// What exceeding N2 does.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum OnN2Cfg {
    #[serde(rename = "reset")]
    Reset,
    #[serde(rename = "drop-call")]
    DropCall,
}

/// `protocol = "rlp-gsm"`: GSM RLP (window 61, T1, N2, on_n2) under PPP with VJ
/// header compression and L2R flow control.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RlpGsmCfg {
    #[serde(default)]
    pub window: Option<u32>,
    /// Acknowledgement timer T1.
    #[serde(default)]
    pub t1: Option<Dur>,
    /// Maximum retransmissions of a frame (and of a poll) before the link is reset.
    #[serde(default)]
    pub n2: Option<u32>,
    #[serde(default)]
    pub on_n2: Option<OnN2Cfg>,
    /// VJ TCP/IP header compression (RFC 1144) on the PPP link.
    #[serde(default)]
    pub header_compression: Option<bool>,
    /// PPP reports damaged frames to the VJ decompressor (RFC 1144 toss).
    #[serde(default)]
    pub vj_toss_on_error: Option<bool>,
    /// L2R relay rate at the network side (seed 000: 960 bytes/s = "7680bps").
    #[serde(default)]
    pub l2r_rate: Option<Rate>,
    /// L2R buffer above which the network side's RLP signals "not ready".
    #[serde(default)]
    pub l2r_buffer: Option<Size>,
}

/// `protocol = "gprs"`: TBF set-up delays, outages, uplink bunching, poor radio.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GprsCfg {
    /// Idle time after which the next packet pays a TBF set-up delay.
    #[serde(default)]
    pub tbf_idle: Option<Dur>,
    /// Set-up delay range [min, max] on the downlink / uplink.
    #[serde(default)]
    pub setup_down: Option<DurRange>,
    #[serde(default)]
    pub setup_up: Option<DurRange>,
    /// Packets the link layer holds (the rest wait in the interface queue).
    #[serde(default)]
    pub rlc_buffer: Option<u32>,
    /// Packets held longer than this are dropped when an outage ends.
    #[serde(default)]
    pub pdu_lifetime: Option<Dur>,
    /// Mean time between outages (exponential); absent: none.
    #[serde(default)]
    pub outage_every: Option<Dur>,
    /// Outage length range [min, max] (uniform).
    #[serde(default)]
    pub outage_duration: Option<DurRange>,
    /// Outages at fixed times, each [start, length], e.g. [["90s", "25s"]].
    #[serde(default)]
    pub outages: Option<Vec<Vec<Dur>>>,
    /// Uplink allocation period (ACK bunching); absent: none.
    #[serde(default)]
    pub uplink_period: Option<Dur>,
    /// Mean time between poor-radio periods; their length range; the rate share left.
    #[serde(default)]
    pub poor_every: Option<Dur>,
    #[serde(default)]
    pub poor_duration: Option<DurRange>,
    #[serde(default)]
    pub poor_share: Option<f64>,
}

tagged_enum! {
    /// A channel model (`[wireless.channel]`, or per direction).
    #[derive(Clone, Debug, PartialEq)]
    pub enum ChannelCfg,
    pub const MODELS,
    fn model,
    tag "model",
    what "model {:?}",
    kind "a channel model" {
        /// No losses.
        "none" => None,
        /// Each frame lost with probability `p`.
        "uniform" => Uniform(UniformCfg),
        /// A two-state (Gilbert–Elliott style) bit-error channel (seed 002 §III).
        "two-state" => TwoState(TwoStateCfg),
        /// A first-order Markov model of a Rayleigh-fading channel (seed 001 §III).
        "fading" => Fading(FadingCfg),
        /// The listed frames lost (indices from 0).
        "droplist" => DropList(DropListCfg),
        /// A recorded trace of frame fates (`channel/trace.rs`).
        "trace" => Trace(TraceChannelCfg),
    }
}

/// `model = "uniform"`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UniformCfg {
    pub p: f64,
}

/// `model = "two-state"`: each state's bit-error rate and mean duration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TwoStateCfg {
    pub good: StateCfg,
    pub bad: StateCfg,
}

/// `model = "fading"`: frame-error rate, normalised Doppler, and the frame time the
/// Doppler is normalised to (default the link's frame airtime).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FadingCfg {
    pub pe: f64,
    pub fdt: f64,
    #[serde(default)]
    pub frame_time: Option<Dur>,
}

/// `model = "droplist"`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DropListCfg {
    pub frames: Vec<u64>,
}

/// `model = "trace"`: a frame-error trace file (relative to the scenario file).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceChannelCfg {
    pub file: String,
    /// Start again at the trace's end (default) or lose nothing more.
    #[serde(default)]
    pub repeat: Option<bool>,
    /// The file's table to replay: `"down"` or `"up"` (default: the direction's own).
    #[serde(default)]
    pub section: Option<String>,
    /// The file as read when the scenario was parsed.
    #[serde(skip)]
    pub loaded: Option<std::sync::Arc<ChannelTraceFile>>,
}

/// A frame-error trace file: each direction's fates.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ChannelTraceFile {
    pub down: Option<std::sync::Arc<crate::channel::trace::FateTrace>>,
    pub up: Option<std::sync::Arc<crate::channel::trace::FateTrace>>,
}

impl ChannelTraceFile {
    /// Parses the file's text (see `channel/trace.rs`).
    pub fn parse(text: &str) -> Result<ChannelTraceFile, String> {
        use crate::channel::trace::FateTrace;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Dir {
            #[serde(default)]
            frames: Option<u64>,
            #[serde(default)]
            lost: Option<Vec<u64>>,
            #[serde(default)]
            duration: Option<Dur>,
            #[serde(default)]
            bad: Option<Vec<[Dur; 2]>>,
            /// What one frame took on the air, and its bits (for `fit-channel`).
            #[serde(default, rename = "frame_time")]
            _frame_time: Option<Dur>,
            #[serde(default, rename = "frame_bits")]
            _frame_bits: Option<u64>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            down: Option<Dir>,
            #[serde(default)]
            up: Option<Dir>,
        }
        let v = super::toml_value(text).map_err(|e| e.to_string())?;
        let f: File = super::deserialize(v).map_err(|e| e.to_string())?;
        let conv = |name: &str, d: Option<Dir>| -> Result<Option<std::sync::Arc<FateTrace>>, String> {
            let Some(d) = d else { return Ok(None) };
            let t = match (d.frames, d.lost, d.duration, d.bad) {
                (Some(frames), lost, None, None) => FateTrace::Frames { frames, lost: lost.unwrap_or_default() },
                (None, None, Some(duration), bad) => FateTrace::Time {
                    duration: duration.0,
                    bad: bad.unwrap_or_default().into_iter().map(|[a, b]| (a.0, b.0)).collect(),
                },
                _ => {
                    return Err(format!(
                        "[{name}]: give frames (and lost) for a trace by frame, or duration (and bad) for one by time"
                    ))
                }
            };
            t.check().map_err(|m| format!("[{name}]: {m}"))?;
            Ok(Some(std::sync::Arc::new(t)))
        };
        Ok(ChannelTraceFile { down: conv("down", f.down)?, up: conv("up", f.up)? })
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StateCfg {
    pub ber: f64,
    pub mean: Dur,
}

pub(super) fn validate_channel(c: &ChannelCfg, path: &str) -> Result<(), ConfigError> {
    match c {
        ChannelCfg::Uniform(UniformCfg { p }) if !(0.0..=1.0).contains(p) => {
            Err(cerr(format!("{path}.p"), format!("{p} is not a probability in [0, 1]")))
        }
        ChannelCfg::TwoState(TwoStateCfg { good, bad }) => {
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
        ChannelCfg::Fading(FadingCfg { pe, fdt, .. }) => {
            if !(*pe > 0.0 && *pe < 1.0) {
                return Err(cerr(format!("{path}.pe"), format!("{pe} is not a frame error rate in (0, 1)")));
            }
            if !(*fdt > 0.0) {
                return Err(cerr(format!("{path}.fdt"), format!("{fdt} is not a positive normalised Doppler")));
            }
            Ok(())
        }
        ChannelCfg::Trace(t) => match t.section.as_deref() {
            None | Some("down") | Some("up") => Ok(()),
            Some(x) => Err(cerr(format!("{path}.section"), format!("{x:?} is not \"down\" or \"up\""))),
        },
        _ => Ok(()),
    }
}

fn positive(path: &str, k: &str, d: Option<Dur>) -> Result<(), ConfigError> {
    if d.is_some_and(|d| d.0 <= Duration::ZERO) {
        return Err(cerr(format!("{path}.{k}"), "must be a positive duration"));
    }
    Ok(())
}

fn window(path: &str, w: Option<u32>) -> Result<(), ConfigError> {
    if w == Some(0) {
        return Err(cerr(format!("{path}.window"), "must be at least 1 frame"));
    }
    Ok(())
}

/// Checks values the types cannot: ranges and combinations.
pub(super) fn validate_link(a: &LinkCfg, path: &str) -> Result<(), ConfigError> {
    match a {
        LinkCfg::Raw => {}
        LinkCfg::Sr(s) => {
            window(path, s.window)?;
            positive(path, "timeout", s.timeout)?;
            positive(path, "renack", s.renack)?;
        }
        LinkCfg::Asr(s) => {
            window(path, s.window)?;
            positive(path, "initial_srtt", s.initial_srtt)?;
            positive(path, "renack", s.renack)?;
        }
        LinkCfg::Rlc(r) => {
            window(path, r.window)?;
            if r.poll_window.is_some_and(|p| p > 100) {
                return Err(cerr(format!("{path}.poll_window"), "is a percentage of the window: 0 (off) to 100"));
            }
            if r.max_retransmissions.is_some_and(|x| x > 1000) {
                return Err(cerr(format!("{path}.max_retransmissions"), "must be at most 1000"));
            }
            positive(path, "mrw_timer", r.mrw_timer)?;
        }
        LinkCfg::Is707(i) => {
            if let Some(r) = &i.nak_rounds {
                if r.len() > 10 || r.iter().any(|&n| n == 0 || n > 10) {
                    return Err(cerr(
                        format!("{path}.nak_rounds"),
                        "give at most 10 rounds of 1 to 10 NAKs each, e.g. [1, 2, 3]",
                    ));
                }
            }
            positive(path, "nak_timer", i.nak_timer)?;
        }
        LinkCfg::RlpGsm(g) => {
            window(path, g.window)?;
            if g.window.is_some_and(|w| w > 61) {
                return Err(cerr(format!("{path}.window"), "GSM RLP (modulus 64) allows at most 61 frames"));
            }
            if g.n2.is_some_and(|n| n == 0 || n > 255) {
                return Err(cerr(format!("{path}.n2"), "must be between 1 and 255 retransmissions"));
            }
            positive(path, "t1", g.t1)?;
            if g.l2r_rate.is_some_and(|r| r.0 < 8) {
                return Err(cerr(format!("{path}.l2r_rate"), "must be at least 8bps (one byte per second)"));
            }
            if g.l2r_buffer.is_some_and(|b| b.0 == 0 || b.0 > 1 << 20) {
                return Err(cerr(format!("{path}.l2r_buffer"), "must be between 1B and 1MiB"));
            }
        }
        LinkCfg::Gprs(g) => {
            for (k, d) in [
                ("tbf_idle", g.tbf_idle),
                ("pdu_lifetime", g.pdu_lifetime),
                ("outage_every", g.outage_every),
                ("uplink_period", g.uplink_period),
                ("poor_every", g.poor_every),
            ] {
                positive(path, k, d)?;
            }
            if let Some(list) = &g.outages {
                if g.outage_every.is_some() {
                    return Err(cerr(format!("{path}.outages"), "give either fixed outages or outage_every, not both"));
                }
                let mut last = Duration::ZERO;
                for (i, o) in list.iter().enumerate() {
                    if o.len() != 2 || o[0].0 < last || o[1].0 <= Duration::ZERO {
                        return Err(cerr(
                            format!("{path}.outages[{i}]"),
                            "give [start, length] with a positive length, in time order without overlap, e.g. [\"90s\", \"25s\"]",
                        ));
                    }
                    last = o[0].0 + o[1].0;
                }
            }
            if g.poor_share.is_some_and(|s| !(s > 0.0 && s <= 1.0)) {
                return Err(cerr(format!("{path}.poor_share"), "must be a share of the rate in (0, 1]"));
            }
            if g.rlc_buffer == Some(0) {
                return Err(cerr(format!("{path}.rlc_buffer"), "must be at least 1 packet"));
            }
        }
    }
    Ok(())
}
