//! `interactive` (seed 004 §IV, a telnet-like flow the proxy should prioritise):
//! the server writes a `packet`-byte message (default 40 B) every `interval`
//! (default 1 s) on one long connection to `port` (default 23), starting one
//! interval after the connection request; `messages` (default unlimited) ends the
//! flow. Each message's latency runs from the write to its last byte reaching the
//! mobile's application in order (measured by the simulator's driver).
use crate::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InteractiveConfig {
    pub packet: u64,
    pub interval: Duration,
    pub messages: Option<u64>,
    pub port: u16,
}

impl Default for InteractiveConfig {
    fn default() -> Self {
        InteractiveConfig { packet: 40, interval: Duration::from_secs(1), messages: None, port: 23 }
    }
}
