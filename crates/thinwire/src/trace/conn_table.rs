//! One row per TCP conversation, accumulated segment by segment while a run is
//! traced (the emulator's `flows.parquet`): the same figures as
//! `thinwire.emulate.connection_table` computes from a finished trace's `tcp`
//! rows, in memory that grows with the conversations and their unacknowledged
//! segments, not with the run's length.
//!
//! Per conversation, both directions are kept, and the one that carried more
//! data bytes (sends and retransmissions; a tie goes to `down`) is reported:
//! - `bytes_delivered`: the highest in-order end of data received in it, minus
//!   one (the SYN's sequence number);
//! - `start_s` / goodput: from the conversation's first segment to its last data
//!   segment received in that direction;
//! - `tcp_retransmits`: data segments sent again in it; `packets_sent`: segments
//!   its sender sent (first sends and retransmissions);
//! - `tcp_syn_retransmits` / `tcp_fin_retransmits`: SYNs and SYN-ACKs, and FINs
//!   without data, sent again by either end;
//! - `rtt_avg_s`: Karn's rule at the sender's own interface — every data segment
//!   sent once, from its sending to the first ACK that covers it arriving after
//!   it; a segment retransmitted before that ACK gives no sample.
use crate::trace::recorder::SegKind;
use std::collections::VecDeque;

/// One direction of a conversation.
#[derive(Clone, Debug, Default)]
struct Half {
    bytes_sent: u64,
    packets_sent: u64,
    retransmits: u64,
    /// Highest end (relative sequence number + length) of data received.
    delivered_end: Option<u64>,
    last_recv_ns: Option<i64>,
    /// First sends of data awaiting their covering ACK: (end, seq, time sent,
    /// retransmitted since), in sending order (ends increase).
    pending: VecDeque<(u64, u64, i64, bool)>,
    /// Highest ACK seen by this direction's sender.
    acked: Option<u64>,
    rtt_sum_ns: i128,
    rtt_n: u64,
}

#[derive(Clone, Debug, Default)]
struct Conv {
    first_ns: i64,
    /// Index 0 = down, 1 = up.
    half: [Half; 2],
    syn_retransmits: u64,
    fin_retransmits: u64,
}

/// A conversation's row (`thinwire.emulate.connection_table`'s columns).
#[derive(Clone, Debug, PartialEq)]
pub struct ConnRow {
    pub id: u16,
    /// 0 = down (data toward the mobile), 1 = up.
    pub dir: u8,
    pub start_s: f64,
    pub bytes_delivered: u64,
    pub throughput_bps: f64,
    pub tcp_retransmits: u64,
    pub tcp_syn_retransmits: u64,
    pub tcp_fin_retransmits: u64,
    pub rtt_avg_s: Option<f64>,
    pub packets_sent: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ConnTable {
    convs: Vec<Conv>,
}

/// One TCP segment at an end host, as the path's trace records it.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub at_ns: i64,
    pub kind: SegKind,
    /// The direction its data goes (0 = down), whoever records it.
    pub dir: u8,
    pub flow: u16,
    /// Relative sequence number, and its ACK (relative to the other direction).
    pub seq: u64,
    pub ack: Option<u64>,
    pub len: u32,
    pub flags: u8,
}

impl ConnTable {
    pub fn segment(&mut self, s: &Seg) {
        let f = s.flow as usize;
        while self.convs.len() <= f {
            self.convs.push(Conv { first_ns: s.at_ns, ..Conv::default() });
        }
        let c = &mut self.convs[f];
        let d = s.dir as usize;
        match s.kind {
            SegKind::Send | SegKind::Retransmit => {
                let h = &mut c.half[d];
                h.bytes_sent += s.len as u64;
                h.packets_sent += 1;
                let again = s.kind == SegKind::Retransmit;
                if again && s.len > 0 {
                    h.retransmits += 1;
                    // Karn: that segment's first sending gives no sample.
                    if let Ok(i) = h.pending.binary_search_by_key(&s.seq, |p| p.1) {
                        h.pending[i].3 = true;
                    }
                }
                if again && s.len == 0 {
                    if s.flags & 0x02 != 0 {
                        c.syn_retransmits += 1;
                    } else if s.flags & 0x03 == 0x01 {
                        c.fin_retransmits += 1;
                    }
                }
                if !again && s.len > 0 {
                    h.pending.push_back((s.seq + s.len as u64, s.seq, s.at_ns, false));
                }
            }
            SegKind::Recv => {
                if s.len > 0 {
                    let h = &mut c.half[d];
                    let end = s.seq + s.len as u64;
                    h.delivered_end = Some(h.delivered_end.map_or(end, |e| e.max(end)));
                    h.last_recv_ns = Some(s.at_ns);
                }
                // An ACK reaching the sender of the other direction.
                if let Some(a) = s.ack {
                    let h = &mut c.half[1 - d];
                    let hi = h.acked.map_or(a, |x| x.max(a));
                    h.acked = Some(hi);
                    while let Some(&(end, _, sent, again)) = h.pending.front() {
                        if end > hi || sent >= s.at_ns {
                            break;
                        }
                        h.pending.pop_front();
                        if !again {
                            h.rtt_sum_ns += (s.at_ns - sent) as i128;
                            h.rtt_n += 1;
                        }
                    }
                }
            }
        }
    }

    /// The rows, by conversation number.
    pub fn rows(&self) -> Vec<ConnRow> {
        self.convs
            .iter()
            .enumerate()
            .map(|(id, c)| {
                let d = if c.half[0].bytes_sent >= c.half[1].bytes_sent { 0 } else { 1 };
                let h = &c.half[d];
                let delivered = h.delivered_end.map_or(0, |e| e.saturating_sub(1));
                let span = h.last_recv_ns.map_or(0, |t| t - c.first_ns) as f64 / 1e9;
                ConnRow {
                    id: id as u16,
                    dir: d as u8,
                    start_s: c.first_ns as f64 / 1e9,
                    bytes_delivered: delivered,
                    throughput_bps: if span > 0.0 { delivered as f64 * 8.0 / span } else { 0.0 },
                    tcp_retransmits: h.retransmits,
                    tcp_syn_retransmits: c.syn_retransmits,
                    tcp_fin_retransmits: c.fin_retransmits,
                    rtt_avg_s: (h.rtt_n > 0).then(|| h.rtt_sum_ns as f64 / h.rtt_n as f64 / 1e9),
                    packets_sent: h.packets_sent,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(t: i64, kind: SegKind, dir: u8, seq: u64, ack: Option<u64>, len: u32) -> Seg {
        Seg { at_ns: t, kind, dir, flow: 0, seq, ack, len, flags: 0x10 }
    }

    #[test]
    fn karn_samples_and_the_busier_direction() {
        let mut t = ConnTable::default();
        // Down: two segments sent at 0 and 10; the first retransmitted at 50,
        // then both acknowledged at 100 (one sample: 100 - 10).
        t.segment(&seg(0, SegKind::Send, 0, 1, None, 100));
        t.segment(&seg(10, SegKind::Send, 0, 101, None, 100));
        t.segment(&seg(50, SegKind::Retransmit, 0, 1, None, 100));
        t.segment(&seg(60, SegKind::Recv, 0, 1, None, 100));
        t.segment(&seg(70, SegKind::Recv, 0, 101, None, 100));
        t.segment(&seg(100, SegKind::Recv, 1, 1, Some(201), 0));
        // A later first send, its ACK at the same instant: no sample until after.
        t.segment(&seg(200, SegKind::Send, 0, 201, None, 50));
        t.segment(&seg(200, SegKind::Recv, 1, 1, Some(251), 0));
        t.segment(&seg(230, SegKind::Recv, 1, 1, Some(251), 0));
        let r = &t.rows()[0];
        assert_eq!(r.dir, 0);
        assert_eq!(r.tcp_retransmits, 1);
        assert_eq!(r.packets_sent, 4);
        assert_eq!(r.bytes_delivered, 200);
        // Samples 90 and 30 ns.
        assert_eq!(r.rtt_avg_s, Some(60e-9));
    }
}
