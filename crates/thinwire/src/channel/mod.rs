//! Per-frame loss models for one direction of a wireless link.
//!
//! A channel is asked, for every frame in transmission order, whether that frame is
//! lost: [`Channel::lose`] gets the frame's start time, airtime and size in bits.
//! Each direction owns its channel and its own random stream.
//!
//! | model | source | parameters (defaults) |
//! |---|---|---|
//! | `none` | — | — |
//! | `uniform` | seed 002 §III "Uniform" | `p` (no default) |
//! | `two-state` | seed 002 §III "Two State" | `good = {ber, mean}`, `bad = {ber, mean}` (no defaults; seed 002 uses 1e-6/10 s and 1e-2/100..1000 ms) |
//! | `fading` | seed 001 §III; Zorzi, Rao & Milstein (1995, 1998) | `pe`, `fdt`, optional `frame_time` (defaults to the frame's airtime) |
//! | `droplist` | tests | `frames = [indices]` (0-based per direction) |
//! | `trace` | seed 000 §4.1, §6 (`trace.rs`) | `file` (a recorded fate per frame, or bad intervals in time), `repeat` (true), `section` (the direction's own) |
//! | scripted | test harness | a function of (frame index, start time, retransmission?) |
pub mod fading;
pub mod fit;
pub mod trace;
pub mod two_state;

use crate::rng::Rng;
use crate::time::{Duration, Instant};

pub use fading::Fading;
pub use two_state::TwoState;

pub enum Channel {
    None,
    Uniform {
        p: f64,
        rng: Rng,
    },
    TwoState(TwoState),
    Fading(Fading),
    DropList {
        sorted: Vec<u64>,
        next: usize,
    },
    /// A recorded trace of fates (`trace.rs`).
    Trace {
        trace: std::sync::Arc<trace::FateTrace>,
        repeat: bool,
    },
    /// A test's script: (frame index, start time, retransmission?) → lost.
    Scripted(Script),
}

/// A scripted channel's decision function.
pub type Script = Box<dyn FnMut(u64, Instant, bool) -> bool + Send>;

impl Channel {
    /// Decides the fate of the frame with 0-based index `index`, sent from `start`
    /// for `airtime`, of `bits` bits (`retx`: a link-layer retransmission, which
    /// only scripts look at). Calls must come in nondecreasing `start`.
    pub fn lose(&mut self, index: u64, start: Instant, airtime: Duration, bits: u64, retx: bool) -> bool {
        match self {
            Channel::None => false,
            Channel::Uniform { p, rng } => rng.bernoulli(*p),
            Channel::TwoState(c) => c.lose(start, airtime, bits),
            Channel::Fading(c) => c.lose(start, airtime),
            Channel::DropList { sorted, next } => {
                while *next < sorted.len() && sorted[*next] < index {
                    *next += 1;
                }
                *next < sorted.len() && sorted[*next] == index
            }
            Channel::Trace { trace, repeat } => trace.lost(index, start, *repeat),
            Channel::Scripted(f) => f(index, start, retx),
        }
    }
    pub fn droplist(mut frames: Vec<u64>) -> Channel {
        frames.sort_unstable();
        frames.dedup();
        Channel::DropList { sorted: frames, next: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn droplist_loses_exactly_listed() {
        let mut c = Channel::droplist(vec![5, 1, 3]);
        let lost: Vec<u64> = (0..8).filter(|&i| c.lose(i, Instant(i as i64), Duration(1), 8, false)).collect();
        assert_eq!(lost, vec![1, 3, 5]);
    }
    #[test]
    fn uniform_rate() {
        let mut c = Channel::Uniform { p: 0.054, rng: Rng::stream(3, 0, "u") };
        let n = 200_000;
        let lost = (0..n).filter(|&i| c.lose(i, Instant(0), Duration(1), 8, false)).count();
        let f = lost as f64 / n as f64;
        assert!((f - 0.054).abs() < 0.003, "{f}");
    }
}
