//! BBR v1 as Linux 6.x's `net/ipv4/tcp_bbr.c` (Cardwell et al., "BBR:
//! Congestion-Based Congestion Control", ACM Queue 2016; draft-cardwell-iccrg-bbr-
//! congestion-control-00), in the kernel's units and fixed point: segments,
//! microseconds, bandwidth in segments per µs scaled by 2^24, gains scaled by 256.
//!
//! The model: the bottleneck bandwidth is the windowed maximum (10 round trips,
//! Kathleen Nichols' three-sample filter, `lib/win_minmax.c`) of the delivery-rate
//! samples (`tcp/rate.rs`) that are not application-limited; the propagation delay
//! the minimum RTT over 10 s. The pacing rate is gain × bandwidth less 1 %, the
//! window gain × bandwidth × min RTT plus the ACK-aggregation allowance and a
//! quantization budget (3 × the TSO goal, rounded up to even, +2 in the probing
//! phase), at least 4 segments.
//!
//! Modes: STARTUP (gains 2/ln 2 = 2.885) until the bandwidth has grown by less
//! than 25 % for three rounds; DRAIN (pacing 1/2.885) until the data in flight at
//! the next departure is at most one BDP; PROBE_BW cycling eight phases of pacing
//! gain 5/4, 3/4, 1 × 6 (window gain 2), started at a random phase other than
//! 3/4; PROBE_RTT (window 4 segments for 200 ms and a round) when the minimum RTT
//! is 10 s old. Recovery: packet conservation for the first round of a fast
//! recovery, the window reduced by the segments newly lost, the window before the
//! episode restored at its end; at a timeout the bandwidth-growth count restarts.
//! Long-term ("policer") sampling: over 4–16 rounds with losses of 20 % or more,
//! two intervals whose rates agree within 1/8 (or 4 kbit/s) set the bandwidth to
//! their mean, paced at gain 1, for 48 rounds.
//!
//! BBR sets the window on every ACK itself (`cong_control`: PRR and the recovery's
//! window are not applied, as in the kernel) and the endpoint paces every data
//! segment at BBR's rate (Linux's internal pacing, `tcp_pacing_check`, from the
//! eleventh data segment on). After an idle period the window is kept (the
//! kernel's restart after idle skips a controller with `cong_control`); BBR's
//! own idle restart (`CA_EVENT_TX_START` after the application ran dry) paces
//! the first data at the estimate itself in PROBE_BW and keeps the flow out of
//! PROBE_RTT until data is delivered. Not modelled: TSO (one segment per
//! transmission). No parameters.
use super::CongestionControl;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;
const CYCLE_LEN: usize = 8;
const BW_RTTS: u32 = CYCLE_LEN as u32 + 2;
const MIN_RTT_WIN: Duration = Duration(10_000_000_000);
const PROBE_RTT_MODE: Duration = Duration(200_000_000);
const MIN_TSO_RATE: u64 = 1_200_000;
const PACING_MARGIN_PERCENT: u64 = 1;
const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
const CWND_GAIN: u64 = BBR_UNIT * 2;
const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
const CYCLE_RAND: u32 = 7;
const CWND_MIN_TARGET: u64 = 4;
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux `TCP_INIT_CWND` (the BDP before any RTT sample).
const INIT_CWND: u64 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` and `sk_pacing_shift` (10).
const GSO_MAX: u64 = 65536 - 1 - 320;
const PACING_SHIFT: u32 = 10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Linux's congestion states, as far as BBR tells them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum CaState {
    #[default]
    Open,
    Cwr,
    Recovery,
    Loss,
}

/// `lib/win_minmax.c`: a windowed maximum kept as three samples (time, value).
#[derive(Clone, Copy, Debug, Default)]
struct MinMax {
    s: [(u32, u64); 3],
}

impl MinMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }
    fn reset(&mut self, t: u32, v: u64) {
        self.s = [(t, v); 3];
    }
    /// `minmax_running_max` with window `win` (in the same units as `t`).
    fn running_max(&mut self, win: u32, t: u32, v: u64) {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
    }
}

#[derive(Clone, Debug)]
pub struct Bbr {
    mode: Mode,
    /// µs; None before the first sample (the kernel's ~0U).
    min_rtt_us: Option<u64>,
    min_rtt_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    bw: MinMax,
    rtt_cnt: u32,
    next_rtt_delivered: u64,
    cycle_mstamp: Instant,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: usize,
    has_seen_rtt: bool,
    /// Segments.
    prior_cwnd: u64,
    full_bw: u64,
    ack_epoch_mstamp: Instant,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// The window BBR set last (segments): the connection's, which only BBR and
    /// a timeout change.
    cwnd: u64,
    started: bool,
}

impl Bbr {
    pub fn new(_: &TcpConfig) -> Bbr {
        Bbr {
            mode: Mode::Startup,
            min_rtt_us: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Instant::ZERO,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: Instant::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            cwnd: 0,
            started: false,
        }
    }

    fn us(d: Duration) -> u64 {
        (d.nanos() / 1000).max(0) as u64
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`.
    fn rate_bytes_per_sec(tcb: &Tcb, rate: u64, gain: u64) -> u64 {
        let r = ((rate as u128) * tcb.smss as u128 * gain as u128) >> BBR_SCALE;
        let r = r * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (r >> BW_SCALE) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: the initial window over the smoothed
    /// RTT (1 ms without one), at the high gain.
    fn init_pacing_rate(&mut self, tcb: &mut Tcb) {
        let rtt_us = match tcb.srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                Self::us(s).max(1)
            }
            None => 1000,
        };
        let bw = (tcb.cwnd / tcb.smss) * BW_UNIT / rtt_us;
        let rate = Self::rate_bytes_per_sec(tcb, bw, HIGH_GAIN);
        Self::pace_at(tcb, rate);
    }

    fn pace_at(tcb: &mut Tcb, rate: u64) {
        let now = tcb.rate.as_ref().map_or(Instant::ZERO, |r| r.delivered_at);
        Self::pace_at_time(tcb, now, rate);
    }

    fn pace_at_time(tcb: &mut Tcb, now: Instant, rate: u64) {
        if tcb.pacing_rate != Some(rate) {
            tcb.pacing_rate = Some(rate);
            tcb.push_var(now, crate::tcp::TcpVar::PacingRate, rate as i64);
        }
    }

    /// `bbr_set_pacing_rate` (traced at the last delivery, or at `at`).
    fn set_pacing_rate_at(&mut self, tcb: &mut Tcb, bw: u64, gain: u64, at: Option<Instant>) {
        let rate = Self::rate_bytes_per_sec(tcb, bw, gain);
        if !self.has_seen_rtt && tcb.srtt.is_some() {
            self.init_pacing_rate(tcb);
        }
        if self.full_bw_reached || tcb.pacing_rate.is_none_or(|p| rate > p) {
            match at {
                Some(now) => Self::pace_at_time(tcb, now, rate),
                None => Self::pace_at(tcb, rate),
            }
        }
    }

    fn set_pacing_rate(&mut self, tcb: &mut Tcb, bw: u64, gain: u64) {
        self.set_pacing_rate_at(tcb, bw, gain, None);
    }

    /// `bbr_tso_segs_goal`: segments of about 1 ms at the pacing rate, at least 1
    /// (2 above 1.2 Mbit/s), at most 127.
    fn tso_segs_goal(tcb: &Tcb) -> u64 {
        let rate = tcb.pacing_rate.unwrap_or(0);
        let bytes = (rate >> PACING_SHIFT).min(GSO_MAX);
        let min = if rate < MIN_TSO_RATE >> 3 { 1 } else { 2 };
        (bytes / tcb.smss).max(min).min(0x7f)
    }

    fn save_cwnd(&mut self, tcb: &Tcb) {
        let cwnd = tcb.cwnd / tcb.smss;
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: segments in gain × bandwidth × min RTT (10 before a sample).
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(rtt) = self.min_rtt_us else { return INIT_CWND };
        let w = bw as u128 * rtt as u128;
        (((w * gain as u128) >> BBR_SCALE) + BW_UNIT as u128 - 1) as u64 / BW_UNIT
    }

    fn quantization_budget(&self, tcb: &Tcb, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * Self::tso_segs_goal(tcb);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, tcb: &Tcb, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(tcb, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in flight when the next
    /// segment may leave (the pacing deadline).
    fn packets_in_net_at_edt(&self, tcb: &Tcb, now: Instant, inflight_now: u64) -> u64 {
        let edt = tcb.next_send.max(now);
        let interval_us = Self::us(edt - now);
        let delivered = ((self.bw() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += Self::tso_segs_goal(tcb);
        }
        at_edt.saturating_sub(delivered)
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
        ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
    }

    fn ca_state(tcb: &Tcb) -> CaState {
        if tcb.in_loss {
            CaState::Loss
        } else if tcb.in_recovery {
            CaState::Recovery
        } else if tcb.in_cwr {
            CaState::Cwr
        } else {
            CaState::Open
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: Some(window) when packet
    /// conservation decides it.
    fn recover_or_restore(&mut self, tcb: &Tcb, cwnd: &mut u64, acked: u64, losses: u64) -> bool {
        let (prev, state) = (self.prev_ca_state, Self::ca_state(tcb));
        let in_flight = tcb.pipe_sent().div_ceil(tcb.smss);
        if losses > 0 {
            *cwnd = cwnd.saturating_sub(losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = tcb.rate.as_ref().map_or(0, |r| r.delivered);
            *cwnd = in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            *cwnd = (*cwnd).max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(in_flight + acked);
            return true;
        }
        false
    }

    fn set_cwnd(&mut self, tcb: &mut Tcb, now: Instant, acked: u64, losses: u64, bw: u64, gain: u64) {
        let mut cwnd = self.cwnd;
        if acked > 0 && !self.recover_or_restore(tcb, &mut cwnd, acked, losses) {
            let mut target = self.bdp(bw, gain);
            target += self.ack_aggregation_cwnd();
            target = self.quantization_budget(tcb, target);
            let delivered = tcb.rate.as_ref().map_or(0, |r| r.delivered);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || delivered < INIT_CWND {
                cwnd += acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        self.cwnd = cwnd;
        tcb.force_cwnd(now, cwnd * tcb.smss);
    }

    fn is_next_cycle_phase(&self, tcb: &Tcb, now: Instant, prior_in_flight: u64, losses: u64) -> bool {
        let delivered_at = tcb.rate.as_ref().map_or(now, |r| r.delivered_at);
        let full_length = Self::us(delivered_at - self.cycle_mstamp) > self.min_rtt_us.unwrap_or(u64::MAX);
        if self.pacing_gain == BBR_UNIT {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(tcb, now, prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return full_length && (losses > 0 || inflight >= self.inflight(tcb, bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(tcb, bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, tcb: &Tcb, now: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tcb.rate.as_ref().map_or(now, |r| r.delivered_at);
    }

    fn reset_probe_bw_mode(&mut self, tcb: &mut Tcb, now: Instant) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - tcb.random_below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(tcb, now);
    }

    fn reset_mode(&mut self, tcb: &mut Tcb, now: Instant) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(tcb, now);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, tcb: &Tcb) {
        let r = tcb.rate.as_ref();
        self.lt_last_stamp = r.map_or(0, |r| (r.delivered_at.nanos() / 1_000_000) as u64);
        self.lt_last_delivered = r.map_or(0, |r| r.delivered);
        self.lt_last_lost = r.map_or(0, |r| r.lost);
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, tcb: &Tcb) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    fn lt_bw_interval_done(&mut self, tcb: &Tcb, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || Self::rate_bytes_per_sec(tcb, diff, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    /// `bbr_lt_bw_sampling`: a token-bucket policer shows as a steady delivery
    /// rate with heavy losses.
    fn lt_bw_sampling(&mut self, tcb: &mut Tcb, now: Instant, losses: u64, app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tcb);
                    self.reset_probe_bw_mode(tcb, now);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tcb);
            self.lt_is_sampling = true;
        }
        if app_limited {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        if losses == 0 {
            return;
        }
        let Some(r) = tcb.rate.as_ref() else { return };
        let lost = r.lost - self.lt_last_lost;
        let delivered = r.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = ((r.delivered_at.nanos() / 1_000_000) as u64).wrapping_sub(self.lt_last_stamp) as i64;
        if t < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t as u64 * 1000);
        self.lt_bw_interval_done(tcb, bw);
    }

    fn update_bw(&mut self, tcb: &mut Tcb, now: Instant) {
        self.round_start = false;
        let Some(r) = tcb.rate.as_ref() else { return };
        let rs = r.rs;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else { return };
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = r.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tcb, now, rs.losses, rs.is_app_limited);
        let bw = delivered * BW_UNIT / Self::us(interval).max(1);
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, tcb: &Tcb) {
        let Some(r) = tcb.rate.as_ref() else { return };
        let rs = r.rs;
        if rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = Self::us(r.delivered_at - self.ack_epoch_mstamp);
        let mut expected = (self.bw() as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = r.delivered_at;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(tcb.cwnd / tcb.smss);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, tcb: &mut Tcb, now: Instant) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            let ss = self.inflight(tcb, self.max_bw(), BBR_UNIT) * tcb.smss;
            tcb.set_ssthresh(now, ss);
        }
        let in_flight = tcb.pipe_sent().div_ceil(tcb.smss);
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tcb, now, in_flight) <= self.inflight(tcb, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tcb, now);
        }
    }

    fn check_probe_rtt_done(&mut self, tcb: &mut Tcb, now: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(tcb, now);
    }

    fn update_min_rtt(&mut self, tcb: &mut Tcb, now: Instant) {
        let Some(r) = tcb.rate.as_ref() else { return };
        let rs = r.rs;
        let filter_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = rs.rtt {
            let us = Self::us(rtt);
            if self.min_rtt_us.is_none_or(|m| us < m) || filter_expired {
                self.min_rtt_us = Some(us);
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tcb);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            let in_flight = tcb.pipe_sent().div_ceil(tcb.smss);
            if let Some(r) = tcb.rate.as_mut() {
                r.mark_app_limited(in_flight);
            }
            let delivered = tcb.rate.as_ref().map_or(0, |r| r.delivered);
            if self.probe_rtt_done_stamp.is_none() && in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tcb, now);
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx] }, CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_init`, when the connection is established.
    fn start(&mut self, tcb: &mut Tcb, now: Instant) {
        self.started = true;
        tcb.ssthresh = u64::MAX / 4;
        self.min_rtt_us = tcb.srtt.map(Self::us);
        self.min_rtt_stamp = now;
        self.ack_epoch_mstamp = now;
        self.cwnd = tcb.cwnd / tcb.smss;
        self.next_rtt_delivered = tcb.rate.as_ref().map_or(0, |r| r.delivered);
        self.init_pacing_rate(tcb);
        self.reset_lt_bw_sampling(tcb);
    }

    /// The bandwidth estimate in bytes per second, and the mode (for tests).
    pub fn estimate(&self, tcb: &Tcb) -> (u64, &'static str) {
        let mode = match self.mode {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        };
        (Self::rate_bytes_per_sec(tcb, self.bw(), BBR_UNIT), mode)
    }
}

impl CongestionControl for Bbr {
    /// `bbr_ssthresh`: the window is remembered, the threshold left alone.
    fn ssthresh(&mut self, tcb: &Tcb) -> u64 {
        self.save_cwnd(tcb);
        tcb.ssthresh
    }

    fn on_ack(&mut self, _: &mut Tcb, _: Instant, _: u64) {}

    fn on_rtt(&mut self, _: &mut Tcb, _: Instant, _: Duration) {}

    /// `bbr_set_state(TCP_CA_Loss)` (after the endpoint set the window).
    fn on_rto(&mut self, tcb: &mut Tcb) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        self.cwnd = tcb.cwnd / tcb.smss;
        let now = tcb.rate.as_ref().map_or(Instant::ZERO, |r| r.delivered_at);
        self.lt_bw_sampling(tcb, now, 1, false);
    }

    fn init(&mut self, tcb: &mut Tcb, now: Instant) {
        tcb.cc_owns_cwnd = true;
        tcb.rate.get_or_insert_with(Default::default);
        self.start(tcb, now);
    }

    /// Asked only when nothing may be in flight: once started, always.
    fn wants_tx_start(&self) -> bool {
        self.started
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)`: data goes out with nothing in flight
    /// while the application had run dry (`tcp_rate_check_app_limited` marked
    /// it at its last write): an idle restart. Until data is delivered again
    /// the minimum RTT's expiry does not enter PROBE_RTT; the ACK-aggregation
    /// epoch restarts; in PROBE_BW the pacing rate drops to the estimate
    /// itself (gain 1: "avoid pointless buffer overflows"), in PROBE_RTT the
    /// mode may end.
    fn on_tx_start(&mut self, tcb: &mut Tcb, now: Instant, _: Instant) {
        if tcb.rate.as_ref().is_none_or(|r| r.app_limited == 0) {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = now;
        self.ack_epoch_acked = 0;
        match self.mode {
            Mode::ProbeBw => {
                let bw = self.bw();
                self.set_pacing_rate_at(tcb, bw, BBR_UNIT, Some(now));
            }
            Mode::ProbeRtt => {
                // The kernel sets the window here (`tcp_snd_cwnd_set`); the
                // model's is applied on ACKs, so apply it now: no ACK comes
                // before this data goes out.
                self.check_probe_rtt_done(tcb, now);
                if self.mode != Mode::ProbeRtt {
                    tcb.force_cwnd(now, self.cwnd * tcb.smss);
                }
            }
            _ => {}
        }
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tcb: &mut Tcb, now: Instant) -> bool {
        if !self.started {
            self.init(tcb, now);
        }
        let Some(rs) = tcb.rate.as_ref().map(|r| r.rs) else { return true };
        self.update_bw(tcb, now);
        self.update_ack_aggregation(tcb);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tcb, now, rs.prior_in_flight, rs.losses) {
            self.advance_cycle_phase(tcb, now);
        }
        self.check_full_bw_reached(rs.is_app_limited);
        self.check_drain(tcb, now);
        self.update_min_rtt(tcb, now);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(tcb, bw, self.pacing_gain);
        self.set_cwnd(tcb, now, rs.acked_sacked, rs.losses, bw, self.cwnd_gain);
        true
    }

    /// `bbr_undo_cwnd`: the bandwidth-growth count and the policer sampling
    /// restart; the window stays.
    fn undo_cwnd(&mut self, tcb: &Tcb, _prior: u64) -> u64 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tcb);
        self.cwnd * tcb.smss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `minmax_running_max` keeps the best of the window: a larger sample
    /// replaces everything, a smaller one waits its turn, and once the best is
    /// older than the window the next best takes over.
    #[test]
    fn windowed_max_filter() {
        let mut m = MinMax::default();
        m.reset(0, 100);
        m.running_max(10, 1, 50);
        assert_eq!(m.get(), 100);
        m.running_max(10, 3, 80);
        assert_eq!(m.get(), 100);
        m.running_max(10, 12, 60);
        assert_eq!(m.get(), 80, "100 (t=0) left the window");
        m.running_max(10, 13, 200);
        assert_eq!(m.get(), 200);
    }

    /// The kernel's constants: high gain 2/ln 2 in 1/256 units, drain its inverse.
    #[test]
    fn gains() {
        assert_eq!((HIGH_GAIN, DRAIN_GAIN, CWND_GAIN), (739, 88, 512));
    }
}
