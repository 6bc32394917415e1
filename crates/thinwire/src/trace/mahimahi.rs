//! Logs of the wireless link in Mahimahi's `mm-link --uplink-log/--downlink-log`
//! format, so Mahimahi's plotting scripts (`mm-throughput-graph`,
//! `mm-delay-graph`) and anything else that reads them work on thinwire runs.
//!
//! Format (as mm-link writes it; `src/frontend/link_queue.cc` in
//! `ravinet/mahimahi`): `#` header lines, among them `# base timestamp: B`; then
//! one event per line, times in whole milliseconds (here from the run's start, so
//! B = 0):
//! - `t + size`: a packet arrived at the link's queue;
//! - `t d 1 size`: it was dropped there (mm-link's newer logs; its older
//!   `mm-throughput-graph` stops at these lines: `grep -v ' d '` first);
//! - `t # 1504`: a delivery opportunity (capacity), used or not;
//! - `t - size delay`: a packet left the link after `delay` ms (departure time −
//!   arrival time, both in whole ms).
//!
//! thinwire's link includes the link layer, so a departure is the packet leaving
//! the far end of the wireless link (after ARQ and propagation), and its delay is
//! everything since it entered the IP queue. Capacity lines are the delivery
//! trace's opportunities, or for a constant rate one 1504-byte slot every
//! 1504·8/rate seconds (so the graphs show the link's capacity either way).
//! Opportunities do not depend on traffic, so they are written from the trace as
//! time passes, before the events of the same millisecond, as mm-link does.
use crate::link::capacity::{Opportunities, OPPORTUNITY};
use crate::link::wireless::LinkEvent;
use crate::time::Instant;
use std::io::{self, Write};

/// Where a direction's capacity lines come from.
#[derive(Clone, Debug)]
pub enum Capacity {
    Trace(Opportunities),
    /// Bit/s; `next` is the next slot's number (from 1).
    Rate {
        bps: u64,
        next: u64,
    },
}

impl Capacity {
    pub fn rate(bps: u64) -> Capacity {
        Capacity::Rate { bps: bps.max(1), next: 1 }
    }
    fn peek(&self) -> Option<Instant> {
        match self {
            Capacity::Trace(o) => o.peek(),
            Capacity::Rate { bps, next } => {
                let ns = (*next as u128 * OPPORTUNITY as u128 * 8 * 1_000_000_000).div_ceil(*bps as u128);
                i64::try_from(ns).ok().map(Instant)
            }
        }
    }
    fn burn(&mut self) {
        match self {
            Capacity::Trace(o) => o.burn(),
            Capacity::Rate { next, .. } => *next += 1,
        }
    }
}

fn ms(t: Instant) -> i64 {
    t.nanos().div_euclid(1_000_000).max(0)
}

/// One direction's log.
pub struct MmLog<W: Write> {
    w: W,
    cap: Capacity,
    err: Option<io::Error>,
}

impl<W: Write> MmLog<W> {
    /// Writes the header: `link` names the direction (`downlink`/`uplink`),
    /// `source` the capacity (trace path or rate), `queue` the IP queue.
    pub fn new(mut w: W, link: &str, source: &str, queue: &str, command: &str, cap: Capacity) -> io::Result<Self> {
        writeln!(w, "# mahimahi mm-link ({link}) [{source}] > thinwire")?;
        writeln!(w, "# command line: {command}")?;
        writeln!(w, "# queue: {queue}")?;
        writeln!(w, "# init timestamp: 0")?;
        writeln!(w, "# base timestamp: 0")?;
        Ok(MmLog { w, cap, err: None })
    }

    pub fn get_ref(&self) -> &W {
        &self.w
    }

    fn line(&mut self, args: std::fmt::Arguments) {
        if self.err.is_none() {
            if let Err(e) = self.w.write_fmt(args) {
                self.err = Some(e);
            }
        }
    }

    /// Capacity lines up to and including `t`.
    pub fn until(&mut self, t: Instant) {
        while let Some(o) = self.cap.peek().filter(|&o| o <= t) {
            self.cap.burn();
            let m = ms(o);
            self.line(format_args!("{m} # {OPPORTUNITY}\n"));
        }
    }

    pub fn arrival(&mut self, at: Instant, len: u32, dropped: bool) {
        self.until(at);
        let m = ms(at);
        self.line(format_args!("{m} + {len}\n"));
        if dropped {
            self.line(format_args!("{m} d 1 {len}\n"));
        }
    }

    /// A queued packet dropped later (an AQM at dequeue, FQ-CoDel's head drops).
    pub fn drop_queued(&mut self, at: Instant, len: u32) {
        self.until(at);
        let m = ms(at);
        self.line(format_args!("{m} d 1 {len}\n"));
    }

    pub fn departure(&mut self, at: Instant, len: u32, queued: Instant) {
        self.until(at);
        let (m, q) = (ms(at), ms(queued));
        self.line(format_args!("{m} - {len} {}\n", (m - q).max(0)));
    }

    /// Writes capacity lines up to `end` and returns the writer.
    pub fn finish(mut self, end: Instant) -> io::Result<W> {
        self.until(end);
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

/// Both directions' logs (0 = down, 1 = up), fed with the link's events.
pub struct MmLogs<W: Write> {
    pub dirs: [MmLog<W>; 2],
}

impl<W: Write> MmLogs<W> {
    /// Takes the events that matter (queue arrivals and drops, deliveries).
    pub fn link(&mut self, e: &LinkEvent) {
        match *e {
            LinkEvent::Enqueue { at, dir, len, verdict, .. } => {
                self.dirs[dir as usize].arrival(at, len, matches!(verdict, crate::queue::Verdict::Dropped(_)))
            }
            LinkEvent::QueueAqm { at, dir, len, reason: Some(_), .. } => self.dirs[dir as usize].drop_queued(at, len),
            LinkEvent::Deliver { at, dir, len, queued, .. } => self.dirs[dir as usize].departure(at, len, queued),
            _ => {}
        }
    }

    pub fn finish(self, end: Instant) -> io::Result<[W; 2]> {
        let [d, u] = self.dirs;
        Ok([d.finish(end)?, u.finish(end)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::capacity::DeliveryTrace;
    use std::sync::Arc;

    #[test]
    fn lines_in_mm_link_order_with_capacity_first() {
        let t = Arc::new(DeliveryTrace::parse("5\n5\n20\n").unwrap());
        let mut l =
            MmLog::new(Vec::new(), "downlink", "t", "infinite", "x", Capacity::Trace(t.opportunities(true))).unwrap();
        let ms = |v: i64| Instant(v * 1_000_000);
        l.arrival(ms(3), 100, false);
        l.arrival(Instant(3_500_000), 200, true);
        l.departure(ms(5), 100, ms(3));
        let out = String::from_utf8(l.finish(ms(25)).unwrap()).unwrap();
        let body: Vec<&str> = out.lines().filter(|x| !x.starts_with('#')).collect();
        assert_eq!(
            body,
            [
                "3 + 100",
                "3 + 200",
                "3 d 1 200",
                "5 # 1504",
                "5 # 1504",
                "5 - 100 2",
                "20 # 1504",
                "25 # 1504",
                "25 # 1504"
            ]
        );
        assert!(out.contains("# base timestamp: 0\n"));
    }

    #[test]
    fn constant_rate_gives_a_slot_per_1504_bytes() {
        // 1504 B at 120,320 bit/s: one slot per 100 ms.
        let l = MmLog::new(Vec::new(), "uplink", "r", "q", "x", Capacity::rate(120_320)).unwrap();
        let out = String::from_utf8(l.finish(Instant(350_000_000)).unwrap()).unwrap();
        let caps: Vec<&str> = out.lines().filter(|x| x.contains(" # ")).collect();
        assert_eq!(caps, ["100 # 1504", "200 # 1504", "300 # 1504"]);
    }
}
