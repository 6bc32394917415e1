//! What a wireless link is made of: the sessions on the radio, the multiplexer
//! and its scheduler, and each direction's rate, delay and queue (the scenario's
//! `[wireless]`; defaults in the parent module's doc: frame payload 250 B, header
//! 4 B, IP queue 50 packets, pull multiplexer with round-robin). Sessions as seed
//! 002 §III; a shared cell's per-mobile sessions as TS 25.322 §4.2.
use crate::queue::Limit;
use crate::time::Duration;

/// A link-layer session on the shared radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Session {
    /// The configured link protocol (with ARQ unless it is `raw`): the first
    /// mobile's.
    Arq,
    /// No ARQ: frames are sent once (media, seed 002 §III).
    Bypass,
    /// The configured link protocol's session of mobile `k` of a shared cell
    /// ([`WirelessLink::add_mobile`](super::WirelessLink::add_mobile)); `Mobile(0)` is `Arq`.
    Mobile(u16),
}

impl Session {
    /// The session's number on the radio (`Frame::session`): 0 = the first
    /// mobile's ARQ session, 1 = bypass, k + 1 = mobile k's (k >= 1).
    pub fn index(self) -> usize {
        match self {
            Session::Arq | Session::Mobile(0) => 0,
            Session::Bypass => 1,
            Session::Mobile(k) => k as usize + 1,
        }
    }
}

/// The most mobiles one link serves (a session's number fits `Frame::session`).
pub const MAX_MOBILES: usize = 255;

/// How the radio picks between sessions in `Mux::Pull`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scheduler {
    #[default]
    RoundRobin,
    ArqFirst,
    BypassFirst,
}

/// How the sessions share the radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mux {
    Pull(Scheduler),
    SharedQueue { limit: usize },
}

impl Default for Mux {
    fn default() -> Self {
        Mux::Pull(Scheduler::RoundRobin)
    }
}

/// One direction of the radio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirConfig {
    /// Bit/s.
    pub rate: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Each session's IP queue: drop-tail of this limit (another discipline:
    /// [`WirelessLink::set_queue`](super::WirelessLink::set_queue)).
    pub queue: Limit,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WirelessConfig {
    /// Index 0 = down, 1 = up.
    pub dirs: [DirConfig; 2],
    /// Largest frame payload (the bypass session fragments to it), default 250 B.
    pub frame: u32,
    /// Link-layer header bytes per frame, default 4 B.
    pub header: u32,
    pub mux: Mux,
}
