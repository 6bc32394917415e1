//! The trace recorder: machines' events in, rows of the chosen layers out. The
//! simulator, the emulator and the proxy daemon all record through it, so their
//! traces have the same rows for the same happenings (MultiTracer reads them all).
//!
//! Nodes: the server, the gateway (the wireless link's network end, and the proxy)
//! and the mobile host. Directions: 0 = down (toward the mobile), 1 = up.
use super::{Ev, Layer, LayerMask, Row, TraceTable, NODE_GATEWAY, NODE_MOBILE, NODE_SERVER};
use crate::link::wireless::{FrameEvent, LinkEvent};
use crate::queue::{DropReason, Verdict};
use crate::tcp::{TcpVar, VarEvent};
use crate::time::{Duration, Instant};

/// Where rows go: a table in memory, or a writer that streams them out.
pub trait Sink {
    fn push(&mut self, r: Row);
}

impl Sink for TraceTable {
    fn push(&mut self, r: Row) {
        TraceTable::push(self, r)
    }
}

/// A TCP segment seen at an end host (sent, sent again, or received).
#[derive(Clone, Copy, Debug)]
pub struct SegEvent {
    pub at: Instant,
    pub kind: SegKind,
    /// The host: true = the mobile, false = the server.
    pub mobile: bool,
    /// Direction the segment travels: 0 = down, 1 = up.
    pub dir: u8,
    pub flow: i32,
    /// Sequence number relative to the sender's ISN.
    pub seq: i64,
    /// Acknowledgement relative to the receiver's ISN, if the ACK flag is set.
    pub ack: Option<i64>,
    pub len: u32,
    pub flags: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Send,
    Retransmit,
    Recv,
}

/// Turns events into rows of the layers in `mask`.
pub struct Recorder<S: Sink = TraceTable> {
    pub mask: LayerMask,
    pub sink: S,
}

/// Takes every pending event of the wireless link into the mm-link logs (if any)
/// and the rows of the layers `rec` keeps: the one drain of the simulator and the
/// emulator.
pub fn drain_link<S: Sink, W: std::io::Write>(
    link: &mut crate::link::wireless::WirelessLink,
    rec: &mut Recorder<S>,
    mut mm: Option<&mut super::mahimahi::MmLogs<W>>,
) {
    while let Some(e) = link.poll_event() {
        if let Some(m) = mm.as_deref_mut() {
            m.link(&e);
        }
        rec.link(&e);
    }
}

impl<S: Sink> Recorder<S> {
    pub fn new(mask: LayerMask, sink: S) -> Self {
        Recorder { mask, sink }
    }
    /// Whether rows of layer `l` are kept (callers skip building events otherwise).
    #[inline]
    pub fn wants(&self, l: Layer) -> bool {
        self.mask.has(l)
    }

    /// A TCP segment at an end host.
    pub fn segment(&mut self, e: &SegEvent) {
        if !self.wants(Layer::Tcp) {
            return;
        }
        let ev = match e.kind {
            SegKind::Send => Ev::Send,
            SegKind::Retransmit => Ev::Retransmit,
            SegKind::Recv => Ev::Recv,
        };
        self.sink.push(Row {
            t: e.at.nanos(),
            layer: Layer::Tcp,
            ev,
            node: if e.mobile { NODE_MOBILE } else { NODE_SERVER },
            dir: e.dir,
            flow: e.flow,
            seq: e.seq,
            ack: e.ack.unwrap_or(-1),
            len: e.len as i64,
            value: e.flags as i64,
        });
    }

    /// A TCP sender's variable change or event, at the host that sends in `dir`.
    pub fn tcp_var(&mut self, mobile: bool, dir: u8, flow: i32, v: &VarEvent) {
        if !self.wants(Layer::Tcp) {
            return;
        }
        let ev = match v.var {
            TcpVar::Cwnd => Ev::Cwnd,
            TcpVar::Ssthresh => Ev::Ssthresh,
            TcpVar::Srtt => Ev::Srtt,
            TcpVar::Rttvar => Ev::Rttvar,
            TcpVar::Rto => Ev::Rto,
            TcpVar::Timeout => Ev::Timeout,
            TcpVar::FastRetransmit => Ev::FastRetransmit,
            TcpVar::EcnReduction => Ev::EcnReduction,
            TcpVar::LossProbe => Ev::LossProbe,
            TcpVar::Undo => Ev::Undo,
            TcpVar::HystartExit => Ev::HystartExit,
            TcpVar::PacingRate => Ev::PacingRate,
        };
        self.sink.push(Row {
            t: v.at.nanos(),
            layer: Layer::Tcp,
            ev,
            node: if mobile { NODE_MOBILE } else { NODE_SERVER },
            dir,
            flow,
            seq: -1,
            ack: -1,
            len: 0,
            value: v.value.min(i64::MAX / 2),
        });
    }

    /// A packet offered to the wired link's queue in direction `dir` (sent by the
    /// server when down, by the gateway when up); `qlen` after the event.
    pub fn wired_queue(&mut self, at: Instant, dir: u8, flow: i32, len: u32, qlen: u64, verdict: Verdict) {
        if !self.wants(Layer::Queue) {
            return;
        }
        let node = if dir == 0 { NODE_SERVER } else { NODE_GATEWAY };
        queue_rows(at, node, dir, flow, len, qlen as u32, verdict, |r| self.sink.push(r));
    }

    /// A packet the wired link's discipline dropped or marked after queueing it
    /// (`reason` None: a mark).
    pub fn wired_aqm(&mut self, at: Instant, dir: u8, flow: i32, len: u32, qlen: u64, reason: Option<DropReason>) {
        if !self.wants(Layer::Queue) {
            return;
        }
        let node = if dir == 0 { NODE_SERVER } else { NODE_GATEWAY };
        self.sink.push(aqm_row(at, node, dir, flow, len, qlen as u32, reason));
    }

    /// A packet left the wired link's queue in direction `dir` after `sojourn`.
    pub fn wired_dequeue(&mut self, at: Instant, dir: u8, flow: i32, len: u32, sojourn: Duration) {
        if !self.wants(Layer::Sojourn) {
            return;
        }
        let node = if dir == 0 { NODE_SERVER } else { NODE_GATEWAY };
        self.sink.push(dequeue_row(at, node, dir, flow, len, sojourn));
    }

    /// A decision of the split-TCP proxy at the gateway.
    pub fn proxy(&mut self, e: &crate::proxy::Event) {
        use crate::proxy::EventKind;
        if !self.wants(Layer::Proxy) {
            return;
        }
        let ev = match e.kind {
            EventKind::Queue => Ev::QueueLen,
            EventKind::Window => Ev::AdvWindow,
            EventKind::Pick => Ev::Pick,
            EventKind::Counter => Ev::LossCounter,
            EventKind::Retransmit => Ev::Retransmit,
            EventKind::Timeout => Ev::Timeout,
            EventKind::Stall => Ev::Stall,
            EventKind::Cwnd => Ev::Cwnd,
            EventKind::Rtt => Ev::Rtt,
        };
        self.sink.push(Row {
            t: e.at.nanos(),
            layer: Layer::Proxy,
            ev,
            node: NODE_GATEWAY,
            dir: 0,
            flow: e.flow,
            seq: e.seq,
            ack: -1,
            len: e.len,
            value: e.value,
        });
    }

    /// An event of the wireless link (its layer: link, queue or channel).
    pub fn link(&mut self, ev: &LinkEvent) {
        let layer = match ev {
            LinkEvent::Enqueue { .. } | LinkEvent::FrameQueueDrop { .. } | LinkEvent::QueueAqm { .. } => Layer::Queue,
            LinkEvent::Dequeue { .. } => Layer::Sojourn,
            LinkEvent::Channel { .. } => Layer::Channel,
            _ => Layer::Link,
        };
        if !self.wants(layer) {
            return;
        }
        link_rows(ev, |r| self.sink.push(r));
    }
}

/// The node at the sending end of wireless direction `dir` (0 = down: the gateway).
pub fn wireless_sender(dir: u8) -> u8 {
    if dir == 0 {
        NODE_GATEWAY
    } else {
        NODE_MOBILE
    }
}

/// A queue row: a packet (`flow`, `len`) at a queue at `node` (one of the
/// queue layers' events), with `value`.
#[allow(clippy::too_many_arguments)]
fn queue_row(at: Instant, layer: Layer, ev: Ev, node: u8, dir: u8, flow: i32, len: u32, value: i64) -> Row {
    Row { t: at.nanos(), layer, ev, node, dir, flow, seq: -1, ack: -1, len: len as i64, value }
}

/// The rows of a packet offered to a queue: `enqueue`, `drop` (full),
/// `aqm_drop`, or `enqueue` then `mark`; value = the queue's length after it.
#[allow(clippy::too_many_arguments)]
fn queue_rows(at: Instant, node: u8, dir: u8, flow: i32, len: u32, qlen: u32, v: Verdict, mut push: impl FnMut(Row)) {
    let row = |ev| queue_row(at, Layer::Queue, ev, node, dir, flow, len, qlen as i64);
    match v {
        Verdict::Queued => push(row(Ev::Enqueue)),
        Verdict::Marked => {
            push(row(Ev::Enqueue));
            push(row(Ev::Mark));
        }
        Verdict::Dropped(DropReason::Overflow) => push(row(Ev::Drop)),
        Verdict::Dropped(DropReason::Aqm) => push(row(Ev::AqmDrop)),
    }
}

/// A drop or mark after queueing (`reason` None: a mark).
fn aqm_row(at: Instant, node: u8, dir: u8, flow: i32, len: u32, qlen: u32, reason: Option<DropReason>) -> Row {
    let ev = match reason {
        None => Ev::Mark,
        Some(DropReason::Overflow) => Ev::Drop,
        Some(DropReason::Aqm) => Ev::AqmDrop,
    };
    queue_row(at, Layer::Queue, ev, node, dir, flow, len, qlen as i64)
}

fn dequeue_row(at: Instant, node: u8, dir: u8, flow: i32, len: u32, sojourn: Duration) -> Row {
    queue_row(at, Layer::Sojourn, Ev::Dequeue, node, dir, flow, len, sojourn.nanos())
}

/// The rows of one wireless-link event.
fn link_rows(ev: &LinkEvent, mut push: impl FnMut(Row)) {
    let flow = |f: Option<u16>| f.map_or(-1, |f| f as i32);
    let ack = |a: Option<u32>| a.map_or(-1, |a| a as i64);
    match *ev {
        LinkEvent::Enqueue { at, dir, flow, len, qlen, verdict } => {
            queue_rows(at, wireless_sender(dir), dir, flow as i32, len, qlen, verdict, push)
        }
        LinkEvent::QueueAqm { at, dir, flow, len, qlen, reason } => {
            push(aqm_row(at, wireless_sender(dir), dir, flow as i32, len, qlen, reason))
        }
        LinkEvent::Dequeue { at, dir, flow, len, sojourn } => {
            push(dequeue_row(at, wireless_sender(dir), dir, flow as i32, len, sojourn))
        }
        LinkEvent::FrameQueueDrop { at, dir, flow: f, seq, len, limit } => push(Row {
            t: at.nanos(),
            layer: Layer::Queue,
            ev: Ev::Drop,
            node: wireless_sender(dir),
            dir,
            flow: flow(f),
            seq: seq as i64,
            ack: -1,
            len: len as i64,
            value: limit as i64,
        }),
        LinkEvent::Frame { at, dir, kind, flow: f, seq, ack: a, len, tx, lost } => {
            let ev = match kind {
                FrameEvent::Send => Ev::FrameSend,
                FrameEvent::Retransmit => Ev::FrameRetransmit,
                FrameEvent::Ack => Ev::AckSend,
                FrameEvent::Nack => Ev::NackSend,
                FrameEvent::Status => Ev::StatusSend,
                FrameEvent::Idle => Ev::IdleSend,
                FrameEvent::Reset => Ev::Reset,
            };
            let row = Row {
                t: at.nanos(),
                layer: Layer::Link,
                ev,
                node: wireless_sender(dir),
                dir,
                flow: flow(f),
                seq: seq as i64,
                ack: ack(a),
                len: len as i64,
                value: tx as i64,
            };
            push(row);
            if lost {
                push(Row { ev: Ev::FrameLost, ..row });
            }
        }
        LinkEvent::FrameRecv { at, dir, flow: f, seq, ack: a, len, tx } => push(Row {
            t: at.nanos(),
            layer: Layer::Link,
            ev: Ev::FrameRecv,
            node: wireless_sender(1 - dir),
            dir,
            flow: flow(f),
            seq: seq as i64,
            ack: ack(a),
            len: len as i64,
            value: tx as i64,
        }),
        LinkEvent::Deliver { at, dir, flow, len, delay, .. } => push(Row {
            t: at.nanos(),
            layer: Layer::Link,
            ev: Ev::PacketDeliver,
            node: wireless_sender(1 - dir),
            dir,
            flow: flow as i32,
            seq: -1,
            ack: -1,
            len: len as i64,
            value: delay.nanos(),
        }),
        LinkEvent::Poll { at, dir, seq, vt_a, vt_s } => push(Row {
            t: at.nanos(),
            layer: Layer::Link,
            ev: Ev::Poll,
            node: wireless_sender(dir),
            dir,
            flow: -1,
            seq: seq as i64,
            ack: vt_a as i64,
            len: 0,
            value: vt_s as i64,
        }),
        LinkEvent::StatusReport { at, dir, ack: a, first_missing, missing, mrw } => push(Row {
            t: at.nanos(),
            layer: Layer::Link,
            ev: Ev::StatusReport,
            node: wireless_sender(dir),
            dir,
            flow: -1,
            seq: first_missing.map_or(-1, |s| s as i64),
            ack: ack(a),
            len: missing as i64,
            value: mrw.map_or(-1, |m| m as i64),
        }),
        LinkEvent::Channel { at, dir, bad } => push(Row {
            t: at.nanos(),
            layer: Layer::Channel,
            ev: Ev::State,
            node: wireless_sender(dir),
            dir,
            flow: -1,
            seq: -1,
            ack: -1,
            len: 0,
            value: bad as i64,
        }),
    }
}
