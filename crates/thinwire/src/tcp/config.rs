//! TCP endpoint configuration and its defaults.
use super::cc::CcKind;
use super::recovery::RecoveryKind;
use super::rtt::RtoKind;
use crate::time::Duration;

/// How the window restarts after an idle period (`tcp.idle_restart`, with
/// `slow_start_after_idle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub enum IdleRestart {
    /// RFC 5681 §4.1: cwnd = min(cwnd, initial window) after an idle RTO (the
    /// seeds' description: "set back to its initial two segment value").
    #[default]
    #[serde(rename = "rfc5681")]
    Rfc5681,
    /// Linux `tcp_cwnd_restart` (RFC 2861 §3; Linux 2.4 and 6.x alike): cwnd
    /// halves once per RTO of the idle period, down to that restart window, in
    /// whole segments, and ssthresh keeps three quarters of the window.
    #[serde(rename = "linux")]
    Linux,
}

/// ECN negotiation (RFC 3168 §6.1.1; Linux `net.ipv4.tcp_ecn`): `tcp.ecn`
/// takes `false` / `"off"`, `true` / `"on"` or `"accept"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ecn {
    /// Never (`tcp_ecn` = 0).
    #[default]
    Off,
    /// Requested when connecting, accepted when asked (`tcp_ecn` = 1).
    On,
    /// Accepted when the peer asks, never requested (`tcp_ecn` = 2, Linux's default).
    Accept,
}

impl Ecn {
    pub fn name(self) -> &'static str {
        match self {
            Ecn::Off => "off",
            Ecn::On => "on",
            Ecn::Accept => "accept",
        }
    }
}

impl<'de> serde::Deserialize<'de> for Ecn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            B(bool),
            S(String),
        }
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected true, false, \"on\", \"off\" or \"accept\""))?
        {
            Raw::B(b) => Ok(if b { Ecn::On } else { Ecn::Off }),
            Raw::S(s) => match s.as_str() {
                "on" => Ok(Ecn::On),
                "off" => Ok(Ecn::Off),
                "accept" => Ok(Ecn::Accept),
                _ => Err(serde::de::Error::custom(format!("{s:?} is not one of \"on\", \"off\" or \"accept\""))),
            },
        }
    }
}

/// The seeds' TCP variants, a shorthand (`tcp.variant`) for a congestion
/// controller with a loss-recovery algorithm: each is Reno's window growth with
/// the recovery of the same name ([`Variant::parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Tahoe,
    Reno,
    NewReno,
    Sack,
}

impl Variant {
    pub fn parse(s: &str) -> Option<Variant> {
        Some(match s.to_ascii_lowercase().as_str() {
            "tahoe" => Variant::Tahoe,
            "reno" => Variant::Reno,
            "newreno" | "new-reno" => Variant::NewReno,
            "sack" => Variant::Sack,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Variant::Tahoe => "tahoe",
            Variant::Reno => "reno",
            Variant::NewReno => "newreno",
            Variant::Sack => "sack",
        }
    }
    /// The congestion controller and loss recovery this variant stands for.
    pub fn parts(self) -> (CcKind, RecoveryKind) {
        let r = match self {
            Variant::Tahoe => RecoveryKind::Tahoe,
            Variant::Reno => RecoveryKind::Reno,
            Variant::NewReno => RecoveryKind::NewReno,
            Variant::Sack => RecoveryKind::Sack,
        };
        (CcKind::Rfc5681, r)
    }
}

/// Every parameter of the TCP model. Defaults follow the RFCs named beside each
/// field; `timer_granularity` follows seed 002 §III (10 ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpConfig {
    /// Congestion control (`cc/`): how the window grows and what ssthresh becomes
    /// after a loss. Default `reno` (RFC 5681).
    pub cc: CcKind,
    /// Loss recovery (`recovery/`): Tahoe, Reno (RFC 5681), NewReno (RFC 6582),
    /// SACK (RFC 6675). Default NewReno.
    pub recovery: RecoveryKind,
    /// MSS advertised and used: data + TCP options per segment (RFC 6691). Default 1460.
    pub mss: u32,
    /// Offer SACK (RFC 2018). Default: true for variant `sack`, false otherwise.
    pub sack: bool,
    /// Offer timestamps (RFC 7323). Default false.
    pub timestamps: bool,
    /// Offer window scaling when the receive buffer exceeds 64 KiB. Default true.
    pub window_scaling: bool,
    /// Initial window in segments (RFC 5681 allows up to 4 for small MSS). Default 2.
    pub initial_window: u32,
    /// ACK every `delack_count` full segments (RFC 5681 §4.2). Default 2; 1 disables delay.
    pub delack_count: u32,
    /// Delayed-ACK timeout. Default 200 ms (RFC 1122 requires < 500 ms).
    pub delack_timeout: Duration,
    /// RFC 6298 minimum RTO. Default 1 s.
    pub min_rto: Duration,
    /// Maximum RTO. Default 64 s (BSD TCPTV_REXMTMAX).
    pub max_rto: Duration,
    /// RTO before the first sample. Default 1 s (RFC 6298 §2.1).
    pub initial_rto: Duration,
    /// Clock granularity G: RTO = SRTT + max(G, 4·RTTVAR), timers fire on multiples of G. Default 10 ms.
    pub timer_granularity: Duration,
    /// Receive buffer (the advertised window's ceiling). Default 64 KiB.
    pub rcv_buf: u32,
    /// Send buffer: ceiling on unacknowledged data. Default 64 KiB.
    pub snd_buf: u32,
    /// A drop at the sending host's own interface queue is reported to TCP as a
    /// source quench (BSD `tcp_quench`: cwnd to one segment; seed 000 Fig. 7).
    /// Default false (Linux-like: the queue pushes back instead).
    pub source_quench: bool,
    /// Initial advertised window; it then grows by two segments per data segment
    /// received, up to `rcv_buf` (Linux's `rcv_ssthresh`; seed 003: 5392 bytes).
    /// Default none: the whole buffer from the start.
    pub rcv_wnd_initial: Option<u32>,
    /// RFC 5681 §4.1 / Linux `tcp_slow_start_after_idle`: new data after an idle
    /// period longer than the RTO restarts the window as `idle_restart` says.
    /// Default false.
    pub slow_start_after_idle: bool,
    /// How: `rfc5681` (to min(cwnd, initial window) at once) or `linux` (halved
    /// per RTO idle down to it, ssthresh kept at ¾ of the window). Default
    /// `rfc5681`; `linux` in the `linux-2.4` and `linux` profiles.
    pub idle_restart: IdleRestart,
    /// Fixed congestion window in bytes, kept through losses and timeouts (seed 003
    /// §V "TCP clamp": no slow start, no reduction; C_clamp ≈ the link's bandwidth-
    /// delay product plus headroom). Default none.
    pub cwnd_clamp: Option<u32>,
    /// The retransmission timer (`tcp/rtt.rs`): `rfc6298`, or `linux` — Linux's
    /// estimator and, with it, Linux's timeout handling in the endpoint: an RTT
    /// sample from every ACK of data never retransmitted (the oldest segment it
    /// acknowledges; timestamps only when there is none), the timer restarted when
    /// the first unacknowledged segment is retransmitted, the 3 s fallback when the
    /// handshake gave no sample, cwnd of one segment after two or more lost
    /// SYNs/SYN-ACKs (`tcp_init_transfer`), at a timeout (`tcp_enter_loss`) the
    /// SACK scoreboard kept and ssthresh reduced once per loss episode, and a
    /// spurious timeout undone when an ACK echoes a timestamp older than the first
    /// retransmission (RFC 3522 Eifel, `tcp_try_undo_loss`). Default `rfc6298`.
    pub rto: RtoKind,
    /// SYN retransmissions before the SYN timer backs off (Linux
    /// `tcp_syn_linear_timeouts`, 4 since 6.5: SYNs at 0, 1, 2, 3, 4, 5, 7, 11 s…).
    /// Only the active opener; SYN-ACKs back off at once. Default 0.
    pub syn_linear_timeouts: u32,
    /// Timers fire as Linux's timer wheel fires them (`tcp/wheel.rs`: whole
    /// jiffies of `timer_granularity`, then up to one bucket late — 32 ms on a
    /// 1 s timer, 256 ms on a 4 s one at 4 ms jiffies): the retransmission timer,
    /// the tail loss probe, RACK's reordering timer and the delayed ACK. Without
    /// it the retransmission timer's deadline is rounded up to the granularity
    /// and the others are exact. Default false.
    pub timer_wheel: bool,
    /// RFC 3042 limited transmit: the first and second duplicate ACKs each let one
    /// new segment out beyond cwnd (if the receiver's window allows). Default false.
    pub limited_transmit: bool,
    /// RFC 2883 DSACK: the receiver reports a duplicate segment in the first SACK
    /// block (Linux `tcp_dsack`). The sender reads DSACKs whatever this says, and
    /// with `rto = "linux"` undoes an episode whose retransmissions were all
    /// duplicates (`tcp_try_undo_dsack`). Default false.
    pub dsack: bool,
    /// RFC 5682 F-RTO, SACK-enhanced, as Linux (`tcp_frto` = 2, `tcp_process_loss`):
    /// after a timeout the first ACK lets new data out instead of more
    /// retransmissions, and an ACK of data never retransmitted shows the timeout
    /// spurious (undone). Needs a recovery that marks losses itself (`rack`).
    /// Default false.
    pub frto: bool,
    /// RFC 3168 ECN: negotiated in the handshake; then new data goes out ECT(0),
    /// the receiver echoes a CE mark with ECE on every ACK until a segment with
    /// CWR arrives, and the sender reduces once per window of data (Linux
    /// `tcp_enter_cwr`: the controller's ssthresh, PRR's window with `prr` and
    /// `rack`, else cwnd = ssthresh at once as RFC 3168 §6.1.2 says) and sets CWR
    /// on its next new segment. Default off.
    pub ecn: Ecn,
    /// Linux's receiver ACK policy (`tcp/delack.rs`): quick ACKs for the first
    /// segments, after a silence, a duplicate or a CE mark, and a delayed-ACK
    /// timeout that adapts to the gaps between segments (from `delack_timeout`,
    /// at most 200 ms). Default false: `delack_count` segments or `delack_timeout`.
    pub quickack: bool,
    /// The FIN rides on the last data segment when the application has closed
    /// before it is sent, and on its retransmissions (BSD's `tcp_output`, Linux's
    /// `tcp_send_fin`), so a lost tail takes the FIN with it and the loss probe
    /// resends both. Default false: a FIN segment of its own after the data (the
    /// seed studies' behaviour, kept).
    pub fin_with_data: bool,
    /// The receiver's TS.Recent as RFC 7323 §4.3 and Linux
    /// (`tcp_replace_ts_recent`) keep it: taken only from a segment that reaches
    /// the last ACK sent (`rcv_wup`), so a delayed ACK echoes the first
    /// unacknowledged segment's TSval and a duplicate ending before that point refreshes nothing.
    /// Default false: every segment at or below rcv_nxt refreshes it (the seed
    /// studies' behaviour, kept).
    pub ts_recent_at_ack_point: bool,
    /// How the receiver computes the window it advertises: `buffer` (the free
    /// space of `rcv_buf`, as BSD's `sbspace`, from `rcv_wnd_initial` when set)
    /// or `linux` (`tcp/rwnd.rs`: Linux 6.x's memory accounting of `rcv_buf`
    /// as `tcp_rmem[1]`, `rcv_ssthresh` growth, no shrinking, and with
    /// `autotune` the buffer's growth up to `rcv_buf_max`). Default `buffer`.
    pub rwnd: Rwnd,
    /// The largest receive buffer autotuning may reach (Linux `tcp_rmem[2]`);
    /// with `rwnd = "linux"` it also sets the window scale offered. Default 32 MiB.
    pub rcv_buf_max: u32,
    /// Receive-buffer autotuning (Linux `tcp_moderate_rcvbuf`, dynamic
    /// right-sizing); only with `rwnd = "linux"`. Default false.
    pub autotune: bool,
    /// Which new segments carry PSH: `segment` (every new data segment) or
    /// `chunk` (Linux: the last segment of each TSO/GSO chunk the kernel sends
    /// at once, `tcp_tso_autosize`; none on retransmissions). With `quickack`
    /// a full-sized segment with PSH is acknowledged when the application reads
    /// it (Linux 6.6+). Default `segment`.
    pub push: Push,
    /// Linux's compressed SACKs (`tcp_comp_sack_nr`): after three duplicate
    /// ACKs for the same `rcv_nxt`, the ACKs an out-of-order segment asks for
    /// are held up to `comp_sack_delay` (at most 5 % of the RTT), up to this many
    /// (`tcp/compsack.rs`). Needs `quickack` and SACK. Default 0 (off).
    pub comp_sack_nr: u32,
    /// `tcp_comp_sack_delay_ns`. Default 1 ms.
    pub comp_sack_delay: Duration,
}

/// Which segments carry PSH (`tcp.push`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Push {
    #[default]
    Segment,
    Chunk,
}

/// The receiver's window computation (`tcp.rwnd`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rwnd {
    #[default]
    Buffer,
    Linux,
}

impl TcpConfig {
    /// The name results give the sender's algorithms: the seeds' variant name for
    /// Reno's window with one of their recoveries (`newreno`), otherwise
    /// `CC+RECOVERY`.
    pub fn variant_name(&self) -> String {
        match self.cc {
            CcKind::Rfc5681 => self.recovery.name().to_string(),
            cc => format!("{}+{}", cc.name(), self.recovery.name()),
        }
    }
    /// This configuration with the controller and recovery of a seeds' variant
    /// (and SACK offered for `sack`, as without a profile).
    pub fn with_variant(self, v: Variant) -> TcpConfig {
        let (cc, recovery) = v.parts();
        TcpConfig { cc, recovery, sack: v == Variant::Sack, ..self }
    }
    /// The names [`profile`](Self::profile) knows.
    pub const PROFILES: [&'static str; 4] = ["default", "bsd", "linux-2.4", "linux"];
    /// Named presets; the scenario's own fields override them.
    /// - `"default"`: the defaults above.
    /// - `"bsd"`: a 4.4BSD-derived stack as in seed 000 (BSD/OS 3.0): Reno, 500 ms
    ///   timer ticks (TCP's slow timer), timestamps (RFC 1323, which BSD/OS used), initial RTO 6 s,
    ///   minimum RTO 1 s (two ticks), maximum 64 s, initial window of one segment,
    ///   8 KiB socket buffers, no SACK, no window scaling, source quench on local
    ///   interface-queue drops.
    /// - `"linux-2.4"`: a Linux 2.4-era stack as in seeds 003/004: SACK, timestamps,
    ///   initial window 2, no window scaling (so a 64 KB window limit), an initial
    ///   advertised window of 5392 bytes growing as data arrives, slow-start restart
    ///   after idle (the kernel's: `idle_restart = "linux"`), initial RTO 3 s, minimum RTO 200 ms, maximum 120 s.
    /// - `"linux"`: Linux 6.x's defaults (`net/ipv4/tcp_*.c`, `sysctl net.ipv4.tcp_*`):
    ///   CUBIC with RACK and PRR (`rack`), SACK, timestamps, window scaling, initial window 10
    ///   (RFC 6928), `rto = "linux"` (min 200 ms, max 120 s, initial 1 s, 3 s
    ///   fallback), linear SYN timeouts (4), limited transmit, 4 ms timer ticks
    ///   (`CONFIG_HZ=250`) on the kernel's timer wheel (`timer_wheel`, `tcp/wheel.rs`), delayed ACKs after 2 segments or 40 ms (`TCP_ATO_MIN`),
    ///   slow-start restart after idle (`tcp_slow_start_after_idle` = 1,
    ///   `tcp_cwnd_restart`: `idle_restart = "linux"`), the
    ///   kernel's receive window (`rwnd = "linux"`, `tcp/rwnd.rs`) from a
    ///   131,072-byte buffer (`tcp_rmem[1]`: 64,240 B in the SYN, window scale 10)
    ///   autotuned up to 32 MiB (`tcp_rmem[2]` of Linux 6.18), send buffer 4 MiB
    ///   (`tcp_wmem[2]`), DSACK (`tcp_dsack` = 1), F-RTO (`tcp_frto` = 2), ECN
    ///   accepted when the peer asks (`tcp_ecn` = 2), the kernel's quick ACKs and
    ///   adaptive delayed-ACK timeout (`quickack`), the FIN on the last data
    ///   segment (`fin_with_data`), TS.Recent from the segment at the last ACK
    ///   sent (`ts_recent_at_ack_point`), PSH on the last segment of each
    ///   TSO/GSO chunk (`push = "chunk"`), compressed SACKs (`comp_sack_nr` =
    ///   44, `comp_sack_delay` = 1 ms). Only BBR paces (the kernel paces CUBIC
    ///   and Reno only under the `fq` qdisc, which the emulator's hosts do not use).
    pub fn profile(name: &str) -> Option<TcpConfig> {
        let d = TcpConfig::default();
        match name {
            "default" => Some(d),
            "bsd" => Some(TcpConfig {
                recovery: RecoveryKind::Reno,
                sack: false,
                timestamps: true,
                window_scaling: false,
                initial_window: 1,
                initial_rto: Duration::from_secs(6),
                min_rto: Duration::from_secs(1),
                max_rto: Duration::from_secs(64),
                timer_granularity: Duration::from_millis(500),
                rcv_buf: 8192,
                snd_buf: 8192,
                source_quench: true,
                ..d
            }),
            "linux-2.4" => Some(TcpConfig {
                recovery: RecoveryKind::Sack,
                sack: true,
                timestamps: true,
                window_scaling: false,
                initial_window: 2,
                initial_rto: Duration::from_secs(3),
                min_rto: Duration::from_millis(200),
                max_rto: Duration::from_secs(120),
                timer_granularity: Duration::from_millis(10),
                rcv_buf: 65535,
                snd_buf: 65535,
                rcv_wnd_initial: Some(5392),
                slow_start_after_idle: true,
                idle_restart: IdleRestart::Linux,
                ..d
            }),
            "linux" => Some(TcpConfig {
                cc: CcKind::Cubic,
                recovery: RecoveryKind::Rack,
                sack: true,
                timestamps: true,
                window_scaling: true,
                initial_window: 10,
                delack_count: 2,
                delack_timeout: Duration::from_millis(40),
                initial_rto: Duration::from_secs(1),
                min_rto: Duration::from_millis(200),
                max_rto: Duration::from_secs(120),
                timer_granularity: Duration::from_millis(4),
                rcv_buf: 131_072,
                snd_buf: 4 << 20,
                rcv_wnd_initial: None,
                rwnd: Rwnd::Linux,
                rcv_buf_max: 32 << 20,
                autotune: true,
                slow_start_after_idle: true,
                idle_restart: IdleRestart::Linux,
                rto: RtoKind::Linux,
                syn_linear_timeouts: 4,
                timer_wheel: true,
                limited_transmit: true,
                dsack: true,
                frto: true,
                ecn: Ecn::Accept,
                quickack: true,
                fin_with_data: true,
                ts_recent_at_ack_point: true,
                push: Push::Chunk,
                comp_sack_nr: 44,
                ..d
            }),
            _ => None,
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcKind::Rfc5681,
            recovery: RecoveryKind::NewReno,
            mss: 1460,
            sack: false,
            timestamps: false,
            window_scaling: true,
            initial_window: 2,
            delack_count: 2,
            delack_timeout: Duration::from_millis(200),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(64),
            initial_rto: Duration::from_secs(1),
            timer_granularity: Duration::from_millis(10),
            rcv_buf: 65536,
            snd_buf: 65536,
            source_quench: false,
            rcv_wnd_initial: None,
            slow_start_after_idle: false,
            idle_restart: IdleRestart::Rfc5681,
            cwnd_clamp: None,
            rto: RtoKind::Rfc6298,
            syn_linear_timeouts: 0,
            timer_wheel: false,
            limited_transmit: false,
            dsack: false,
            frto: false,
            ecn: Ecn::Off,
            quickack: false,
            fin_with_data: false,
            ts_recent_at_ack_point: false,
            rwnd: Rwnd::Buffer,
            rcv_buf_max: 32 << 20,
            autotune: false,
            push: Push::Segment,
            comp_sack_nr: 0,
            comp_sack_delay: Duration::from_millis(1),
        }
    }
}
