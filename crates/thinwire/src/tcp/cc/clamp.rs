//! A fixed window: seed 003 §V's "TCP clamp" (the split-TCP proxy's wireless
//! sender; seed 004 §IV-C, the aggregate's window) as a controller. The window is
//! `tcp.cwnd_clamp` bytes from the first segment on: no slow start, no reduction
//! after a loss or a timeout (ssthresh stays the window; the endpoint's fixed
//! window, `Tcb::clamp`, ignores every other change of cwnd), so only the
//! receiver's window and the loss recovery's rules limit what is sent. Loss
//! recovery still marks and resends what is lost. Parameter: `tcp.cwnd_clamp`
//! (required with `cc = "clamp"`; C_clamp ≈ the link's bandwidth-delay product
//! plus headroom, seed 003 §V). Without it (a configuration built in code) the
//! window is the initial window.
use super::CongestionControl;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Clamp {
    /// The fixed window in bytes.
    window: u64,
}

impl Clamp {
    pub fn new(cfg: &TcpConfig) -> Clamp {
        let iw = cfg.mss as u64 * cfg.initial_window as u64;
        Clamp { window: cfg.cwnd_clamp.map_or(iw, u64::from) }
    }
}

impl CongestionControl for Clamp {
    fn ssthresh(&mut self, _tcb: &Tcb) -> u64 {
        self.window
    }

    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        tcb.set_cwnd(now, self.window);
    }

    fn on_rtt(&mut self, _tcb: &mut Tcb, _now: Instant, _rtt: Duration) {}

    fn on_rto(&mut self, _tcb: &mut Tcb) {}

    fn init(&mut self, tcb: &mut Tcb, now: Instant) {
        tcb.set_cwnd(now, self.window);
    }

    fn cong_control(&mut self, _tcb: &mut Tcb, _now: Instant) -> bool {
        false
    }

    fn undo_cwnd(&mut self, _tcb: &Tcb, _prior: u64) -> u64 {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window is the clamp whatever the ACKs, and a loss reduces nothing.
    #[test]
    fn keeps_the_window_through_acks_and_losses() {
        let cfg = TcpConfig { mss: 1000, cwnd_clamp: Some(9_700), ..Default::default() };
        let mut cc = Clamp::new(&cfg);
        let mut t = Tcb::new(1000, 2000, None);
        cc.init(&mut t, Instant::ZERO);
        assert_eq!(t.cwnd, 9_700);
        cc.on_ack(&mut t, Instant::ZERO, 5000);
        assert_eq!(t.cwnd, 9_700);
        assert_eq!(cc.ssthresh(&t), 9_700);
        assert_eq!(cc.undo_cwnd(&t, 4000), 9_700);
    }
}
