//! Applications. `bulk` is driven directly through the TCP endpoint (a byte count,
//! or unlimited); `media` is an on/off UDP source (seed 002 §III); `probe` sends UDP
//! datagrams alone or in bursts at random spacing (seed 003 §III); `session`
//! holds the settings of web, ttcp and http, `interactive` those of telnet-like
//! flows (their connections are driven by the simulator); `web` is Mah's model.
pub mod interactive;
pub mod media;
pub mod probe;
pub mod session;
pub mod web;

use crate::time::Instant;

/// A UDP source: media (on/off) or probe (spaced bursts).
pub enum UdpSource {
    Media(media::MediaSource),
    Probe(probe::ProbeSource),
}

impl UdpSource {
    pub fn poll_timeout(&self) -> Instant {
        match self {
            UdpSource::Media(m) => m.poll_timeout(),
            UdpSource::Probe(p) => p.poll_timeout(),
        }
    }
    pub fn poll_packet(&mut self, now: Instant) -> Option<u32> {
        match self {
            UdpSource::Media(m) => m.poll_packet(now),
            UdpSource::Probe(p) => p.poll_packet(now),
        }
    }
}
