//! A model's own section of a scenario: the parts of the schema that a family's
//! registry generates (`registry!`'s `sections` clause) and that each algorithm's
//! file declares for itself (`Configured::Section`), with the plumbing every
//! tagged section shares: the rest of a table after its tag is read as one
//! variant's section, and a field of another variant is one line naming what
//! this one takes. Checks that serde cannot make return a [`FieldError`], which
//! `config` places at the section's path.
use serde::de::{self, DeserializeOwned};

/// An algorithm built from a scenario section of its own (its keys, all
/// optional: a missing key keeps the model's default).
pub trait Configured {
    type Section: DeserializeOwned + Clone + std::fmt::Debug + PartialEq + Default + Send + Sync + 'static;
}

/// A value serde accepted that the model cannot take: the key and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub key: String,
    pub message: String,
}

impl FieldError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError { key: key.into(), message: message.into() }
    }
}

/// `key` must be a positive duration, if set.
pub fn positive_duration(key: &'static str, d: Option<crate::units::Dur>) -> Result<(), FieldError> {
    match d {
        Some(crate::units::Dur(x)) if x.nanos() <= 0 => Err(FieldError::new(key, "must be a positive duration")),
        _ => Ok(()),
    }
}

/// `key` must be a positive duration of at most 1 h, if set.
pub fn positive(key: &'static str, d: Option<crate::units::Dur>) -> Result<(), FieldError> {
    match d {
        Some(crate::units::Dur(x)) if x.nanos() <= 0 || x.nanos() > 3_600_000_000_000 => {
            Err(FieldError::new(key, "must be a positive duration of at most 1h"))
        }
        _ => Ok(()),
    }
}

/// `key` must lie in `lo..=hi`, if set.
pub fn within(key: &'static str, v: Option<f64>, lo: f64, hi: f64) -> Result<(), FieldError> {
    match v {
        Some(x) if !(x.is_finite() && x >= lo && x <= hi) => {
            Err(FieldError::new(key, format!("must be between {lo} and {hi}")))
        }
        _ => Ok(()),
    }
}

/// A count `key` in `lo..=hi`, if set.
pub fn count(key: &'static str, v: Option<u32>, lo: u32, hi: u32) -> Result<(), FieldError> {
    match v {
        Some(x) if !(lo..=hi).contains(&x) => Err(FieldError::new(key, format!("must be between {lo} and {hi}"))),
        _ => Ok(()),
    }
}

/// A size `key` in `lo..=hi` bytes, if set.
pub fn bytes(key: &'static str, v: Option<crate::units::Size>, lo: u64, hi: u64) -> Result<(), FieldError> {
    match v {
        Some(crate::units::Size(x)) if !(lo..=hi).contains(&x) => {
            Err(FieldError::new(key, format!("must be between {lo}B and {hi}B")))
        }
        _ => Ok(()),
    }
}

/// Marks an error raised inside a tagged section, so that the section's own field
/// path can be joined to the path of the section (see [`tagged`]).
pub const INNER: char = '\u{1}';

/// Deserializes the rest of a tagged section (the tag removed) as `T`, keeping the
/// path of the field at fault. `what` names the variant for the message about a
/// field that does not belong to it ("protocol \"rlc\"", "a bulk flow").
pub fn tagged<T: DeserializeOwned, E: de::Error>(v: toml::Value, what: &str) -> Result<T, E> {
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

/// A serde message without the " in `path`" (toml: "\nin `path`") it may end
/// with. Other line breaks are kept: they come from a name the user wrote (a
/// quoted TOML key may hold one), which `ConfigError`'s display escapes; cutting
/// at them lost the rest of the message.
pub fn bare_message(m: &str) -> String {
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
