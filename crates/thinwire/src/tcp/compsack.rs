//! Linux's compressed SACKs (`tcp.comp_sack_nr`, on in the `linux` profile), as
//! Linux 6.x: `net/ipv4/tcp_input.c` (`__tcp_ack_snd_check`,
//! `tcp_sack_new_ofo_skb`, `tcp_sack_compress_send_ack`, `tcp_sack_remove`,
//! `tcp_sack_extend`, `tcp_sack_maybe_coalesce`), `tcp_timer.c`
//! (`tcp_compressed_ack_kick`) and `tcp_output.c` (`tcp_event_ack_sent`).
//!
//! An out-of-order segment that Linux's receiver would acknowledge at once (not
//! in quick-ACK mode: those go at once) is acknowledged at once only for the
//! first three such ACKs with the same `rcv_nxt` (`dup_ack_counter` up to
//! `TCP_FASTRETRANS_THRESH`, so the sender's duplicate-ACK count still reaches
//! three); after that the ACK is held (`compressed_ack`) and a timer set,
//! min(`comp_sack_delay`, RTT / 20) with the RTT the smaller of the receiver's
//! estimate (`rcv_rtt_est`) and its SRTT. The timer's expiry sends one ACK for
//! all held; so does any ACK this end sends meanwhile, and the 44th held ACK
//! (`comp_sack_nr`) goes at once. Before an out-of-order segment adds a SACK
//! block beyond the first two of the receiver's list (most recent first) or
//! extends one there, the held ACK goes out first, reporting the blocks as they
//! were (`TCP_SACK_BLOCKS_EXPECTED` = 2): the sender must not miss blocks that
//! a later ACK no longer has room for; that ACK clears the request the segment
//! made (`ICSK_ACK_SCHED`), so the segment itself waits for the next ACK
//! (`tcp_ack_snd_check` returns at once). Each ACK held and never sent counts in
//! `acks_compressed` (Linux `TCPAckCompressed`, which counts the same way: an
//! expiry or a flush counts all held but the one it sends).
//!
//! The list of blocks kept here is Linux's `selective_acks` (four at most),
//! used only to know where a block falls; the blocks the ACKs carry are the
//! endpoint's. Not modelled: the hrtimer's 100 µs slack
//! (`tcp_comp_sack_slack_ns`; the timer fires at its expiry), a socket owned by
//! the application when the timer fires (the kernel then defers it to the
//! delayed-ACK timer).
//!
//! Parameters: `comp_sack_nr` (Linux default 44; 0 turns this off, the default
//! outside the `linux` profile), `comp_sack_delay` (1 ms, `tcp_comp_sack_delay_ns`).
use crate::time::{Duration, Instant};

/// Linux `TCP_FASTRETRANS_THRESH`, `TCP_NUM_SACKS`, `TCP_SACK_BLOCKS_EXPECTED`.
const DUPTHRESH: u32 = 3;
const NUM_SACKS: usize = 4;
const BLOCKS_EXPECTED: usize = 2;

#[derive(Clone, Debug)]
pub struct CompSack {
    nr: u32,
    delay: Duration,
    /// `compressed_ack`: ACKs held.
    held: u32,
    /// `dup_ack_counter` and the `rcv_nxt` it counts for (`compressed_ack_rcv_nxt`).
    dupacks: u32,
    at: u64,
    /// The compressed-ACK timer runs (the endpoint keeps its deadline in the
    /// delayed-ACK timer's place: the two never run at once, since an ACK
    /// is held only after three sent for the same `rcv_nxt`, and in-order data
    /// meanwhile is acknowledged at once).
    armed: bool,
    /// `selective_acks[..num_sacks]`, most recent first.
    blocks: [(u64, u64); NUM_SACKS],
    num: usize,
}

/// What an out-of-order segment's ACK does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfoAck {
    /// Goes now.
    Now,
    /// Held for the timer, which is to be set for this instant if given.
    Held(Option<Instant>),
}

impl CompSack {
    pub fn new(nr: u32, delay: Duration) -> CompSack {
        CompSack { nr, delay, held: 0, dupacks: 0, at: 0, armed: false, blocks: [(0, 0); NUM_SACKS], num: 0 }
    }

    /// ACKs held now.
    pub fn held(&self) -> u32 {
        self.held
    }

    /// An out-of-order segment `[s, e)` is about to be queued (`first`: the
    /// out-of-order queue was empty): the receiver's block list takes it
    /// (`tcp_sack_new_ofo_skb`). True if the held ACK must go first
    /// (`tcp_sack_compress_send_ack`; then call [`flushed`](Self::flushed)).
    pub fn on_ofo(&mut self, s: u64, e: u64, first: bool) -> bool {
        if first || self.num == 0 {
            self.blocks[0] = (s, e);
            self.num = 1;
            return false;
        }
        for i in 0..self.num {
            if extend(&mut self.blocks[i], s, e) {
                self.blocks[..=i].rotate_right(1);
                if self.num > 1 {
                    self.coalesce();
                }
                return i >= BLOCKS_EXPECTED && self.held > 0;
            }
        }
        let flush = self.num >= BLOCKS_EXPECTED && self.held > 0;
        if self.num >= NUM_SACKS {
            self.num -= 1;
        }
        self.blocks[..=self.num].rotate_right(1);
        self.blocks[0] = (s, e);
        self.num += 1;
        flush
    }

    /// `tcp_sack_maybe_coalesce`: the first block absorbs the others it now
    /// touches.
    fn coalesce(&mut self) {
        let mut i = 1;
        while i < self.num {
            let (s, e) = self.blocks[i];
            if extend(&mut self.blocks[0], s, e) {
                self.blocks.copy_within(i + 1..self.num, i);
                self.num -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// In-order data advanced `rcv_nxt` (`tcp_sack_remove`): blocks now
    /// covered go; all of them when nothing is left out of order.
    pub fn on_in_order(&mut self, rcv_nxt: u64, ofo_empty: bool) {
        if ofo_empty {
            self.num = 0;
            return;
        }
        let mut i = 0;
        while i < self.num {
            if rcv_nxt >= self.blocks[i].0 {
                self.blocks.copy_within(i + 1..self.num, i);
                self.num -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// The tail of `__tcp_ack_snd_check` for an ACK an out-of-order segment
    /// asks for (not in quick-ACK mode): at `now`, `rcv_nxt`, with the
    /// receiver's RTT estimate and SRTT (µs × 8, 0: none; the kernel's units).
    pub fn on_ofo_ack(&mut self, now: Instant, rcv_nxt: u64, rcv_rtt_us8: u64, srtt_us8: u64) -> OfoAck {
        if self.held >= self.nr {
            return OfoAck::Now;
        }
        if self.at != rcv_nxt {
            self.at = rcv_nxt;
            self.dupacks = 0;
        }
        if self.dupacks < DUPTHRESH {
            self.dupacks += 1;
            return OfoAck::Now;
        }
        self.held += 1;
        if self.armed {
            return OfoAck::Held(None);
        }
        self.armed = true;
        let mut rtt = rcv_rtt_us8;
        if srtt_us8 != 0 && srtt_us8 < rtt {
            rtt = srtt_us8;
        }
        // rtt × (NSEC_PER_USEC >> 3) / 20: 5 % of the RTT, in ns.
        let d = Duration((rtt * 125 / 20) as i64).min(self.delay);
        OfoAck::Held(Some(now + d))
    }

    /// Whether the compressed-ACK timer runs.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// The timer fired: true if an ACK is to go (one of those held is sent,
    /// the rest count as compressed when it does).
    pub fn on_timer(&mut self) -> bool {
        self.armed = false;
        if self.held > 0 {
            self.held -= 1;
            return true;
        }
        false
    }

    /// A flush (`tcp_sack_compress_send_ack`) is sending one of the held ACKs.
    pub fn flushed(&mut self) {
        self.held = self.held.saturating_sub(1);
    }

    /// An ACK went out (`tcp_event_ack_sent`): what was held is compressed
    /// into it, and the timer stops. Returns the ACKs compressed.
    #[inline]
    pub fn ack_sent(&mut self) -> u32 {
        self.armed = false;
        std::mem::take(&mut self.held)
    }
}

/// `tcp_sack_extend`: `[s, e)` overlaps or touches the block, which grows to
/// cover it.
fn extend(b: &mut (u64, u64), s: u64, e: u64) -> bool {
    if s <= b.1 && b.0 <= e {
        b.0 = b.0.min(s);
        b.1 = b.1.max(e);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration(1_000_000);

    /// The first three ACKs for one rcv_nxt go; the fourth is held with a
    /// timer of min(1 ms, RTT/20); a new rcv_nxt starts the count again.
    #[test]
    fn three_go_then_held_with_a_timer_of_a_twentieth_of_the_rtt() {
        let mut c = CompSack::new(44, MS);
        let t = Instant::ZERO;
        for _ in 0..3 {
            assert_eq!(c.on_ofo_ack(t, 100, 8 * 10_000, 0), OfoAck::Now);
        }
        // RTT 10 ms (µs × 8): 0.5 ms.
        assert_eq!(c.on_ofo_ack(t, 100, 8 * 10_000, 0), OfoAck::Held(Some(t + Duration(500_000))));
        assert_eq!(c.on_ofo_ack(t, 100, 8 * 10_000, 0), OfoAck::Held(None), "the timer runs");
        assert_eq!(c.held(), 2);
        assert!(c.on_timer());
        assert_eq!(c.ack_sent(), 1, "one sent, one compressed");
        assert_eq!(c.on_ofo_ack(t, 200, 8 * 10_000, 0), OfoAck::Now, "a new rcv_nxt");
        // A long RTT: 1 ms at most; the SRTT counts when smaller.
        let mut c = CompSack::new(44, MS);
        for _ in 0..3 {
            c.on_ofo_ack(t, 1, 8 * 100_000, 0);
        }
        assert_eq!(c.on_ofo_ack(t, 1, 8 * 100_000, 8 * 4_000), OfoAck::Held(Some(t + Duration(200_000))));
    }

    /// At `comp_sack_nr` held, the next ACK goes at once.
    #[test]
    fn the_limit_sends_at_once() {
        let mut c = CompSack::new(2, MS);
        let t = Instant::ZERO;
        let kinds: Vec<_> = (0..6).map(|_| c.on_ofo_ack(t, 1, 8_000, 0) == OfoAck::Now).collect();
        assert_eq!(kinds, [true, true, true, false, false, true]);
    }

    /// A block beyond the first two of the list flushes what is held: a new
    /// block with two already there, or an extension of the third.
    #[test]
    fn a_third_block_flushes() {
        let mut c = CompSack::new(44, MS);
        assert!(!c.on_ofo(10, 20, true));
        c.held = 1;
        assert!(!c.on_ofo(30, 40, false), "a second block");
        assert!(!c.on_ofo(20, 25, false), "extends the second, which moves to the front");
        assert_eq!(&c.blocks[..c.num], &[(10, 25), (30, 40)]);
        assert!(c.on_ofo(50, 60, false), "a third block");
        assert_eq!(&c.blocks[..c.num], &[(50, 60), (10, 25), (30, 40)]);
        assert!(c.on_ofo(40, 45, false), "extends the third, [30,40)");
        assert_eq!(&c.blocks[..c.num], &[(30, 45), (50, 60), (10, 25)]);
        // Filling [45, 50) joins the first two.
        c.held = 0;
        assert!(!c.on_ofo(45, 50, false));
        assert_eq!(&c.blocks[..c.num], &[(30, 60), (10, 25)]);
        // In-order data to 25 removes the block it covers.
        c.on_in_order(25, false);
        assert_eq!(&c.blocks[..c.num], &[(30, 60)]);
        // At most four blocks: the oldest goes.
        for k in 0..5 {
            c.on_ofo(100 + 20 * k, 110 + 20 * k, false);
        }
        assert_eq!(c.num, 4);
        assert_eq!(c.blocks[0], (180, 190));
        assert_eq!(c.blocks[3], (120, 130));
    }
}
