//! Connection scheduler of an aggregate: strict priority classes (lower number
//! first), and inside a class ticket-based stride scheduling (C. Waldspurger and
//! W. Weihl, "Stride Scheduling", MIT TM-528, 1995), as seed 004 §IV-B combines
//! them. A connection's pass advances by `STRIDE1 / tickets` per MSS sent, so
//! backlogged connections of one class share the link in proportion to their
//! tickets. A connection that had nothing to send rejoins at its class's current
//! pass (the pass of the last pick), so idling earns no credit.
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

pub const STRIDE1: u64 = 1 << 20;

/// One candidate: (connection, class, pass).
pub type Candidate = (usize, u8, u64);

/// The candidates of a service round, ordered as `Stride::pick` takes them
/// (lowest class, then pass, then the connection opened first — its `serial`,
/// since a connection's place is reused once it has closed): a heap, so that a
/// pick among n connections costs O(log n), not a scan of all of them per
/// segment.
#[derive(Default, Debug, Clone)]
pub struct Candidates(BinaryHeap<Reverse<(u8, u64, u64, usize)>>);

impl Candidates {
    pub fn clear(&mut self) {
        self.0.clear();
    }
    /// Candidate `c` of `class` and `pass`, opened as the proxy's `serial`-th.
    pub fn push(&mut self, (c, class, pass): Candidate, serial: u64) {
        self.0.push(Reverse((class, pass, serial, c)));
    }
    /// The candidates in pick order (tests, debug checks).
    pub fn sorted(&self) -> Vec<Candidate> {
        let mut v: Vec<_> = self.0.iter().map(|&Reverse(k)| k).collect();
        v.sort_unstable();
        v.into_iter().map(|(class, pass, _, c)| (c, class, pass)).collect()
    }
}

/// Candidates opened in the order of their places (tests).
impl<I: IntoIterator<Item = Candidate>> From<I> for Candidates {
    fn from(it: I) -> Self {
        Candidates(it.into_iter().map(|(c, class, pass)| Reverse((class, pass, c as u64, c))).collect())
    }
}

#[derive(Default, Debug, Clone)]
pub struct Stride {
    /// Pass of the last pick in each class.
    vtime: BTreeMap<u8, u64>,
}

impl Stride {
    /// The pass a connection of `class` continues from.
    pub fn join(&self, class: u8, pass: u64) -> u64 {
        pass.max(self.vtime.get(&class).copied().unwrap_or(0))
    }

    /// The winner among `cands`, taken out of them: lowest class, then lowest
    /// pass, then the one opened first.
    pub fn pick(&mut self, cands: &mut Candidates) -> Option<Candidate> {
        let Reverse((class, pass, _, c)) = cands.0.pop()?;
        self.vtime.insert(class, pass);
        Some((c, class, pass))
    }

    /// The pass after sending `len` bytes with `tickets` (segments of `mss`).
    pub(crate) fn charge(pass: u64, tickets: u32, len: u64, mss: u64) -> u64 {
        pass + (STRIDE1 * len.max(1)) / (tickets.max(1) as u64 * mss.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(tickets: [u32; 2], rounds: usize) -> [usize; 2] {
        let mut s = Stride::default();
        let mut pass = [0u64; 2];
        let mut n = [0usize; 2];
        for _ in 0..rounds {
            let mut c = Candidates::from((0..2).map(|i| (i, 1, pass[i])));
            let (w, _, _) = s.pick(&mut c).unwrap();
            n[w] += 1;
            pass[w] = Stride::charge(pass[w], tickets[w], 1000, 1000);
        }
        n
    }

    #[test]
    fn tickets_set_the_shares() {
        assert_eq!(share([100, 100], 100), [50, 50]);
        let n = share([300, 100], 400);
        assert!((n[0] as i64 - 300).abs() <= 1, "{n:?}");
    }

    #[test]
    fn a_lower_class_always_wins() {
        let mut s = Stride::default();
        assert_eq!(s.pick(&mut [(0, 1, 0), (1, 0, 1 << 40)].into()).unwrap().0, 1);
    }

    #[test]
    fn picks_follow_class_then_pass_then_index() {
        let mut s = Stride::default();
        let mut c: Candidates = [(3, 1, 10), (1, 1, 10), (2, 0, 99), (0, 1, 5)].into();
        let order: Vec<usize> = std::iter::from_fn(|| s.pick(&mut c).map(|x| x.0)).collect();
        assert_eq!(order, [2, 0, 1, 3]);
    }

    #[test]
    fn idle_connections_earn_no_credit() {
        let mut s = Stride::default();
        s.pick(&mut [(0, 1, 5000)].into());
        assert_eq!(s.join(1, 0), 5000);
        assert_eq!(s.join(1, 9000), 9000);
        assert_eq!(s.join(0, 7), 7);
    }
}
