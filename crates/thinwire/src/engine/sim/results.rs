//! What a run gives back: one [`FlowResult`] per scenario flow, why the run
//! ended ([`EndReason`]) and everything else it measured ([`RunResult`]). The
//! flows' results are read off the engine's flows at the end of the run.
use super::{build, media::media_result, LinkStats, MediaResult, Sim, Slot};
use crate::time::Instant;
use crate::trace::TraceTable;

crate::described! {
    /// One flow's results. Labels say which column of the command line's summary
    /// tables shows a field ("header|format"; groups: `tcp` flows, `media` flows
    /// and interactive messages).
    #[derive(Clone, Debug, Default)]
    pub struct FlowResult {
        /// Index in the scenario's flow list.
        pub id: usize => (info, "count", "flow", "tcp media"),
        pub app: String => (info, "text", "app", "tcp media"),
        pub direction: String => (info, "text", "dir", "tcp media"),
        /// The mobile host (flow key `mobile`, address 10.0.1.(2 + k)).
        pub mobile: u16 => (info, "count", "mobile?", "tcp media"),
        /// TCP algorithms of the sender: the seeds' variant name for `reno` with one of
        /// their recoveries (`newreno`), else `CC+RECOVERY` (`cubic+sack`); `udp` for
        /// media and probes.
        pub variant: String => (info, "text", "tcp", "tcp"),
        pub start_s: f64 => (info, "s", "", ""),
        /// Application bytes delivered in order.
        pub bytes_delivered: u64 => (metric, "bytes", "delivered", "tcp"),
        /// Delivered bits per second from the start to completion (or the end).
        pub throughput_bps: f64 => (metric, "bit/s", "throughput|rate", "tcp"),
        /// Time from the start to the last byte (None: not finished).
        pub completion_s: Option<f64> => (metric, "s", "complete|s", "tcp"),
        /// Data segments (payload > 0) the sender sent again.
        pub tcp_retransmits: u64 => (metric, "count", "rexmits", "tcp"),
        /// SYNs and SYN-ACKs sent again, by either end (the connection's set-up;
        /// web flows: summed over their connections).
        pub tcp_syn_retransmits: u64 => (metric, "count", "SYN rexmit?", "tcp"),
        /// FINs sent again without data, by either end.
        pub tcp_fin_retransmits: u64 => (metric, "count", "FIN rexmit?", "tcp"),
        /// Expiries of the sender's retransmission timer: each resent data, a
        /// SYN-ACK or a FIN (so a timeout need not show in `tcp_retransmits`).
        pub tcp_timeouts: u64 => (metric, "count", "RTOs", "tcp"),
        /// Fast recoveries entered (losses found without a timeout).
        pub tcp_fast_retransmits: u64 => (metric, "count", "FR", "tcp"),
        /// Of the timeouts, those shown spurious and undone (timestamps, DSACK or
        /// F-RTO; Linux `TCPLossUndo` + `TCPSpuriousRTOs`).
        pub tcp_spurious_timeouts: u64 => (metric, "count", "spurious?", "tcp"),
        /// Tail loss probes sent (RACK-TLP; Linux `TCPLossProbes`).
        pub tcp_loss_probes: u64 => (metric, "count", "TLP?", "tcp"),
        /// Retransmissions found lost again (RACK; Linux `TCPLostRetransmit`).
        pub tcp_lost_retransmits: u64 => (metric, "count", "", ""),
        /// Loss episodes undone as needless (timeouts and fast recoveries).
        pub tcp_undos: u64 => (metric, "count", "undo?", "tcp"),
        /// DSACK blocks the sender received (RFC 2883; Linux `TCPDSACKRecv`).
        pub tcp_dsacks: u64 => (metric, "count", "", ""),
        /// Window reductions for an ECN echo (RFC 3168; Linux CWR entries).
        pub tcp_ecn_reductions: u64 => (metric, "count", "ECN?", "tcp"),
        /// Data segments the receiver got marked CE.
        pub tcp_ce_received: u64 => (metric, "count", "", ""),
        /// ACKs the receiver held back by compressed SACKs and never sent alone
        /// (`tcp.comp_sack_nr`; Linux `TCPAckCompressed`).
        pub tcp_acks_compressed: u64 => (metric, "count", "", ""),
        /// Slow starts ended by HyStart (CUBIC; Linux `TCPHystartTrainDetect` +
        /// `TCPHystartDelayDetect`).
        pub tcp_hystart_exits: u64 => (metric, "count", "", ""),
        /// The sender's pacing rate at the end (bit/s; BBR paces, the others do not).
        pub tcp_pacing_rate_bps: Option<f64> => (metric, "bit/s", "", ""),
        /// Mean of the RTT samples the sender's estimator took, the handshake's
        /// included: with timestamps one per ACK (the echo), without them one timed
        /// segment at a time (BSD, Karn's rule), with `rto = "linux"` the oldest
        /// segment each ACK newly covers. A capture's RTT (`thinwire analyze`,
        /// tcptrace) samples every data segment sent once, so the two differ.
        pub rtt_avg_s: Option<f64> => (metric, "s", "avg RTT|ms", "tcp"),
        pub segments_sent: u64 => (info, "count", "", ""),
        /// Web, http, ttcp: completed transactions (pages, downloads).
        pub transactions: Option<u64> => (info, "count", "", ""),
        /// Web, http, ttcp: each completed transaction's duration, from its first
        /// connection request to its last byte (ttcp: to the FIN).
        pub durations_s: Vec<f64> => (info, "list", "", ""),
        /// Media, probe: packets sent; interactive: messages written.
        pub packets_sent: Option<u64> => (metric, "count", "sent", "media"),
        pub packets_received: Option<u64> => (metric, "count", "received", "media"),
        /// Share of packets sent at least 5 s before the end that never arrived.
        pub loss: Option<f64> => (metric, "ratio", "loss|%", "media"),
        /// One-way delay (interactive: write to delivery) statistics.
        pub delay_mean_s: Option<f64> => (metric, "s", "mean delay|ms", "media"),
        pub delay_p50_s: Option<f64> => (metric, "s", "", ""),
        pub delay_p95_s: Option<f64> => (metric, "s", "p95 delay|ms", "media"),
        pub delay_max_s: Option<f64> => (metric, "s", "max delay|ms", "media"),
        /// Every received packet's one-way delay, in arrival order (ns).
        #[serde(skip)]
        pub delays_ns: Vec<i64> => (hidden, "ns", "", ""),
    }
}

impl FlowResult {
    /// Media statistics, for media, probe and interactive flows.
    /// The sender's counters (`snd`) and the receiver's (`rcv`).
    fn with_tcp(mut self, snd: &crate::tcp::TcpStats, rcv: &crate::tcp::TcpStats, pacing: Option<u64>) -> FlowResult {
        self.tcp_retransmits = snd.retransmits;
        self.tcp_syn_retransmits = snd.syn_retransmits + rcv.syn_retransmits;
        self.tcp_fin_retransmits = snd.fin_retransmits + rcv.fin_retransmits;
        self.tcp_timeouts = snd.timeouts;
        self.tcp_fast_retransmits = snd.fast_retransmits;
        self.tcp_spurious_timeouts = snd.spurious_timeouts;
        self.tcp_loss_probes = snd.loss_probes;
        self.tcp_lost_retransmits = snd.lost_retransmits;
        self.tcp_undos = snd.undos;
        self.tcp_dsacks = snd.dsacks_received;
        self.tcp_ecn_reductions = snd.ecn_reductions;
        self.tcp_ce_received = rcv.ce_received;
        self.tcp_acks_compressed = rcv.acks_compressed;
        self.tcp_hystart_exits = snd.hystart_exits;
        self.tcp_pacing_rate_bps = pacing.map(|r| r as f64 * 8.0);
        self.rtt_avg_s = (snd.rtt_samples > 0).then(|| snd.rtt_sum.as_secs_f64() / snd.rtt_samples as f64);
        self.segments_sent = snd.segments_sent;
        self
    }

    fn with_media(mut self, m: Option<MediaResult>) -> FlowResult {
        if let Some(m) = m {
            self.packets_sent = Some(m.packets_sent);
            self.packets_received = Some(m.packets_received);
            self.loss = Some(m.loss);
            self.delay_mean_s = m.delay_mean_s;
            self.delay_p50_s = m.delay_p50_s;
            self.delay_p95_s = m.delay_p95_s;
            self.delay_max_s = m.delay_max_s;
            self.delays_ns = m.delays_ns;
        }
        self
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// `stop = "end"`: every flow that ends by itself finished.
    Finished,
    /// `stop` is a duration and that time was reached.
    StopTime,
    /// `stop = "end"` but `max_time` came first: some flows did not finish.
    MaxTime,
    /// Nothing was left to happen while flows had not finished: they wait for ever
    /// (a window that never opens, a flow starting after `max_time`).
    Idle,
    /// Simulated time stopped advancing: [`STUCK_EVENTS`](crate::engine::sim::STUCK_EVENTS) events at one instant
    /// (a timer of zero length firing again and again). A model or range bug.
    Stuck,
    /// The caller's poll asked to stop (Ctrl-C).
    Interrupted,
}

impl EndReason {
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Finished => "finished",
            EndReason::StopTime => "stop",
            EndReason::MaxTime => "max_time",
            EndReason::Idle => "idle",
            EndReason::Stuck => "stuck",
            EndReason::Interrupted => "interrupted",
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunResult {
    /// Why the run ended.
    pub end: EndReason,
    /// Scenario flows that end by themselves but had not finished at the end.
    pub unfinished: Vec<usize>,
    pub events: u64,
    pub sim_time_s: f64,
    pub flows: Vec<FlowResult>,
    pub link: [LinkStats; 2],
    pub wired_drops: [u64; 2],
    /// The wired queues' counters (drops, the discipline's drops, ECN marks).
    pub wired: [crate::queue::wired::WiredStats; 2],
    /// Trace rows, when kept in memory (empty when streamed to `trace.parquet`).
    pub trace: TraceTable,
    /// Trace rows recorded, in memory or streamed.
    pub trace_rows: usize,
    /// pcap taps, when kept in memory.
    pub pcap_server: Option<Vec<u8>>,
    pub pcap_mobile: Option<Vec<u8>>,
    /// mm-link-format logs of the wireless link (down, up), when kept in memory.
    pub mm_logs: Option<[Vec<u8>; 2]>,
    /// Files streamed into the output folder ([`Sim::with_output_dir`]), complete.
    pub files: Vec<&'static str>,
    /// The first error writing a streamed file (file and reason); the run stopped
    /// at its next poll and the files are incomplete.
    pub output_error: Option<String>,
    /// The split-TCP proxy's counters, if the scenario has one.
    pub proxy: Option<crate::proxy::ProxyStats>,
}

impl Sim {
    /// Every scenario flow's result at the end `end`, and the flows that end by
    /// themselves but had not finished.
    pub(super) fn flow_results(&self, end: Instant) -> (Vec<FlowResult>, Vec<usize>) {
        let mut unfinished = vec![];
        for slot in &self.slots {
            match *slot {
                Slot::Tcp(t) if self.flows[t].bytes.is_some() && self.flows[t].completed.is_none() => {
                    unfinished.push(self.flows[t].id)
                }
                Slot::Web(w) if self.webs[w].unfinished() => unfinished.push(self.webs[w].id),
                _ => {}
            }
        }
        let mut flows = Vec::new();
        for slot in &self.slots {
            flows.push(match *slot {
                Slot::Tcp(t) => {
                    let f = &self.flows[t];
                    let recv = &f.ep[1 - f.sender];
                    let snd = &f.ep[f.sender];
                    let delivered = recv.delivered();
                    let span = (f.completed.unwrap_or(end) - f.start).as_secs_f64();
                    FlowResult {
                        id: f.id,
                        app: f.cfg.app().into(),
                        direction: f.cfg.direction().name().into(),
                        mobile: f.cfg.mobile(),
                        variant: snd.cfg.variant_name(),
                        start_s: f.start.as_secs_f64(),
                        bytes_delivered: delivered,
                        throughput_bps: if span > 0.0 { delivered as f64 * 8.0 / span } else { 0.0 },
                        completion_s: f.completed.map(|c| (c - f.start).as_secs_f64()),
                        ..FlowResult::default()
                    }
                    .with_tcp(snd.stats(), recv.stats(), snd.pacing_rate())
                    .with_media(f.chat.as_ref().map(|c| c.result()))
                }
                Slot::Web(w) => {
                    let wb = &self.webs[w];
                    let span = wb.last_done.map(|t| (t - wb.start).as_secs_f64()).unwrap_or(0.0);
                    // Every connection's counters; each connection's server sends.
                    let [mut snd, mut rcv] = wb.retired.clone();
                    for &c in &wb.conns {
                        snd += self.flows[c].ep[0].stats();
                        rcv += self.flows[c].ep[1].stats();
                    }
                    FlowResult {
                        id: wb.id,
                        app: wb.cfg.app().into(),
                        direction: "down".into(),
                        mobile: wb.cfg.mobile(),
                        variant: build::tcp_config(&wb.cfg).variant_name(),
                        start_s: wb.start.as_secs_f64(),
                        bytes_delivered: wb.bytes_done,
                        throughput_bps: if span > 0.0 { wb.bytes_done as f64 * 8.0 / span } else { 0.0 },
                        completion_s: wb.last_done.map(|t| (t - wb.start).as_secs_f64()),
                        transactions: Some(wb.done),
                        durations_s: wb.durations.clone(),
                        ..FlowResult::default()
                    }
                    .with_tcp(&snd, &rcv, None)
                    .with_media(None)
                }
                Slot::Media(m) => {
                    let m = &self.media[m];
                    let span = (end - m.start).as_secs_f64();
                    FlowResult {
                        id: m.id,
                        app: match m.src {
                            crate::app::UdpSource::Media(_) => "media",
                            crate::app::UdpSource::Probe(_) => "probe",
                        }
                        .into(),
                        direction: if m.sender == 0 { "down".into() } else { "up".into() },
                        mobile: m.mobile,
                        variant: "udp".into(),
                        start_s: m.start.as_secs_f64(),
                        bytes_delivered: m.bytes,
                        throughput_bps: if span > 0.0 { m.bytes as f64 * 8.0 / span } else { 0.0 },
                        completion_s: None,
                        segments_sent: m.sent_born.n,
                        ..FlowResult::default()
                    }
                    .with_media(Some(media_result(m, end)))
                }
            });
        }
        (flows, unfinished)
    }
}
