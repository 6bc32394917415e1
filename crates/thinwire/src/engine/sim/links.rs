//! The simulator's links: the path's step (`link::path`: the wireless link and
//! the wired link in each direction on the simulator's one event queue) with the
//! simulator's routing and tracing, and the offers of packets to the links.
use super::*;
use crate::link::path::{self, PathDriver};

impl PathDriver for Sim {
    type Queue = EventQueue<Event>;
    #[inline(always)]
    fn parts(&mut self) -> (&mut WirelessLink, &mut [WiredLink; 2], &mut EventQueue<Event>) {
        (&mut self.link, &mut self.wired, &mut self.q)
    }
    /// Takes the link's trace events, if the link is traced (a check inlined at
    /// every call: the call itself cost 2.6 % of the study mix's instructions
    /// untraced).
    #[inline(always)]
    fn link_events(&mut self) {
        if self.link_traced {
            self.record_link_events();
        }
    }
    /// The wired queue's trace events (drops and marks after queueing, sojourn
    /// times).
    #[inline(always)]
    fn wired_events(&mut self, d: usize) {
        if self.wired[d].has_events() {
            self.record_wired_events(d);
        }
    }
    /// A packet that left the far end of wireless direction `dir`: to the mobile
    /// (down), or to the proxy or the wired link (up).
    fn from_wireless(&mut self, _now: Instant, dir: usize, p: Packet) {
        if dir == 0 {
            self.to_endpoint(1, p);
        } else if self.proxy.is_some() {
            self.to_proxy(crate::proxy::Side::Wireless, p);
        } else {
            self.enqueue_wired(1, p);
        }
    }
    /// A packet at the far end of wired direction `d`: to the server (up), or to
    /// the proxy or the wireless link (down).
    fn from_wired(&mut self, _now: Instant, d: usize, p: Packet) {
        if d == 1 {
            self.to_endpoint(0, p);
        } else if self.proxy.is_some() {
            self.to_proxy(crate::proxy::Side::Wired, p);
        } else {
            self.enqueue_radio(0, p);
        }
    }
}

impl Sim {
    // ----- wired link -----
    pub(super) fn enqueue_wired(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let (flow, len) = (p.meta.flow as i32, p.size());
        let verdict = path::wired_offer(self, now, d, p);
        if self.rec.wants(Layer::Queue) {
            let qlen = self.wired[d].queue_len(now) as u64;
            self.rec.wired_queue(now, d as u8, flow, len, qlen, verdict);
        }
        self.wired_events(d);
    }

    #[inline(never)]
    fn record_wired_events(&mut self, d: usize) {
        use crate::queue::{wired::WiredEvent, QdiscEvent};
        while let Some(e) = self.wired[d].poll_event() {
            match e {
                WiredEvent::Queue { ev: QdiscEvent::Drop { at, packet, reason }, qlen } => {
                    self.rec.wired_aqm(at, d as u8, packet.meta.flow as i32, packet.size(), qlen as u64, Some(reason))
                }
                WiredEvent::Queue { ev: QdiscEvent::Mark { at, flow, len }, qlen } => {
                    self.rec.wired_aqm(at, d as u8, flow as i32, len, qlen as u64, None)
                }
                WiredEvent::Dequeue { at, flow, len, sojourn } => {
                    self.rec.wired_dequeue(at, d as u8, flow as i32, len, sojourn)
                }
            }
        }
    }

    // ----- wireless link -----
    pub(super) fn enqueue_radio(&mut self, d: usize, p: Packet) {
        let now = self.now();
        let session = self.session[p.meta.flow as usize];
        // A mobile's TCP segment the local interface queue drops quenches its sender
        // (the `bsd` profile); which connection it was is looked up only then.
        let local = match (&p.l4, d) {
            (L4::Tcp(r), 1) => Some((p.meta.flow, r.src_port)),
            _ => None,
        };
        let offer = self.link.offer_with(now, d, session, p, &mut self.q);
        if let (Offer::QueueFull, Some((flow, port))) = (offer, local) {
            if let Some(f) = self.local_sender(flow, port) {
                if self.flows[f].ep[1].config().source_quench {
                    self.flows[f].ep[1].source_quench(now);
                }
            }
        }
        self.link_events();
    }

    #[inline(never)]
    fn record_link_events(&mut self) {
        crate::trace::recorder::drain_link(&mut self.link, &mut self.rec, self.mm.as_mut());
        if let TraceOut::File(f) = &mut self.rec.sink {
            f.set_horizon(self.link.channel_horizon().nanos());
        }
    }
}
