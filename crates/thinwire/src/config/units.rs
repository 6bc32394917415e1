//! Scalar types of the scenario schema: values with units (`"64kbps"`, `"10MB"`,
//! `"50ms"`), timers that can be `"off"`, queue limits, byte counts that can be
//! `"unlimited"`, the stop condition, and tagged sections.
use crate::time::Duration;
use crate::units;
use serde::{de, Deserialize, Deserializer};

pub use crate::queue::Limit;
pub use crate::schema::{bare_message, tagged, INNER};
pub use crate::units::{Dur, DurRange, Rate, Size, Timer};

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

/// A section tagged by one key, as one description: `tagged_enum! { #[…] pub
/// enum ChannelCfg, pub const MODELS, fn model, tag "model", what "model
/// {:?}", kind "a channel model" { "none" => None, "uniform" => Uniform(UniformCfg), … } }`
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
