//! Byte buffers for a TCP stream driven by real data (the emulator's and the proxy
//! daemon's endpoints). The simulator's endpoints count bytes and hold none; an
//! endpoint with these buffers keeps what it must be able to send again and what
//! it has received out of order, addressed by 64-bit stream offsets (offset 0 is
//! the first data byte).
//!
//! - [`SendBuf`]: bytes the application wrote, from the oldest not yet
//!   acknowledged; `read` copies any range still held (first sends and
//!   retransmissions alike); `release` drops what the peer acknowledged.
//! - [`RecvBuf`]: segments that arrived beyond a hole wait in a reassembly map;
//!   once the stream is contiguous up to an offset, `advance` moves those bytes to
//!   the queue the application reads.
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug, Default)]
pub struct SendBuf {
    /// Stream offset of `data[0]`.
    base: u64,
    data: VecDeque<u8>,
}

impl SendBuf {
    /// Appends application bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.data.extend(bytes);
    }
    /// Offset one past the last byte written.
    pub fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }
    /// Bytes held (written and not yet acknowledged).
    pub fn len(&self) -> usize {
        self.data.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// Copies `[off, off + len)`; panics if that range is not held (a caller bug:
    /// acknowledged bytes are never sent again).
    pub fn read(&self, off: u64, len: usize) -> Vec<u8> {
        assert!(off >= self.base && off + len as u64 <= self.end(), "bytes {off}+{len} not held");
        let i = (off - self.base) as usize;
        let (a, b) = self.data.as_slices();
        let mut out = Vec::with_capacity(len);
        if i < a.len() {
            let n = len.min(a.len() - i);
            out.extend_from_slice(&a[i..i + n]);
            out.extend_from_slice(&b[..len - n]);
        } else {
            out.extend_from_slice(&b[i - a.len()..i - a.len() + len]);
        }
        out
    }
    /// Drops every byte below `off` (acknowledged).
    pub fn release(&mut self, off: u64) {
        let n = off.saturating_sub(self.base).min(self.data.len() as u64);
        self.data.drain(..n as usize);
        self.base += n;
    }
}

#[derive(Clone, Debug, Default)]
pub struct RecvBuf {
    /// Stream offset of the next byte to hand to the application queue.
    next: u64,
    /// Out-of-order segments by offset (may overlap; trimmed when used).
    ooo: BTreeMap<u64, Vec<u8>>,
    /// In-order bytes the application has not read yet.
    ready: VecDeque<u8>,
}

impl RecvBuf {
    /// Keeps the bytes of a segment starting at stream offset `off`.
    pub fn insert(&mut self, off: u64, bytes: &[u8]) {
        let end = off + bytes.len() as u64;
        if end <= self.next || bytes.is_empty() {
            return;
        }
        let skip = self.next.saturating_sub(off) as usize;
        let off = off.max(self.next);
        let keep = &bytes[skip..];
        match self.ooo.get(&off) {
            Some(v) if v.len() >= keep.len() => {}
            _ => {
                self.ooo.insert(off, keep.to_vec());
            }
        }
    }
    /// The stream is complete up to `upto` (exclusive): moves those bytes to the
    /// application queue.
    pub fn advance(&mut self, upto: u64) {
        while self.next < upto {
            let Some((&off, _)) = self.ooo.first_key_value() else { break };
            if off > self.next {
                break; // cannot happen when the caller's bookkeeping is right
            }
            let v = self.ooo.remove(&off).expect("first key");
            let end = off + v.len() as u64;
            if end > self.next {
                let from = (self.next - off) as usize;
                let to = (upto.min(end) - off) as usize;
                self.ready.extend(&v[from..to]);
                if (to as u64) < v.len() as u64 {
                    self.ooo.insert(off + to as u64, v[to..].to_vec());
                }
                self.next = off + to as u64;
            }
        }
        // Drop stale pieces wholly below the new edge.
        while let Some((&off, v)) = self.ooo.first_key_value() {
            if off + v.len() as u64 <= self.next {
                self.ooo.remove(&off);
            } else {
                break;
            }
        }
    }
    /// In-order bytes not yet read.
    pub fn unread(&self) -> usize {
        self.ready.len()
    }
    /// Bytes held beyond holes.
    pub fn out_of_order(&self) -> usize {
        self.ooo.values().map(Vec::len).sum()
    }
    /// Copies up to `max` in-order bytes without taking them.
    pub fn peek(&self, max: usize) -> Vec<u8> {
        self.ready.iter().take(max).copied().collect()
    }
    /// Drops `n` in-order bytes (after a successful [`peek`](Self::peek)).
    pub fn consume(&mut self, n: usize) {
        self.ready.drain(..n.min(self.ready.len()));
    }
    /// Takes up to `max` in-order bytes.
    pub fn read(&mut self, max: usize) -> Vec<u8> {
        let n = max.min(self.ready.len());
        self.ready.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn send_buffer_reads_across_the_ring_and_releases() {
        let mut b = SendBuf::default();
        b.push(&(0..100).collect::<Vec<u8>>());
        b.release(60);
        b.push(&(100..150).collect::<Vec<u8>>());
        assert_eq!((b.len(), b.end()), (90, 150));
        assert_eq!(b.read(95, 10), (95..105).collect::<Vec<u8>>());
        assert_eq!(b.read(60, 1), vec![60]);
        b.release(150);
        assert!(b.is_empty());
    }
    #[test]
    fn receive_buffer_reassembles_out_of_order_and_overlapping_segments() {
        let data: Vec<u8> = (0..=255).cycle().take(1000).collect();
        let mut r = RecvBuf::default();
        r.insert(300, &data[300..500]);
        r.insert(0, &data[0..200]);
        r.advance(200);
        assert_eq!((r.unread(), r.out_of_order()), (200, 200));
        r.insert(150, &data[150..350]); // overlaps both sides
        r.advance(500);
        r.insert(400, &data[400..600]); // partly old
        r.advance(600);
        assert_eq!(r.read(2000), data[..600].to_vec());
        assert_eq!(r.out_of_order(), 0);
    }
}
