//! The gateway's split-TCP proxy (src/proxy), when the scenario has `[proxy]`:
//! packets from the server reach it after the wired link, packets from the mobile
//! after the wireless link layer; what it sends joins the wired queue toward the
//! server or the wireless IP queue toward the mobile. The proxy sees only packets
//! and the clock.
use super::*;
use crate::proxy::Side;

impl Sim {
    pub(super) fn to_proxy(&mut self, from: Side, p: Packet) {
        let now = self.now();
        if let Some(px) = self.proxy.as_mut() {
            px.on_packet(now, from, p);
        }
        self.drain_proxy();
    }

    pub(super) fn proxy_timer(&mut self) {
        let now = self.now();
        if self.proxy_sched != Some(now) {
            return;
        }
        self.proxy_sched = None;
        if let Some(px) = self.proxy.as_mut() {
            px.handle_timeout(now);
        }
        self.drain_proxy();
    }

    fn drain_proxy(&mut self) {
        let now = self.now();
        while let Some((side, p)) = self.proxy.as_mut().and_then(|x| x.poll_transmit()) {
            match side {
                Side::Wired => self.enqueue_wired(1, p),
                Side::Wireless => self.enqueue_radio(0, p),
            }
        }
        let Some(px) = self.proxy.as_mut() else { return };
        while let Some(e) = px.poll_event() {
            self.rec.proxy(&e);
        }
        if let Some(t) = px.poll_timeout() {
            let t = t.max(now);
            if self.proxy_sched.is_none_or(|s| t < s) {
                self.proxy_sched = Some(t);
                self.q.schedule(t, Event::ProxyTimer);
            }
        }
    }
}
