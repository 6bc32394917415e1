//! The proxy's configuration ([`ProxyConfig`]); its parameters and their
//! defaults are listed in the module documentation of `proxy`.
use super::*;

#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Wireless downlink rate, bytes per second.
    pub link_rate: u64,
    /// Typical round-trip time over the wireless link.
    pub link_rtt: Duration,
    pub headroom: f64,
    /// The aggregate's congestion controller (acb.rs); default `clamp`, the
    /// seeds' fixed window.
    pub cc: CcKind,
    /// Initial window of a controller other than `clamp`, in segments; default 10.
    pub initial_window: u32,
    /// Fixed window; default (1 + headroom)·link_rate·link_rtt.
    pub clamp: Option<u64>,
    /// Estimate the clamp on line: (1 + headroom)·link_rate·(minimum RTT sampled
    /// over the wireless leg), from the first sample on (until then as configured).
    pub estimate_clamp: bool,
    pub overprovision: f64,
    /// Allowance growth α in bytes per second; default one BDP per second.
    pub growth: Option<f64>,
    pub retransmit_at: u32,
    /// Feedback on another connection raises a segment's loss counter only if
    /// the acknowledged segment was sent at least this long after it (acb.rs).
    pub delack_allowance: Duration,
    pub min_rto: Duration,
    pub initial_rto: Duration,
    pub max_rto: Duration,
    pub mss: u32,
    /// SACK the mobile's out-of-order data (when the mobile offers SACK).
    pub sack_mobile: bool,
    /// (server port, priority class, tickets); other ports get `default_class`.
    pub classes: Vec<(u16, u8, u32)>,
    pub default_class: (u8, u32),
    pub wired_tcp: TcpConfig,
    /// SYN-ACK retransmissions before a mobile's unfinished handshake is
    /// dropped (Linux `tcp_synack_retries`); the first after `initial_rto`,
    /// doubling, at most `max_rto`.
    pub synack_retries: u32,
    /// Unfinished handshakes held per mobile; a new SYN beyond drops the oldest,
    /// so a SYN flood cannot hold a mobile's connection slots.
    pub max_half_open: usize,
    /// Segments a scheduler pick may send from its connection in a row while
    /// the aggregate's window has room (default 1: a pick per segment, seed 004
    /// §IV-C). Larger, each connection's segments leave together, and the proxy
    /// daemon's coalescer writes them as one super-packet (thinwire-emu gso.rs):
    /// the stride scheduler still charges every byte, so shares hold over a
    /// few bursts.
    pub burst: u32,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        let mut wired = TcpConfig::profile("linux-2.4").expect("linux-2.4 profile");
        wired.recovery = RecoveryKind::Sack;
        wired.timestamps = false;
        wired.rcv_wnd_initial = None;
        wired.slow_start_after_idle = false;
        wired.delack_count = 1;
        ProxyConfig {
            link_rate: 4150,
            link_rtt: Duration::from_millis(1800),
            headroom: 0.3,
            cc: CcKind::Clamp,
            initial_window: 10,
            clamp: None,
            estimate_clamp: false,
            overprovision: 0.5,
            growth: None,
            retransmit_at: 3,
            delack_allowance: Duration::from_millis(200),
            min_rto: Duration::from_secs(3),
            initial_rto: Duration::from_secs(6),
            max_rto: Duration::from_secs(60),
            mss: 1460,
            sack_mobile: true,
            classes: vec![(23, 0, 100)],
            default_class: (1, 100),
            wired_tcp: wired,
            synack_retries: 5,
            max_half_open: 256,
            burst: 1,
        }
    }
}

impl ProxyConfig {
    pub(crate) fn bdp(&self) -> f64 {
        self.link_rate as f64 * self.link_rtt.as_secs_f64()
    }
    /// The aggregate's window: `clamp`, or (1 + headroom)·BDP; never below one
    /// segment, since a smaller window lets nothing through (a slow `link_rate`
    /// once deadlocked every connection).
    pub fn clamp_bytes(&self) -> u64 {
        self.clamp.unwrap_or(((1.0 + self.headroom) * self.bdp()).round() as u64).max(self.mss as u64)
    }
    pub fn target(&self) -> f64 {
        (1.0 + self.overprovision) * self.bdp()
    }
}
