//! Quantities with units, parsed from scenario strings.
//!
//! * rates: `bps`, `kbps`, `Mbps`, `Gbps` (SI, powers of 1000; `kbit/s` etc. accepted);
//! * sizes: `B`, `KB`, `MB`, `GB` (SI: 1 KB = 1000 B) and `KiB`, `MiB`, `GiB` (binary);
//! * durations: `ns`, `us`, `ms`, `s`, `min`, `h`.
//!
//! A bare number is accepted for sizes (bytes) and durations (seconds) only where a
//! scenario field documents it; rates always need a unit.
//!
//! Every value has a range, whatever the field (fields narrow it further in
//! `config`): rates 1 bps to 1 Tbps ([`MAX_RATE`]), sizes 0 to 1 TB ([`MAX_SIZE`]),
//! durations 0 to 1,000,000 s ([`MAX_DURATION_S`], 11.6 days). Beyond these a run
//! could not finish or its arithmetic would overflow, so such values are errors
//! that name the range rather than numbers that saturate or wrap silently.
use crate::time::Duration;
use serde::{de, Deserialize, Deserializer};

/// The largest rate accepted: 1 Tbit/s.
pub const MAX_RATE: u64 = 1_000_000_000_000;
/// The largest size accepted: 1 TB.
pub const MAX_SIZE: u64 = 1_000_000_000_000;
/// The longest duration accepted, in seconds (11.6 days).
pub const MAX_DURATION_S: i64 = 1_000_000;

fn split_num(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    // "e" may begin a unit only in none of ours, so scientific notation is safe.
    let (n, u) = s.split_at(end);
    let v: f64 = n.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, u.trim()))
}

/// Parses a rate into bits per second. Must be strictly positive.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    const ACCEPT: &str = "a positive rate such as \"64kbps\", \"10Mbps\", \"9600bps\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("{s:?} is not {ACCEPT}"))?;
    let k = match u {
        "bps" | "bit/s" => 1.0,
        "kbps" | "Kbps" | "kbit/s" => 1e3,
        "Mbps" | "mbps" | "Mbit/s" => 1e6,
        "Gbps" | "gbps" | "Gbit/s" => 1e9,
        _ => return Err(format!("{s:?} has an unknown rate unit; use {ACCEPT}")),
    };
    let bps = (v * k).round();
    if bps < 1.0 {
        return Err(format!("{s:?} must be {ACCEPT}"));
    }
    if bps > MAX_RATE as f64 {
        return Err(format!("{s:?} is more than 1Tbps, the highest rate accepted"));
    }
    Ok(bps as u64)
}

/// Parses a size into bytes (non-negative).
pub fn parse_size(s: &str) -> Result<u64, String> {
    const ACCEPT: &str = "a size such as \"250B\", \"64KiB\", \"10MB\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("{s:?} is not {ACCEPT}"))?;
    let k = match u {
        "" | "B" | "bytes" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        _ => return Err(format!("{s:?} has an unknown size unit; use {ACCEPT}")),
    };
    if v < 0.0 {
        return Err(format!("{s:?} is negative; use {ACCEPT}"));
    }
    let b = (v * k).round();
    if b > MAX_SIZE as f64 {
        return Err(format!("{s:?} is more than 1TB, the largest size accepted"));
    }
    Ok(b as u64)
}

/// Parses a duration (non-negative).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const ACCEPT: &str = "a duration such as \"50ms\", \"1.1s\", \"2min\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("{s:?} is not {ACCEPT}"))?;
    let k = match u {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("{s:?} has an unknown time unit; use {ACCEPT}")),
    };
    if v < 0.0 {
        return Err(format!("{s:?} is negative; use {ACCEPT}"));
    }
    let ns = (v * k).round();
    if ns > MAX_DURATION_S as f64 * 1e9 {
        return Err(format!("{s:?} is longer than {MAX_DURATION_S}s (11.6 days), the longest duration accepted"));
    }
    Ok(Duration(ns as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rates() {
        assert_eq!(parse_rate("64kbps").unwrap(), 64_000);
        assert_eq!(parse_rate("10Mbps").unwrap(), 10_000_000);
        assert_eq!(parse_rate("9600bps").unwrap(), 9600);
        assert!(parse_rate("0kbps").is_err());
        assert!(parse_rate("-5kbps").is_err());
        assert!(parse_rate("64").is_err());
        assert!(parse_rate("64 furlongs").is_err());
        assert_eq!(parse_rate("1000Gbps").unwrap(), MAX_RATE);
        assert!(parse_rate("1001Gbps").unwrap_err().contains("1Tbps"));
    }
    #[test]
    fn sizes() {
        assert_eq!(parse_size("250B").unwrap(), 250);
        assert_eq!(parse_size("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert!(parse_size("3 parsecs").is_err());
        assert_eq!(parse_size("1000GB").unwrap(), MAX_SIZE);
        // Once saturated to u64::MAX (a transfer that sent nothing); now an error.
        assert!(parse_size("1e20B").unwrap_err().contains("1TB"));
    }
    #[test]
    fn durations() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.1s").unwrap(), Duration::from_millis(1100));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_duration("1000000s").unwrap(), Duration::from_secs(MAX_DURATION_S));
        // Once wrapped into the past (a livelock); now an error naming the range.
        assert!(parse_duration("1e20s").unwrap_err().contains("1000000s"));
        assert!(parse_duration("1e10s").is_err());
    }
}

// ----- the same quantities as scenario values (serde) -----

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
unit_type!(Rate, u64, parse_rate, "a rate string such as \"64kbps\"");
unit_type!(Size, u64, parse_size, "a size string such as \"250B\" or \"10MB\"");
unit_type!(Dur, Duration, parse_duration, "a duration string such as \"50ms\"");
unit_type!(Timer, Option<Duration>, parse_timer, "a duration string such as \"200ms\", or \"off\"");

/// A timer setting: a positive duration, or "off" (the timer is not used).
fn parse_timer(s: &str) -> Result<Option<Duration>, String> {
    if s.trim() == "off" {
        return Ok(None);
    }
    let d = parse_duration(s).map_err(|e| format!("{e}, or \"off\""))?;
    if d <= Duration::ZERO {
        return Err(format!("{s:?} is not a positive duration; use e.g. \"200ms\", or \"off\""));
    }
    Ok(Some(d))
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
