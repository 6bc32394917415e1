//! `raw` link layer: no ARQ. Packets are fragmented into frames and sent once; a
//! packet is lost when any of its frames is lost (detected by the receiver from the
//! gap in frame sequence numbers). Parameters: frame payload and header size (from
//! `[wireless]`), nothing else.
use super::frame::{Fragments, Frame, Reassembler};
use super::{Arq, ArqMachine, LinkInit, LinkSection};
use crate::time::Instant;
use crate::wire::Packet;
use std::collections::VecDeque;

/// `protocol = "raw"`: no keys of its own.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawCfg {}

impl crate::schema::Configured for Raw {
    type Section = RawCfg;
}

impl LinkSection for RawCfg {
    fn build(&self, i: &LinkInit) -> Arq {
        Raw::new(i.max_payload).into()
    }
}

pub struct Raw {
    max_payload: u32,
    /// The packet being sent, cut into frames as they are polled.
    pending: Fragments,
    next_seq: u32,
    rx: Reassembler,
    delivered: VecDeque<Packet>,
}

impl Raw {
    pub fn new(max_payload: u32) -> Raw {
        Raw {
            max_payload,
            pending: Fragments::default(),
            next_seq: 0,
            rx: Reassembler::default(),
            delivered: VecDeque::new(),
        }
    }
}

impl ArqMachine for Raw {
    fn wants_packet(&self) -> bool {
        self.pending.is_empty()
    }
    fn send(&mut self, _now: Instant, pkt: Packet) {
        debug_assert!(self.pending.is_empty(), "send only when wants_packet");
        self.pending.start(pkt, self.max_payload);
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<Frame> {
        let mut f = self.pending.next_frame()?;
        f.seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        Some(f)
    }
    fn on_frame(&mut self, _now: Instant, f: Frame) {
        if let Some(p) = self.rx.push(f) {
            self.delivered.push_back(p);
        }
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
}
