//! CUBIC (RFC 9438), as Linux 6.x runs it (`net/ipv4/tcp_cubic.c`, with the slow
//! start and additive increase of `tcp_cong.c`): the window counted in packets,
//! W(t) = C·(t − K)³ + W_max with K = ∛(W_max·(1 − β)/C), the target computed
//! for one minimum RTT ahead, and the window moved towards it by one packet every
//! `cnt` packets acknowledged.
//!
//! Behaviour and constants carried over from the kernel (the code is our own):
//! - β = 717/1024 (≈ 0.7): after a loss ssthresh = max(cwnd·β, 2) packets;
//! - fast convergence: a loss below the last maximum sets W_max = cwnd·(1 + β)/2;
//! - C = 0.4 (`bic_scale` 41/1024 with the kernel's 100 ms reference RTT scaling:
//!   `cube_rtt_scale` = 410, `cube_factor` = 2^40/410), times in units of 1/1024 s;
//! - the target: origin ± `cube_rtt_scale`·|t − K|³ >> 40, where t is the time since
//!   the epoch began plus the minimum RTT, in whole jiffies; `cnt` = cwnd/(target −
//!   cwnd), or 100·cwnd at or above the target, at most 20 while no loss has been
//!   seen, at least 2 (cwnd grows at most 1.5× per RTT); recomputed at most once per
//!   jiffy, and not within HZ/32 if cwnd has not changed;
//! - Reno-friendly region: an estimate of Reno's window grows by one packet per
//!   cwnd·15/8 packets acknowledged (the kernel's `beta_scale` = 8(1024 + 717) /
//!   3 / (1024 − 717) = 15 in integers), ≈ 3(1 − β)/(1 + β) packets per RTT; while
//!   it is above cwnd, `cnt` is at most cwnd/(estimate − cwnd);
//! - slow start (`tcp_slow_start`): cwnd += packets acknowledged, up to ssthresh;
//!   what is left over goes to congestion avoidance (`tcp_cong_avoid_ai`);
//! - a retransmission timeout resets everything (the kernel's `set_state(Loss)`),
//!   W_max included;
//! - packets acknowledged = ⌈bytes acknowledged / SMSS⌉ (the kernel counts
//!   acknowledged skbs, here every segment is one).
//!
//! Parameters (the kernel's module defaults): `fast_convergence` on,
//! `tcp_friendliness` on, β 717/1024, `bic_scale` 41, jiffy 4 ms (`CONFIG_HZ=250`,
//! Debian's and this project's test machine's kernel).
//!
//! - the window grows only while the sender is window-limited
//!   (`tcp_is_cwnd_limited`, `Tcb::is_cwnd_limited`).
//!
//! - HyStart (`hystart_update`, both detections on, as the kernel's defaults): from
//!   16 packets, slow start ends (ssthresh = cwnd) when a round's ACKs arrive as a
//!   train (gaps ≤ 2 ms) lasting more than half the minimum RTT (the kernel's
//!   threshold without pacing), or when the smallest of a round's first eight RTT
//!   samples exceeds the minimum RTT by an eighth of it, clamped to 4–16 ms; a
//!   round is a window of data (`snd_nxt` when it began). Counted in
//!   `TcpStats::hystart_exits`.
//!
//! - after an idle period (a data segment sent with nothing in flight: the
//!   kernel's `CA_EVENT_TX_START`), the epoch moves later by the idle time in
//!   whole jiffies, at most to now (`cubictcp_cwnd_event`), so an
//!   application-limited sender resumes the curve where it stopped.
use super::{cong_avoid_ai, linux_slow_start, CongestionControl};
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

/// β·1024.
const BETA: u64 = 717;
const BETA_SCALE: u64 = 1024;
/// Time unit of the cubic function: 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// C·1024 / (100 ms reference RTT) scaling of the kernel: bic_scale·10.
const CUBE_RTT_SCALE: u64 = 41 * 10;
/// 2^40 / CUBE_RTT_SCALE: (W_max − cwnd)·CUBE_FACTOR = K³ in 2^-10 s units.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;
/// 8·(1024 + β)/3/(1024 − β), integer arithmetic as in the kernel (= 15).
const BETA_SCALE_FRIENDLY: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// The kernel's tick (`CONFIG_HZ=250`).
const JIFFY: Duration = Duration(4_000_000);
const HZ: u64 = 250;

#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// Increase cwnd by one packet every `cnt` packets acknowledged.
    cnt: u64,
    /// W_max in packets (0: no loss seen yet).
    last_max_cwnd: u64,
    last_cwnd: u64,
    /// Jiffies when `cnt` was last recomputed.
    last_time: u64,
    /// The cubic function's origin point (packets) and K (2^-10 s).
    origin: u64,
    k: u64,
    /// The smallest RTT seen.
    delay_min: Option<Duration>,
    /// Jiffies when the current epoch began (None: a new one starts at the next ACK).
    epoch_start: Option<u64>,
    /// Packets acknowledged since the Reno estimate last grew.
    ack_cnt: u64,
    /// The Reno-friendly estimate of the window (packets).
    tcp_cwnd: u64,
    /// Packets acknowledged towards the next increment (the kernel's `snd_cwnd_cnt`).
    cwnd_cnt: u64,
    /// HyStart: slow start has been ended by it (until a timeout resets).
    found: bool,
    /// HyStart's round: when it began, the last ACK of an ACK train, the offset that
    /// ends it (`snd_nxt` at its start), the smallest RTT of its first samples and
    /// how many were taken.
    round_start: Option<Instant>,
    last_ack: Instant,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

/// HyStart (`hystart_low_window`): not below 16 packets.
const HYSTART_LOW_WINDOW: u64 = 16;
/// HyStart ACK train: ACKs closer than this are a train (`hystart_ack_delta_us`).
const HYSTART_ACK_DELTA: Duration = Duration(2_000_000);
/// HyStart delay: the first 8 RTT samples of a round are compared.
const HYSTART_MIN_SAMPLES: u32 = 8;

impl Cubic {
    pub fn new(_: &TcpConfig) -> Cubic {
        Cubic::default()
    }

    fn jiffies(now: Instant) -> u64 {
        (now.nanos() / JIFFY.nanos()) as u64
    }

    /// `bictcp_hystart_reset`: a new round starts now, ending at `snd_nxt`.
    fn hystart_reset(&mut self, tcb: &Tcb, now: Instant) {
        self.round_start = Some(now);
        self.last_ack = now;
        self.end_seq = tcb.snd_nxt;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// `hystart_update`: ends slow start (ssthresh = cwnd) when the ACKs of a round
    /// arrive as a train lasting more than half the minimum RTT, or when the
    /// round's smallest early RTT exceeds the minimum by an eighth of it (within
    /// 4–16 ms).
    fn hystart_update(&mut self, tcb: &mut Tcb, now: Instant, delay: Duration) {
        if self.round_start.is_none() || tcb.snd_una > self.end_seq {
            self.hystart_reset(tcb, now);
        }
        let delay_min = self.delay_min.unwrap_or(delay);
        let start = self.round_start.unwrap_or(now);
        if now - self.last_ack <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            if now - start > delay_min / 2 {
                self.found = true;
            }
        }
        let curr = *self.curr_rtt.get_or_insert(delay);
        self.curr_rtt = Some(curr.min(delay));
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (delay_min / 8).clamp(Duration(4_000_000), Duration(16_000_000));
            if curr.min(delay) > delay_min + thresh {
                self.found = true;
            }
        }
        if self.found {
            tcb.stats.hystart_exits += 1;
            tcb.push_var(now, crate::tcp::TcpVar::HystartExit, tcb.stats.hystart_exits as i64);
            let cwnd = tcb.cwnd;
            tcb.set_ssthresh(now, cwnd);
        }
    }

    /// `bictcp_update`: recomputes `cnt` for a window of `cwnd` packets.
    fn update(&mut self, now: Instant, cwnd: u64, acked: u64) {
        self.ack_cnt += acked;
        let j = Self::jiffies(now);
        if self.last_cwnd == cwnd && j.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        if !(self.epoch_start.is_some() && j == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = j;
            let epoch = *self.epoch_start.get_or_insert_with(|| {
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin = cwnd;
                } else {
                    self.k = ((CUBE_FACTOR * (self.last_max_cwnd - cwnd)) as f64).cbrt() as u64;
                    self.origin = self.last_max_cwnd;
                }
                j
            });
            // t = time in the epoch + the minimum RTT (rounded up to jiffies), in 2^-10 s.
            let min_rtt = self.delay_min.map_or(0, |d| (d.nanos() as u64).div_ceil(JIFFY.nanos() as u64));
            let t = ((j - epoch + min_rtt) << BICTCP_HZ) / HZ;
            let offs = t.abs_diff(self.k);
            let delta = ((CUBE_RTT_SCALE as u128 * (offs as u128).pow(3)) >> (10 + 3 * BICTCP_HZ)) as u64;
            let target = if t < self.k { self.origin.saturating_sub(delta) } else { self.origin + delta };
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20; // the initial growth: 5 % per RTT at least
            }
        }
        // Reno-friendly region.
        let delta = (cwnd * BETA_SCALE_FRIENDLY) >> 3;
        while delta > 0 && self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }
}

impl CongestionControl for Cubic {
    fn ssthresh(&mut self, tcb: &Tcb) -> u64 {
        let cwnd = tcb.cwnd / tcb.smss;
        self.epoch_start = None;
        // A reduction starts the count again (`tcp_init_cwnd_reduction`,
        // `tcp_enter_loss`: `snd_cwnd_cnt = 0`).
        self.cwnd_cnt = 0;
        self.last_max_cwnd =
            if cwnd < self.last_max_cwnd { cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) } else { cwnd };
        (cwnd * BETA / BETA_SCALE).max(2) * tcb.smss
    }

    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64) {
        if tcb.is_cwnd_limited() && tcb.cwnd < tcb.ssthresh && tcb.snd_una > self.end_seq {
            self.hystart_reset(tcb, now); // a new HyStart round
        }
        // Slow start up to ssthresh; what is left over counts in congestion avoidance.
        let Some((mut cwnd, acked)) = linux_slow_start(tcb, acked) else {
            return;
        };
        if acked > 0 {
            self.update(now, cwnd, acked);
            cong_avoid_ai(&mut cwnd, &mut self.cwnd_cnt, self.cnt, acked);
        }
        tcb.set_cwnd(now, cwnd * tcb.smss);
    }

    fn on_rtt(&mut self, tcb: &mut Tcb, now: Instant, rtt: Duration) {
        // Delay samples right after a reduction are discarded (the kernel's
        // `cubictcp_acked`: within a second of the epoch's start).
        if self.epoch_start.is_some_and(|e| Self::jiffies(now) - e < HZ) {
            return;
        }
        let rtt = rtt.max(Duration(1_000));
        if self.delay_min.is_none_or(|d| rtt < d) {
            self.delay_min = Some(rtt);
        }
        if !self.found && tcb.cwnd < tcb.ssthresh && tcb.cwnd / tcb.smss >= HYSTART_LOW_WINDOW {
            self.hystart_update(tcb, now, rtt);
        }
    }

    super::window_by_acks!();

    fn on_rto(&mut self, _tcb: &mut Tcb) {
        *self = Cubic::default();
    }

    fn wants_tx_start(&self) -> bool {
        self.epoch_start.is_some()
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: after an idle period the epoch
    /// moves by the idle time (whole jiffies since the last data segment), at
    /// most to now, so growth resumes on the curve where it stopped.
    fn on_tx_start(&mut self, _: &mut Tcb, now: Instant, last_sent: Instant) {
        let j = Self::jiffies(now);
        let idle = j.saturating_sub(Self::jiffies(last_sent));
        if let Some(e) = &mut self.epoch_start {
            if idle > 0 {
                *e = (*e + idle).min(j);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    /// A sender in congestion avoidance, one ACK per segment, every ACK of a window
    /// spread evenly over a fixed RTT: the window (in packets) at each RTT.
    fn run(cc: &mut Cubic, tcb: &mut Tcb, start: Instant, rtt: Duration, rounds: usize) -> Vec<(f64, u64)> {
        let mut out = vec![];
        let mut now = start;
        for _ in 0..rounds {
            let w = tcb.cwnd / SMSS;
            for i in 0..w {
                let at = now + Duration(rtt.nanos() * i as i64 / w as i64);
                cc.on_rtt(tcb, at, rtt);
                cc.on_ack(tcb, at, SMSS);
            }
            now += rtt;
            out.push(((now - start).as_secs_f64(), tcb.cwnd / SMSS));
        }
        out
    }

    fn tcb(cwnd_pkts: u64) -> Tcb {
        let mut t = Tcb::new(SMSS, cwnd_pkts * SMSS, None);
        t.snd_max = cwnd_pkts * SMSS;
        t.snd_nxt = t.snd_max;
        t.cwnd_limited = true; // a sender with more to send than its window
        t
    }

    /// RFC 9438 §4.2/§4.6: after a loss at W_max = 100 packets, ssthresh = cwnd =
    /// 70 packets (β ≈ 0.7), and the window then follows W(t) = C(t − K)³ + W_max
    /// (C = 0.4, K = ∛(W_max·(1 − β)/C) ≈ 4.2 s), its plateau at W_max near t = K,
    /// growing past it after (convex region).
    #[test]
    fn window_follows_the_cubic_function_after_a_loss() {
        let mut cc = Cubic::new(&TcpConfig::default());
        let mut t = tcb(100);
        let ss = cc.ssthresh(&t);
        assert_eq!(ss, 70 * SMSS, "717/1024 of 100 packets");
        t.set_ssthresh(Instant::ZERO, ss);
        t.set_cwnd(Instant::ZERO, ss);
        let rtt = Duration::from_millis(100);
        // The minimum RTT must be known before the epoch (samples after it are
        // discarded for a second).
        cc.on_rtt(&mut t, Instant::ZERO, rtt);
        let trace = run(&mut cc, &mut t, Instant::ZERO, rtt, 80);
        let k = (100.0 * (1.0 - 0.7) / 0.4f64).cbrt();
        let mut worst = 0.0f64;
        for &(secs, w) in &trace {
            // The window set at time s reflects the target one RTT ahead, reached
            // over the next RTT: compare with W(s) (one RTT early, one late).
            let want = 0.4 * (secs - k).powi(3) + 100.0;
            let err = (w as f64 - want).abs() / want;
            worst = worst.max(err);
            assert!(err < 0.06, "t = {secs:.1} s: window {w}, W(t) = {want:.1}");
        }
        let at = |s: f64| trace.iter().find(|x| x.0 >= s).unwrap().1;
        assert!((98..=101).contains(&at(k)), "plateau at W_max near K: {}", at(k));
        assert!(at(7.5) > 110, "convex growth past W_max: {}", at(7.5));
        assert!(worst > 0.0);
    }

    /// Fast convergence: a loss below the last maximum lowers W_max to
    /// cwnd·(1 + β)/2; a timeout forgets everything.
    #[test]
    fn fast_convergence_and_reset_at_a_timeout() {
        let mut cc = Cubic::new(&TcpConfig::default());
        cc.ssthresh(&tcb(100));
        assert_eq!(cc.last_max_cwnd, 100);
        cc.ssthresh(&tcb(80));
        assert_eq!(cc.last_max_cwnd, 80 * 1741 / 2048);
        cc.on_rto(&mut tcb(80));
        assert_eq!((cc.last_max_cwnd, cc.epoch_start), (0, None));
    }

    /// Slow start counts packets: an ACK of two segments (delayed ACK) adds two,
    /// not one SMSS as RFC 5681's per-ACK rule does; at ssthresh it stops.
    #[test]
    fn slow_start_counts_packets_acknowledged() {
        let mut cc = Cubic::new(&TcpConfig::default());
        let mut t = tcb(10);
        t.ssthresh = 13 * SMSS;
        cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        assert_eq!(t.cwnd, 12 * SMSS);
        cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        assert_eq!(t.cwnd, 13 * SMSS, "capped at ssthresh, the leftover packet only counted");
    }

    /// The Reno-friendly region: with a small window the Reno estimate (one
    /// packet per RTT) outgrows the cubic curve and sets the pace.
    #[test]
    fn reno_friendly_region_sets_the_pace_for_small_windows() {
        let mut cc = Cubic::new(&TcpConfig::default());
        let mut t = tcb(10);
        let ss = cc.ssthresh(&t);
        t.set_ssthresh(Instant::ZERO, ss);
        t.set_cwnd(Instant::ZERO, ss);
        let rtt = Duration::from_millis(20);
        cc.on_rtt(&mut t, Instant::ZERO, rtt);
        let trace = run(&mut cc, &mut t, Instant::ZERO, rtt, 50);
        // Cubic alone: K = ∛(10·0.3/0.4) ≈ 1.96 s, so within 1 s (50 RTTs) it
        // would stay below W_max = 10; Reno's estimate adds ≈ 0.53 packet per RTT
        // (3(1 − β)/(1 + β) per RTT): about 7 + 26 = 33 after 50 RTTs.
        let last = trace.last().unwrap().1;
        assert!((25..=40).contains(&last), "window after 50 RTTs: {last}");
    }

    /// A sender in slow start (20 packets) after one round of RTT samples at
    /// 100 ms, ACKs `gap` apart; then a second round of `n` samples of `rtt`,
    /// `gap2` apart. Whether HyStart ended slow start.
    fn hystart(gap: Duration, rtt: Duration, gap2: Duration, n: usize) -> bool {
        let mut cc = Cubic::new(&TcpConfig::default());
        let mut t = tcb(20);
        t.ssthresh = u64::MAX / 4;
        let mut now = Instant::ZERO + Duration::from_secs(2);
        for _ in 0..10 {
            now += gap;
            cc.on_rtt(&mut t, now, Duration::from_millis(100));
        }
        assert_ne!(t.ssthresh, t.cwnd, "not in the first round");
        (t.snd_una, t.snd_nxt) = (20_001, 40_000);
        for _ in 0..n {
            now += gap2;
            cc.on_rtt(&mut t, now, rtt);
        }
        t.ssthresh == t.cwnd && t.stats.hystart_exits == 1
    }

    /// HyStart's delay detection: a round whose first eight samples all exceed the
    /// minimum RTT by more than an eighth of it (12.5 ms here) ends slow start; by
    /// less, it does not.
    #[test]
    fn hystart_delay_detection() {
        let ms = Duration::from_millis;
        assert!(hystart(ms(10), ms(115), ms(10), 10));
        assert!(!hystart(ms(10), ms(110), ms(10), 10));
    }

    /// HyStart's ACK train: ACKs at most 2 ms apart for more than half the minimum
    /// RTT end slow start; ACKs 3 ms apart are no train.
    #[test]
    fn hystart_ack_train_detection() {
        let ms = Duration::from_millis;
        assert!(hystart(ms(10), ms(100), ms(1), 60));
        assert!(!hystart(ms(10), ms(100), ms(3), 60));
    }

    /// Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`: a sender that was idle
    /// (application-limited, nothing in flight) shifts its epoch by the idle
    /// time in whole jiffies, never past now, so the window resumes the cubic
    /// curve where it left it instead of jumping ahead by the idle time. Without
    /// an epoch (slow start, or right after a reduction) nothing moves.
    #[test]
    fn an_idle_sender_shifts_its_epoch_by_the_idle_time() {
        let ms = |n: i64| Instant::ZERO + Duration::from_millis(n);
        let mut cc = Cubic::new(&TcpConfig::default());
        let mut t = tcb(100);
        cc.on_tx_start(&mut t, ms(1000), ms(0));
        assert_eq!(cc.epoch_start, None, "no epoch: nothing to shift");
        let ss = cc.ssthresh(&t);
        t.set_ssthresh(ms(0), ss);
        t.set_cwnd(ms(0), ss);
        cc.on_rtt(&mut t, ms(0), Duration::from_millis(100));
        cc.on_ack(&mut t, ms(2000), SMSS); // the epoch begins at jiffy 500
        assert_eq!(cc.epoch_start, Some(500));
        // Idle from 2,001 ms (jiffy 500) to 3,003 ms (jiffy 750): 250 jiffies.
        cc.on_tx_start(&mut t, ms(3003), ms(2001));
        assert_eq!(cc.epoch_start, Some(750));
        // Never past now.
        cc.on_tx_start(&mut t, ms(3100), ms(2001));
        assert_eq!(cc.epoch_start, Some(775), "jiffy 750 + 125 > 775: now");
        // Sent again within the same jiffy: no shift.
        cc.on_tx_start(&mut t, ms(3101), ms(3100));
        assert_eq!(cc.epoch_start, Some(775));
    }
}
