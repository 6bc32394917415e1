//! When a Linux TCP timer fires: the kernel's timer wheel (`tcp.timer_wheel`,
//! on in the `linux` profile).
//!
//! Source: Linux `kernel/time/timer.c` (`calc_wheel_index`, `calc_index`, the
//! non-cascading wheel since 4.8) and `include/linux/jiffies.h`
//! (`usecs_to_jiffies` rounds up). TCP's retransmission timer (RTO, the tail loss
//! probe, RACK's reordering timer: `inet_csk_reset_xmit_timer`), its delayed-ACK
//! timer and a request socket's SYN-ACK timer are `timer_list`s on that wheel;
//! only pacing uses an hrtimer. A timer armed at jiffy `J` for `n` jiffies
//! (`expires = J + n`) goes into level `L` chosen by `n`: level 0 for `n < 63`,
//! 1 for `n < 504`, 2 for `n < 4,032`, 3 for `n < 32,256`, each level's buckets
//! `8^L` jiffies wide, and the bucket is the first boundary strictly after
//! `expires` — `((expires >> 3L) + 1) << 3L` — so the timer never fires early and
//! fires up to one bucket late. At `CONFIG_HZ=250` (4 ms jiffies): up to 4 ms
//! late below 252 ms, 32 ms below 2.02 s, 256 ms below 16.1 s, 2.05 s below
//! 129 s. A 1 s SYN timer armed at jiffy 0 fires at 1.024 s; an RTO of 2.26 s
//! armed at 0.1 s fires at 2.56 s.
//!
//! Parameters: the jiffy is the profile's `timer_granularity` (4 ms in `linux`,
//! `CONFIG_HZ=250` as the emulator's host). The counter's phase at a connection's
//! start is arbitrary in a real host; each simulated connection draws one from
//! its ISNs (`phase_from`, the same for both ends: the emulator's hosts share one
//! kernel). With jiffy 0 at time 0 for every run instead, the buckets' edges
//! locked to the simulated links' regular timing (8 ms frames, 50 ms delays) and
//! one side of the race between a retransmission timer and an ACK always won
//! (`raw-lossy`, `docs/studies/sim-vs-real.md`). The wheel's clock is taken to be
//! the jiffies counter (the kernel forwards an idle base's clock to it when a
//! timer is added). The millisecond clock of TCP timestamps (`tcp_clock_ms`,
//! from the nanosecond clock, not jiffies) has a phase of its own
//! (`tcb::ts_phase_from`, in [0, 1 ms); `Tcb::ts_phase`).
//! One approximation: the receiver's "ACK now if the delayed-ACK timer is due
//! within a quarter of its timeout" test (`tcp_send_delayed_ack`) compares the
//! bucket's time, where the kernel compares the expiry (up to a jiffy earlier).
//! Without the wheel (every other profile) a timer fires at its deadline rounded
//! up to the granularity, as before.
use crate::time::{Duration, Instant};

/// Wheel levels' start in jiffies (`LVL_START(1..)`: `63 << 3(L-1)`).
const LVL_START: [u64; 7] = [63, 504, 4_032, 32_256, 258_048, 2_064_384, 16_515_072];

/// The jiffies counter's phase for a connection (see `Tcb::wheel_phase`): a
/// time in [0, 2^18 ticks) — the period of the wheel's level 6 — from its two ISNs.
pub(crate) fn phase_from(iss_a: u32, iss_b: u32, tick: Duration) -> Duration {
    let span = (tick.nanos().max(1) as u64) << 18;
    Duration((((iss_a as u64) << 32 | iss_b as u64) % span) as i64)
}

/// When a timer armed at `now` for `after` fires on a wheel of `tick` jiffies.
pub(crate) fn fire_at(now: Instant, after: Duration, tick: Duration) -> Instant {
    let t = tick.nanos().max(1) as u64;
    let jiffies = now.nanos().max(0) as u64 / t;
    // usecs_to_jiffies: whole jiffies, rounded up.
    let n = (after.nanos().max(0) as u64).div_ceil(t);
    let expires = jiffies.saturating_add(n);
    let level = LVL_START.iter().position(|&s| n < s).unwrap_or(LVL_START.len()) as u32;
    let shift = 3 * level;
    let bucket = ((expires >> shift) + 1) << shift;
    Instant(bucket.saturating_mul(t).min(i64::MAX as u64) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: i64) -> Duration {
        Duration::from_millis(x)
    }
    fn at(x: i64) -> Instant {
        Instant(ms(x).nanos())
    }

    /// Each connection's counter phase lies within the wheel's longest period and
    /// differs with its ISNs; timers then end on the buckets shifted by it.
    #[test]
    fn a_connection_draws_its_phase_from_its_isns() {
        let tick = ms(4);
        let a = phase_from(1, 2, tick);
        let b = phase_from(3_000_000_000, 17, tick);
        assert!(a < Duration(tick.nanos() << 18) && b < Duration(tick.nanos() << 18));
        assert_ne!(a, b);
        // A 100 ms timer armed at 0: level 1 (8-jiffy buckets), its bucket edge
        // moved by the phase, never before the expiry.
        for ph in [Duration::ZERO, ms(3), ms(17), ms(31)] {
            let fire = fire_at(at(0) + ph, ms(100), tick) - ph;
            assert!(fire >= at(100) && fire <= at(132), "{ph:?}: {fire:?}");
        }
    }

    #[test]
    fn level_zero_fires_on_the_tick_after_the_expiry() {
        // 40 ms delayed ACK armed at 10.5 ms: jiffy 2, expires 12, fires at jiffy 13.
        assert_eq!(fire_at(Instant(10_500_000), ms(40), ms(4)), at(52));
        // Armed exactly on a tick: a whole jiffy late (the wheel cannot tell the
        // tick's edge from its end).
        assert_eq!(fire_at(at(8), ms(40), ms(4)), at(52));
        // A fraction of a jiffy is a whole one.
        assert_eq!(fire_at(at(0), Duration(1), ms(4)), at(8));
    }

    #[test]
    fn outer_levels_round_up_to_their_bucket() {
        // 1 s SYN timer at jiffy 0: 250 jiffies, level 1 (8-jiffy buckets): 256.
        assert_eq!(fire_at(at(0), ms(1000), ms(4)), at(1024));
        // 2.26 s RTO at 0.1 s: jiffy 25 + 565 = 590, level 2 (64): bucket 640.
        assert_eq!(fire_at(at(100), ms(2260), ms(4)), at(2560));
        // 20 s (5,000 jiffies, level 3, 512-jiffy buckets) at 0: 5,120 = 20.48 s.
        assert_eq!(fire_at(at(0), ms(20_000), ms(4)), at(20_480));
        // 252 ms is 63 jiffies: the first of level 1.
        assert_eq!(fire_at(at(0), ms(252), ms(4)), at(256));
        assert_eq!(fire_at(at(0), ms(248), ms(4)), at(252));
    }

    #[test]
    fn never_early_and_at_most_one_bucket_late() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let now = Instant((x % 100_000_000_000) as i64);
            let after = Duration(((x >> 20) % 120_000_000_000) as i64);
            let fire = fire_at(now, after, ms(4));
            assert!(fire >= now + after, "{now:?} + {after:?} fired early at {fire:?}");
            let n = (after.nanos() as u64).div_ceil(4_000_000);
            let gran = 4_000_000 * (1i64 << (3 * LVL_START.iter().position(|&s| n < s).unwrap() as u32));
            assert!(fire.nanos() <= (now + after).nanos() + gran + 4_000_000);
        }
    }
}
