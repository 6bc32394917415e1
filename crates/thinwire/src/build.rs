//! The one place a typed [`Scenario`] becomes model objects: each model starts from
//! its own `Default` (or named preset) and takes what the scenario sets. The
//! simulator, the emulator and the examples build through these functions.
//!
//! Defaults that belong to the topology rather than to a model are here: wired
//! queue 1000 packets; wireless IP queue 50 packets per session (the BSD interface
//! default), 120 KB for GPRS (the gateway's downlink buffer, seed 003 §IV-B, seed
//! 004 §III); shared frame queue 50 frames; `max_time` 100000 s for `stop = "end"`.
//! Random streams are labelled per component (`channel.down`, `gprs.outage`,
//! `flow.3.isn`, ...), so adding one does not shift another's draws.
use crate::app::media::{MediaConfig, MediaSource};
use crate::app::probe::{ProbeConfig, ProbeSource};
use crate::app::{interactive::InteractiveConfig, session::SessionConfig, UdpSource};
use crate::channel::{Channel, Fading, TwoState};
use crate::config::flow::{HttpCfg, InteractiveCfg, MediaCfg, ProbeCfg, TtcpCfg, WebCfg};
use crate::config::link::{DropListCfg, FadingCfg, TwoStateCfg, UniformCfg};
use crate::config::{ChannelCfg, FlowCfg, Limit, MuxCfg, QueueCfg, Scenario, SchedulerCfg};
use crate::link::{
    wireless::{DirConfig, Mux, Scheduler, Session, WirelessConfig, WirelessLink},
    Arq, LinkCfg, LinkInit,
};
use crate::queue::wired::WiredLink;
use crate::queue::{QdiscConfig, Queue};
use crate::rng::Rng;
use crate::tcp::{Tcp, TcpConfig, Variant};
use crate::time::{Duration, Instant};

pub const DIR_NAMES: [&str; 2] = ["down", "up"];

/// Wired queue default (packets).
pub const WIRED_QUEUE: Limit = Limit::Packets(1000);
/// Wireless IP queue default per session.
pub const WIRELESS_QUEUE: Limit = Limit::Packets(50);
/// The GPRS gateway's downlink buffer.
pub const GPRS_QUEUE: Limit = Limit::Bytes(120_000);
/// Shared frame queue default (frames).
pub const FRAME_QUEUE: usize = 50;
/// Upper bound on simulated time when `stop = "end"`.
pub use crate::config::MAX_TIME;

/// A queue's discipline from its settings (`None`: drop-tail), with the
/// position's `default` limit and the link's `rate` (RED's idle decay). Each
/// discipline's other parameters keep the model's defaults unless set.
pub fn qdisc_config(q: Option<&QueueCfg>, default: Limit, rate: u64) -> QdiscConfig {
    QdiscConfig::from_section(q, default, rate)
}

/// A queue of `cfg` with its own random stream `queue.<label>`.
fn queue(sc: &Scenario, cfg: QdiscConfig, label: &str) -> Queue {
    Queue::new(cfg, Rng::stream(sc.seed, sc.run, &format!("queue.{label}")))
}

/// When the run ends at the latest.
pub fn max_time(sc: &Scenario) -> Instant {
    Instant::ZERO + sc.end_time()
}

/// The wired link of direction `d` (0 = down, from the server).
pub fn wired(sc: &Scenario, d: usize) -> WiredLink {
    let (rate, delay) = (sc.wired.rate.0, sc.wired.delay.0);
    let cfg = qdisc_config(sc.wired.queue(d), WIRED_QUEUE, rate);
    WiredLink::with_queue(rate, delay, queue(sc, cfg, &format!("wired.{}", DIR_NAMES[d])))
}

/// The wireless link of `[wireless]`: per-direction rate, delay, channel and IP
/// queue, the configured protocol at both ends and the multiplexer.
pub fn wireless(sc: &Scenario) -> WirelessLink {
    let w = &sc.wireless;
    let dir = |d: usize| {
        let rate = dir_rate(sc, d);
        let delay = w.dir(d).and_then(|s| s.delay).map(|r| r.0).unwrap_or(w.delay.0);
        DirConfig { rate, delay, queue: wireless_queue(sc, d).limit }
    };
    let dirs = [dir(0), dir(1)];
    let scheduler = match w.scheduler.unwrap_or_default() {
        SchedulerCfg::RoundRobin => Scheduler::RoundRobin,
        SchedulerCfg::ArqFirst => Scheduler::ArqFirst,
        SchedulerCfg::BypassFirst => Scheduler::BypassFirst,
    };
    let mux = match w.mux.unwrap_or_default() {
        MuxCfg::SharedQueue => Mux::SharedQueue { limit: w.frame_queue.map_or(FRAME_QUEUE, |n| n as usize) },
        MuxCfg::Pull => Mux::Pull(scheduler),
    };
    let header = w.header().0;
    let cfg = WirelessConfig { dirs, frame: w.frame.0 as u32, header: header as u32, mux };
    let airtime = |d: usize| Duration::transmission(w.frame.0 + header, dirs[d].rate);
    let mut link =
        WirelessLink::new(cfg, [arq(sc, 0), arq(sc, 1)], [channel(sc, 0, airtime(0)), channel(sc, 1, airtime(1))]);
    for (d, dname) in DIR_NAMES.iter().enumerate() {
        if let Some((t, s)) = w.dir(d).and_then(|s| s.delivery.clone().map(|t| (t, s))) {
            link.set_capacity(d, crate::link::capacity::TraceCapacity::new(t, s.delivery_repeats()));
        }
        for (session, name) in [(Session::Arq, "arq"), (Session::Bypass, "bypass")] {
            let label = format!("wireless.{dname}.{name}");
            let cfg = if session == Session::Bypass { wireless_bypass_queue(sc, d) } else { wireless_queue(sc, d) };
            link.set_queue(d, session, queue(sc, cfg, &label));
        }
    }
    let mobiles = sc.flow.iter().map(|f| f.mobile() as usize + 1).max().unwrap_or(1);
    add_mobiles(sc, &mut link, mobiles);
    link
}

/// Gives the link's cell mobiles 1..`mobiles` (`WirelessLink::add_mobile`): each
/// its own link-layer entities (GPRS with random streams of its own) and IP
/// queues, configured as mobile 0's. Their sessions are `Session::Mobile(k)`.
pub fn add_mobiles(sc: &Scenario, link: &mut WirelessLink, mobiles: usize) {
    for k in link.mobiles()..mobiles {
        let queues = [0, 1].map(|d| queue(sc, wireless_queue(sc, d), &format!("wireless.{}.arq.m{k}", DIR_NAMES[d])));
        link.add_mobile([arq_of(sc, 0, k), arq_of(sc, 1, k)], queues);
    }
}

/// The ARQ session's IP queue of wireless direction `d` (default drop-tail of
/// 50 packets, GPRS 120 KB).
pub fn wireless_queue(sc: &Scenario, d: usize) -> QdiscConfig {
    qdisc_config(sc.wireless.queue(d), wireless_default(sc), dir_rate(sc, d))
}

/// The bypass session's IP queue of direction `d` (default: as the ARQ session's).
pub fn wireless_bypass_queue(sc: &Scenario, d: usize) -> QdiscConfig {
    qdisc_config(sc.wireless.bypass_queue(d), wireless_default(sc), dir_rate(sc, d))
}

fn wireless_default(sc: &Scenario) -> Limit {
    if matches!(sc.wireless.arq, Some(LinkCfg::Gprs(_))) {
        GPRS_QUEUE
    } else {
        WIRELESS_QUEUE
    }
}

/// mm-link-format logs of both directions of the wireless link (`trace::mahimahi`),
/// written to `w` (0 = down, 1 = up); `command` goes in their header.
pub fn mm_logs<W: std::io::Write>(
    sc: &Scenario,
    w: [W; 2],
    command: &str,
) -> std::io::Result<crate::trace::mahimahi::MmLogs<W>> {
    use crate::trace::mahimahi::{Capacity, MmLog, MmLogs};
    let [w0, w1] = w;
    let log = |d: usize, w: W| {
        let q = wireless_queue(sc, d);
        let queue = match q.limit {
            Limit::Packets(n) => format!("{} [packets={n}]", q.kind().name()),
            Limit::Bytes(n) => format!("{} [bytes={n}]", q.kind().name()),
        };
        let traced = sc.wireless.dir(d).and_then(|s| s.delivery.clone().map(|t| (t, s)));
        let (source, cap) = match traced {
            Some((t, s)) => {
                (s.delivery_trace.clone().unwrap_or_default(), Capacity::Trace(t.opportunities(s.delivery_repeats())))
            }
            None => (format!("{} bit/s", dir_rate(sc, d)), Capacity::rate(dir_rate(sc, d))),
        };
        MmLog::new(w, if d == 0 { "downlink" } else { "uplink" }, &source, &queue, command, cap)
    };
    Ok(MmLogs { dirs: [log(0, w0)?, log(1, w1)?] })
}

/// Direction `d`'s rate in bit/s: its own `rate`, the mean capacity of its
/// delivery trace, or `[wireless] rate`.
pub fn dir_rate(sc: &Scenario, d: usize) -> u64 {
    let w = &sc.wireless;
    let traced = w.dir(d).and_then(|s| s.delivery.as_ref()).map(|t| t.mean_rate());
    let own = w.dir(d).and_then(|s| s.rate).map(|r| r.0).or(traced);
    own.or(w.rate.map(|r| r.0)).expect("validated: every direction has a rate")
}

/// The channel of direction `dir`, its own random stream `channel.down`/`.up`.
pub fn channel(sc: &Scenario, dir: usize, frame_airtime: Duration) -> Channel {
    let w = &sc.wireless;
    let cfg = w.dir(dir).and_then(|d| d.channel.clone()).or_else(|| w.channel.clone()).unwrap_or(ChannelCfg::None);
    let rng = Rng::stream(sc.seed, sc.run, &format!("channel.{}", DIR_NAMES[dir]));
    match cfg {
        ChannelCfg::None => Channel::None,
        ChannelCfg::Uniform(UniformCfg { p }) => Channel::Uniform { p, rng },
        ChannelCfg::TwoState(TwoStateCfg { good, bad }) => {
            Channel::TwoState(TwoState::new(good.ber, good.mean.0, bad.ber, bad.mean.0, rng))
        }
        ChannelCfg::Fading(FadingCfg { pe, fdt, frame_time }) => {
            Channel::Fading(Fading::new(pe, fdt, Some(frame_time.map(|d| d.0).unwrap_or(frame_airtime)), rng))
        }
        ChannelCfg::DropList(DropListCfg { frames }) => Channel::droplist(frames),
        ChannelCfg::Trace(t) => {
            let f = t.loaded.expect("a channel trace is read when the scenario is parsed");
            let name = t.section.as_deref().unwrap_or(DIR_NAMES[dir]);
            let trace = if name == "down" { f.down.clone() } else { f.up.clone() };
            let trace = trace.expect("checked when the scenario was parsed");
            Channel::Trace { trace, repeat: t.repeat.unwrap_or(true) }
        }
    }
}

/// The link protocol at end `side`: 0 is the gateway (network side), 1 the mobile.
pub fn arq(sc: &Scenario, side: usize) -> Arq {
    arq_of(sc, side, 0)
}

/// The link protocol of mobile `mobile`'s session at end `side`.
fn arq_of(sc: &Scenario, side: usize, mobile: usize) -> Arq {
    let init = LinkInit { max_payload: sc.wireless.frame.0 as u32, side, mobile, seed: sc.seed, run: sc.run };
    sc.wireless.link().get().build(&init)
}

/// What a scenario's settings risk that the user may not intend (each a sentence
/// for a warning; the run goes ahead): an RLC configuration that can leave a lost
/// last PDU waiting for seconds.
pub fn warnings(sc: &Scenario) -> Vec<String> {
    let w = sc.wireless.arq.as_ref().and_then(|a| a.get().warning(sc.wireless.frame.0 as u32));
    w.map(|w| format!("wireless.arq: {w}")).into_iter().collect()
}

/// A flow's TCP settings: the profile (default "default"), then the fields set.
pub fn tcp_config(f: &FlowCfg) -> TcpConfig {
    let Some(t) = f.tcp() else {
        return TcpConfig::default();
    };
    let d = t.profile.as_deref().and_then(TcpConfig::profile).unwrap_or_default();
    // The profile's algorithms, or the variant's (a shorthand), or those named.
    let (mut cc, mut recovery) =
        t.variant.as_deref().and_then(Variant::parse).map_or((d.cc, d.recovery), Variant::parts);
    cc = t.cc.unwrap_or(cc);
    recovery = t.recovery.unwrap_or(recovery);
    TcpConfig {
        cc,
        recovery,
        mss: t.mss.unwrap_or(d.mss),
        // Without a profile, SACK is offered when the recovery uses it.
        sack: t.sack.unwrap_or(if t.profile.is_some() { d.sack } else { recovery.uses_sack() }),
        timestamps: t.timestamps.unwrap_or(d.timestamps),
        window_scaling: t.window_scaling.unwrap_or(d.window_scaling),
        initial_window: t.initial_window.unwrap_or(d.initial_window),
        delack_count: t.delayed_ack.as_ref().and_then(|x| x.count).unwrap_or(d.delack_count).max(1),
        delack_timeout: t.delayed_ack.as_ref().and_then(|x| x.timeout).map(|x| x.0).unwrap_or(d.delack_timeout),
        min_rto: t.min_rto.map(|x| x.0).unwrap_or(d.min_rto),
        max_rto: t.max_rto.map(|x| x.0).unwrap_or(d.max_rto),
        initial_rto: t.initial_rto.map(|x| x.0).unwrap_or(d.initial_rto),
        timer_granularity: t.timer_granularity.map(|x| x.0).unwrap_or(d.timer_granularity),
        rcv_buf: t.rcv_buf.map(|x| x.0 as u32).unwrap_or(d.rcv_buf),
        snd_buf: t.snd_buf.map(|x| x.0 as u32).unwrap_or(d.snd_buf),
        source_quench: t.source_quench.unwrap_or(d.source_quench),
        rcv_wnd_initial: t.rcv_wnd_initial.map(|x| Some(x.0 as u32)).unwrap_or(d.rcv_wnd_initial),
        slow_start_after_idle: t.slow_start_after_idle.unwrap_or(d.slow_start_after_idle),
        idle_restart: t.idle_restart.unwrap_or(d.idle_restart),
        cwnd_clamp: t.cwnd_clamp.map(|x| Some(x.0.min(1 << 30) as u32)).unwrap_or(d.cwnd_clamp),
        rto: t.rto.unwrap_or(d.rto),
        syn_linear_timeouts: t.syn_linear_timeouts.unwrap_or(d.syn_linear_timeouts),
        timer_wheel: t.timer_wheel.unwrap_or(d.timer_wheel),
        limited_transmit: t.limited_transmit.unwrap_or(d.limited_transmit),
        dsack: t.dsack.unwrap_or(d.dsack),
        frto: t.frto.unwrap_or(d.frto),
        ecn: t.ecn.unwrap_or(d.ecn),
        quickack: t.quickack.unwrap_or(d.quickack),
        fin_with_data: t.fin_with_data.unwrap_or(d.fin_with_data),
        ts_recent_at_ack_point: t.ts_recent_at_ack_point.unwrap_or(d.ts_recent_at_ack_point),
        rwnd: t.rwnd.unwrap_or(d.rwnd),
        rcv_buf_max: t.rcv_buf_max.map(|x| x.0.min(1 << 30) as u32).unwrap_or(d.rcv_buf_max),
        autotune: t.autotune.unwrap_or(d.autotune),
        push: t.push.unwrap_or(d.push),
        comp_sack_nr: t.comp_sack_nr.unwrap_or(d.comp_sack_nr),
        comp_sack_delay: t.comp_sack_delay.map(|x| x.0).unwrap_or(d.comp_sack_delay),
    }
}

/// The server port of a bulk flow (default 5001).
pub const BULK_PORT: u16 = 5001;

pub fn media(c: &MediaCfg) -> MediaConfig {
    let d = MediaConfig::default();
    MediaConfig {
        rate: c.rate.map(|r| r.0).unwrap_or(d.rate),
        packet: c.packet.map(|p| p.0 as u32).unwrap_or(d.packet),
        talk: c.talk.map(|x| x.0).unwrap_or(d.talk),
        silence: c.silence.map(|x| x.0).unwrap_or(d.silence),
    }
}

pub fn probe(c: &ProbeCfg) -> ProbeConfig {
    let d = ProbeConfig::default();
    ProbeConfig {
        packet: c.packet.map(|p| p.0 as u32).unwrap_or(d.packet),
        burst: c.burst.unwrap_or(d.burst),
        spacing: c.spacing.as_ref().map(|v| (v[0].0, v[1].0)).unwrap_or(d.spacing),
        bursts: c.messages.or(d.bursts),
    }
}

pub fn interactive(c: &InteractiveCfg) -> InteractiveConfig {
    let d = InteractiveConfig::default();
    InteractiveConfig {
        packet: c.packet.map(|p| p.0).unwrap_or(d.packet),
        interval: c.interval.map(|x| x.0).unwrap_or(d.interval),
        messages: c.messages.or(d.messages),
        port: c.port.unwrap_or(d.port),
    }
}

/// Flow `i`'s own random stream `what`: `isn` (its connections' initial sequence
/// numbers), `media` (a UDP source's sizes and gaps), `web` (the page model).
pub fn flow_stream(sc: &Scenario, i: usize, what: &str) -> Rng {
    Rng::stream(sc.seed, sc.run, &format!("flow.{i}.{what}"))
}

/// The UDP source of flow `i` (media or probe) from `start`; None for the others.
pub fn udp_source(sc: &Scenario, i: usize, f: &FlowCfg, start: Instant) -> Option<UdpSource> {
    Some(match f {
        FlowCfg::Media(c) => UdpSource::Media(MediaSource::new(media(c), start, flow_stream(sc, i, "media"))),
        FlowCfg::Probe(c) => UdpSource::Probe(ProbeSource::new(probe(c), start, flow_stream(sc, i, "media"))),
        _ => return None,
    })
}

/// One connection of flow `f`: a listening server endpoint on `server_port` and an
/// idle mobile endpoint on `mobile_port`, their ISNs drawn from `rng` (the
/// server's first), tracing their variables when `traced`.
pub fn tcp_pair(f: &FlowCfg, server_port: u16, mobile_port: u16, rng: &mut Rng, traced: bool) -> [Tcp; 2] {
    tcp_pair_of(tcp_config(f), server_port, mobile_port, rng, traced)
}

/// [`tcp_pair`] from the flow's TCP settings already resolved (a session's
/// many connections resolve them once).
pub fn tcp_pair_of(tcfg: TcpConfig, server_port: u16, mobile_port: u16, rng: &mut Rng, traced: bool) -> [Tcp; 2] {
    let (iss_s, iss_m) = (rng.next_u64() as u32, rng.next_u64() as u32);
    let mut server = Tcp::new(tcfg, server_port, mobile_port, iss_s);
    let mut mobile = Tcp::new(tcfg, mobile_port, server_port, iss_m);
    if tcfg.timer_wheel {
        // The jiffies counter's phase at the connection's start is arbitrary
        // (one counter for both hosts, as for the emulator's namespaces on one
        // kernel): drawn from the ISNs, so no random stream moves.
        let phase = crate::tcp::wheel::phase_from(iss_s, iss_m, tcfg.timer_granularity);
        server.set_wheel_phase(phase);
        mobile.set_wheel_phase(phase);
        // So is the millisecond clock's, which timestamps count (one clock for
        // both hosts too).
        let ts_phase = crate::tcp::tcb::ts_phase_from(iss_s, iss_m);
        server.set_ts_phase(ts_phase);
        mobile.set_ts_phase(ts_phase);
    }
    if traced {
        server.enable_trace();
        mobile.enable_trace();
    }
    server.listen();
    [server, mobile]
}

/// A session application's settings (web, ttcp, http); None for other flows.
pub fn session(f: &FlowCfg) -> Option<SessionConfig> {
    use crate::app::session::SessionKind;
    let dur = |d: Option<crate::config::Dur>, x: Duration| d.map_or(x, |d| d.0);
    Some(match f {
        FlowCfg::Web(WebCfg { think, transactions, port, .. }) => {
            let d = SessionConfig::web();
            SessionConfig {
                limit: transactions.or(d.limit),
                think: dur(*think, d.think),
                port: port.unwrap_or(d.port),
                ..d
            }
        }
        FlowCfg::Ttcp(TtcpCfg { bytes, repeat, think, port, .. }) => {
            let d = SessionConfig::ttcp(bytes.and_then(|b| b.0).unwrap_or(0));
            SessionConfig { limit: repeat.or(d.limit), think: dur(*think, d.think), port: port.unwrap_or(d.port), ..d }
        }
        FlowCfg::Http(HttpCfg {
            bytes, objects, request, persistent, header, think, gap, transactions, port, ..
        }) => {
            let d = SessionConfig::http(bytes.and_then(|b| b.0).unwrap_or(0));
            let SessionKind::Http { objects: o, request: r, persistent: p, bytes: b, header: h } = d.kind else {
                unreachable!()
            };
            let kind = SessionKind::Http {
                bytes: b,
                objects: objects.unwrap_or(o),
                request: request.map_or(r, |s| s.0),
                persistent: persistent.unwrap_or(p),
                header: header.map_or(h, |s| s.0),
            };
            SessionConfig {
                kind,
                limit: transactions.or(d.limit),
                think: dur(*think, d.think),
                gap: dur(*gap, d.gap),
                port: port.unwrap_or(d.port),
            }
        }
        _ => return None,
    })
}

/// The split-TCP proxy's configuration from `[proxy]`; the link rate defaults to
/// the wireless downlink's.
pub fn proxy_config(sc: &Scenario) -> Option<crate::proxy::ProxyConfig> {
    Some(proxy_config_from(sc.proxy.as_ref()?, Some(dir_rate(sc, 0))))
}

/// The proxy's configuration from a `[proxy]` table; the link rate defaults to
/// `down` (bits per second), else to the model's default.
pub fn proxy_config_from(p: &crate::config::ProxyCfg, down: Option<u64>) -> crate::proxy::ProxyConfig {
    let mut c = crate::proxy::ProxyConfig::default();
    if let Some(r) = p.link_rate.map(|r| r.0).or(down) {
        c.link_rate = r / 8;
    }
    if let Some(d) = p.link_rtt {
        c.link_rtt = d.0;
        // The timers follow the link's RTT as the seeds' follow theirs (1.8 s:
        // min 3 s = 5/3 of it, initial 6 s = 10/3), at least Linux's 200 ms and
        // 1 s: a proxy told it serves a 20 ms link does not wait 3 s to recover.
        c.min_rto = (d.0 * 5 / 3).max(crate::time::Duration::from_millis(200));
        c.initial_rto = (d.0 * 10 / 3).max(crate::time::Duration::from_secs(1));
    }
    if let Some(h) = p.headroom {
        c.headroom = h;
    }
    c.clamp = p.clamp.map(|s| s.0);
    if let Some(cc) = p.cc {
        c.cc = cc;
    }
    if let Some(w) = p.initial_window {
        c.initial_window = w;
    }
    c.estimate_clamp = p.estimate_clamp.unwrap_or(false);
    if let Some(b) = p.burst {
        c.burst = b;
    }
    if let Some(o) = p.overprovision {
        c.overprovision = o;
    }
    c.growth = p.growth.map(|g| g.0 as f64);
    if let Some(n) = p.retransmit_at {
        c.retransmit_at = n;
    }
    if let Some(d) = p.delack_allowance {
        c.delack_allowance = d.0;
    }
    if let Some(d) = p.min_rto {
        c.min_rto = d.0;
    }
    if let Some(d) = p.initial_rto {
        c.initial_rto = d.0;
    }
    if let Some(d) = p.max_rto {
        c.max_rto = d.0;
        // A derived floor never above a ceiling given.
        if p.min_rto.is_none() {
            c.min_rto = c.min_rto.min(c.max_rto);
        }
        if p.initial_rto.is_none() {
            c.initial_rto = c.initial_rto.min(c.max_rto);
        }
    }
    if let Some(m) = p.mss {
        c.mss = m;
    }
    if let Some(cs) = &p.classes {
        c.classes = cs.iter().map(|k| (k.port, k.priority, k.tickets)).collect();
    }
    c
}

#[cfg(test)]
mod tests {
    use crate::config::{parse_scenario, LinkCfg};
    use crate::time::Duration;
    const BASE: &str = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n";
    /// The proxy's timers follow a link RTT given (the seeds' 3 s and 6 s at
    /// 1.8 s), at least 200 ms and 1 s; given timers win; a derived floor stays
    /// below a ceiling given.
    #[test]
    fn proxy_timers_follow_the_link_rtt_unless_given() {
        let cfg = |o: &[&str]| {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            let sc = parse_scenario(BASE, &o).unwrap();
            let c = super::proxy_config(&sc).unwrap();
            (c.min_rto, c.initial_rto)
        };
        let ms = Duration::from_millis;
        assert_eq!(cfg(&["proxy.link_rate=\"1Mbps\""]), (ms(3000), ms(6000)), "the seeds' defaults");
        assert_eq!(cfg(&["proxy.link_rtt=\"1.8s\""]), (ms(3000), ms(6000)));
        assert_eq!(cfg(&["proxy.link_rtt=\"600ms\""]), (ms(1000), ms(2000)));
        assert_eq!(cfg(&["proxy.link_rtt=\"20ms\""]), (ms(200), ms(1000)));
        assert_eq!(cfg(&["proxy.link_rtt=\"20ms\"", "proxy.min_rto=\"2s\""]), (ms(2000), ms(1000)));
        assert_eq!(cfg(&["proxy.link_rtt=\"6s\"", "proxy.max_rto=\"5s\""]), (ms(5000), ms(5000)));
    }

    #[test]
    fn rlc_settings_apply_over_the_preset() {
        let o: Vec<String> = [
            "wireless.arq.protocol=rlc",
            "wireless.arq.preset=two-state",
            "wireless.arq.status_prohibit=off",
            "wireless.arq.max_retransmissions=4",
            "wireless.arq.poll_window=0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let sc = parse_scenario(BASE, &o).unwrap();
        let LinkCfg::Rlc(r) = sc.wireless.link() else { panic!() };
        let c = r.config(250);
        assert_eq!((c.status_prohibit, c.max_retransmissions, c.poll_window, c.poll_last_retx), (None, 4, None, true));
        assert_eq!(c.mrw_timer, Duration::from_millis(110), "the rest comes from the two-state column");
    }
    /// `tcp.cc` and `tcp.recovery` name the algorithms; `variant` is a shorthand
    /// for the same pairs, whose parts `cc` or `recovery` replace when also given;
    /// an unknown name is refused (the error lists the names).
    #[test]
    fn tcp_cc_and_recovery_keys() {
        use crate::tcp::rtt::RtoKind;
        use crate::tcp::{CcKind, RecoveryKind, Variant};
        let tcp = |t: &str| {
            let sc = parse_scenario(&format!("{BASE}tcp = {{ {t} }}\n"), &[])?;
            Ok::<_, crate::config::ConfigError>(super::tcp_config(&sc.flow[0]))
        };
        for v in [Variant::Tahoe, Variant::Reno, Variant::NewReno, Variant::Sack] {
            let (cc, r) = v.parts();
            let named = tcp(&format!("cc = {:?}, recovery = {:?}", cc.name(), r.name())).unwrap();
            assert_eq!(named, tcp(&format!("variant = {:?}", v.name())).unwrap());
            assert_eq!(named, crate::tcp::TcpConfig::default().with_variant(v));
        }
        let old = tcp("profile = \"linux-2.4\", recovery = \"newreno\"").unwrap();
        assert_eq!((old.cc, old.recovery, old.sack), (CcKind::Rfc5681, RecoveryKind::NewReno, true));
        let linux = tcp("profile = \"linux\", recovery = \"newreno\"").unwrap();
        assert_eq!((linux.cc, linux.recovery, linux.sack), (CcKind::Cubic, RecoveryKind::NewReno, true));
        assert_eq!((linux.rto, linux.syn_linear_timeouts, linux.limited_transmit), (RtoKind::Linux, 4, true));
        // The seeds' shorthand over the Linux profile: Reno's per-ACK window, the
        // profile's timers kept.
        let v = tcp("profile = \"linux\", variant = \"sack\", rto = \"rfc6298\", syn_linear_timeouts = 0").unwrap();
        assert_eq!((v.cc, v.rto, v.syn_linear_timeouts, v.initial_window), (CcKind::Rfc5681, RtoKind::Rfc6298, 0, 10));
        for name in crate::tcp::TcpConfig::PROFILES {
            assert!(tcp(&format!("profile = {name:?}")).is_ok(), "{name}");
        }
        let e = tcp("rto = \"bsd\"").unwrap_err().to_string();
        assert!(e.starts_with("flow[0].tcp.rto: ") && e.contains("rfc6298") && !e.contains('\n'), "{e}");
        // The restart after idle: the kernel's in both Linux profiles, RFC 5681's
        // by default and when named.
        use crate::tcp::IdleRestart;
        for (t, want) in [
            ("profile = \"linux\"", IdleRestart::Linux),
            ("profile = \"linux-2.4\"", IdleRestart::Linux),
            ("slow_start_after_idle = true", IdleRestart::Rfc5681),
            ("profile = \"linux-2.4\", idle_restart = \"rfc5681\"", IdleRestart::Rfc5681),
        ] {
            assert_eq!(tcp(t).unwrap().idle_restart, want, "{t}");
        }
        let e = tcp("idle_restart = \"cubic\"").unwrap_err().to_string();
        assert!(e.starts_with("flow[0].tcp.idle_restart: ") && e.contains("rfc5681") && !e.contains('\n'), "{e}");
        let e = tcp("syn_linear_timeouts = 101").unwrap_err().to_string();
        assert_eq!(e, "flow[0].tcp.syn_linear_timeouts: must be between 0 and 100");
        let e = tcp("cc = \"vegas\"").unwrap_err().to_string();
        assert_eq!(e, "flow[0].tcp.cc: \"vegas\" is not one of \"rfc5681\", \"reno\", \"cubic\", \"bbr\" or \"clamp\"");
        // cc or recovery replace their part of a variant.
        let c = tcp("variant = \"tahoe\", recovery = \"sack\"").unwrap();
        assert_eq!((c.cc, c.recovery, c.sack), (CcKind::Rfc5681, RecoveryKind::Sack, true));
        let c = tcp("variant = \"sack\", cc = \"cubic\"").unwrap();
        assert_eq!((c.cc, c.recovery), (CcKind::Cubic, RecoveryKind::Sack));
    }
}
