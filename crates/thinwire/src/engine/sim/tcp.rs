//! The simulator's TCP endpoints: each flow's two ends, what they send (onto
//! the wired link or the radio, with trace rows and pcap taps), their timers, and
//! packets arriving at an end (demultiplexed by flow and port).
use super::*;

impl Sim {
    // ----- TCP endpoints -----
    pub(super) fn drain_tcp(&mut self, f: usize, end: usize) {
        let now = self.now();
        loop {
            let fl = &mut self.flows[f];
            let Some(seg) = fl.ep[end].poll_transmit(now) else { break };
            let (src, dst) = if end == 0 { (SERVER_ADDR, fl.addr) } else { (fl.addr, SERVER_ADDR) };
            let ident = fl.ident[end];
            fl.ident[end] = ident.wrapping_add(1);
            let id = fl.id;
            let mut pkt = Packet::new(src, dst, ident, L4::Tcp(seg.repr), seg.len, id as u16, now);
            if seg.ect {
                pkt.ip.set_ecn(crate::wire::ip::ECT0);
            }
            if self.rec.wants(Layer::Tcp) {
                let (seq, ack) = self.rel_seq_ack(f, end, &seg.repr);
                let kind = if seg.retransmission { SegKind::Retransmit } else { SegKind::Send };
                let (mobile, dir, flow, len, flags) = (end == 1, end as u8, id as i32, seg.len, seg.repr.flags.0);
                self.rec.segment(&SegEvent { at: now, kind, mobile, dir, flow, seq, ack, len, flags });
            }
            tap(&mut self.pcap[end], now, &pkt);
            if end == 0 {
                self.enqueue_wired(0, pkt);
            } else {
                self.enqueue_radio(1, pkt);
            }
        }
        self.drain_vars(f, end);
        self.sched_tcp(f, end);
    }

    /// Sequence and acknowledgement numbers relative to the two ends' ISNs.
    pub(super) fn rel_seq_ack(&self, f: usize, end: usize, r: &crate::wire::TcpRepr) -> (i64, Option<i64>) {
        let fl = &self.flows[f];
        let iss = fl.ep[end].iss();
        let peer_iss = fl.ep[1 - end].iss();
        let ack = r.flags.has(crate::wire::TcpFlags::ACK).then(|| r.ack.wrapping_sub(peer_iss) as i64);
        (r.seq.wrapping_sub(iss) as i64, ack)
    }

    pub(super) fn drain_vars(&mut self, f: usize, end: usize) {
        let fl = &mut self.flows[f];
        let id = fl.id as i32;
        while let Some(v) = fl.ep[end].poll_event() {
            self.rec.tcp_var(end == 1, end as u8, id, &v);
        }
    }

    pub(super) fn sched_tcp(&mut self, f: usize, end: usize) {
        let now = self.now();
        let fl = &mut self.flows[f];
        if let Some(t) = fl.ep[end].poll_timeout() {
            let t = t.max(now);
            if fl.sched[end].is_none_or(|s| t < s) {
                fl.sched[end] = Some(t);
                fl.timers_until = fl.timers_until.max(t);
                self.q.schedule(t, Event::TcpTimer(f as u32, end as u8));
            }
        }
    }

    /// The TCP connection whose mobile end sent `p` (for a local drop at the mobile).
    /// The TCP connection (index in `flows`) of the mobile's segment from
    /// `src_port` of scenario flow `flow`.
    pub(super) fn local_sender(&self, flow: u16, src_port: u16) -> Option<usize> {
        match self.slots[flow as usize] {
            Slot::Tcp(f) => Some(f),
            Slot::Web(w) => self.webs[w].ports.get(&src_port).copied(),
            Slot::Media(_) => None,
        }
    }

    pub(super) fn to_endpoint(&mut self, end: usize, p: Packet) {
        let now = self.now();
        tap(&mut self.pcap[end], now, &p);
        let f = match self.slots[p.meta.flow as usize] {
            Slot::Tcp(f) => f,
            Slot::Web(w) => {
                let L4::Tcp(r) = &p.l4 else { return };
                let client_port = if end == 1 { r.dst_port } else { r.src_port };
                match self.webs[w].ports.get(&client_port) {
                    Some(&f) => f,
                    None => return,
                }
            }
            Slot::Media(m) => {
                let m = &mut self.media[m];
                m.recv_born.push(p.meta.born, now);
                m.delays.push((now - p.meta.born).nanos());
                m.bytes += p.payload_len as u64;
                return;
            }
        };
        let L4::Tcp(repr) = &p.l4 else { return };
        if self.rec.wants(Layer::Tcp) {
            let (seq, ack) = self.rel_seq_ack(f, 1 - end, repr);
            let (mobile, dir, flow, len, flags) =
                (end == 1, (1 - end) as u8, p.meta.flow as i32, p.payload_len, repr.flags.0);
            self.rec.segment(&SegEvent { at: now, kind: SegKind::Recv, mobile, dir, flow, seq, ack, len, flags });
        }
        let fl = &mut self.flows[f];
        fl.ep[end].on_segment_ecn(now, repr, p.payload_len, p.ip.ecn() == crate::wire::ip::CE);
        if let Slot::Web(w) = self.slots[fl.id] {
            self.web_progress(w, f, end);
        } else if fl.completed.is_none() && end != fl.sender {
            if end == 1 && fl.chat.is_some() {
                self.chat_progress(f);
            }
            let fl = &mut self.flows[f];
            if let Some(b) = fl.bytes {
                if fl.ep[end].delivered() >= b {
                    fl.completed = Some(now);
                    self.pending_finite -= 1;
                }
            }
        }
        self.drain_tcp(f, end);
    }
}
