//! What an endpoint counts and traces: the traced variables and events
//! (`TcpVar`, `VarEvent`) and the per-connection counters (`TcpStats`).
//! Source: thinwire's own trace schema (docs/analysis.md); the counters follow
//! Linux's `/proc/net/netstat` names where one exists (`TCPLossProbes`,
//! `TCPSpuriousRTOs`, ...).
use crate::time::{Duration, Instant};

/// A congestion-control or RTT variable that changed (for traces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// Traced sender variables and events; the events (`Timeout` onwards) carry their running count.
pub enum TcpVar {
    Cwnd,
    Ssthresh,
    Srtt,
    Rttvar,
    Rto,
    Timeout,
    FastRetransmit,
    EcnReduction,
    LossProbe,
    Undo,
    HystartExit,
    PacingRate,
}

#[derive(Clone, Copy, Debug)]
pub struct VarEvent {
    pub at: Instant,
    pub var: TcpVar,
    pub value: i64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpStats {
    pub segments_sent: u64,
    pub data_segments_sent: u64,
    pub data_bytes_sent: u64,
    /// Data segments (payload > 0) sent again.
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Expiries of the retransmission timer (the handshake's and a FIN's included).
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub rtt_samples: u64,
    pub rtt_sum: Duration,
    pub acks_sent: u64,
    /// Slow starts ended by HyStart (CUBIC).
    pub hystart_exits: u64,
    /// Tail loss probes sent (RACK-TLP), and losses they repaired.
    pub loss_probes: u64,
    pub probe_recoveries: u64,
    /// Loss episodes undone (Linux `tcp_undo_cwnd_reduction`): by timestamps
    /// (Eifel), by DSACKs of every retransmission, or by F-RTO.
    pub undos: u64,
    /// Of the timeouts, those undone as spurious (Linux `TCPLossUndo` +
    /// `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
    /// DSACK blocks received (RFC 2883; Linux `TCPDSACKRecv`) and sent
    /// (`TCPDSACKOldSent` + `TCPDSACKOfoSent`).
    pub dsacks_received: u64,
    pub dsacks_sent: u64,
    /// Retransmissions found lost again (RACK; Linux `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// ECN: reductions for an ECE (Linux `TCP_CA_CWR` entries), and data
    /// segments that arrived marked CE.
    pub ecn_reductions: u64,
    pub ce_received: u64,
    /// SYNs or SYN-ACKs sent again, and FINs sent again without data.
    pub syn_retransmits: u64,
    pub fin_retransmits: u64,
    /// ACKs held back by compressed SACKs and never sent alone (Linux
    /// `TCPAckCompressed`).
    pub acks_compressed: u64,
}

impl std::ops::AddAssign<&TcpStats> for TcpStats {
    /// Sums the counters (a web flow's connections).
    fn add_assign(&mut self, o: &TcpStats) {
        let TcpStats {
            segments_sent,
            data_segments_sent,
            data_bytes_sent,
            retransmits,
            retransmitted_bytes,
            syn_retransmits,
            fin_retransmits,
            timeouts,
            fast_retransmits,
            rtt_samples,
            rtt_sum,
            acks_sent,
            hystart_exits,
            loss_probes,
            probe_recoveries,
            undos,
            spurious_timeouts,
            dsacks_received,
            dsacks_sent,
            lost_retransmits,
            ecn_reductions,
            ce_received,
            acks_compressed,
        } = o;
        self.segments_sent += segments_sent;
        self.data_segments_sent += data_segments_sent;
        self.data_bytes_sent += data_bytes_sent;
        self.retransmits += retransmits;
        self.retransmitted_bytes += retransmitted_bytes;
        self.syn_retransmits += syn_retransmits;
        self.fin_retransmits += fin_retransmits;
        self.timeouts += timeouts;
        self.fast_retransmits += fast_retransmits;
        self.rtt_samples += rtt_samples;
        self.rtt_sum += *rtt_sum;
        self.acks_sent += acks_sent;
        self.hystart_exits += hystart_exits;
        self.loss_probes += loss_probes;
        self.probe_recoveries += probe_recoveries;
        self.undos += undos;
        self.spurious_timeouts += spurious_timeouts;
        self.dsacks_received += dsacks_received;
        self.dsacks_sent += dsacks_sent;
        self.lost_retransmits += lost_retransmits;
        self.ecn_reductions += ecn_reductions;
        self.ce_received += ce_received;
        self.acks_compressed += acks_compressed;
    }
}
