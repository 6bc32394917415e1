//! What a wireless link tells its driver and its trace: the answer to an offer,
//! the timers it asks for, the trace events (frames, queue verdicts, sojourn
//! times, deliveries, channel transitions) with the switches that enable them,
//! and the per-direction counters reported in results (`LinkStats`). The trace
//! schema is docs/analysis.md's.
use crate::queue::{DropReason, Verdict};
use crate::time::{Duration, Instant};

/// What became of an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Queued,
    /// The session's IP queue dropped it (full, or the AQM's decision).
    QueueFull,
}

/// A wake-up the link asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkTimer {
    /// The radio of direction `.0` finished a frame.
    RadioDone(u8),
    /// The oldest frame in flight in direction `.0` reaches the far end.
    FrameArrive(u8),
    /// The ARQ machine of end `.0` (0 = gateway, 1 = mobile) has a timer due.
    Arq(u8),
    /// The same for the session of mobile `.1` (>= 1) of a shared cell (a byte:
    /// the timer stays two bytes, as the simulator's events).
    ArqOf(u8, u8),
}

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

crate::described! {
    /// One direction's counters (0 = down, 1 = up), as reported in results.
    #[derive(Default, Clone, Debug, PartialEq)]
    pub struct LinkStats {
        /// Frames handed to the radio.
        pub frames_sent: u64 => (metric, "count", "frames", ""),
        /// Frames the channel destroyed.
        pub frames_lost: u64 => (metric, "count", "lost", ""),
        /// Frame loss ratio: lost / sent.
        pub flr: f64 => (metric, "ratio", "FLR|%", ""),
        /// Data frames sent again.
        pub frames_retransmitted: u64 => (metric, "count", "rexmit", ""),
        pub nack_frames: u64 => (metric, "count", "NACKs", ""),
        pub ack_frames: u64 => (info, "count", "ACKs", ""),
        /// RLC Status PDUs.
        pub status_frames: u64 => (metric, "count", "STATUS", ""),
        /// SDUs the link layer gave up (RLC SDU discard), or frames (IS-707 after its NAK rounds).
        pub sdu_discards: u64 => (metric, "count", "discard", ""),
        /// Retransmission timer expiries (SR/ASR), poll timer expiries (RLC), polls (GSM RLP).
        pub arq_timeouts: u64 => (metric, "count", "ARQ RTOs", ""),
        /// Packets dropped at the IP queue: full, or the AQM's decision.
        pub queue_drops: u64 => (metric, "count", "q drops", ""),
        /// Of those, the AQM's drops (RED, PIE, CoDel; `[wireless] queue`).
        pub queue_aqm_drops: u64 => (info, "count", "", ""),
        /// Packets the IP queue marked Congestion Experienced (ECN) instead.
        pub queue_marks: u64 => (info, "count", "", ""),
        /// Longest IP queue seen (packets).
        pub queue_max: u64 => (info, "count", "q max", ""),
        /// Frames dropped at a full shared frame queue (`mux = "shared-queue"`).
        pub frame_queue_drops: u64 => (info, "count", "fq drops", ""),
        /// Share of the run the radio was sending.
        pub utilization: f64 => (metric, "ratio", "busy|%", ""),
        pub data_frames_sent: u64 => (info, "count", "", ""),
        /// IS-707 idle frames.
        pub idle_frames: u64 => (info, "count", "", ""),
        /// GSM RLP link-reset frames (SABM, UA, DISC) sent.
        pub reset_frames: u64 => (info, "count", "", ""),
        /// GSM RLP: resets started by this direction's sender (N2 exceeded).
        pub link_resets: u64 => (info, "count", "", ""),
        /// GSM RLP: this direction's user bytes thrown away by resets (sender's window
        /// and receiver's out-of-sequence buffer).
        pub flushed_bytes: u64 => (info, "bytes", "", ""),
        /// GSM RLP: the call was dropped (`on_n2 = "drop-call"`, or SABM unanswered).
        pub call_dropped: bool => (info, "bool", "", ""),
        /// PPP frames of this direction discarded by the receiver's deframer (bad FCS).
        pub ppp_damaged: u64 => (info, "count", "", ""),
        /// VJ-compressed packets tossed by the decompressor after a reported error.
        pub vj_tossed: u64 => (info, "count", "", ""),
        /// Packets whose rebuilt bytes failed the IP/TCP checksum at the receiver (VJ
        /// decompression against a stale base).
        pub checksum_drops: u64 => (info, "count", "", ""),
        /// Times the network side's L2R buffer turned this direction's RLP to "not ready".
        pub l2r_busy: u64 => (info, "count", "", ""),
        /// GPRS: temporary block flows set up (first packet after idle) in this direction.
        pub tbf_setups: u64 => (info, "count", "", ""),
        /// GPRS: outages seen by this direction's sender.
        pub outages: u64 => (info, "count", "", ""),
        /// Bytes on the air (frames with headers).
        pub bytes_sent: u64 => (info, "bytes", "", ""),
        /// Airtime used, ns (for `utilization`).
        #[serde(skip)]
        pub busy_ns: i64 => (hidden, "ns", "", ""),
        /// The radio link's rate in bit/s (so analyses can turn frame sizes into airtime).
        pub rate_bps: u64 => (info, "bit/s", "", ""),
    }
}
