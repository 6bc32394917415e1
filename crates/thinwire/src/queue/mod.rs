//! Interface queues. `DropTail`: FIFO limited in packets or bytes; an arriving
//! packet that does not fit is dropped. Default limit (scenario): 50 packets, the
//! BSD interface default.
pub mod wired;

use crate::wire::Packet;
use std::collections::VecDeque;

/// A queue limit in packets or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

pub struct DropTail {
    q: VecDeque<Packet>,
    bytes: u64,
    limit: Limit,
    pub drops: u64,
    pub max_len: usize,
}

impl DropTail {
    pub fn new(limit: Limit) -> DropTail {
        DropTail { q: VecDeque::new(), bytes: 0, limit, drops: 0, max_len: 0 }
    }
    /// Enqueues; false if the packet did not fit and was dropped.
    pub fn push(&mut self, p: Packet) -> bool {
        let fits = match self.limit {
            Limit::Packets(n) => self.q.len() < n as usize,
            Limit::Bytes(b) => self.bytes + p.size() as u64 <= b,
        };
        if !fits {
            self.drops += 1;
            return false;
        }
        self.bytes += p.size() as u64;
        self.q.push_back(p);
        self.max_len = self.max_len.max(self.q.len());
        true
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size() as u64;
        Some(p)
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;
    use crate::wire::{UdpRepr, L4};
    fn p(n: u32) -> Packet {
        Packet::new([1; 4], [2; 4], 0, L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }), n, 0, Instant::ZERO)
    }
    #[test]
    fn packet_limit() {
        let mut q = DropTail::new(Limit::Packets(2));
        assert!(q.push(p(10)) && q.push(p(10)));
        assert!(!q.push(p(10)));
        assert_eq!(q.drops, 1);
        q.pop();
        assert!(q.push(p(10)));
    }
    #[test]
    fn byte_limit() {
        let mut q = DropTail::new(Limit::Bytes(100));
        assert!(q.push(p(50 - 28)));
        assert!(!q.push(p(51 - 28)));
        assert!(q.push(p(50 - 28)));
    }
}
