//! Timer queue: events totally ordered by `(time, sequence)`, and the [`Timers`]
//! trait through which a machine with several timers asks to be woken.
//!
//! The sequence number is assigned at insertion, so events scheduled for the same
//! instant fire in the order they were scheduled; popping asserts monotonic time.
//! The simulator keeps one such queue for everything; a machine driven on its own
//! (the wireless link in the emulator) keeps its own. A machine that schedules
//! through `Timers` behaves identically in both, because the order of its
//! `schedule` calls fixes the order of its events.
//!
//! Inside, a binary heap holds only what is due within the current wheel slot
//! (≈131 µs); later events wait in a timer wheel of 4,096 slots (≈537 ms) or,
//! beyond it, in a second heap, and enter the first heap with the time and
//! sequence number they were given. The pop order is therefore exactly that of a
//! single heap (property test below); what changes is that thousands of pending TCP
//! timers no longer make every push and pop sift through a large heap.
use crate::time::Instant;

struct Entry<E> {
    at: Instant,
    seq: u64,
    ev: E,
}
impl<E> Entry<E> {
    /// Pops before `o`: earlier, or as early and scheduled first.
    #[inline(always)]
    fn before(&self, o: &Self) -> bool {
        precedes(self.at, self.seq, o)
    }
}

/// An entry of key `(at, seq)` pops before `o`.
#[inline(always)]
fn precedes<E>(at: Instant, seq: u64, o: &Entry<E>) -> bool {
    at < o.at || (at == o.at && seq < o.seq)
}

/// A binary min-heap of entries by `(time, sequence)`.
///
/// Not `std`'s `BinaryHeap`: its `push` writes the entry at the end of the vector
/// and reads it straight back to sift it up, and its `pop` writes the last entry
/// into the root and reads it back to sift it down. The entry is written in pieces
/// (an event enum's tag and fields) and read back whole, so the processor cannot
/// forward the stores to the load and stalls: perf annotate put a fifth of the
/// simulator's event loop and a third of `schedule` on those loads
/// (bench/RESULTS.md, 2026-11-29 third session). Here the new or last entry is
/// held aside while its place is found and written once, where it ends up. Keys
/// are unique (the sequence number), so any correct heap pops in the same order.
struct MinHeap<E> {
    data: Vec<Entry<E>>,
}

impl<E> MinHeap<E> {
    fn new() -> Self {
        MinHeap { data: Vec::new() }
    }
    fn len(&self) -> usize {
        self.data.len()
    }
    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    fn peek(&self) -> Option<&Entry<E>> {
        self.data.first()
    }
    fn push(&mut self, e: Entry<E>) {
        // SAFETY: `open_hole`'s contract: the entry is written into the hole it
        // returns, then the length raised.
        unsafe {
            let pos = self.open_hole(e.at, e.seq);
            std::ptr::write(self.data.as_mut_ptr().add(pos), e);
            self.data.set_len(self.data.len() + 1);
        }
    }
    /// Moves the entry out of `src` (leaving `None`; there must be one) into the
    /// heap, copying it once, straight from where it lies (the wheel's node):
    /// taking it out first copied it through the stack in pieces that the copy
    /// into the heap then stalled on.
    fn push_from(&mut self, src: &mut Option<Entry<E>>) {
        let e = src.as_ref().expect("a listed node holds an entry");
        // SAFETY: as in `push`; the entry's bits are copied into the hole and
        // `None` is then written over `src` without dropping it, so the entry
        // is owned by the heap alone.
        unsafe {
            let pos = self.open_hole(e.at, e.seq);
            std::ptr::copy_nonoverlapping(e as *const Entry<E>, self.data.as_mut_ptr().add(pos), 1);
            std::ptr::write(src, None);
            self.data.set_len(self.data.len() + 1);
        }
    }
    /// Makes room for an entry of key `(at, seq)`: moves each entry it goes
    /// before down into the hole below it, and returns the index of the last
    /// hole, where the entry belongs.
    ///
    /// # Safety
    /// The caller must write an entry of that key into the returned index and
    /// then raise the length by one, before anything else touches the heap.
    /// Slots `0..len` are initialised; `reserve` makes room for index `len`,
    /// the first hole. Each step copies the parent into the hole (the parent's
    /// slot becomes the hole, its bits still there but about to be overwritten);
    /// the length is unchanged until the caller raises it, so no slot is ever
    /// counted twice. `before` compares integers and cannot panic, so no hole is
    /// left behind by an unwinding panic.
    #[inline(always)]
    unsafe fn open_hole(&mut self, at: Instant, seq: u64) -> usize {
        self.data.reserve(1);
        let mut pos = self.data.len();
        let p = self.data.as_mut_ptr();
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !precedes(at, seq, &*p.add(parent)) {
                break;
            }
            std::ptr::copy_nonoverlapping(p.add(parent), p.add(pos), 1);
            pos = parent;
        }
        pos
    }
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.data.pop()?;
        let n = self.data.len();
        if n == 0 {
            return Some(last);
        }
        let p = self.data.as_mut_ptr();
        // SAFETY: slots `0..n` are initialised. The root is read out (its slot
        // becomes the hole); each step moves the earlier child up into the hole;
        // `last`, already out of the vector, fills the final hole, so every slot
        // `0..n` again holds exactly one entry. `before` cannot panic.
        unsafe {
            let top = std::ptr::read(p);
            let mut pos = 0;
            loop {
                let mut c = 2 * pos + 1;
                if c >= n {
                    break;
                }
                if c + 1 < n && (*p.add(c + 1)).before(&*p.add(c)) {
                    c += 1;
                }
                if !(*p.add(c)).before(&last) {
                    break;
                }
                std::ptr::copy_nonoverlapping(p.add(c), p.add(pos), 1);
                pos = c;
            }
            std::ptr::write(p.add(pos), last);
            Some(top)
        }
    }
}

/// Width of a wheel slot: 2^17 ns ≈ 131 µs.
const SLOT_SHIFT: u32 = 17;
/// Slots on the wheel (a power of two): it spans 4096 × 131 µs ≈ 537 ms.
const SLOTS: usize = 4096;
const SPAN: i64 = (SLOTS as i64) << SLOT_SHIFT;

/// The event queue: a binary heap for what is due before `frontier` and a timer
/// wheel for the rest (see the module's note on ordering).
///
/// Entries with `at < frontier` are in `near`; those in `[frontier, frontier + SPAN)`
/// when scheduled are in the wheel slot of their time (every wheel entry is at or
/// after `frontier`); later ones are in `far`. `frontier` only moves forward, one
/// slot at a time, and every entry it passes moves into `near` with the `(time,
/// sequence)` it was given when scheduled, so the pop order is exactly that of one
/// heap holding everything — only the heap stays small. (With ten thousand TCP flows
/// the single heap held ~20,000 timers, and sifting through it was 45 % of the run:
/// bench/RESULTS.md.) `near` is empty only when the whole queue is.
pub struct EventQueue<E> {
    near: MinHeap<E>,
    /// The wheel's slots: each the head of a singly linked list of `nodes` (`NIL`
    /// when empty). Allocated when the first entry goes to the wheel (a queue
    /// created and dropped at once costs no more than a heap).
    heads: Vec<u32>,
    /// Every wheel entry in one arena (a slot's list in any order: `near` sorts
    /// them), with a free list through `next`: a run allocates the arena once and
    /// grows it to the most entries ever on the wheel at once, where a vector per
    /// slot cost an allocation for every slot first touched and a free for each at
    /// the end (bench/RESULTS.md, 2026-11-25).
    nodes: Vec<Node<E>>,
    free: u32,
    /// One bit per non-empty wheel slot.
    occupied: [u64; SLOTS / 64],
    /// One bit per non-zero word of `occupied`: the next occupied slot is found
    /// with two bit scans however far it is (a sparse run's next event is often
    /// hundreds of slots ahead).
    summary: u64,
    in_wheel: usize,
    far: MinHeap<E>,
    /// A multiple of the slot width (or `i64::MAX`, the last instant, once reached).
    frontier: i64,
    seq: u64,
    now: Instant,
    popped: u64,
    /// Machines may run ahead of their wake-ups to just before this instant
    /// (`allow_run_ahead`; `None`: they may not).
    run_ahead: Option<Instant>,
}

/// A wheel entry in the arena (`e` is `None` while the node is free).
struct Node<E> {
    e: Option<Entry<E>>,
    next: u32,
}

/// The end of a slot's list and of the free list.
const NIL: u32 = u32::MAX;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            near: MinHeap::new(),
            heads: Vec::new(),
            nodes: Vec::new(),
            free: NIL,
            occupied: [0; SLOTS / 64],
            summary: 0,
            in_wheel: 0,
            far: MinHeap::new(),
            frontier: 0,
            seq: 0,
            now: Instant::ZERO,
            popped: 0,
            run_ahead: None,
        }
    }
    pub fn now(&self) -> Instant {
        self.now
    }
    pub fn popped(&self) -> u64 {
        self.popped
    }
    pub fn len(&self) -> usize {
        self.near.len() + self.in_wheel + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.near.is_empty()
    }
    pub fn schedule(&mut self, at: Instant, ev: E) {
        assert!(at >= self.now, "event scheduled in the past: {at:?} < {:?}", self.now);
        self.seq += 1;
        let e = Entry { at, seq: self.seq, ev };
        if self.near.is_empty() {
            // The queue is empty: start the frontier just after this entry's slot.
            self.frontier = slot_start(at.0).saturating_add(1 << SLOT_SHIFT);
            self.near.push(e);
        } else if at.0 < self.frontier {
            self.near.push(e);
        } else if at.0 - self.frontier < SPAN {
            if self.heads.is_empty() {
                self.heads = vec![NIL; SLOTS];
            }
            let i = slot_index(at.0);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.summary |= 1 << (i / 64);
            let next = self.heads[i];
            let n = if self.free != NIL {
                let n = self.free;
                let node = &mut self.nodes[n as usize];
                self.free = node.next;
                *node = Node { e: Some(e), next };
                n
            } else {
                let n = u32::try_from(self.nodes.len()).expect("fewer than 2^32 timers on the wheel");
                self.nodes.push(Node { e: Some(e), next });
                n
            };
            self.heads[i] = n;
            self.in_wheel += 1;
        } else {
            self.far.push(e);
        }
    }
    pub fn peek_time(&self) -> Option<Instant> {
        self.near.peek().map(|e| e.at)
    }
    /// The next event and its time, without taking it.
    pub fn peek(&self) -> Option<(Instant, &E)> {
        self.near.peek().map(|e| (e.at, &e.ev))
    }
    /// Lets machines run ahead of their wake-ups ([`Timers::run_ahead_until`])
    /// up to `last`, the run's last instant (the simulator; a real-time driver
    /// must not).
    pub fn allow_run_ahead(&mut self, last: Instant) {
        self.run_ahead = Some(Instant(last.0.saturating_add(1)));
    }
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.near.pop()?;
        assert!(e.at >= self.now, "time went backwards");
        self.now = e.at;
        self.popped += 1;
        if self.near.is_empty() {
            self.refill();
        }
        Some((e.at, e.ev))
    }

    /// Moves the frontier forward until `near` has entries (or nothing is left).
    fn refill(&mut self) {
        while self.near.is_empty() {
            if self.in_wheel == 0 {
                // Nothing on the wheel: jump to the first far entry's slot.
                let Some(first) = self.far.peek() else { return };
                self.frontier = slot_start(first.at.0).saturating_add(1 << SLOT_SHIFT);
            } else {
                let from = slot_index(self.frontier);
                let i = self.next_occupied(from);
                let ahead = (i + SLOTS - from) % SLOTS;
                let start = self.frontier + ((ahead as i64) << SLOT_SHIFT);
                self.frontier = start.saturating_add(1 << SLOT_SHIFT);
                self.occupied[i / 64] &= !(1 << (i % 64));
                if self.occupied[i / 64] == 0 {
                    self.summary &= !(1 << (i / 64));
                }
                let mut n = std::mem::replace(&mut self.heads[i], NIL);
                while n != NIL {
                    let node = &mut self.nodes[n as usize];
                    self.near.push_from(&mut node.e);
                    let next = std::mem::replace(&mut node.next, self.free);
                    self.free = n;
                    n = next;
                    self.in_wheel -= 1;
                }
            }
            // A frontier stuck at the last instant there is takes everything.
            let last = self.frontier == i64::MAX;
            while self.far.peek().is_some_and(|e| e.at.0 < self.frontier || last) {
                self.near.push(self.far.pop().expect("peeked"));
            }
        }
    }

    /// The first occupied slot at or after `from`, cyclically (one exists).
    fn next_occupied(&self, from: usize) -> usize {
        const WORDS: usize = SLOTS / 64;
        const _: () = assert!(WORDS == 64, "one summary bit per word of a u64");
        let (w0, b0) = (from / 64, from % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            return w0 * 64 + first.trailing_zeros() as usize;
        }
        // The next non-empty word after w0, cyclically (w0 itself last: its
        // slots before `from` are a whole turn ahead).
        let after = if w0 + 1 < WORDS { self.summary & (!0u64 << (w0 + 1)) } else { 0 };
        let w = if after != 0 { after.trailing_zeros() } else { self.summary.trailing_zeros() } as usize;
        assert!(w < WORDS, "an occupied slot");
        w * 64 + self.occupied[w].trailing_zeros() as usize
    }
}

fn slot_start(t: i64) -> i64 {
    t >> SLOT_SHIFT << SLOT_SHIFT
}

fn slot_index(t: i64) -> usize {
    (t >> SLOT_SHIFT) as usize & (SLOTS - 1)
}

/// Where a machine puts its wake-ups: `timer` is handed back to it at `at`.
///
/// A machine may also *run ahead*: do now what its next wake-ups would do, when
/// nothing else can happen before them (the wireless link's idle stretches), if
/// the driver knows when its next event is and lets it.
pub trait Timers<T> {
    fn schedule(&mut self, at: Instant, timer: T);
    /// The instant before which a machine may run ahead — the driver's next
    /// event, or just after the run's last instant — or `None` if it may not
    /// (the default: a real-time driver, a machine's own queue).
    fn run_ahead_until(&self) -> Option<Instant> {
        None
    }
    /// When the next event is, if it is `timer` and before the run's end: the
    /// machine may take it ([`take_next`](Self::take_next)) to run it ahead too.
    fn next_is(&self, _timer: T) -> Option<Instant> {
        None
    }
    /// Takes the next event (one [`next_is`](Self::next_is) named).
    fn take_next(&mut self) {}
    /// Counts `n` wake-ups that a machine ran ahead instead of scheduling as
    /// events handled.
    fn count_ahead(&mut self, _n: u64) {}
}

/// Any queue whose events can be made from the machine's timers: the machine's own
/// `EventQueue<T>`, or a driver's queue of a larger event type.
impl<T, E: From<T> + PartialEq> Timers<T> for EventQueue<E> {
    fn schedule(&mut self, at: Instant, timer: T) {
        EventQueue::schedule(self, at, E::from(timer))
    }
    fn run_ahead_until(&self) -> Option<Instant> {
        let last = self.run_ahead?;
        Some(self.peek_time().map_or(last, |t| t.min(last)))
    }
    fn next_is(&self, timer: T) -> Option<Instant> {
        let (t, e) = self.peek()?;
        (t < self.run_ahead? && *e == E::from(timer)).then_some(t)
    }
    fn take_next(&mut self) {
        self.pop();
    }
    fn count_ahead(&mut self, n: u64) {
        self.popped += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;
    use std::collections::BinaryHeap;
    /// `std`'s heap as the reference: a max-heap, so the order is reversed.
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
        fn cmp(&self, o: &Self) -> Ordering {
            o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
        }
    }
    /// Running ahead: only where allowed, up to the next event or the run's
    /// end; the next event named only if it is the one asked about and due
    /// before the end; taking it pops it, and runs ahead count as events.
    #[test]
    fn run_ahead_is_offered_only_where_allowed() {
        let mut q: EventQueue<u8> = EventQueue::new();
        q.schedule(Instant(50), 7);
        assert_eq!(Timers::<u8>::run_ahead_until(&q), None);
        assert_eq!(Timers::<u8>::next_is(&q, 7), None);
        q.allow_run_ahead(Instant(40));
        assert_eq!(Timers::<u8>::run_ahead_until(&q), Some(Instant(41)));
        assert_eq!(Timers::<u8>::next_is(&q, 7), None, "after the run's end");
        q.allow_run_ahead(Instant(100));
        assert_eq!(Timers::<u8>::run_ahead_until(&q), Some(Instant(50)));
        assert_eq!(Timers::<u8>::next_is(&q, 8), None);
        assert_eq!(Timers::<u8>::next_is(&q, 7), Some(Instant(50)));
        Timers::<u8>::take_next(&mut q);
        assert_eq!((q.now(), q.popped(), q.len()), (Instant(50), 1, 0));
        assert_eq!(Timers::<u8>::run_ahead_until(&q), Some(Instant(101)));
        Timers::<u8>::count_ahead(&mut q, 5);
        assert_eq!(q.popped(), 6);
    }
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
    /// The wheel must pop exactly what one heap of everything pops: random
    /// schedules at delays from nanoseconds to beyond the wheel's span, ties
    /// included, interleaved with pops, and the queue running empty now and then.
    #[test]
    fn pops_in_the_order_of_a_single_heap() {
        // A xorshift generator (the crate's `rng` is a higher layer than this one).
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
        }
        for seed in 0..40u64 {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (seed + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let (mut seq, mut got, mut want) = (0u64, vec![], vec![]);
            for step in 0..20_000u64 {
                let scale = [1, 1_000, 200_000, 5_000_000, 300_000_000, 2_000_000_000][rng.below(6) as usize];
                let burst = if rng.below(50) == 0 { 1 + rng.below(40) } else { rng.below(3) };
                for _ in 0..burst {
                    let mut at =
                        q.now() + crate::time::Duration(rng.below(scale) as i64 * (rng.below(4) as i64).min(1));
                    if rng.below(4) == 0 {
                        // On or next to a slot boundary.
                        let b = slot_start(at.0) + (1 << SLOT_SHIFT) + rng.below(3) as i64 - 1;
                        at = Instant(b.max(q.now().0));
                    }
                    seq += 1;
                    q.schedule(at, (step, seq));
                    reference.push(Entry { at, seq, ev: (step, seq) });
                }
                let pops = if rng.below(100) == 0 { 1_000 } else { rng.below(3) };
                for _ in 0..pops {
                    got.push(q.pop());
                    want.push(reference.pop().map(|e| (e.at, e.ev)));
                }
                assert_eq!(q.len(), reference.len());
                assert_eq!(q.peek_time(), reference.peek().map(|e| e.at));
            }
            while let Some(x) = q.pop() {
                got.push(Some(x));
                want.push(reference.pop().map(|e| (e.at, e.ev)));
            }
            assert!(reference.is_empty());
            assert_eq!(got, want, "seed {seed}");
        }
    }
    /// The heap moves owned entries without losing or doubling one: every value
    /// popped once, in order, and every one dropped (counted through `Rc`).
    #[test]
    fn heap_moves_owned_entries_exactly_once() {
        use std::rc::Rc;
        let token = Rc::new(());
        let mut h = MinHeap::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut popped = vec![];
        for seq in 0..5_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.push(Entry { at: Instant((x % 64) as i64), seq, ev: (seq, Rc::clone(&token)) });
            if x.is_multiple_of(3) {
                popped.push(h.pop().map(|e| (e.at, e.seq)).unwrap());
            }
        }
        assert_eq!(Rc::strong_count(&token), 1 + h.len());
        let mut rest = vec![];
        while let Some(e) = h.pop() {
            assert_eq!(e.ev.0, e.seq);
            rest.push((e.at, e.seq));
        }
        assert!(rest.windows(2).all(|w| w[0] < w[1]), "popped in (time, sequence) order");
        assert_eq!(popped.len() + rest.len(), 5_000);
        assert_eq!(Rc::strong_count(&token), 1);
        // Left in the heap when it is dropped: dropped with it.
        let mut h = MinHeap::new();
        for seq in 0..100 {
            h.push(Entry { at: Instant(100 - seq as i64), seq, ev: Rc::clone(&token) });
        }
        drop(h);
        assert_eq!(Rc::strong_count(&token), 1);
    }
    /// Times at the end of the range ("never" timers) neither overflow nor reorder.
    #[test]
    fn times_near_the_end_of_the_range() {
        let mut q = EventQueue::new();
        let end = i64::MAX;
        for (i, at) in [end, end - 1, 5, end - (1 << 17), end, end - 3 * SPAN / 2, 7].into_iter().enumerate() {
            q.schedule(Instant(at), i);
        }
        let mut order = vec![];
        while let Some((t, i)) = q.pop() {
            order.push((t.0, i));
            if i == 1 {
                q.schedule(Instant(end - 1), 7);
                q.schedule(Instant(end), 8);
            }
        }
        let want = vec![
            (5, 2),
            (7, 6),
            (end - 3 * SPAN / 2, 5),
            (end - (1 << 17), 3),
            (end - 1, 1),
            (end - 1, 7),
            (end, 0),
            (end, 4),
            (end, 8),
        ];
        assert_eq!(order, want);
        // The last time there is, reached through the far heap.
        let mut q = EventQueue::new();
        q.schedule(Instant(5), 0);
        q.schedule(Instant(end), 1);
        q.schedule(Instant(end), 2);
        let order: Vec<usize> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(order, vec![0, 1, 2]);
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
