//! The wired link: a drop-tail queue (limit in packets or bytes, default 1000
//! packets) in front of a constant-rate transmitter, then a propagation delay.
//!
//! Nothing on the wired side ever waits for anything but the transmitter, so the
//! link is computed in closed form when a packet arrives: it starts transmission
//! when the previous one ends, and arrives `size / rate + delay` after that. The
//! queue length an arriving packet sees is the number of accepted packets whose
//! transmission has not started yet (a packet starting at this very instant has
//! started). This replaces a "transmission done" event per packet.
use super::Limit;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

pub struct WiredLink {
    pub rate: u64,
    pub delay: Duration,
    limit: Limit,
    busy_until: Instant,
    /// Start times and sizes of accepted packets still waiting to be sent.
    waiting: VecDeque<(Instant, u32)>,
    waiting_bytes: u64,
    pub drops: u64,
}

impl WiredLink {
    pub fn new(rate: u64, delay: Duration, limit: Limit) -> WiredLink {
        WiredLink {
            rate,
            delay,
            limit,
            busy_until: Instant::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            drops: 0,
        }
    }

    fn advance(&mut self, now: Instant) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= size as u64;
        }
    }

    /// Offers a packet of `size` bytes at `now`: its arrival time at the far end, or
    /// `None` if the queue is full and it is dropped.
    pub fn offer(&mut self, now: Instant, size: u32) -> Option<Instant> {
        self.advance(now);
        let busy = self.busy_until > now;
        if busy {
            let fits = match self.limit {
                Limit::Packets(n) => self.waiting.len() < n as usize,
                Limit::Bytes(b) => self.waiting_bytes + size as u64 <= b,
            };
            if !fits {
                self.drops += 1;
                return None;
            }
        }
        let start = self.busy_until.max(now);
        self.busy_until = start + Duration::transmission(size as u64, self.rate);
        if busy {
            self.waiting.push_back((start, size));
            self.waiting_bytes += size as u64;
        }
        Some(self.busy_until + self.delay)
    }

    /// Packets waiting (not yet being transmitted) at `now`.
    pub fn queue_len(&mut self, now: Instant) -> usize {
        self.advance(now);
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn ms(x: i64) -> Instant {
        Instant::ZERO + Duration::from_millis(x)
    }
    #[test]
    fn packets_follow_each_other_and_the_queue_drops_when_full() {
        // 1000 B at 1 Mbit/s = 8 ms; delay 1 ms; room for 2 waiting packets.
        let mut w = WiredLink::new(1_000_000, Duration::from_millis(1), Limit::Packets(2));
        assert_eq!(w.offer(ms(0), 1000), Some(ms(9)));
        assert_eq!(w.offer(ms(1), 1000), Some(ms(17)));
        assert_eq!(w.offer(ms(2), 1000), Some(ms(25)));
        assert_eq!(w.queue_len(ms(2)), 2);
        assert_eq!(w.offer(ms(3), 1000), None, "two waiting, one in transmission: full");
        assert_eq!(w.drops, 1);
        // At 8 ms the second packet starts; there is room again.
        assert_eq!(w.queue_len(ms(8)), 1);
        assert_eq!(w.offer(ms(8), 1000), Some(ms(33)));
        // Idle link: a packet starts at once.
        assert_eq!(w.offer(ms(100), 500), Some(ms(105)));
        assert_eq!(w.queue_len(ms(100)), 0);
    }
    #[test]
    fn byte_limit_counts_waiting_bytes() {
        let mut w = WiredLink::new(1_000_000, Duration::ZERO, Limit::Bytes(1500));
        assert!(w.offer(ms(0), 1000).is_some());
        assert!(w.offer(ms(0), 1000).is_some());
        assert!(w.offer(ms(0), 600).is_none());
        assert!(w.offer(ms(0), 500).is_some());
    }
}
