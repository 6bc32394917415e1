//! Sorted, disjoint half-open byte ranges `[start, end)` over 64-bit sequence
//! offsets: the receiver's out-of-order queue and the sender's SACK scoreboard.
//!
//! A deque, so that ranges arriving in descending order (a capture whose sequence
//! numbers run backwards) are added at the front in O(1): with a `Vec` each went
//! to index 0 and 800k packets took 55 s.
use std::collections::VecDeque;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges {
    pub(crate) v: VecDeque<(u64, u64)>,
}

impl Ranges {
    /// Inserts `[s, e)`, merging; returns the merged range containing it.
    pub fn insert(&mut self, s: u64, e: u64) -> (u64, u64) {
        if s >= e {
            return (s, e);
        }
        // Fast path: in-order data extends (or follows) the last range.
        if let Some(last) = self.v.back_mut() {
            if s >= last.0 && s <= last.1 {
                last.1 = last.1.max(e);
                return *last;
            }
            if s > last.1 {
                self.v.push_back((s, e));
                return (s, e);
            }
        } else {
            self.v.push_back((s, e));
            return (s, e);
        }
        // Fast path: wholly before the first range.
        if self.v.front().is_some_and(|f| e < f.0) {
            self.v.push_front((s, e));
            return (s, e);
        }
        let i = self.v.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut ns, mut ne) = (s, e);
        while j < self.v.len() && self.v[j].0 <= e {
            ns = ns.min(self.v[j].0);
            ne = ne.max(self.v[j].1);
            j += 1;
        }
        self.v.drain(i..j);
        self.v.insert(i, (ns, ne));
        (ns, ne)
    }
    /// Removes everything below `x`.
    pub fn trim_below(&mut self, x: u64) {
        let i = self.v.partition_point(|r| r.1 <= x);
        self.v.drain(..i);
        if let Some(f) = self.v.front_mut() {
            if f.0 < x {
                f.0 = x;
            }
        }
    }
    /// If a range starts at `x`, removes and returns its end.
    pub fn pop_at(&mut self, x: u64) -> Option<u64> {
        match self.v.front() {
            Some(&(s, e)) if s <= x => {
                self.v.pop_front();
                Some(e)
            }
            _ => None,
        }
    }
    pub fn contains(&self, x: u64) -> bool {
        let i = self.v.partition_point(|r| r.1 <= x);
        i < self.v.len() && self.v[i].0 <= x
    }
    /// End of the range containing `x`, if any.
    #[inline]
    pub fn end_of(&self, x: u64) -> Option<u64> {
        // Empty on nearly every call (the sender's scoreboard outside recovery).
        if self.v.is_empty() {
            return None;
        }
        let i = self.v.partition_point(|r| r.1 <= x);
        (i < self.v.len() && self.v[i].0 <= x).then(|| self.v[i].1)
    }
    pub fn bytes(&self) -> u64 {
        self.v.iter().map(|r| r.1 - r.0).sum()
    }
    pub fn bytes_above(&self, x: u64) -> u64 {
        self.v.iter().map(|&(s, e)| e.saturating_sub(s.max(x))).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    pub fn clear(&mut self) {
        self.v.clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn insert_merges() {
        let mut r = Ranges::default();
        r.insert(10, 20);
        r.insert(30, 40);
        r.insert(50, 60);
        assert_eq!(r.insert(15, 35), (10, 40));
        assert_eq!(r.v, vec![(10, 40), (50, 60)]);
        r.insert(40, 50);
        assert_eq!(r.v, vec![(10, 60)]);
        r.trim_below(25);
        assert_eq!(r.v, vec![(25, 60)]);
        assert!(r.contains(25) && !r.contains(60));
        assert_eq!(r.bytes_above(50), 10);
    }
    #[test]
    fn descending_inserts_are_linear_overall() {
        let mut r = Ranges::default();
        let n = 400_000u64;
        for k in (0..n).rev() {
            r.insert(10 * k, 10 * k + 5);
        }
        assert_eq!(r.v.len(), n as usize);
        assert!(r.v.iter().zip(r.v.iter().skip(1)).all(|(a, b)| a.1 < b.0), "sorted and disjoint");
        assert_eq!(r.insert(3, 12), (0, 15));
        assert_eq!(r.v.len(), n as usize - 1);
    }
}
