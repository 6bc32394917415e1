//! Scalar types of the scenario schema: values with units (`"64kbps"`, `"10MB"`,
//! `"50ms"`), timers that can be `"off"`, queue limits, byte counts that can be
//! `"unlimited"`, the stop condition, and tagged sections.
use crate::time::Duration;
use crate::units;
use serde::de::DeserializeOwned;
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
        let bad = || de::Error::custom(format!("{s:?} is not a queue limit; use \"50pkt\" or a size such as \"64KB\""));
        if let Some(n) = s.trim().strip_suffix("pkt").or_else(|| s.trim().strip_suffix("packets")) {
            return n.trim().parse::<u32>().ok().filter(|&n| n > 0).map(Limit::Packets).ok_or_else(bad);
        }
        units::parse_size(&s).ok().filter(|&b| b > 0).map(Limit::Bytes).ok_or_else(bad)
    }
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

/// A `[min, max]` range of durations, min ≤ max, both non-negative.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DurRange(pub Duration, pub Duration);
impl<'de> Deserialize<'de> for DurRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<Dur>::deserialize(d)?;
        match v[..] {
            [a, b] if a.0 >= Duration::ZERO && b.0 >= a.0 => Ok(DurRange(a.0, b.0)),
            _ => Err(de::Error::custom("give a range [min, max] of durations, min ≤ max, e.g. [\"300ms\", \"2s\"]")),
        }
    }
}

/// Marks an error raised inside a tagged section, so that the section's own field
/// path can be joined to the path of the section (see [`tagged`]).
pub(crate) const INNER: char = '\u{1}';

/// Deserializes the rest of a tagged section (the tag removed) as `T`, keeping the
/// path of the field at fault. `what` names the variant for the message about a
/// field that does not belong to it ("protocol \"rlc\"", "a bulk flow").
pub(crate) fn tagged<T: DeserializeOwned, E: de::Error>(v: toml::Value, what: &str) -> Result<T, E> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let msg = bare_message(&e.inner().to_string());
        let (path, msg) = match unknown_field(&msg) {
            Some((field, accepted)) => {
                let p = if path.is_empty() || path == "." {
                    field.to_string()
                } else if path == field || path.ends_with(&format!(".{field}")) {
                    path
                } else {
                    format!("{path}.{field}")
                };
                let takes = if accepted.is_empty() { "no other fields".to_string() } else { accepted.join(", ") };
                (p, format!("does not apply to {what}, which takes {takes}"))
            }
            None => (path, msg),
        };
        E::custom(format!("{INNER}{path}{INNER}{msg}"))
    })
}

/// A section tagged by one key, as one description: `tagged_enum! { #[…] pub
/// enum LinkCfg, pub const PROTOCOLS, fn protocol, tag "protocol", what
/// "protocol {:?}", kind "a link protocol" { "raw" => Raw, "sr" => Sr(SrCfg), … } }`
/// gives the enum (a variant with its configuration, or none), the list of
/// names, the method naming a value's variant, and the parser: an unknown tag
/// is one line naming the others, a field of another variant one line naming
/// what this one takes (`what` formats the variant for it). The callers import
/// `split_tag`, `tagged`, `bad_tag` and `NoFields`.
macro_rules! tagged_enum {
    ($(#[$m:meta])* pub enum $en:ident, pub const $list:ident, fn $namefn:ident, tag $tag:literal, what $what:literal, kind $kind:literal {
        $($(#[$vm:meta])* $name:literal => $var:ident $(($cfg:ty))?,)+
    }) => {
        $(#[$m])*
        pub enum $en {
            $($(#[$vm])* $var $(($cfg))?,)+
        }

        pub const $list: &[&str] = &[$($name),+];

        impl $en {
            /// The name written in scenarios.
            pub fn $namefn(&self) -> &'static str {
                match self {
                    $($en::$var { .. } => $name,)+
                }
            }
        }

        impl<'de> Deserialize<'de> for $en {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let (t, rest) = split_tag(d, $tag)?;
                let what = format!($what, t);
                Ok(match t.as_str() {
                    $($name => tagged_enum!(@parse $en $var rest what $(($cfg))?),)+
                    _ => return Err(bad_tag($tag, &t, $kind, $list)),
                })
            }
        }
    };
    (@parse $en:ident $var:ident $rest:ident $what:ident) => {
        tagged::<NoFields, _>($rest, &$what).map(|_| $en::$var)?
    };
    (@parse $en:ident $var:ident $rest:ident $what:ident ($cfg:ty)) => {
        $en::$var(tagged($rest, &$what)?)
    };
}
pub(crate) use tagged_enum;

/// The configuration of a variant that has none: any field is an error.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoFields {}

/// Splits a tagged section into its tag and the rest.
pub(crate) fn split_tag<'de, D: Deserializer<'de>>(d: D, tag: &str) -> Result<(String, toml::Value), D::Error> {
    let v = toml::Value::deserialize(d)?;
    let toml::Value::Table(mut t) = v else {
        return Err(de::Error::custom(format!("expected a table with `{tag}`")));
    };
    match t.remove(tag) {
        Some(toml::Value::String(s)) => Ok((s, toml::Value::Table(t))),
        Some(_) => Err(de::Error::custom(format!("{INNER}{tag}{INNER}must be a string"))),
        None => Err(de::Error::custom(format!("missing field `{tag}`"))),
    }
}

/// An unknown tag: one line naming the accepted ones.
pub(crate) fn bad_tag<E: de::Error>(tag: &str, value: &str, what: &str, accepted: &[&str]) -> E {
    let list: Vec<String> = accepted.iter().map(|a| format!("{a:?}")).collect();
    E::custom(format!("{INNER}{tag}{INNER}{value:?} is not {what}; use one of {}", list.join(", ")))
}

/// A serde message without the " in `path`" (toml: "\nin `path`") it may end
/// with. Other line breaks are kept: they come from a name the user wrote (a
/// quoted TOML key may hold one), which `ConfigError`'s display escapes; cutting
/// at them lost the rest of the message.
pub(crate) fn bare_message(m: &str) -> String {
    let end = [" in `", "\nin `"].iter().filter_map(|s| m.rfind(s)).max().unwrap_or(m.len());
    m[..end].trim().to_string()
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`", or
/// "there are no fields"): the field and the accepted names.
fn unknown_field(msg: &str) -> Option<(&str, Vec<&str>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, tail) = rest.split_once('`')?;
    let accepted = tail.split('`').skip(1).step_by(2).collect();
    Some((field, accepted))
}
