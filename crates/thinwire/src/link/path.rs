//! One step of the path between the hosts, written once for both drivers: the
//! simulator (`engine/sim`) and the emulator's I/O-free path (`realtime.rs`).
//!
//! The path is the wireless link ([`WirelessLink`]) and the wired link in each
//! direction ([`WiredLink`], index 0 down, 1 up), on the driver's event queue.
//! What a driver decides itself — where a packet that leaves a link goes (a
//! TCP endpoint, the proxy, a TUN device, the other link) and what it records —
//! it says through [`PathDriver`]; the order of the machines' calls, the timers
//! they ask for and when their events are taken is here.
use super::wireless::{LinkTimer, WirelessLink};
use crate::queue::wired::{Step, WiredLink};
use crate::queue::Verdict;
use crate::sched::Timers;
use crate::time::Instant;
use crate::wire::Packet;

/// A wired link's timer: the oldest packet in flight in direction `.0` arrives
/// at the far end, or the transmitter of direction `.0` is free (disciplines
/// that decide at dequeue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WiredTimer {
    Arrive(u8),
    Tx(u8),
}

/// A driver of the path: its parts, where packets go when they leave a link, and
/// what it records.
pub(crate) trait PathDriver {
    type Queue: Timers<LinkTimer> + Timers<WiredTimer>;
    /// The wireless link, the two wired links and the event queue.
    fn parts(&mut self) -> (&mut WirelessLink, &mut [WiredLink; 2], &mut Self::Queue);
    /// The wireless link may have trace events to take.
    fn link_events(&mut self);
    /// Wired link `d` may have events to take (drops and marks after queueing,
    /// departures).
    fn wired_events(&mut self, d: usize);
    /// A packet left the far end of wireless direction `dir` at `now`.
    fn from_wireless(&mut self, now: Instant, dir: usize, p: Packet);
    /// A packet left the far end of wired direction `d` at `now`.
    fn from_wired(&mut self, now: Instant, d: usize, p: Packet);
}

/// A wireless link timer at `now`: the link runs it, then each packet it
/// delivers goes to the driver (its trace events taken before), then the link
/// resumes its transmitters.
#[inline]
pub(crate) fn link_timer<D: PathDriver>(d: &mut D, now: Instant, t: LinkTimer) {
    let (link, _, q) = d.parts();
    link.on_timer_with(now, t, q);
    d.link_events();
    while let Some((dir, p)) = d.parts().0.poll_deliver() {
        d.link_events();
        d.from_wireless(now, dir, p);
    }
    let (link, _, q) = d.parts();
    link.resume_with(q);
    d.link_events();
}

/// A wired link timer at `now`.
#[inline]
pub(crate) fn wired_timer<D: PathDriver>(d: &mut D, now: Instant, t: WiredTimer) {
    match t {
        WiredTimer::Tx(k) => {
            let (_, wired, q) = d.parts();
            let step = wired[k as usize].handle_timeout(now);
            schedule(q, k, step);
            d.wired_events(k as usize);
        }
        WiredTimer::Arrive(k) => {
            let p = d.parts().1[k as usize].poll_arrival(now).expect("a packet in flight");
            d.wired_events(k as usize);
            d.from_wired(now, k as usize, p);
        }
    }
}

/// Offers `p` to wired direction `k` at `now` and asks for its timers; the
/// driver takes the link's events after recording the verdict
/// ([`PathDriver::wired_events`]).
#[inline]
pub(crate) fn wired_offer<D: PathDriver>(d: &mut D, now: Instant, k: usize, p: Packet) -> Verdict {
    let (_, wired, q) = d.parts();
    let (verdict, step) = wired[k].offer(now, p);
    schedule(q, k as u8, step);
    verdict
}

fn schedule(q: &mut impl Timers<WiredTimer>, k: u8, step: Step) {
    if let Some(t) = step.arrival {
        q.schedule(t, WiredTimer::Arrive(k));
    }
    if let Some(t) = step.wake {
        q.schedule(t, WiredTimer::Tx(k));
    }
}
