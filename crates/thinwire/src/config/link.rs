//! `[wireless.arq]` (tagged by `protocol`) and channel models (tagged by `model`):
//! each protocol and model has its own fields, and a field of another one is an
//! error naming the field and what the chosen one takes. A link protocol's keys,
//! their checks and defaults are declared in its file (`link/*.rs`, the
//! registry's `LinkCfg`); the channel models' here, with their defaults in the
//! models (`build.rs` applies what is set over them).
use super::units::{bad_tag, split_tag, tagged, tagged_enum, Dur, NoFields};
use super::{cerr, ConfigError};
pub use crate::link::asr::{parse_policy, AsrCfg, Policy};
pub use crate::link::gprs::GprsCfg;
pub use crate::link::gsm_csd::{OnN2Cfg, RlpGsmCfg};
pub use crate::link::is707::{IdleFrames, Is707Cfg};
pub use crate::link::rlc_am::{RlcCfg, RlcPreset};
pub use crate::link::sr::SrCfg;
pub use crate::link::{ArqKind, LinkCfg};
use serde::{Deserialize, Deserializer};

/// The link protocols' names, in registry order.
pub const PROTOCOLS: &[&str] = ArqKind::NAMES;

impl<'de> Deserialize<'de> for LinkCfg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (t, rest) = split_tag(d, "protocol")?;
        let Some(kind) = ArqKind::parse(&t) else {
            return Err(bad_tag("protocol", &t, "a link protocol", PROTOCOLS));
        };
        LinkCfg::parse(kind, rest, &format!("protocol {t:?}"))
    }
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

/// Checks values the types cannot: ranges and combinations (each protocol's
/// `LinkSection::check`).
pub(super) fn validate_link(a: &LinkCfg, path: &str) -> Result<(), ConfigError> {
    a.get().check().map_err(|e| cerr(format!("{path}.{}", e.key), e.message))
}
