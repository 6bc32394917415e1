//! One vocabulary of trace events for every layer, stored column by column.
//!
//! | layer | events |
//! |---|---|
//! | `tcp` | `send`, `retransmit` (any segment sent again: data, SYN or FIN), `recv`, variable changes `cwnd`, `ssthresh`, `srtt`, `rttvar`, `rto` (value column), and sender events `timeout`, `fast_retransmit` (value = running count) |
//! | `link` | `frame_send`, `frame_retransmit`, `frame_lost` (channel), `frame_recv`, `ack_send`, `nack_send`, `status_send` (RLC Status PDU), `idle_send` (IS-707 idle frame), `packet_deliver` |
//! | `queue` | `enqueue`, `drop` (value = queue length after the event) |
//! | `channel` | `state` (value 1 = entered the bad state, 0 = the good one; two-state model; logged lazily as frames are sent, stamped with the exact transition time) |
//! | `proxy` | split-TCP proxy decisions at the gateway: `queue_len` (a connection's unsent bytes), `adv_window` (window advertised to its wired sender), `pick` (scheduler sent seq/len; value = priority class), `loss_counter` (value = the segment's counter), `retransmit` (value = transmissions), `timeout` (value = consecutive timeouts), `stall` (1 = link stalled, 0 = recovered), `cwnd` (the aggregate's usable window), `rtt` (an RTT sample over the wireless leg, ns) |
//!
//! Columns: `time_ns`, `layer`, `event`, `node`, `dir`, `flow` (−1 if none), `seq`,
//! `ack`, `len`, `value`. Codes are small integers here; the Python layer turns them
//! into categorical strings using [`LAYERS`], [`EVENTS`], [`NODES`], [`DIRS`].
pub mod pcap;

pub const LAYERS: &[&str] = &["tcp", "link", "queue", "channel", "proxy"];
pub const EVENTS: &[&str] = &[
    "send",
    "retransmit",
    "recv",
    "cwnd",
    "ssthresh",
    "srtt",
    "rttvar",
    "rto",
    "frame_send",
    "frame_retransmit",
    "frame_lost",
    "frame_recv",
    "ack_send",
    "nack_send",
    "packet_deliver",
    "enqueue",
    "drop",
    "state",
    "status_send",
    "timeout",
    "fast_retransmit",
    "idle_send",
    "reset",
    "queue_len",
    "adv_window",
    "pick",
    "loss_counter",
    "stall",
    "rtt",
];
pub const NODES: &[&str] = &["server", "gateway", "mobile"];
pub const DIRS: &[&str] = &["down", "up", "-"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Layer {
    Tcp = 0,
    Link = 1,
    Queue = 2,
    Channel = 3,
    Proxy = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Ev {
    Send = 0,
    Retransmit,
    Recv,
    Cwnd,
    Ssthresh,
    Srtt,
    Rttvar,
    Rto,
    FrameSend,
    FrameRetransmit,
    FrameLost,
    FrameRecv,
    AckSend,
    NackSend,
    PacketDeliver,
    Enqueue,
    Drop,
    State,
    StatusSend,
    Timeout,
    FastRetransmit,
    IdleSend,
    Reset,
    QueueLen,
    AdvWindow,
    Pick,
    LossCounter,
    Stall,
    Rtt,
}

/// Which layers to record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerMask(pub u8);
impl LayerMask {
    pub fn has(self, l: Layer) -> bool {
        self.0 & (1 << l as u8) != 0
    }
    pub fn from_names(names: &[String]) -> LayerMask {
        let mut m = 0;
        for n in names {
            if let Some(i) = LAYERS.iter().position(|l| l == n) {
                m |= 1 << i;
            }
        }
        LayerMask(m)
    }
}

#[derive(Default, Debug, Clone)]
pub struct TraceTable {
    pub time_ns: Vec<i64>,
    pub layer: Vec<u8>,
    pub event: Vec<u8>,
    pub node: Vec<u8>,
    pub dir: Vec<u8>,
    pub flow: Vec<i32>,
    pub seq: Vec<i64>,
    pub ack: Vec<i64>,
    pub len: Vec<i64>,
    pub value: Vec<i64>,
}

/// One trace row.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub t: i64,
    pub layer: Layer,
    pub ev: Ev,
    pub node: u8,
    pub dir: u8,
    pub flow: i32,
    pub seq: i64,
    pub ack: i64,
    pub len: i64,
    pub value: i64,
}

impl TraceTable {
    pub fn push(&mut self, r: Row) {
        self.time_ns.push(r.t);
        self.layer.push(r.layer as u8);
        self.event.push(r.ev as u8);
        self.node.push(r.node);
        self.dir.push(r.dir);
        self.flow.push(r.flow);
        self.seq.push(r.seq);
        self.ack.push(r.ack);
        self.len.push(r.len);
        self.value.push(r.value);
    }
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

/// Node codes (index into [`NODES`]).
pub const NODE_SERVER: u8 = 0;
pub const NODE_GATEWAY: u8 = 1;
pub const NODE_MOBILE: u8 = 2;

/// The node at the sending end of wireless direction `dir` (0 = down: the gateway).
pub fn wireless_sender(dir: u8) -> u8 {
    if dir == 0 {
        NODE_GATEWAY
    } else {
        NODE_MOBILE
    }
}

/// The rows of one wireless-link event.
pub fn link_rows(ev: &crate::link::wireless::LinkEvent, mut push: impl FnMut(Row)) {
    use crate::link::wireless::{FrameEvent, LinkEvent};
    let flow = |f: Option<u16>| f.map_or(-1, |f| f as i32);
    let ack = |a: Option<u32>| a.map_or(-1, |a| a as i64);
    match *ev {
        LinkEvent::Enqueue { at, dir, flow, len, qlen, dropped } => push(Row {
            t: at.nanos(),
            layer: Layer::Queue,
            ev: if dropped { Ev::Drop } else { Ev::Enqueue },
            node: wireless_sender(dir),
            dir,
            flow: flow as i32,
            seq: -1,
            ack: -1,
            len: len as i64,
            value: qlen as i64,
        }),
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
        LinkEvent::Deliver { at, dir, flow, len, delay } => push(Row {
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
