//! Queue settings (`[wired] queue`, `[wireless] queue`, `[wireless.down|up]
//! queue`), tagged by `discipline` (default `"droptail"`): each discipline takes
//! its own keys, declared in its file (`queue/*.rs`, the registry's `QueueCfg`),
//! and a key of another is an error naming the key and what the chosen one
//! takes. Defaults are the models' own; `build.rs` turns a section into a
//! `QdiscConfig` with the position's default limit.
use super::units::{bad_tag, INNER};
use super::{cerr, ConfigError};
pub use crate::queue::QueueCfg;
use crate::queue::{Limit, QdiscKind};
use serde::{de, Deserialize, Deserializer};

impl<'de> Deserialize<'de> for QueueCfg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = toml::Value::deserialize(d)?;
        let toml::Value::Table(mut t) = v else {
            return Err(de::Error::custom("expected a table such as { discipline = \"codel\", limit = \"100pkt\" }"));
        };
        let name = match t.remove("discipline") {
            None => "droptail".to_string(),
            Some(toml::Value::String(s)) => s,
            Some(_) => return Err(de::Error::custom(format!("{INNER}discipline{INNER}must be a string"))),
        };
        let Some(kind) = QdiscKind::parse(&name) else {
            return Err(bad_tag("discipline", &name, "a queue discipline", QdiscKind::NAMES));
        };
        QueueCfg::parse(kind, toml::Value::Table(t), &format!("discipline {name:?}"))
    }
}

/// The checks serde cannot make: the limit's range here, the discipline's own
/// keys in its file (`QueueSection::check`).
pub(super) fn validate_queue(q: &QueueCfg, path: &str) -> Result<(), ConfigError> {
    match q.get().limit() {
        Some(Limit::Packets(n)) if !(1..=10_000_000).contains(&n) => {
            return Err(cerr(format!("{path}.limit"), "must be between 1 and 10000000"));
        }
        Some(Limit::Bytes(b)) if !(64..=1 << 32).contains(&b) => {
            return Err(cerr(format!("{path}.limit"), "must be between 64B and 4GiB"));
        }
        _ => {}
    }
    q.get().check().map_err(|e| cerr(format!("{path}.{}", e.key), e.message))
}
