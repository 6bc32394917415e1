//! Link-layer frames exchanged by the ARQ machines over the wireless link.
//!
//! Frames carry fragments of IP packets. A packet is cut into fragments of at most
//! the configured frame payload; fragments are not padded and a frame never carries
//! pieces of two packets. The last fragment carries the packet itself (the
//! simulator's stand-in for the bytes), so reassembly hands on exactly what was sent.
use crate::wire::Packet;
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    Data,
    Ack,
    Nack,
    Status,
    Idle,
    Reset,
}

/// Contents of an RLC Status PDU (3GPP TS 25.322 §9.2.1.6): an ACK SUFI with a
/// BITMAP SUFI, and/or the MRW and MRW_ACK SUFIs of the SDU discard procedure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub report: Option<Report>,
    /// MRW SUFI: the receiver shall move its window to this sequence number.
    pub mrw: Option<u32>,
    /// MRW_ACK SUFI: the receiver's new window start.
    pub mrw_ack: Option<u32>,
}

/// ACK + BITMAP super-fields: every PDU below `ack` was received; of those in
/// `ack..end` all but `missing` were received; nothing is said about `end` and above.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub ack: u32,
    pub end: u32,
    pub missing: Vec<u32>,
}

/// A link-layer frame: a header common to every protocol and a per-protocol body.
/// Frames own or share (`Arc`) what they carry, so they can cross threads.
#[derive(Clone, Debug)]
pub struct Frame {
    pub kind: FrameKind,
    /// Data: the frame's sequence number. Nack: the missing frame's number.
    pub seq: u32,
    /// Cumulative acknowledgement (next frame expected), on Ack frames and
    /// piggybacked on Data frames of a reliable link.
    pub ack: Option<u32>,
    /// Payload bytes on the air (0 for control frames).
    pub payload: u16,
    /// Transmission number of this data frame: 1 for the original (metadata for
    /// traces; of it the wire carries only SR's retransmission bit, `tx > 1`).
    pub tx: u16,
    /// Flow of the packet this frame's bytes belong to (trace metadata).
    pub flow: u16,
    /// Link-layer session on a shared link (0 = ARQ, 1 = bypass); set by the
    /// multiplexer, demultiplexed by the receiver.
    pub session: u8,
    /// SR/ASR NACK serial number (seed 002 §IV multireject, see `sr.rs`): on a NACK
    /// frame its serial, on a data frame the serial of the latest NACK the sender
    /// had acted on when it sent the frame; 0 = none. Part of the 4-byte header.
    pub nsn: u32,
    /// Protocol control bits: [`CTL_POLL`] (the RLC AMD poll bit; HDLC's P bit),
    /// [`CTL_FINAL`], [`CTL_BUSY`], [`CTL_DISC`].
    pub ctl: u8,
    pub body: Body,
}

/// What a frame carries besides its header.
#[derive(Clone, Debug, Default)]
pub enum Body {
    /// Control frames (ACK, NACK, idle, reset): nothing.
    #[default]
    None,
    /// A fragment of an IP packet (raw, SR/ASR, RLC AMD PDUs, IS-707, GPRS). The
    /// last fragment carries the packet itself (the bytes of the whole packet, real
    /// or virtual), shared between the sender's retransmission buffer and the copies
    /// on the air, so reassembly hands on exactly what was sent.
    Fragment { first: bool, last: bool, packet: Option<Arc<Packet>> },
    /// The super-fields of an RLC Status PDU.
    Status(Box<Status>),
    /// User bytes of a byte-stream frame (GSM RLP).
    Stream(Arc<Chunk>),
}

/// HDLC poll bit of a command (GSM RLP: checkpoint enquiry).
pub const CTL_POLL: u8 = 1;
/// HDLC final bit of a response to a poll.
pub const CTL_FINAL: u8 = 2;
/// Receiver not ready (RNR instead of RR): the sender must stop sending new data.
pub const CTL_BUSY: u8 = 4;
/// On a [`FrameKind::Reset`] frame: DISC (disconnect) rather than SABM (poll) or UA (final).
pub const CTL_DISC: u8 = 8;

/// Where an upper-layer frame ends in a byte stream, with the packet's metadata and
/// whether it carried real bytes (so the receiver rebuilds a real packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub meta: crate::wire::Meta,
    pub real: bool,
}

/// User bytes of one byte-stream frame; `marks` holds (offset of an upper-layer
/// frame's last byte, its metadata), so a receiver can label what it reassembles;
/// `flow` is the flow of the packet its first byte belongs to (trace metadata).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub marks: Vec<(u16, Mark)>,
    pub flow: u16,
}

impl Frame {
    pub fn control(kind: FrameKind, seq: u32, ack: Option<u32>) -> Frame {
        Frame { kind, seq, ack, payload: 0, tx: 1, flow: u16::MAX, session: 0, nsn: 0, ctl: 0, body: Body::None }
    }
    /// The first fragment of a packet.
    pub fn first(&self) -> bool {
        matches!(self.body, Body::Fragment { first: true, .. })
    }
    /// The last fragment of a packet.
    pub fn last(&self) -> bool {
        matches!(self.body, Body::Fragment { last: true, .. })
    }
    /// The packet a last fragment carries.
    pub fn packet(&self) -> Option<&Packet> {
        match &self.body {
            Body::Fragment { packet: Some(p), .. } => Some(p),
            _ => None,
        }
    }
    /// An RLC Status PDU's super-fields.
    pub fn status(&self) -> Option<&Status> {
        match &self.body {
            Body::Status(s) => Some(s),
            _ => None,
        }
    }
    /// A byte-stream frame's user bytes.
    pub fn chunk(&self) -> Option<&Chunk> {
        match &self.body {
            Body::Stream(c) => Some(c),
            _ => None,
        }
    }
    /// The RLC poll bit.
    pub fn poll(&self) -> bool {
        self.ctl & CTL_POLL != 0
    }
    pub fn set_poll(&mut self, on: bool) {
        self.ctl = if on { self.ctl | CTL_POLL } else { self.ctl & !CTL_POLL };
    }
    /// Bytes on the air given the link-layer header size.
    pub fn size(&self, header: u32) -> u32 {
        header + self.payload as u32
    }
}

/// Bytes of a byte stream waiting to go on (RLP's unframed input, an L2R buffer),
/// with the marks of upper-layer frames that end among them.
#[derive(Default)]
pub struct ByteQueue {
    bytes: VecDeque<u8>,
    marks: VecDeque<(u64, Mark)>,
    base: u64,
}

impl ByteQueue {
    pub fn push(&mut self, bytes: &[u8], marks: impl IntoIterator<Item = (usize, Mark)>) {
        let start = self.base + self.bytes.len() as u64;
        self.marks.extend(marks.into_iter().map(|(o, m)| (start + o as u64, m)));
        self.bytes.extend(bytes);
    }
    /// Takes up to `n` bytes with the marks among them (offsets relative to the taken bytes).
    pub fn take(&mut self, n: usize) -> (Vec<u8>, Vec<(usize, Mark)>) {
        let n = n.min(self.bytes.len());
        let b: Vec<u8> = self.bytes.drain(..n).collect();
        let end = self.base + n as u64;
        let mut marks = vec![];
        while let Some(&(at, m)) = self.marks.front() {
            if at >= end {
                break;
            }
            marks.push(((at - self.base) as usize, m));
            self.marks.pop_front();
        }
        self.base = end;
        (b, marks)
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    /// The mark of the upper-layer frame the next byte belongs to (it ends at the next mark).
    pub fn next_mark(&self) -> Option<Mark> {
        self.marks.front().map(|m| m.1)
    }
    pub fn clear(&mut self) {
        self.base += self.bytes.len() as u64;
        self.bytes.clear();
        self.marks.clear();
    }
}

/// Cuts a packet into fragments of at most `max_payload` bytes.
pub fn fragment(pkt: Packet, max_payload: u32, push: impl FnMut(Frame)) {
    fragment_into(pkt, max_payload, &mut Spare::default(), push)
}

/// The shared packets of frames a sender no longer needs, kept for its next
/// packets: a sender with a retransmission window (SR, ASR, RLC) drops the
/// packets of a whole acknowledged window at once, more frees in a row than
/// glibc's per-thread cache keeps, and the allocations after them took malloc's
/// slow path (6.5 % of a shared-link study run: bench/RESULTS.md, 2026-11-29
/// fourth session). Only allocations no frame on the air still shares are kept,
/// at most [`Spare::CAP`], and a real packet's bytes are let go at once.
/// Allocation only: no effect on results.
#[derive(Default)]
pub struct Spare(Vec<Arc<Packet>>);

impl Spare {
    /// A full SR window.
    pub const CAP: usize = 128;

    /// Keeps the allocation of the packet `f` carries, if nothing else shares it.
    pub fn keep(&mut self, f: Frame) {
        if let Body::Fragment { packet: Some(mut p), .. } = f.body {
            if self.0.len() < Self::CAP {
                if let Some(inner) = Arc::get_mut(&mut p) {
                    inner.bytes = None;
                    self.0.push(p);
                }
            }
        }
    }

    /// `pkt` shared, in a kept allocation when there is one (kept ones are
    /// unshared: nothing can clone them while they are here).
    fn share(&mut self, pkt: Packet) -> Arc<Packet> {
        if let Some(mut a) = self.0.pop() {
            if let Some(inner) = Arc::get_mut(&mut a) {
                *inner = pkt;
                return a;
            }
        }
        Arc::new(pkt)
    }
}

/// [`fragment`], the packet shared in an allocation from `spare` if it has one.
pub fn fragment_into(pkt: Packet, max_payload: u32, spare: &mut Spare, mut push: impl FnMut(Frame)) {
    let mut frags = Fragments::default();
    frags.start_into(pkt, max_payload, spare);
    while let Some(f) = frags.next_frame() {
        push(f);
    }
}

/// The fragments of one packet handed out one at a time ([`fragment`] pushes
/// them all at once through this): a sender that takes one packet at a time
/// (raw, SR/ASR) builds the next frame when it is polled instead of queueing
/// them all. Queueing a frame built a moment before read it back with wide
/// loads across its narrow field stores
/// (a stalled store forward: a third of `Raw::send`'s samples on
/// `bulk-10mbps-raw`, bench/RESULTS.md 2026-11-29 fifth session). Same frames,
/// same order: no effect on results.
#[derive(Default)]
pub struct Fragments {
    pkt: Option<Arc<Packet>>,
    size: u32,
    max_payload: u32,
    /// Bytes of the packet already handed out.
    done: u32,
    flow: u16,
}

impl Fragments {
    /// Starts on `pkt`. Whatever was left of the previous one is dropped: a
    /// sender using this takes a packet only when this is empty (its
    /// `wants_packet`), as the link's callers do.
    pub fn start(&mut self, pkt: Packet, max_payload: u32) {
        self.start_into(pkt, max_payload, &mut Spare::default())
    }

    /// [`start`](Self::start), the packet shared in an allocation from `spare`
    /// if it has one (as [`fragment_into`]).
    pub fn start_into(&mut self, pkt: Packet, max_payload: u32, spare: &mut Spare) {
        self.size = pkt.size();
        self.flow = pkt.meta.flow;
        self.max_payload = max_payload;
        self.done = 0;
        self.pkt = Some(spare.share(pkt));
    }

    /// Whether every fragment has been handed out.
    pub fn is_empty(&self) -> bool {
        self.pkt.is_none()
    }

    /// The next fragment (sequence number 0, for the sender to set).
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.pkt.as_ref()?;
        let first = self.done == 0;
        let left = self.size - self.done;
        // A zero-length packet is one empty fragment, as `fragment` makes it.
        let last = left <= self.max_payload;
        let len = if last { left } else { self.max_payload };
        self.done += len;
        let packet = if last { self.pkt.take() } else { None };
        Some(Frame {
            kind: FrameKind::Data,
            seq: 0,
            ack: None,
            payload: len as u16,
            tx: 1,
            flow: self.flow,
            session: 0,
            nsn: 0,
            ctl: 0,
            body: Body::Fragment { first, last, packet },
        })
    }
}

/// The packet itself, copied only if another copy of the frame is still around.
#[inline]
pub fn unshare(p: Arc<Packet>) -> Packet {
    // Usually the sender still holds the packet for retransmission: copy without
    // trying to take it.
    if Arc::strong_count(&p) > 1 {
        return (*p).clone();
    }
    Arc::try_unwrap(p).unwrap_or_else(|p| (*p).clone())
}

/// Asks the processor to bring the packet a frame carries into its cache, so that
/// a frame about to arrive does not stall on a packet queued long ago (with
/// thousands of frames in flight, `unshare`'s first touch of the packet was a
/// quarter of the run: bench/RESULTS.md). A hint only: no effect on results.
#[inline]
pub fn prefetch(f: &Frame) {
    #[cfg(target_arch = "x86_64")]
    if let Body::Fragment { packet: Some(p), .. } = &f.body {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let at = Arc::as_ptr(p) as *const i8;
        // SAFETY: a prefetch never faults and reads nothing the program sees; `at`
        // points into a live allocation (the Arc's counts precede it).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(at.wrapping_sub(16));
            _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(48));
        }
    }
}

/// Rebuilds packets from data frames received in sequence-number order; a gap
/// (a missing sequence number) discards the packet it falls in.
#[derive(Default)]
pub struct Reassembler {
    next_seq: Option<u32>,
    intact: bool,
    pub(crate) discarded: u64,
}

impl Reassembler {
    pub fn push(&mut self, f: Frame) -> Option<Packet> {
        let contiguous = self.next_seq == Some(f.seq);
        self.next_seq = Some(f.seq.wrapping_add(1));
        if f.first() {
            self.intact = true;
        } else if !contiguous {
            if self.intact {
                self.discarded += 1;
            }
            self.intact = false;
        }
        if let Body::Fragment { last: true, packet, .. } = f.body {
            let ok = self.intact;
            self.intact = false;
            if ok {
                return packet.map(unshare);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;
    use crate::wire::{UdpRepr, L4};
    fn pkt(len: u32) -> Packet {
        Packet::new([1; 4], [2; 4], 1, L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }), len, 0, Instant::ZERO)
    }
    #[test]
    fn fragment_sizes() {
        let mut v = vec![];
        fragment(pkt(1000 - 28), 250, |f| v.push(f));
        assert_eq!(v.iter().map(|f| f.payload).collect::<Vec<_>>(), vec![250, 250, 250, 250]);
        let mut v = vec![];
        fragment(pkt(600 - 28), 250, |f| v.push(f));
        assert_eq!(v.iter().map(|f| f.payload).collect::<Vec<_>>(), vec![250, 250, 100]);
        assert!(v[0].first() && !v[0].last() && v[2].last());
        assert!(matches!(v[2].body, Body::Fragment { packet: Some(_), .. }));
    }
    #[test]
    fn fragments_cut_a_packet_into_full_frames_and_a_remainder() {
        let mut cur = Fragments::default();
        assert!(cur.is_empty() && cur.next_frame().is_none());
        for (size, max) in [(1000, 250), (600, 250), (250, 250), (251, 250), (28, 250), (1500, 1), (40, 39), (28, 28)] {
            cur.start(pkt(size - 28), max);
            let mut v = vec![];
            while let Some(f) = cur.next_frame() {
                v.push(f);
            }
            assert!(cur.is_empty());
            let n = size.div_ceil(max) as usize;
            assert_eq!(v.len(), n, "{size} bytes in frames of {max}");
            for (i, f) in v.iter().enumerate() {
                let want = if i + 1 < n { max } else { size - max * (n as u32 - 1) };
                assert_eq!((f.payload as u32, f.first(), f.last()), (want, i == 0, i + 1 == n), "{size}/{max} #{i}");
                assert_eq!(f.packet().map(|p| p.size()), (i + 1 == n).then_some(size), "{size}/{max} #{i}");
                assert_eq!((f.kind, f.seq, f.tx), (FrameKind::Data, 0, 1));
            }
            // `fragment` hands out the same frames.
            let mut all = vec![];
            fragment(pkt(size - 28), max, |f| all.push((f.payload, f.first(), f.last())));
            assert_eq!(all, v.iter().map(|f| (f.payload, f.first(), f.last())).collect::<Vec<_>>());
        }
    }
    #[test]
    fn spare_reuses_only_unshared_allocations() {
        let mut spare = Spare::default();
        let mut v = vec![];
        fragment_into(pkt(100), 250, &mut spare, |f| v.push(f));
        let first = match &v[0].body {
            Body::Fragment { packet: Some(p), .. } => Arc::as_ptr(p),
            _ => unreachable!(),
        };
        // A copy still on the air: not kept.
        let on_air = v[0].clone();
        spare.keep(v.pop().unwrap());
        assert!(spare.0.is_empty());
        // The last holder: kept, with a real packet's bytes let go.
        let mut f = on_air;
        if let Body::Fragment { packet: Some(p), .. } = &mut f.body {
            Arc::get_mut(p).unwrap().bytes = Some(Arc::new(vec![0u8; 128]));
        }
        spare.keep(f);
        assert_eq!(spare.0.len(), 1);
        assert!(spare.0[0].bytes.is_none());
        // The next packet lands in the kept allocation, whole and unchanged.
        let mut w = vec![];
        let mut next = pkt(300);
        next.meta.flow = 7;
        fragment_into(next.clone(), 250, &mut spare, |f| w.push(f));
        assert!(spare.0.is_empty());
        assert_eq!(w.len(), 2);
        match &w[1].body {
            Body::Fragment { packet: Some(p), last: true, .. } => {
                assert_eq!(Arc::as_ptr(p), first);
                assert_eq!(**p, next);
            }
            _ => panic!("the last fragment carries the packet"),
        }
        // Never more than CAP kept.
        for _ in 0..Spare::CAP + 5 {
            let mut u = vec![];
            fragment(pkt(10), 250, |f| u.push(f));
            spare.keep(u.pop().unwrap());
        }
        assert_eq!(spare.0.len(), Spare::CAP);
    }
    #[test]
    fn reassembly_drops_packets_with_gaps() {
        let mut frames = vec![];
        for len in [600u32, 600, 600] {
            fragment(pkt(len - 28), 250, |f| frames.push(f));
        }
        for (i, f) in frames.iter_mut().enumerate() {
            f.seq = i as u32;
        }
        let mut r = Reassembler::default();
        // Lose frame 4 (middle of the second packet).
        let out: Vec<Packet> = frames.into_iter().filter(|f| f.seq != 4).filter_map(|f| r.push(f)).collect();
        assert_eq!(out.len(), 2);
        assert_eq!(r.discarded, 1);
    }
}
