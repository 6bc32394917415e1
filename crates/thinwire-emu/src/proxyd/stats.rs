//! The daemon's counters and the stats snapshot it logs (SIGUSR1, every
//! `stats_interval`, and at the stop): its own counters, the proxy's, and each
//! mobile's aggregate.
use super::*;

#[derive(Default)]
pub(super) struct Counters {
    pub(super) proxied: u64,
    pub(super) passed_limit: u64,
    pub(super) refused_destination: u64,
    pub(super) server_refused: u64,
    pub(super) resets_from_mobile: u64,
    pub(super) resets_from_server: u64,
    pub(super) timeouts: u64,
    pub(super) bytes_down: u64,
    pub(super) bytes_up: u64,
    pub(super) packets_passed: u64,
}

impl Daemon {
    pub(super) fn stats_due(&self, now: Instant) -> Option<Instant> {
        let i = self.cfg.stats_interval.0;
        (i > Duration::ZERO).then(|| now + i)
    }

    pub(super) fn stats(&mut self, event: &str) {
        let st = self.proxy.stats();
        let mobiles: Vec<String> = self
            .proxy
            .mobile_snapshots()
            .iter()
            .map(|m| {
                log::object(&[
                    ("mobile", ip(m.mobile).into()),
                    ("window", m.window.into()),
                    ("queued", m.queued.into()),
                    ("in_flight", m.in_flight.into()),
                    ("srtt_ms", m.srtt.map(|d| d.as_secs_f64() * 1e3).into()),
                    ("connections", m.connections.into()),
                    ("stalled", m.stalled.into()),
                ])
            })
            .collect();
        let n = &self.n;
        self.log.event(
            event,
            &[
                ("open", self.socks.len().into()),
                ("proxied", n.proxied.into()),
                ("passed_limit", n.passed_limit.into()),
                ("refused_destination", n.refused_destination.into()),
                ("server_refused", n.server_refused.into()),
                ("resets_from_mobile", n.resets_from_mobile.into()),
                ("resets_from_server", n.resets_from_server.into()),
                ("timeouts", n.timeouts.into()),
                ("bytes_down", n.bytes_down.into()),
                ("bytes_up", n.bytes_up.into()),
                ("packets_passed", n.packets_passed.into()),
                ("tun_drops", self.tw.drops().into()),
                // Writes to the TUN device (a super-packet counts once).
                ("tun_writes", self.tw.writes().into()),
                ("gro_writes", self.co.as_ref().map_or(0, |c| c.merged_writes).into()),
                ("gro_segments", self.co.as_ref().map_or(0, |c| c.merged_packets).into()),
                ("buffered", self.proxy.buffered().into()),
                ("segments_sent", st.segments_sent.into()),
                ("retransmits", st.retransmits.into()),
                ("aggregate_timeouts", st.timeouts.into()),
                ("stalls", st.stalls.into()),
                ("half_open_dropped", self.proxy.half_open_dropped.into()),
                ("challenge_acks", self.proxy.challenge_acks.into()),
                ("rsts_ignored", self.proxy.rsts_ignored.into()),
                ("window_probes", self.proxy.window_probes.into()),
                ("mobiles", log::Value::Raw(format!("[{}]", mobiles.join(",")))),
            ],
        );
    }
}
