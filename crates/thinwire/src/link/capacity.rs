//! How long one direction's radio takes to send a frame: a constant rate, or a
//! Mahimahi packet-delivery trace (Netravali et al., "Mahimahi: Accurate
//! Record-and-Replay for HTTP", USENIX ATC 2015; `mm-link`, `src/frontend/
//! link_queue.cc` in `ravinet/mahimahi`, read for its semantics).
//!
//! A delivery trace is a text file with one line per delivery opportunity: a
//! whole number of milliseconds from the start, non-decreasing, the last one
//! positive (the trace's period). Each opportunity can carry [`OPPORTUNITY`] =
//! 1504 bytes. Semantics, as mm-link's:
//! - bytes are accounted across opportunities: a frame larger than what is left
//!   of an opportunity takes the rest of it and continues in the next ones; it has
//!   been sent at the opportunity that carries its last byte;
//! - what an opportunity does not carry is lost: an opportunity at or before the
//!   instant a frame starts is wasted (mm-link burns every opportunity up to "now"
//!   before it queues an arriving packet), except that the bytes left in the
//!   opportunity that finished the previous frame serve a frame that starts at
//!   that same instant (the next frame already waiting);
//! - at the end of the trace it starts again, shifted by its last timestamp
//!   (`repeat`, mm-link's default), or the link carries nothing more (`once`,
//!   mm-link's `--once`).
//!
//! The trace starts at time 0 of the run (the emulator's start). Opportunity
//! times do not depend on traffic, so [`DeliveryTrace::opportunities`] lists them
//! for logs ("t # 1504" lines) without touching the link.
//!
//! Such traces are measured on operators' networks above their link layer, so
//! they already include the link layer's own retransmissions: use them with the
//! `raw` protocol and no channel losses unless retransmissions are to be counted
//! twice.
use crate::time::{Duration, Instant};
use std::sync::Arc;

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY: u32 = 1504;

const MS: i64 = 1_000_000;

/// A parsed delivery trace: opportunity times in ms, non-decreasing, last > 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    ms: Vec<u64>,
}

impl DeliveryTrace {
    /// Parses Mahimahi's format; the error names the line and what is accepted.
    pub fn parse(text: &str) -> Result<DeliveryTrace, String> {
        let mut ms: Vec<u64> = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        // Blank lines are tolerated at the end of the file only (mm-link rejects
        // every empty line; a trailing newline is not one).
        let last = lines.iter().rposition(|l| !l.trim().is_empty()).map_or(0, |i| i + 1);
        for (i, line) in lines[..last].iter().enumerate() {
            let s = line.trim();
            let n = i + 1;
            if s.is_empty() {
                return Err(format!("line {n} is empty (one opportunity per line: a whole number of milliseconds)"));
            }
            let v: u64 = s.parse().map_err(|_| {
                let shown: String = s.chars().take(30).collect();
                format!("line {n}: {shown:?} is not a whole number of milliseconds (one delivery opportunity per line)")
            })?;
            if v > 1 << 40 {
                return Err(format!("line {n}: {v} ms is beyond 2^40 ms (35 years)"));
            }
            if ms.last().is_some_and(|&p| v < p) {
                return Err(format!(
                    "line {n}: {v} ms comes before the previous line's time (times must not decrease)"
                ));
            }
            ms.push(v);
        }
        match ms.last() {
            None => Err("no delivery opportunities (one line per opportunity: its time in ms)".into()),
            Some(0) => Err("the trace lasts no time (its last opportunity must be after 0 ms)".into()),
            Some(_) => Ok(DeliveryTrace { ms }),
        }
    }

    /// The trace's period: its last timestamp.
    pub fn period(&self) -> Duration {
        Duration(*self.ms.last().expect("non-empty") as i64 * MS)
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ms.is_empty()
    }

    /// Mean capacity in bit/s (rounded down; at least 1).
    pub fn mean_rate(&self) -> u64 {
        let bits = self.ms.len() as u128 * OPPORTUNITY as u128 * 8 * 1000;
        ((bits / *self.ms.last().expect("non-empty") as u128) as u64).max(1)
    }

    /// Every opportunity's time from the start, in order (for logs).
    pub fn opportunities(self: &Arc<Self>, repeat: bool) -> Opportunities {
        Opportunities::new(self.clone(), repeat)
    }
}

/// A walk through a trace's opportunities in time order.
#[derive(Clone, Debug)]
pub struct Opportunities {
    trace: Arc<DeliveryTrace>,
    repeat: bool,
    next: usize,
    base: i64,
    finished: bool,
}

impl Opportunities {
    pub fn new(trace: Arc<DeliveryTrace>, repeat: bool) -> Self {
        Opportunities { trace, repeat, next: 0, base: 0, finished: false }
    }
    /// The next opportunity's time (None: a `once` trace has ended).
    pub fn peek(&self) -> Option<Instant> {
        (!self.finished).then(|| Instant(self.base + self.trace.ms[self.next] as i64 * MS))
    }
    /// Moves past the next opportunity.
    pub fn burn(&mut self) {
        self.next += 1;
        if self.next == self.trace.ms.len() {
            self.next = 0;
            if self.repeat {
                self.base += *self.trace.ms.last().expect("non-empty") as i64 * MS;
            } else {
                self.finished = true;
            }
        }
    }
}

impl Iterator for Opportunities {
    type Item = Instant;
    fn next(&mut self) -> Option<Instant> {
        let t = self.peek()?;
        self.burn();
        Some(t)
    }
}

/// One direction's radio capacity driven by a delivery trace.
#[derive(Clone, Debug)]
pub struct TraceCapacity {
    ops: Opportunities,
    /// Bytes left in the opportunity at `left_at`, which carried the last byte of
    /// the previous frame.
    left: u32,
    left_at: Instant,
}

impl TraceCapacity {
    pub fn new(trace: Arc<DeliveryTrace>, repeat: bool) -> Self {
        TraceCapacity { ops: Opportunities::new(trace, repeat), left: 0, left_at: Instant(i64::MIN) }
    }

    /// A frame of `size` bytes starts at `now`: when its last byte has been sent
    /// (None: never, a `once` trace has ended).
    pub fn send(&mut self, now: Instant, size: u32) -> Option<Instant> {
        let mut need = size;
        if now <= self.left_at {
            // The previous frame finished at this instant: this one was waiting, so
            // it takes what is left of that opportunity and the ones after it (also
            // those at the same millisecond).
            let take = need.min(self.left);
            self.left -= take;
            need -= take;
            if need == 0 {
                return Some(self.left_at);
            }
        } else {
            // The radio was idle: what it did not use is gone, and so is every
            // opportunity up to now (mm-link burns them before queueing a packet).
            while self.ops.peek()? <= now {
                self.ops.burn();
            }
        }
        self.left = 0;
        loop {
            let t = self.ops.next()?;
            let take = need.min(OPPORTUNITY);
            need -= take;
            if need == 0 {
                self.left = OPPORTUNITY - take;
                self.left_at = t;
                return Some(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(text: &str, repeat: bool) -> TraceCapacity {
        TraceCapacity::new(Arc::new(DeliveryTrace::parse(text).unwrap()), repeat)
    }
    fn ms(v: i64) -> Instant {
        Instant(v * MS)
    }

    #[test]
    fn parse_accepts_mahimahi_traces_and_names_bad_lines() {
        let t = DeliveryTrace::parse("0\n0\n5\n10\n").unwrap();
        assert_eq!((t.len(), t.period()), (4, Duration::from_millis(10)));
        assert_eq!(t.mean_rate(), 4 * 1504 * 8 * 100);
        assert!(DeliveryTrace::parse("1\n\n2\n").unwrap_err().contains("line 2 is empty"));
        assert!(DeliveryTrace::parse("1\nabc\n").unwrap_err().contains("line 2"));
        assert!(DeliveryTrace::parse("5\n3\n").unwrap_err().contains("must not decrease"));
        assert!(DeliveryTrace::parse("0\n0\n").unwrap_err().contains("lasts no time"));
        assert!(DeliveryTrace::parse("\n\n").unwrap_err().contains("no delivery"));
        assert!(DeliveryTrace::parse("-1\n").is_err());
        assert!(DeliveryTrace::parse("1.5\n").is_err());
    }

    #[test]
    fn small_frames_share_an_opportunity_started_together() {
        // Two 700-byte frames waiting at 0: both go in the opportunity at 1 ms
        // (1400 of its 1504 bytes); a third needs 1 ms more.
        let mut c = cap("1\n2\n3\n", true);
        assert_eq!(c.send(ms(0), 700), Some(ms(1)));
        assert_eq!(c.send(ms(1), 700), Some(ms(1)));
        assert_eq!(c.send(ms(1), 700), Some(ms(2)));
    }

    #[test]
    fn large_frames_span_opportunities_and_leftovers_are_wasted_when_idle() {
        let mut c = cap("1\n2\n3\n4\n5\n6\n", true);
        // 2000 bytes: 1504 at 1 ms, 496 at 2 ms (1008 left at 2 ms).
        assert_eq!(c.send(ms(0), 2000), Some(ms(2)));
        // Starting later than 2 ms: the leftover and the opportunity at 3 ms
        // (at the start instant) are wasted.
        assert_eq!(c.send(ms(3), 1000), Some(ms(4)));
        // Starting exactly when the previous frame finished: the leftover (504 B)
        // is used, then 496 B of the opportunity at 5 ms.
        assert_eq!(c.send(ms(4), 1000), Some(ms(5)));
    }

    #[test]
    fn opportunities_at_the_same_millisecond_serve_waiting_frames() {
        // Two opportunities at 10 ms: two 1500-byte frames waiting both leave then.
        let mut c = cap("10\n10\n20\n", true);
        assert_eq!(c.send(ms(0), 1500), Some(ms(10)));
        assert_eq!(c.send(ms(10), 1500), Some(ms(10)));
        assert_eq!(c.send(ms(10), 1500), Some(ms(20)));
        // A frame that finds the radio idle at 20 ms wastes the rest of 20 ms.
        let mut c = cap("10\n10\n20\n", true);
        assert_eq!(c.send(ms(0), 1000), Some(ms(10)));
        assert_eq!(c.send(ms(15), 1000), Some(ms(20)));
        assert_eq!(c.send(ms(25), 1000), Some(ms(30)));
    }

    #[test]
    fn wraps_around_by_the_last_timestamp_or_ends() {
        let mut r = cap("0\n10\n", true);
        let times: Vec<_> = (0..5).map(|_| r.send(Instant(1), 1504)).collect();
        // Opportunities at 0, 10 | 10, 20 | 20, 30 …; the one at 0 is before the start.
        assert_eq!(times, vec![Some(ms(10)), Some(ms(10)), Some(ms(20)), Some(ms(20)), Some(ms(30))]);
        let mut o = cap("0\n10\n", false);
        assert_eq!(o.send(Instant(0), 100), Some(ms(10)));
        assert_eq!(o.send(ms(10), 1404), Some(ms(10)));
        assert_eq!(o.send(ms(10), 1), None);
        let t = Arc::new(DeliveryTrace::parse("0\n10\n").unwrap());
        let ops: Vec<_> = t.opportunities(true).take(5).collect();
        assert_eq!(ops, vec![ms(0), ms(10), ms(10), ms(20), ms(20)]);
        assert_eq!(t.opportunities(false).count(), 2);
    }
}
