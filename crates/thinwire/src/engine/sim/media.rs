//! Media flows (UDP on/off sources and probes) in the simulator: what each one
//! sent and what its receiver saw, the loss ratio with its 5 s cutoff, and the
//! delay statistics.
use super::{tap, Event, Sim, SERVER_ADDR};
use crate::time::{Duration, Instant};
use crate::wire::{Packet, L4};
use std::collections::VecDeque;

/// A media (UDP on/off) flow and what its receiver saw.
pub(super) struct Media {
    pub(super) id: usize,
    pub(super) src: crate::app::UdpSource,
    pub(super) sender: usize,
    /// The mobile host and its address (`mobile_addr`).
    pub(super) mobile: u16,
    pub(super) addr: [u8; 4],
    pub(super) ident: u16,
    /// Birth times of the packets sent and of those received, for the loss ratio.
    pub(super) sent_born: BornCount,
    pub(super) recv_born: BornCount,
    pub(super) delays: Vec<i64>,
    pub(super) bytes: u64,
    pub(super) start: Instant,
}

/// Counts birth times and, at the end, how many are at most `end − 5 s` (the
/// media loss ratio's cutoff), keeping only those of the last 5 s: a time at least
/// 5 s before the moment it is counted is certainly before the cutoff, since the
/// run ends no earlier. (A `Vec` of every birth time once made memory grow with
/// simulated time.)
#[derive(Default)]
pub(super) struct BornCount {
    pub(super) n: u64,
    pub(super) before: u64,
    pub(super) recent: VecDeque<i64>,
}

impl BornCount {
    pub(super) fn push(&mut self, born: Instant, now: Instant) {
        self.n += 1;
        self.recent.push_back(born.nanos());
        let old = now.nanos() - LOSS_CUTOFF.nanos();
        while self.recent.front().is_some_and(|&b| b <= old) {
            self.recent.pop_front();
            self.before += 1;
        }
    }
    fn at_most(&self, cutoff: i64) -> u64 {
        self.before + self.recent.iter().filter(|&&t| t <= cutoff).count() as u64
    }
}

/// Media packets sent less than this before the end are not counted for loss.
const LOSS_CUTOFF: Duration = Duration::from_secs(5);

/// Media flow statistics. Loss counts packets sent at least 5 s before the end of
/// the run that never arrived (later ones may still be in flight).
#[derive(Clone, Debug, Default)]
pub struct MediaResult {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub loss: f64,
    pub delay_mean_s: Option<f64>,
    pub delay_p50_s: Option<f64>,
    pub delay_p95_s: Option<f64>,
    pub delay_max_s: Option<f64>,
    /// Every received packet's one-way delay, in arrival order (ns).
    pub delays_ns: Vec<i64>,
}

impl Sim {
    pub(super) fn media_send(&mut self, m: usize) {
        let now = self.now();
        while let Some(size) = self.media[m].src.poll_packet(now) {
            let md = &mut self.media[m];
            let (src, dst) = if md.sender == 0 { (SERVER_ADDR, md.addr) } else { (md.addr, SERVER_ADDR) };
            let port = 6000 + md.id as u16;
            let pkt = Packet::new(
                src,
                dst,
                md.ident,
                L4::Udp(crate::wire::UdpRepr { src_port: port, dst_port: port }),
                size - 28,
                md.id as u16,
                now,
            );
            md.ident = md.ident.wrapping_add(1);
            md.sent_born.push(now, now);
            let sender = md.sender;
            tap(&mut self.pcap[sender], now, &pkt);
            if sender == 0 {
                self.enqueue_wired(0, pkt);
            } else {
                self.enqueue_radio(1, pkt);
            }
        }
        let next = self.media[m].src.poll_timeout();
        if next <= self.max_time {
            self.q.schedule(next, Event::MediaNext(m as u16));
        }
    }
}

pub(super) fn media_result(m: &Media, end: Instant) -> MediaResult {
    let cutoff = end.nanos() - LOSS_CUTOFF.nanos();
    let sent = m.sent_born.at_most(cutoff);
    let got = m.recv_born.at_most(cutoff);
    let loss = if sent > 0 { 1.0 - got as f64 / sent as f64 } else { 0.0 };
    delay_stats(m.sent_born.n, m.recv_born.n, &m.delays, loss)
}

/// Delay statistics over `delays` (ns, in arrival order).
pub(super) fn delay_stats(sent: u64, received: u64, delays: &[i64], loss: f64) -> MediaResult {
    // Order statistics by selection, not a full sort (a sort of every delay was 2 %
    // of the study mix's instructions: bench/RESULTS.md).
    let mut d = delays.to_vec();
    let mut q = |p: f64| {
        let i = ((d.len().checked_sub(1)?) as f64 * p).round() as usize;
        Some(*d.select_nth_unstable(i).1 as f64 * 1e-9)
    };
    let (p50, p95) = (q(0.5), q(0.95));
    MediaResult {
        packets_sent: sent,
        packets_received: received,
        loss,
        delay_mean_s: (!d.is_empty()).then(|| d.iter().sum::<i64>() as f64 / d.len() as f64 * 1e-9),
        delay_p50_s: p50,
        delay_p95_s: p95,
        delay_max_s: d.iter().max().map(|&x| x as f64 * 1e-9),
        delays_ns: delays.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::delay_stats;

    /// The selected order statistics are those of the sorted delays.
    #[test]
    fn delay_percentiles_match_a_sort() {
        let mut rng = crate::rng::Rng::stream(1, 0, "delays");
        for n in [0usize, 1, 2, 3, 10, 101, 1000] {
            let delays: Vec<i64> = (0..n).map(|_| rng.below(5000) as i64).collect();
            let r = delay_stats(n as u64, n as u64, &delays, 0.0);
            let mut s = delays.clone();
            s.sort_unstable();
            let at = |p: f64| (!s.is_empty()).then(|| s[((s.len() - 1) as f64 * p).round() as usize] as f64 * 1e-9);
            assert_eq!(r.delay_p50_s, at(0.5), "n = {n}");
            assert_eq!(r.delay_p95_s, at(0.95), "n = {n}");
            assert_eq!(r.delay_max_s, s.last().map(|&v| v as f64 * 1e-9), "n = {n}");
            assert_eq!(r.delays_ns, delays, "arrival order kept");
        }
    }
}
