//! One vocabulary of trace events for every layer, stored column by column.
//!
//! Every (layer, event) pair a trace holds is described once, in [`EVENT_DOCS`]:
//! what it means, which node records it, what its `seq`/`ack`/`len` hold and the
//! meaning and unit of its `value` (`thinwire.fields.trace_events()`, the table in
//! `docs/analysis.md`).
//!
//! Columns: `time_ns`, `layer`, `event`, `node`, `dir`, `flow`, `seq`, `ack`,
//! `len`, `value`; `flow`, `seq` and `ack` are −1 here where they do not apply
//! (null in the Python tables and `trace.parquet`). Codes are small integers here; the Python layer turns them
//! into categorical strings using [`LAYERS`], [`EVENTS`], [`NODES`], [`DIRS`].
//!
//! Machines produce typed events (`link::wireless::LinkEvent`, `tcp::VarEvent`,
//! `proxy::Event`, segments a driver saw); [`Recorder`] (recorder.rs) is the one
//! place that turns them into rows, for the layers asked for, into a [`Sink`].
pub mod conn_table;
pub mod mahimahi;
pub mod parquet;
pub mod recorder;
pub mod rows;

pub use recorder::{Recorder, SegEvent, Sink};

/// One description per vocabulary of the trace: `vocabulary! { pub enum Name,
/// pub const LIST { Variant = "name", … } }` gives the `#[repr(u8)]` enum (codes
/// 0, 1, … in order, as stored in rows and files), the names indexed by code,
/// `ALL`, `name()` and `parse()` — the enum and its names cannot drift apart.
macro_rules! vocabulary {
    ($(#[$m:meta])* pub enum $en:ident, $(#[$lm:meta])* pub const $list:ident { $($var:ident = $name:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum $en {
            $($var),+
        }
        $(#[$lm])*
        pub const $list: &[&str] = &[$($name),+];
        impl $en {
            /// Every member, in code order.
            pub const ALL: &'static [$en] = &[$($en::$var),+];
            /// The name written in traces and scenarios.
            pub fn name(self) -> &'static str {
                $list[self as usize]
            }
            pub fn parse(s: &str) -> Option<$en> {
                match s {
                    $($name => Some($en::$var),)+
                    _ => None,
                }
            }
        }
    };
}

vocabulary! {
    /// A trace layer (`trace.layers`, the `layer` column).
    pub enum Layer,
    pub const LAYERS {
        Tcp = "tcp",
        Link = "link",
        Queue = "queue",
        Channel = "channel",
        Proxy = "proxy",
        Sojourn = "sojourn",
    }
}

vocabulary! {
    /// A trace event (the `event` column; its meaning per layer in [`EVENT_DOCS`]).
    pub enum Ev,
    pub const EVENTS {
        Send = "send",
        Retransmit = "retransmit",
        Recv = "recv",
        Cwnd = "cwnd",
        Ssthresh = "ssthresh",
        Srtt = "srtt",
        Rttvar = "rttvar",
        Rto = "rto",
        FrameSend = "frame_send",
        FrameRetransmit = "frame_retransmit",
        FrameLost = "frame_lost",
        FrameRecv = "frame_recv",
        AckSend = "ack_send",
        NackSend = "nack_send",
        PacketDeliver = "packet_deliver",
        Enqueue = "enqueue",
        Drop = "drop",
        State = "state",
        StatusSend = "status_send",
        Timeout = "timeout",
        FastRetransmit = "fast_retransmit",
        IdleSend = "idle_send",
        Reset = "reset",
        QueueLen = "queue_len",
        AdvWindow = "adv_window",
        Pick = "pick",
        LossCounter = "loss_counter",
        Stall = "stall",
        Rtt = "rtt",
        EcnReduction = "ecn_reduction",
        LossProbe = "loss_probe",
        Undo = "undo",
        HystartExit = "hystart_exit",
        PacingRate = "pacing_rate",
        Mark = "mark",
        AqmDrop = "aqm_drop",
        Dequeue = "dequeue",
        Poll = "poll",
        StatusReport = "status_report",
    }
}

pub const NODES: &[&str] = &["server", "gateway", "mobile"];
pub const DIRS: &[&str] = &["down", "up", "-"];

/// One (layer, event) pair of the trace: what a row of it means.
#[derive(Clone, Copy, Debug)]
pub struct EventDoc {
    pub layer: &'static str,
    pub event: &'static str,
    /// The node whose row it is.
    pub node: &'static str,
    pub meaning: &'static str,
    /// What `seq`, `ack` and `len` hold ("" where they do not apply).
    pub columns: &'static str,
    /// What `value` holds, and its unit.
    pub value: &'static str,
    pub unit: &'static str,
}

const fn doc(
    layer: &'static str,
    event: &'static str,
    node: &'static str,
    meaning: &'static str,
    columns: &'static str,
    value: &'static str,
    unit: &'static str,
) -> EventDoc {
    EventDoc { layer, event, node, meaning, columns, value, unit }
}

const SEG: &str =
    "seq: first sequence number (relative, SYN = 0); ack: acknowledgment number (null without ACK); len: payload bytes";
const FRAME: &str =
    "seq: link sequence number; ack: acknowledged link sequence (control frames); len: bytes on the air";
const PKT: &str = "len: the IP packet's bytes";

/// Every (layer, event) a trace can hold (the recorder in recorder.rs, the realtime
/// path's taps and the proxy daemon's rows write no others; a test checks it).
#[rustfmt::skip]
pub const EVENT_DOCS: &[EventDoc] = &[
    doc("tcp", "send", "server, mobile (the sender)", "a segment sent for the first time (data, SYN, FIN or a pure ACK)", SEG, "TCP flags (FIN 1, SYN 2, RST 4, PSH 8, ACK 16, ECE 64, CWR 128)", "flags"),
    doc("tcp", "retransmit", "server, mobile (the sender)", "a segment sent again: data, SYN(-ACK) or FIN (the sequence space was sent before)", SEG, "TCP flags", "flags"),
    doc("tcp", "recv", "server, mobile (the receiver)", "a segment arrived at the host", SEG, "TCP flags", "flags"),
    doc("tcp", "cwnd", "server, mobile (each host's own sender)", "its congestion window changed", "", "the new congestion window", "bytes"),
    doc("tcp", "ssthresh", "server, mobile (each host's own sender)", "its slow-start threshold changed", "", "the new threshold", "bytes"),
    doc("tcp", "srtt", "server, mobile (each host's own sender)", "an RTT sample updated its smoothed RTT", "", "the smoothed RTT", "ns"),
    doc("tcp", "rttvar", "server, mobile (each host's own sender)", "an RTT sample updated its RTT variation", "", "the RTT variation", "ns"),
    doc("tcp", "rto", "server, mobile (each host's own sender)", "its retransmission timeout changed", "", "the new timeout", "ns"),
    doc("tcp", "timeout", "server, mobile (each host's own sender)", "its retransmission timer expired (the handshake's and a FIN's included)", "", "timeouts so far", "count"),
    doc("tcp", "fast_retransmit", "server, mobile (each host's own sender)", "a fast recovery began (a loss found without the timer)", "", "fast retransmits so far", "count"),
    doc("tcp", "ecn_reduction", "server, mobile (each host's own sender)", "the window was reduced for an ECN echo (RFC 3168)", "", "reductions so far", "count"),
    doc("tcp", "loss_probe", "server, mobile (each host's own sender)", "a tail loss probe was sent (RACK-TLP)", "", "probes so far", "count"),
    doc("tcp", "undo", "server, mobile (each host's own sender)", "a needless window reduction was undone (Eifel, DSACK or F-RTO)", "", "undos so far", "count"),
    doc("tcp", "hystart_exit", "server, mobile (each host's own sender)", "HyStart ended slow start (CUBIC)", "", "exits so far", "count"),
    doc("tcp", "pacing_rate", "server, mobile (each host's own sender)", "its pacing rate changed (BBR)", "", "the pacing rate", "bytes/s"),
    doc("link", "frame_send", "gateway (down), mobile (up)", "a link frame sent for the first time", FRAME, "the frame's transmission number (1)", "count"),
    doc("link", "frame_retransmit", "gateway (down), mobile (up)", "a link frame sent again by the ARQ", FRAME, "the frame's transmission number (2, 3, ...)", "count"),
    doc("link", "frame_lost", "gateway (down), mobile (up)", "the channel corrupted the frame just sent (the row after its send)", FRAME, "its transmission number", "count"),
    doc("link", "frame_recv", "the receiving end", "a link frame arrived intact", FRAME, "its transmission number", "count"),
    doc("link", "ack_send", "the receiving end", "a link acknowledgment (or a GSM RLP receive-ready) was sent", FRAME, "its transmission number", "count"),
    doc("link", "nack_send", "the receiving end", "a negative acknowledgment (NAK, SREJ) was sent", FRAME, "its transmission number", "count"),
    doc("link", "status_send", "the receiving end", "an RLC STATUS PDU was sent", FRAME, "its transmission number", "count"),
    doc("link", "idle_send", "either end", "an IS-707 idle frame was sent", FRAME, "its transmission number", "count"),
    doc("link", "reset", "either end", "the link layer reset (GSM RLP after N2 retransmissions)", FRAME, "its transmission number", "count"),
    doc("link", "poll", "gateway (down), mobile (up)", "an RLC AMD PDU went out with the poll bit (the row after its send), with the sender's window", "seq: the PDU's sequence number; ack: VT(A), the oldest unacknowledged PDU", "VT(S), the next new sequence number (VT(S) − VT(A): PDUs outstanding)", "sequence number"),
    doc("link", "status_report", "the receiving end", "what an RLC STATUS PDU said (the row after its status_send)", "seq: the first PDU reported missing (null: none); ack: the ACK SUFI, VR(R) (null: no ACK SUFI); len: PDUs reported missing", "the MRW SUFI's sequence number, or an MRW_ACK's (−1: neither)", "sequence number"),
    doc("link", "packet_deliver", "the receiving end", "an IP packet left the link layer, reassembled and in order", PKT, "its delay over the link (queue, ARQ and transmission)", "ns"),
    doc("queue", "enqueue", "gateway (wireless down), mobile (up), server (wired down), gateway (wired up)", "a packet joined a queue", PKT, "the queue's length after it", "packets"),
    doc("queue", "drop", "as enqueue", "a packet was dropped at a full queue (a link frame buffer full: seq holds the frame's sequence)", PKT, "the queue's length (frame buffer: its limit)", "packets"),
    doc("queue", "aqm_drop", "as enqueue", "the queue discipline dropped a packet (RED or PIE at arrival, CoDel at departure)", PKT, "the queue's length after it", "packets"),
    doc("queue", "mark", "as enqueue", "the discipline marked a packet CE instead of dropping it (RFC 3168)", PKT, "the queue's length after it", "packets"),
    doc("sojourn", "dequeue", "as enqueue", "a packet left a queue for the transmitter", PKT, "its sojourn time in the queue", "ns"),
    doc("channel", "state", "gateway (down), mobile (up)", "the two-state channel changed state (stamped with the exact transition time)", "", "1 = entered the bad state, 0 = the good one", "state"),
    doc("proxy", "queue_len", "gateway", "a proxied connection's bytes waiting to be sent to the mobile changed", "", "its unsent bytes", "bytes"),
    doc("proxy", "adv_window", "gateway", "the window the proxy advertises to a connection's wired sender changed", "", "the advertised window", "bytes"),
    doc("proxy", "pick", "gateway", "the scheduler sent a piece of a connection over the wireless leg", "seq: first sequence number; len: payload bytes", "the connection's priority class", "class"),
    doc("proxy", "loss_counter", "gateway", "a sent segment's loss counter rose (counter-based recovery)", "seq: the segment's first sequence number", "its counter", "count"),
    doc("proxy", "retransmit", "gateway", "the proxy resent a segment over the wireless leg", "seq: first sequence number; len: payload bytes", "the segment's transmissions so far", "count"),
    doc("proxy", "timeout", "gateway", "the aggregate's retransmission timer expired", "", "consecutive timeouts (the back-off)", "count"),
    doc("proxy", "stall", "gateway", "the wireless leg stalled (1) or recovered (0)", "", "1 = stalled, 0 = recovered", "state"),
    doc("proxy", "cwnd", "gateway", "the aggregate's usable window changed", "", "the window", "bytes"),
    doc("proxy", "rtt", "gateway", "an RTT sample over the wireless leg", "", "the sample", "ns"),
];

/// Which layers to record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerMask(pub u8);
impl LayerMask {
    pub fn has(self, l: Layer) -> bool {
        self.0 & (1 << l as u8) != 0
    }
    /// The layers named (names that are not layers are ignored: the scenario
    /// checks them).
    pub fn from_names(names: &[String]) -> LayerMask {
        LayerMask::of(&names.iter().filter_map(|n| Layer::parse(n)).collect::<Vec<_>>())
    }
    pub fn of(layers: &[Layer]) -> LayerMask {
        LayerMask(layers.iter().fold(0, |m, &l| m | 1 << l as u8))
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
