//! Timer queue: a binary heap totally ordered by `(time, sequence)`, and the
//! [`Timers`] trait through which a machine with several timers asks to be woken.
//!
//! The sequence number is assigned at insertion, so events scheduled for the same
//! instant fire in the order they were scheduled; popping asserts monotonic time.
//! The simulator keeps one such queue for everything; a machine driven on its own
//! (the wireless link in the emulator) keeps its own. A machine that schedules
//! through `Timers` behaves identically in both, because the order of its
//! `schedule` calls fixes the order of its events.
use crate::time::Instant;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Instant,
    seq: u64,
    ev: E,
}
impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Instant,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, now: Instant::ZERO, popped: 0 }
    }
    pub fn now(&self) -> Instant {
        self.now
    }
    pub fn popped(&self) -> u64 {
        self.popped
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    pub fn schedule(&mut self, at: Instant, ev: E) {
        assert!(at >= self.now, "event scheduled in the past: {at:?} < {:?}", self.now);
        self.seq += 1;
        self.heap.push(Entry { at, seq: self.seq, ev });
    }
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        assert!(e.at >= self.now, "time went backwards");
        self.now = e.at;
        self.popped += 1;
        Some((e.at, e.ev))
    }
}

/// Where a machine puts its wake-ups: `timer` is handed back to it at `at`.
pub trait Timers<T> {
    fn schedule(&mut self, at: Instant, timer: T);
}

/// Any queue whose events can be made from the machine's timers: the machine's own
/// `EventQueue<T>`, or a driver's queue of a larger event type.
impl<T, E: From<T>> Timers<T> for EventQueue<E> {
    fn schedule(&mut self, at: Instant, timer: T) {
        EventQueue::schedule(self, at, E::from(timer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule(Instant(5), 'a');
        q.schedule(Instant(1), 'b');
        q.schedule(Instant(5), 'c');
        q.schedule(Instant(1), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }
    #[test]
    #[should_panic(expected = "past")]
    fn rejects_past_events() {
        let mut q = EventQueue::new();
        q.schedule(Instant(5), 1);
        q.pop();
        q.schedule(Instant(4), 2);
    }
}
