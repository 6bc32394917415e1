//! Queue settings (`[wired] queue`, `[wireless] queue`, `[wireless.down|up]
//! queue`), tagged by `discipline` (default `"droptail"`): each discipline takes
//! its own fields, and a field of another is an error naming the field and what
//! the chosen one takes. Defaults are the models' own (`queue/*.rs`); `build.rs`
//! turns a section into a `QdiscConfig` with the position's default limit.
use super::units::{bad_tag, tagged, Dur, Rate, Size, INNER};
use super::{cerr, ConfigError};
use crate::queue::{Limit, QdiscKind};
use serde::{de, Deserialize, Deserializer};

#[derive(Clone, Debug, PartialEq)]
pub enum QueueCfg {
    DropTail(DropTailCfg),
    Red(RedCfg),
    Codel(CodelCfg),
    FqCodel(FqCodelCfg),
    Pie(PieCfg),
}

impl QueueCfg {
    pub fn kind(&self) -> QdiscKind {
        match self {
            QueueCfg::DropTail(_) => QdiscKind::DropTail,
            QueueCfg::Red(_) => QdiscKind::Red,
            QueueCfg::Codel(_) => QdiscKind::Codel,
            QueueCfg::FqCodel(_) => QdiscKind::FqCodel,
            QueueCfg::Pie(_) => QdiscKind::Pie,
        }
    }
    /// The hard limit, if set.
    pub fn limit(&self) -> Option<Limit> {
        match self {
            QueueCfg::DropTail(c) => c.limit,
            QueueCfg::Red(c) => c.limit,
            QueueCfg::Codel(c) => c.limit,
            QueueCfg::FqCodel(c) => c.limit,
            QueueCfg::Pie(c) => c.limit,
        }
    }
}

/// `discipline = "droptail"` (or none): `limit`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DropTailCfg {
    #[serde(default)]
    pub limit: Option<Limit>,
}

/// `discipline = "red"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedCfg {
    #[serde(default)]
    pub limit: Option<Limit>,
    #[serde(default)]
    pub ecn: Option<bool>,
    /// Thresholds of the average, `"5pkt"` or a size.
    #[serde(default)]
    pub min: Option<Limit>,
    #[serde(default)]
    pub max: Option<Limit>,
    /// max_p.
    #[serde(default)]
    pub probability: Option<f64>,
    #[serde(default)]
    pub avpkt: Option<Size>,
    #[serde(default)]
    pub burst: Option<u32>,
    #[serde(default)]
    pub bandwidth: Option<Rate>,
    #[serde(default)]
    pub gentle: Option<bool>,
    #[serde(default)]
    pub harddrop: Option<bool>,
}

/// `discipline = "codel"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodelCfg {
    #[serde(default)]
    pub limit: Option<Limit>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub target: Option<Dur>,
    #[serde(default)]
    pub interval: Option<Dur>,
    #[serde(default)]
    pub mtu: Option<Size>,
}

/// `discipline = "fq_codel"`: CoDel's fields and the scheduler's.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FqCodelCfg {
    #[serde(default)]
    pub limit: Option<Limit>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub target: Option<Dur>,
    #[serde(default)]
    pub interval: Option<Dur>,
    #[serde(default)]
    pub mtu: Option<Size>,
    #[serde(default)]
    pub flows: Option<u32>,
    #[serde(default)]
    pub quantum: Option<Size>,
    #[serde(default)]
    pub drop_batch: Option<u32>,
}

/// `discipline = "pie"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PieCfg {
    #[serde(default)]
    pub limit: Option<Limit>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub target: Option<Dur>,
    #[serde(default)]
    pub t_update: Option<Dur>,
    #[serde(default)]
    pub alpha: Option<f64>,
    #[serde(default)]
    pub beta: Option<f64>,
    #[serde(default)]
    pub max_burst: Option<Dur>,
    #[serde(default)]
    pub mean_pkt_size: Option<Size>,
    #[serde(default)]
    pub ecn_threshold: Option<f64>,
}

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
        let rest = toml::Value::Table(t);
        let what = format!("discipline {name:?}");
        Ok(match QdiscKind::parse(&name) {
            Some(QdiscKind::DropTail) => QueueCfg::DropTail(tagged(rest, &what)?),
            Some(QdiscKind::Red) => QueueCfg::Red(tagged(rest, &what)?),
            Some(QdiscKind::Codel) => QueueCfg::Codel(tagged(rest, &what)?),
            Some(QdiscKind::FqCodel) => QueueCfg::FqCodel(tagged(rest, &what)?),
            Some(QdiscKind::Pie) => QueueCfg::Pie(tagged(rest, &what)?),
            None => return Err(bad_tag("discipline", &name, "a queue discipline", QdiscKind::NAMES)),
        })
    }
}

fn positive(path: &str, key: &str, d: Option<Dur>) -> Result<(), ConfigError> {
    match d {
        Some(Dur(x)) if x.nanos() <= 0 || x.nanos() > 3_600_000_000_000 => {
            Err(cerr(format!("{path}.{key}"), "must be a positive duration of at most 1h"))
        }
        _ => Ok(()),
    }
}

fn within(path: &str, key: &str, v: Option<f64>, lo: f64, hi: f64) -> Result<(), ConfigError> {
    match v {
        Some(x) if !(x.is_finite() && x >= lo && x <= hi) => {
            Err(cerr(format!("{path}.{key}"), format!("must be between {lo} and {hi}")))
        }
        _ => Ok(()),
    }
}

fn count(path: &str, key: &str, v: Option<u32>, lo: u32, hi: u32) -> Result<(), ConfigError> {
    match v {
        Some(x) if !(lo..=hi).contains(&x) => {
            Err(cerr(format!("{path}.{key}"), format!("must be between {lo} and {hi}")))
        }
        _ => Ok(()),
    }
}

fn bytes(path: &str, key: &str, v: Option<Size>, lo: u64, hi: u64) -> Result<(), ConfigError> {
    match v {
        Some(Size(x)) if !(lo..=hi).contains(&x) => {
            Err(cerr(format!("{path}.{key}"), format!("must be between {lo}B and {hi}B")))
        }
        _ => Ok(()),
    }
}

/// The checks serde cannot make: ranges, and RED's thresholds in order.
pub(super) fn validate_queue(q: &QueueCfg, path: &str) -> Result<(), ConfigError> {
    if let Some(Limit::Packets(n)) = q.limit() {
        count(path, "limit", Some(n), 1, 10_000_000)?;
    }
    if let Some(Limit::Bytes(b)) = q.limit() {
        if !(64..=1 << 32).contains(&b) {
            return Err(cerr(format!("{path}.limit"), "must be between 64B and 4GiB"));
        }
    }
    match q {
        QueueCfg::DropTail(_) => {}
        QueueCfg::Red(c) => {
            within(path, "probability", c.probability, 1e-9, 1.0)?;
            bytes(path, "avpkt", c.avpkt, 1, 65535)?;
            count(path, "burst", c.burst, 1, 1_000_000)?;
            if c.bandwidth.is_some_and(|r| r.0 == 0) {
                return Err(cerr(format!("{path}.bandwidth"), "must be a positive rate"));
            }
            let avpkt = c.avpkt.map_or(1000, |s| s.0);
            let amount = |l: Limit| match l {
                Limit::Packets(n) => n as u64 * avpkt,
                Limit::Bytes(b) => b,
            };
            if let (Some(lo), Some(hi)) = (c.min, c.max) {
                if amount(lo) >= amount(hi) {
                    return Err(cerr(format!("{path}.min"), "must be below max"));
                }
            }
        }
        QueueCfg::Codel(c) => {
            positive(path, "target", c.target)?;
            positive(path, "interval", c.interval)?;
            bytes(path, "mtu", c.mtu, 0, 65535)?;
        }
        QueueCfg::FqCodel(f) => {
            positive(path, "target", f.target)?;
            positive(path, "interval", f.interval)?;
            bytes(path, "mtu", f.mtu, 0, 65535)?;
            count(path, "flows", f.flows, 1, 65536)?;
            bytes(path, "quantum", f.quantum, 64, 1 << 20)?;
            count(path, "drop_batch", f.drop_batch, 1, 1_000_000)?;
        }
        QueueCfg::Pie(c) => {
            positive(path, "target", c.target)?;
            positive(path, "t_update", c.t_update)?;
            positive(path, "max_burst", c.max_burst).or_else(|e| match c.max_burst {
                Some(Dur(x)) if x.nanos() == 0 => Ok(()),
                _ => Err(e),
            })?;
            within(path, "alpha", c.alpha, 0.0, 1000.0)?;
            within(path, "beta", c.beta, 0.0, 1000.0)?;
            within(path, "ecn_threshold", c.ecn_threshold, 0.0, 1.0)?;
            bytes(path, "mean_pkt_size", c.mean_pkt_size, 1, 65535)?;
        }
    }
    Ok(())
}
