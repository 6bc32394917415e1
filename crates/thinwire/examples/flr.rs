//! Measures the frame loss rate of the two-state channel with seed 002's parameters
//! (good: 10 s mean, BER 1e-6; bad: 100/200/500/1000 ms mean, BER 1e-2; 250-byte
//! frames plus a 4-byte header on 64 kbit/s, sent back to back), with a 95 %
//! confidence interval over independent runs, beside the paper's figures.
//! `cargo run --release --example flr [RUNS] [FRAMES_PER_RUN]`
use thinwire::channel::TwoState;
use thinwire::rng::Rng;
use thinwire::time::{Duration, Instant};

fn main() {
    let a: Vec<u64> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let runs = *a.first().unwrap_or(&30);
    let frames = *a.get(1).unwrap_or(&1_000_000);
    let bytes = 254u64;
    let airtime = Duration::transmission(bytes, 64_000);
    println!("frame {bytes} B, airtime {:.2} ms, {runs} runs x {frames} frames", airtime.as_secs_f64() * 1e3);
    println!("{:>8} {:>10} {:>16} {:>12}", "bad mean", "paper FLR", "thinwire FLR", "analytic");
    for (bad_ms, paper) in [(100, 1.5), (200, 2.5), (500, 5.4), (1000, 9.8)] {
        let mut v = Vec::new();
        for r in 0..runs {
            let mut c = TwoState::new(
                1e-6,
                Duration::from_secs(10),
                1e-2,
                Duration::from_millis(bad_ms),
                Rng::stream(1, r, "flr"),
            );
            let mut t = Instant::ZERO;
            let mut lost = 0u64;
            for _ in 0..frames {
                if c.lose(t, airtime, bytes * 8) {
                    lost += 1;
                }
                t += airtime;
            }
            v.push(lost as f64 / frames as f64);
        }
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        // Analytic approximation: good-state frame loss 1-(1-1e-6)^bits, plus every
        // frame that overlaps a bad period (bad mean + one airtime per period).
        let pg = 1.0 - (1.0f64 - 1e-6).powi((bytes * 8) as i32);
        let tb = bad_ms as f64 / 1e3;
        let cycle = 10.0 + tb;
        let analytic = pg * (10.0 - airtime.as_secs_f64()) / cycle + (tb + airtime.as_secs_f64()) / cycle;
        println!(
            "{:>6}ms {:>9.1}% {:>9.2}% ±{:.2} {:>11.2}%",
            bad_ms,
            paper,
            m * 100.0,
            1.96 * sd / n.sqrt() * 100.0,
            analytic * 100.0
        );
    }
}
