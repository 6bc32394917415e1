//! What the wireless link reports: its trace events (frames, queues, channel
//! states) and which of them it records.
use super::*;

/// What a trace records of a frame handed to the radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameEvent {
    Send,
    Retransmit,
    Ack,
    Nack,
    Status,
    Idle,
    Reset,
}

/// Trace events, in the order they happen. `dir` is the direction of travel;
/// `flow` is `None` for frames that carry no packet's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// A packet offered to direction `dir`'s IP queue: queued, marked CE or
    /// dropped; `qlen` is the session queue's length after the event.
    Enqueue { at: Instant, dir: u8, flow: u16, len: u32, qlen: u32, verdict: Verdict },
    /// A packet the IP queue's discipline dropped or marked after it was queued
    /// (CoDel at dequeue, FQ-CoDel's drops from the fattest flow): `reason` None
    /// for a mark.
    QueueAqm { at: Instant, dir: u8, flow: u16, len: u32, qlen: u32, reason: Option<DropReason> },
    /// A packet left direction `dir`'s IP queue for the link layer after
    /// `sojourn` (trace layer `sojourn`).
    Dequeue { at: Instant, dir: u8, flow: u16, len: u32, sojourn: Duration },
    /// A frame lost at the full shared frame queue.
    FrameQueueDrop { at: Instant, dir: u8, flow: Option<u16>, seq: u32, len: u32, limit: u32 },
    /// A frame handed to the radio (`lost`: the channel destroys it).
    Frame {
        at: Instant,
        dir: u8,
        kind: FrameEvent,
        flow: Option<u16>,
        seq: u32,
        ack: Option<u32>,
        len: u32,
        tx: u16,
        lost: bool,
    },
    /// A frame received at the far end.
    FrameRecv { at: Instant, dir: u8, flow: Option<u16>, seq: u32, ack: Option<u32>, len: u32, tx: u16 },
    /// A packet leaves the far end of direction `dir`, `delay` after it was born;
    /// it entered the link's IP queue at `queued`.
    Deliver { at: Instant, dir: u8, flow: u16, len: u32, delay: Duration, queued: Instant },
    /// The two-state channel of `dir` changed state at `at` (logged as frames are sent).
    Channel { at: Instant, dir: u8, bad: bool },
    /// An RLC AMD PDU sent with the poll bit, and the sender's window then:
    /// VT(A) (oldest unacknowledged) and VT(S) (next new sequence number).
    Poll { at: Instant, dir: u8, seq: u32, vt_a: u32, vt_s: u32 },
    /// The contents of an RLC STATUS PDU sent in direction `dir`: the ACK SUFI
    /// (VR(R)), the first missing PDU and how many the BITMAP reports missing, and
    /// an MRW (or MRW_ACK) SUFI's sequence number.
    StatusReport { at: Instant, dir: u8, ack: Option<u32>, first_missing: Option<u32>, missing: u32, mrw: Option<u32> },
}

/// Which trace events to produce (each costs time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkTrace {
    pub link: bool,
    pub queue: bool,
    /// Every packet's departure from an IP queue, with its sojourn time.
    pub sojourn: bool,
    pub channel: bool,
}
