//! One vocabulary of trace events for every layer, stored column by column.
//!
//! | layer | events |
//! |---|---|
//! | `tcp` | `send`, `retransmit` (any segment sent again: data, SYN or FIN), `recv`, variable changes `cwnd`, `ssthresh`, `srtt`, `rttvar`, `rto` (value column), and sender events `timeout`, `fast_retransmit`, `ecn_reduction` (an ECE answered, RFC 3168), `loss_probe` (RACK-TLP), `undo` (a needless reduction undone), `hystart_exit` (value = running count), `pacing_rate` (bytes/s; BBR) |
//! | `link` | `frame_send`, `frame_retransmit`, `frame_lost` (channel), `frame_recv`, `ack_send`, `nack_send`, `status_send` (RLC Status PDU), `idle_send` (IS-707 idle frame), `packet_deliver` |
//! | `queue` | `enqueue`, `drop` (at a full queue), `aqm_drop` (the discipline's decision: RED's or PIE's at arrival, CoDel's at departure), `mark` (CE instead of a drop, RFC 3168) (value = queue length after the event) |
//! | `sojourn` | `dequeue`: a packet leaves a queue for the transmitter (value = its sojourn time, ns) |
//! | `channel` | `state` (value 1 = entered the bad state, 0 = the good one; two-state model; logged lazily as frames are sent, stamped with the exact transition time) |
//! | `proxy` | split-TCP proxy decisions at the gateway: `queue_len` (a connection's unsent bytes), `adv_window` (window advertised to its wired sender), `pick` (scheduler sent seq/len; value = priority class), `loss_counter` (value = the segment's counter), `retransmit` (value = transmissions), `timeout` (value = consecutive timeouts), `stall` (1 = link stalled, 0 = recovered), `cwnd` (the aggregate's usable window), `rtt` (an RTT sample over the wireless leg, ns) |
//!
//! Columns: `time_ns`, `layer`, `event`, `node`, `dir`, `flow`, `seq`, `ack`,
//! `len`, `value`; `flow`, `seq` and `ack` are −1 here where they do not apply
//! (null in the Python tables and `trace.parquet`). Codes are small integers here; the Python layer turns them
//! into categorical strings using [`LAYERS`], [`EVENTS`], [`NODES`], [`DIRS`].
//!
//! Machines produce typed events (`link::wireless::LinkEvent`, `tcp::VarEvent`,
//! `proxy::Event`, segments a driver saw); [`Recorder`] (recorder.rs) is the one
//! place that turns them into rows, for the layers asked for, into a [`Sink`].
pub mod mahimahi;
pub mod parquet;
pub mod recorder;
pub mod rows;

pub use recorder::{Recorder, SegEvent, Sink};

pub const LAYERS: &[&str] = &["tcp", "link", "queue", "channel", "proxy", "sojourn"];
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
    "ecn_reduction",
    "loss_probe",
    "undo",
    "hystart_exit",
    "pacing_rate",
    "mark",
    "aqm_drop",
    "dequeue",
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
    Sojourn = 5,
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
    EcnReduction,
    LossProbe,
    Undo,
    HystartExit,
    PacingRate,
    Mark,
    AqmDrop,
    Dequeue,
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
    /// Inserts `r` before row `at`.
    pub fn insert(&mut self, at: usize, r: Row) {
        self.time_ns.insert(at, r.t);
        self.layer.insert(at, r.layer as u8);
        self.event.insert(at, r.ev as u8);
        self.node.insert(at, r.node);
        self.dir.insert(at, r.dir);
        self.flow.insert(at, r.flow);
        self.seq.insert(at, r.seq);
        self.ack.insert(at, r.ack);
        self.len.insert(at, r.len);
        self.value.insert(at, r.value);
    }
    /// Splits off the rows from `at` on.
    pub fn split_off(&mut self, at: usize) -> TraceTable {
        TraceTable {
            time_ns: self.time_ns.split_off(at),
            layer: self.layer.split_off(at),
            event: self.event.split_off(at),
            node: self.node.split_off(at),
            dir: self.dir.split_off(at),
            flow: self.flow.split_off(at),
            seq: self.seq.split_off(at),
            ack: self.ack.split_off(at),
            len: self.len.split_off(at),
            value: self.value.split_off(at),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

/// Node codes (index into [`NODES`]).
pub const NODE_SERVER: u8 = 0;
pub const NODE_GATEWAY: u8 = 1;
pub const NODE_MOBILE: u8 = 2;
