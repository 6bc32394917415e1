//! Linux's receiver ACK policy (`tcp.quickack`): quick ACKs and the adaptive
//! delayed-ACK timeout, as Linux 6.x's `tcp_event_data_recv`,
//! `tcp_incr_quickack`, `tcp_enter_quickack_mode`, `__tcp_ack_snd_check`
//! (`net/ipv4/tcp_input.c`), `tcp_send_delayed_ack`, `tcp_dec_quickack_mode`
//! (`tcp_output.c`, `include/net/tcp.h`) and `tcp_delack_timer_handler`
//! (`tcp_timer.c`).
//!
//! - Quick ACKs: every data segment is acknowledged at once while the quick-ACK
//!   count lasts, one count per ACK that answers received data — in order, out
//!   of order (a duplicate ACK), a duplicate segment or a FIN
//!   (`tcp_dec_quickack_mode` counts an ACK when `inet_csk_ack_scheduled`).
//!   The first data segment of a connection grants min(16, advertised window
//!   / (2·MSS)) of them (`TCP_MAX_QUICKACKS`), so slow start's first round trips
//!   are not slowed by delayed ACKs; so does data after a silence longer than
//!   the receiver's RTO, and a duplicate segment (the sender is retransmitting); a first CE mark
//!   grants 2. Leaving quick-ACK mode resets `ato`.
//! - Otherwise every second full segment is acknowledged at once (the endpoint's
//!   `delack_count`), a single one after `ato`: it starts at `ATO_MIN`; a segment
//!   arriving within ATO_MIN/2 of the last sets it to ato/2 + ATO_MIN/2, one within
//!   ato to ato/2 + the gap (at most the RTO); when the timer fires with an ACK
//!   owed, `ato` doubles (at most the RTO). The timer is min(ato, max_ato), where
//!   max_ato (only when ato > ATO_MIN) is 500 ms (200 ms after a segment shorter
//!   than the MSS: Linux's `ICSK_ACK_PUSHED`), at most the receiver's SRTT (at
//!   least ATO_MIN), and never beyond 200 ms (`icsk_delack_max`); an ACK already
//!   owed keeps its earlier deadline, or goes at once if that is within a quarter
//!   of the new timeout.
//! - Ping-pong (interactive) mode (`tcp_event_data_sent`, at Linux 6.x's
//!   `tcp_pingpong_thresh` = 1): data sent within `ato` of data received — a
//!   reply — puts this end in it; in it quick ACKs are held back
//!   (`tcp_in_quickack_mode`), so a server acknowledges a request of one
//!   segment with its reply, not alone (a delayed ACK that the reply takes
//!   over); when the delayed-ACK timer fires in it the mode ends and `ato`
//!   returns to ATO_MIN, as it does at `tcp_enter_quickack_mode` (a duplicate
//!   segment, a first CE mark). The kernel's `now - lrcvtime < ato` compares
//!   jiffies, this one the times. Not entered at a FIN (`tcp_fin`; the endpoint
//!   does not send the FIN's ACK alone before what the application sends at
//!   once, its own FIN).
//!
//! - Push marks (`tcp_measure_rcv_mss`, `tcp_cleanup_rbuf`; the full-sized
//!   case is Linux 6.6's "tcp: fix delayed ACKs for MSS boundary condition"):
//!   in-order data that ends a write — a full-sized segment with PSH, or a
//!   short one (unless it repeats the last short size and is large or carries
//!   no PSH, FIN, URG or SYN: then the kernel takes it as the peer's MSS) —
//!   marks `ICSK_ACK_PUSHED`, a second short one `ICSK_ACK_PUSHED2`; when the
//!   application has read everything (nothing held out of order either), an
//!   owed ACK goes at once after PUSHED2, or after PUSHED outside ping-pong
//!   mode. Simulated applications read as data arrives; with byte buffers,
//!   when the application reads. Every ACK sent clears the marks. A Linux
//!   sender (`push = "chunk"`) sets PSH at the end of each TSO/GSO chunk.
//!
//! Parameters: `ATO_MIN` is the endpoint's `delack_timeout` (Linux `TCP_ATO_MIN` =
//! `TCP_DELACK_MIN` = 40 ms at any HZ). Kept in nanoseconds, not 4 ms jiffies.
//! Compressed SACKs are `compsack.rs`.
use crate::time::{Duration, Instant};

/// Linux `TCP_MAX_QUICKACKS`.
pub const MAX_QUICKACKS: u32 = 16;
/// Linux `TCP_DELACK_MAX` (`icsk_delack_max`) and `HZ / 2` (max_ato).
const DELACK_MAX: Duration = Duration(200_000_000);
const ATO_MAX: Duration = Duration(500_000_000);

#[derive(Clone, Debug)]
pub struct LinuxAcks {
    /// Quick ACKs left (`icsk_ack.quick`).
    pub(crate) quick: u32,
    /// The delayed-ACK estimate (`icsk_ack.ato`); zero before the first data.
    pub(crate) ato: Duration,
    /// When data last arrived (`icsk_ack.lrcvtime`).
    last: Instant,
    /// Ping-pong (interactive) mode (`icsk_ack.pingpong` at
    /// `tcp_pingpong_thresh` = 1): this end sent data within `ato` of receiving
    /// some. No quick ACKs while in it.
    pub(crate) pingpong: bool,
    /// `ICSK_ACK_PUSHED` (1) and `ICSK_ACK_PUSHED2` (2), cleared by every ACK sent.
    pushed: u8,
    /// `icsk_ack.last_seg_size`.
    last_seg_size: u64,
    ato_min: Duration,
}

const PUSHED: u8 = 1;
const PUSHED2: u8 = 2;
/// Linux `TCP_MSS_DEFAULT`, `TCP_MIN_MSS` and the bare TCP header.
const MSS_DEFAULT: u64 = 536;
const MIN_MSS: u64 = 88;
const TCPHDR: u64 = 20;

impl LinuxAcks {
    pub fn new(ato_min: Duration) -> LinuxAcks {
        LinuxAcks {
            quick: 0,
            ato: Duration::ZERO,
            last: Instant::ZERO,
            pingpong: false,
            pushed: 0,
            last_seg_size: 0,
            ato_min,
        }
    }

    /// `tcp_incr_quickack`: at least `max` quick ACKs, or as many as half the
    /// window in segments if fewer (2 at least).
    pub(crate) fn incr_quickack(&mut self, max: u32, window: u64, mss: u64) {
        let n = (window / (2 * mss.max(1))).clamp(2, u32::MAX as u64) as u32;
        self.quick = self.quick.max(n.min(max));
    }

    /// `tcp_enter_quickack_mode` (which leaves ping-pong mode).
    pub(crate) fn enter_quickack(&mut self, max: u32, window: u64, mss: u64) {
        self.incr_quickack(max, window, mss);
        self.pingpong = false;
        self.ato = self.ato_min;
    }

    /// `tcp_in_quickack_mode`: quick ACKs left, and not in ping-pong mode.
    #[inline]
    pub(crate) fn in_quickack(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// `tcp_event_data_sent`: a segment with data left at `now`; within `ato` of
    /// the last data received it is a reply, and this end enters ping-pong mode
    /// (`inet_csk_inc_pingpong_cnt`). The kernel compares jiffies; here the
    /// times themselves, as `ato` is kept.
    #[inline]
    pub(crate) fn on_data_sent(&mut self, now: Instant) {
        if now - self.last < self.ato {
            self.pingpong = true;
        }
    }

    /// `tcp_event_data_recv`: in-order data arrived now.
    pub(crate) fn on_data(&mut self, now: Instant, rto: Duration, window: u64, mss: u64) {
        if self.ato == Duration::ZERO {
            self.incr_quickack(MAX_QUICKACKS, window, mss);
            self.ato = self.ato_min;
        } else {
            let m = now - self.last;
            if m <= self.ato_min / 2 {
                self.ato = self.ato / 2 + self.ato_min / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(rto);
            } else if m > rto {
                self.incr_quickack(MAX_QUICKACKS, window, mss);
            }
        }
        self.last = now;
    }

    /// `tcp_measure_rcv_mss`'s push marks for in-order data of `len` payload
    /// bytes, `hdr` bytes of TCP header: a full-sized segment (`rcv_mss`, the
    /// receiver's estimate) with PSH is the end of a write (Linux 6.6+); a
    /// shorter one is, unless it repeats the last short size and is large or
    /// carries none of PSH, FIN, URG, SYN (`remnant`: then the kernel takes its
    /// size as the MSS, which the window's `rcv_mss` here does not follow). Two
    /// short segments without an ACK between them mark `PUSHED2`.
    pub(crate) fn measure(&mut self, len: u64, rcv_mss: u64, hdr: u64, psh: bool, remnant: bool) {
        let lss = std::mem::take(&mut self.last_seg_size);
        if len >= rcv_mss {
            if psh {
                self.pushed |= PUSHED;
            }
            return;
        }
        let wire = len + hdr;
        if wire >= MSS_DEFAULT + TCPHDR || (wire >= MIN_MSS + TCPHDR && !remnant) {
            self.last_seg_size = len;
            if len == lss {
                return;
            }
        }
        if self.pushed & PUSHED != 0 {
            self.pushed |= PUSHED2;
        }
        self.pushed |= PUSHED;
    }

    /// `tcp_cleanup_rbuf` after the application read in-order data: with an
    /// ACK owed, it goes now if the read drained the receive memory (`drained`:
    /// nothing held out of order either) after a pushed segment — two short
    /// ones, or one when not in ping-pong mode. (Its other reason, more than
    /// one full segment unacknowledged, is the every-second-segment rule.)
    pub(crate) fn read_acks(&self, drained: bool) -> bool {
        drained && (self.pushed & PUSHED2 != 0 || (self.pushed & PUSHED != 0 && !self.pingpong))
    }

    /// Any ACK went out (`tcp_event_ack_sent` clears `icsk_ack.pending`).
    #[inline]
    pub(crate) fn ack_went(&mut self) {
        self.pushed = 0;
    }

    /// `tcp_send_delayed_ack`: how long a single segment's ACK may wait (`small`:
    /// the segment was shorter than the MSS; `srtt`: the receiver's estimate).
    pub fn timeout(&self, srtt: Option<Duration>, small: bool) -> Duration {
        let mut ato = self.ato;
        if ato > self.ato_min {
            let mut max = if small { DELACK_MAX } else { ATO_MAX };
            if let Some(s) = srtt {
                max = max.min(s.max(self.ato_min));
            }
            ato = ato.min(max);
        }
        ato.min(DELACK_MAX)
    }

    /// `tcp_dec_quickack_mode`: an ACK answering received data went out.
    pub(crate) fn on_ack_sent(&mut self) {
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
    }

    /// `tcp_delack_timer_handler`: the timer fired with an ACK owed — `ato`
    /// doubles, or in ping-pong mode (the reply it waited for did not come) the
    /// mode ends and `ato` starts again from `ATO_MIN`.
    pub(crate) fn on_timer(&mut self, rto: Duration) {
        if self.pingpong {
            self.pingpong = false;
            self.ato = self.ato_min;
        } else {
            self.ato = (self.ato * 2).min(rto);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration(1_000_000);

    /// The first data grants min(16, window / 2 MSS) quick ACKs; each ACK of new
    /// data uses one, and the last resets ato.
    #[test]
    fn quick_acks_at_the_start() {
        let mut a = LinuxAcks::new(MS * 40);
        a.on_data(Instant::ZERO, MS * 300, 64_240, 1448);
        assert_eq!(a.quick, 16);
        let mut b = LinuxAcks::new(MS * 40);
        b.on_data(Instant::ZERO, MS * 300, 8_192, 1448);
        assert_eq!(b.quick, 2, "a small window: two");
        for _ in 0..2 {
            b.on_ack_sent();
        }
        assert_eq!((b.quick, b.ato), (0, MS * 40));
    }

    /// ato follows the inter-arrival gap: two gaps of 30 ms give 40/2 + 30 = 50,
    /// then 25 + 30 = 55 ms (towards twice the gap); a gap of 10 ms pulls it to
    /// ato/2 + 20 ms; a gap beyond the RTO grants quick ACKs again; a fired timer
    /// doubles ato up to the RTO.
    #[test]
    fn ato_adapts_to_the_gaps() {
        let mut a = LinuxAcks::new(MS * 40);
        let rto = MS * 400;
        let mut t = Instant::ZERO;
        a.on_data(t, rto, 64_240, 1448);
        a.quick = 0;
        for want in [50, 55] {
            t += MS * 30;
            a.on_data(t, rto, 64_240, 1448);
            assert_eq!(a.ato, MS * want);
        }
        t += MS * 10;
        a.on_data(t, rto, 64_240, 1448);
        assert_eq!(a.ato, MS * 47 + Duration(500_000));
        t += MS * 500;
        a.on_data(t, rto, 64_240, 1448);
        assert_eq!(a.quick, 16);
        a.ato = MS * 47 + Duration(500_000);
        for want in [95, 190, 380, 400] {
            a.on_timer(rto);
            assert_eq!(a.ato, MS * want);
        }
    }

    /// Data sent within ato of data received enters ping-pong mode (later data
    /// does not); in it quick ACKs are held back, and a fired timer or a
    /// `tcp_enter_quickack_mode` ends it (ato back to ATO_MIN).
    #[test]
    fn a_reply_within_ato_enters_ping_pong_mode() {
        let mut a = LinuxAcks::new(MS * 40);
        let rto = MS * 400;
        a.on_data(Instant::ZERO, rto, 64_240, 1448);
        a.on_data_sent(Instant::ZERO + MS * 40);
        assert!(!a.pingpong && a.in_quickack(), "40 ms is not within ato (40 ms)");
        a.on_data_sent(Instant::ZERO + MS * 39);
        assert!(a.pingpong && !a.in_quickack() && a.quick > 0);
        a.ato = MS * 80;
        a.on_timer(rto);
        assert!(!a.pingpong);
        assert_eq!(a.ato, MS * 40, "leaving ping-pong deflates ato, not doubles it");
        a.pingpong = true;
        a.enter_quickack(2, 64_240, 1448);
        assert!(!a.pingpong && a.in_quickack());
    }

    /// Push marks (`tcp_measure_rcv_mss`, `tcp_cleanup_rbuf`): a full-sized
    /// segment with PSH or a short one marks PUSHED, which acknowledges at the
    /// read when nothing is held back and not in ping-pong mode; a second short
    /// one marks PUSHED2, which does even in ping-pong mode; a full segment
    /// without PSH marks nothing; a short one the size of the last short one
    /// (large, or without PSH) is taken as the peer's MSS; an ACK clears them.
    #[test]
    fn pushed_segments_are_acknowledged_when_read() {
        let mut a = LinuxAcks::new(MS * 40);
        a.measure(1448, 1448, 32, false, false);
        assert!(!a.read_acks(true));
        a.measure(1448, 1448, 32, true, true);
        assert!(a.read_acks(true) && !a.read_acks(false), "not with data held out of order");
        a.pingpong = true;
        assert!(!a.read_acks(true), "one push mark waits in ping-pong mode");
        a.ack_went();
        a.measure(100, 1448, 32, true, true);
        assert!(!a.read_acks(true));
        a.measure(100, 1448, 32, true, true);
        assert!(a.read_acks(true), "two short segments: PUSHED2");
        a.ack_went();
        a.pingpong = false;
        // 1000-byte segments without PSH: the second repeats the size.
        a.measure(1000, 1448, 32, false, false);
        assert!(a.read_acks(true));
        a.ack_went();
        a.measure(1000, 1448, 32, false, false);
        assert!(!a.read_acks(true), "the same short size again is the peer's MSS");
    }

    /// The timeout: ato itself at ATO_MIN; above it bounded by the SRTT (at least
    /// ATO_MIN) and by 500 ms (200 ms after a short segment), never beyond 200 ms.
    #[test]
    fn the_timer_is_bounded() {
        let mut a = LinuxAcks::new(MS * 40);
        a.ato = MS * 40;
        assert_eq!(a.timeout(Some(MS * 10), false), MS * 40);
        a.ato = MS * 150;
        assert_eq!(a.timeout(Some(MS * 60), false), MS * 60);
        assert_eq!(a.timeout(Some(MS * 10), false), MS * 40);
        assert_eq!(a.timeout(None, false), MS * 150);
        a.ato = MS * 400;
        assert_eq!(a.timeout(None, true), MS * 200);
        assert_eq!(a.timeout(None, false), MS * 200);
    }
}
