//! Integer simulation time: `Instant` and `Duration` over i64 nanoseconds.
//!
//! No floats are used for time anywhere in the core; conversions to seconds as
//! `f64` exist only for reporting.
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// A span of time in nanoseconds (may be negative in intermediate arithmetic).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub i64);

/// A point in simulated time, nanoseconds since the start of the run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub i64);

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(i64::MAX / 4);
    pub const fn from_nanos(n: i64) -> Self {
        Duration(n)
    }
    pub const fn from_micros(n: i64) -> Self {
        Duration(n * 1_000)
    }
    pub const fn from_millis(n: i64) -> Self {
        Duration(n * 1_000_000)
    }
    pub const fn from_secs(n: i64) -> Self {
        Duration(n * 1_000_000_000)
    }
    pub const fn nanos(self) -> i64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Rounds a floating-point number of seconds to the nearest nanosecond
    /// (used only when sampling random durations).
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * 1e9).round() as i64)
    }
    /// Time to serialise `bytes` at `bps` bits per second, rounded up to 1 ns.
    pub fn transmission(bytes: u64, bps: u64) -> Self {
        // In 64 bits whenever the product fits (any frame or packet): a 128-bit
        // division is a library call, once per frame sent.
        match bytes.checked_mul(8_000_000_000) {
            Some(bits) => Duration(bits.div_ceil(bps) as i64),
            None => Duration((bytes as u128 * 8_000_000_000).div_ceil(bps as u128) as i64),
        }
    }
    /// Round up to a multiple of `g` (clock granularity); `g == 0` leaves it.
    pub fn ceil_to(self, g: Duration) -> Self {
        if g.0 <= 0 {
            self
        } else {
            // Saturating: a deadline near the end of time stays there instead of
            // wrapping into the past (which once livelocked a run).
            Duration(self.0.saturating_add(g.0 - 1).div_euclid(g.0).saturating_mul(g.0))
        }
    }
    pub fn max(self, o: Duration) -> Self {
        if self >= o {
            self
        } else {
            o
        }
    }
    pub fn min(self, o: Duration) -> Self {
        if self <= o {
            self
        } else {
            o
        }
    }
}

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub const fn nanos(self) -> i64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn since(self, earlier: Instant) -> Duration {
        Duration(self.0 - earlier.0)
    }
}

/// The earlier of two optional deadlines (`None`: no deadline). Written out
/// rather than as `[a, b, …].into_iter().flatten().min()`, which the compiler
/// builds as an array on the stack read back at a different width — a stalled
/// store-to-load forward on every poll of a timer (bench/RESULTS.md,
/// 2026-11-29, second session).
#[inline]
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0)
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0 - d.0)
    }
}
impl Sub for Instant {
    type Output = Duration;
    fn sub(self, o: Instant) -> Duration {
        Duration(self.0 - o.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0)
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0 - d.0)
    }
}
impl Mul<i64> for Duration {
    type Output = Duration;
    fn mul(self, k: i64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}
impl Div<i64> for Duration {
    type Output = Duration;
    fn div(self, k: i64) -> Duration {
        Duration(self.0 / k)
    }
}

impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "@{:.9}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn transmission_time_rounds_up() {
        assert_eq!(Duration::transmission(254, 64_000), Duration(31_750_000));
        // Both paths round up alike, at the 64-bit boundary and beyond it.
        for (b, r) in
            [(1, 3), (2_305_843_009, 7), (2_305_843_010, 7), (u64::MAX / 4, 1_000_003), (1500, 10_000_000_001)]
        {
            let wide = (b as u128 * 8_000_000_000).div_ceil(r as u128) as i64;
            assert_eq!(Duration::transmission(b, r), Duration(wide), "{b} B at {r} bit/s");
        }
        assert_eq!(Duration::transmission(1, 3), Duration(2_666_666_667));
    }
    #[test]
    fn ceil_to_granularity() {
        assert_eq!(Duration::from_millis(11).ceil_to(Duration::from_millis(10)), Duration::from_millis(20));
        assert_eq!(Duration::from_millis(20).ceil_to(Duration::from_millis(10)), Duration::from_millis(20));
        assert_eq!(Duration::from_millis(7).ceil_to(Duration::ZERO), Duration::from_millis(7));
        let huge = Duration(i64::MAX - 5).ceil_to(Duration::from_millis(10));
        assert!(huge > Duration::ZERO, "{huge:?}");
    }
}
