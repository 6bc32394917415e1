//! Frame-error trace replay (seed 000 §4.1, §6: a recorded fate per radio block
//! — decoded, or lost and sent again — replayed in a simulator). One direction's
//! trace is either
//!
//! - **by frame index**: `frames` frames, of which the 0-based indices in `lost`
//!   were lost (the channel's decision for the i-th frame sent in that
//!   direction, whatever it carries); or
//! - **by time**: `duration`, and the intervals `bad = [[start, end], …]` during
//!   which every frame that starts is lost.
//!
//! Past its end a trace starts again (`repeat`, the default) or loses nothing
//! more. `thinwire channel-trace RUN_DIR` writes a run's channel decisions in the
//! frame-index form, and replaying them gives the run's link decisions exactly
//! (`tests/test_channel_trace.py`, every link protocol).
//!
//! File (TOML, one table per direction; `section` picks another than the
//! direction's own):
//!
//! ```toml
//! [down]
//! frames = 12000
//! lost = [17, 18, 19, 230]
//! [up]
//! duration = "120s"
//! bad = [["1.2s", "1.35s"], ["40s", "40.5s"]]
//! ```
use crate::time::{Duration, Instant};

/// One direction's recorded fates.
#[derive(Clone, Debug, PartialEq)]
pub enum FateTrace {
    Frames { frames: u64, lost: Vec<u64> },
    Time { duration: Duration, bad: Vec<(Duration, Duration)> },
}

impl FateTrace {
    /// Whether the frame of 0-based `index`, starting at `start`, is lost.
    pub fn lost(&self, index: u64, start: Instant, repeat: bool) -> bool {
        match self {
            FateTrace::Frames { frames, lost } => {
                let i = match (repeat, *frames) {
                    (_, 0) => return false,
                    (true, n) => index % n,
                    (false, n) if index >= n => return false,
                    (false, _) => index,
                };
                lost.binary_search(&i).is_ok()
            }
            FateTrace::Time { duration, bad } => {
                let t = Duration(start.nanos().max(0));
                let t = match (repeat, *duration) {
                    (_, d) if d <= Duration::ZERO => return false,
                    (true, d) => Duration(t.0 % d.0),
                    (false, d) if t >= d => return false,
                    (false, _) => t,
                };
                let k = bad.partition_point(|&(s, _)| s <= t);
                k > 0 && t < bad[k - 1].1
            }
        }
    }

    /// Checks a parsed trace: indices below `frames` and increasing, intervals
    /// within the duration, in order, not overlapping.
    pub fn check(&self) -> Result<(), String> {
        match self {
            FateTrace::Frames { frames, lost } => {
                if let Some(w) = lost.windows(2).find(|w| w[0] >= w[1]) {
                    return Err(format!("lost indices must increase ({} then {})", w[0], w[1]));
                }
                if let Some(&i) = lost.iter().find(|&&i| i >= *frames) {
                    return Err(format!("lost index {i} is not below frames = {frames}"));
                }
            }
            FateTrace::Time { duration, bad } => {
                if *duration <= Duration::ZERO {
                    return Err("duration must be positive".into());
                }
                let mut last = Duration::ZERO;
                for &(s, e) in bad {
                    if s < last || e <= s || e > *duration {
                        return Err(format!(
                            "bad intervals must be increasing, non-empty and within the duration ({:?}..{:?})",
                            s, e
                        ));
                    }
                    last = e;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn ms(x: i64) -> Instant {
        Instant::ZERO + Duration::from_millis(x)
    }
    #[test]
    fn by_index_once_and_repeating() {
        let t = FateTrace::Frames { frames: 10, lost: vec![1, 2, 9] };
        let once: Vec<u64> = (0..25).filter(|&i| t.lost(i, ms(0), false)).collect();
        assert_eq!(once, [1, 2, 9]);
        let again: Vec<u64> = (0..25).filter(|&i| t.lost(i, ms(0), true)).collect();
        assert_eq!(again, [1, 2, 9, 11, 12, 19, 21, 22]);
    }
    #[test]
    fn by_time_once_and_repeating() {
        let d = Duration::from_millis;
        let t = FateTrace::Time { duration: d(100), bad: vec![(d(10), d(20)), (d(50), d(51))] };
        let lost: Vec<i64> = (0..250).filter(|&x| t.lost(0, ms(x), true)).collect();
        let want: Vec<i64> = [10..20, 50..51, 110..120, 150..151, 210..220].into_iter().flatten().collect();
        assert_eq!(lost, want);
        assert!(!t.lost(0, ms(115), false) && t.lost(0, ms(15), false));
    }
    #[test]
    fn checks() {
        assert!(FateTrace::Frames { frames: 3, lost: vec![0, 3] }.check().is_err());
        assert!(FateTrace::Frames { frames: 3, lost: vec![2, 1] }.check().is_err());
        let d = Duration::from_millis;
        assert!(FateTrace::Time { duration: d(10), bad: vec![(d(5), d(11))] }.check().is_err());
        assert!(FateTrace::Time { duration: d(10), bad: vec![(d(5), d(6)), (d(5), d(7))] }.check().is_err());
        assert!(FateTrace::Time { duration: d(10), bad: vec![(d(1), d(2)), (d(2), d(3))] }.check().is_ok());
    }
}
