//! Turns a typed [`Scenario`] into the model objects the simulator drives.
use crate::channel::{Channel, Fading, TwoState};
use crate::config::{ArqCfg, ChannelCfg, FlowCfg, Limit, Scenario};
use crate::link::{
    gprs::{Gprs, GprsConfig},
    gsm_csd::{CsdConfig, GsmCsd},
    is707::{Is707, Is707Config},
    raw::Raw,
    rlc_am::{Rlc, RlcConfig},
    rlp_gsm::{OnN2, RlpConfig},
    sr::{Sr, SrConfig},
    wireless::{DirConfig, Mux, Scheduler, WirelessConfig, WirelessLink},
    Arq,
};
use crate::rng::Rng;
use crate::tcp::{TcpConfig, Variant};
use crate::time::Duration;

pub const DIR_NAMES: [&str; 2] = ["down", "up"];

/// The wireless link of `[wireless]`: per-direction rate, delay, channel and IP
/// queue (50 packets; GPRS: the gateway's ~120 KB downlink buffer, seed 003 §IV-B,
/// seed 004 §III), the configured protocol at both ends and the multiplexer.
pub fn wireless(sc: &Scenario) -> WirelessLink {
    let w = &sc.wireless;
    let gprs = w.arq.as_ref().is_some_and(|a| a.protocol == "gprs");
    let queue = limit(&w.queue, if gprs { Limit::Bytes(120_000) } else { Limit::Packets(50) });
    let dir = |d: usize| {
        let spec = if d == 0 { &w.down } else { &w.up };
        let rate = spec.as_ref().and_then(|s| s.rate).map(|r| r.0).unwrap_or(w.rate.0);
        let delay = spec.as_ref().and_then(|s| s.delay).map(|r| r.0).unwrap_or(w.delay.0);
        DirConfig { rate, delay, queue }
    };
    let dirs = [dir(0), dir(1)];
    let scheduler = match w.scheduler.as_deref() {
        Some("arq-first") => Scheduler::ArqFirst,
        Some("bypass-first") => Scheduler::BypassFirst,
        _ => Scheduler::RoundRobin,
    };
    let mux = match w.mux.as_deref() {
        Some("shared-queue") => Mux::SharedQueue { limit: w.frame_queue.unwrap_or(50) as usize },
        _ => Mux::Pull(scheduler),
    };
    let cfg = WirelessConfig { dirs, frame: w.frame.0 as u32, header: w.header.0 as u32, mux };
    let airtime = |d: usize| Duration::transmission(w.frame.0 + w.header.0, dirs[d].rate);
    WirelessLink::new(cfg, [arq(sc, 0), arq(sc, 1)], [channel(sc, 0, airtime(0)), channel(sc, 1, airtime(1))])
}

pub fn channel(sc: &Scenario, dir: usize, frame_airtime: Duration) -> Channel {
    let w = &sc.wireless;
    let specific = if dir == 0 { &w.down } else { &w.up };
    let cfg =
        specific.as_ref().and_then(|d| d.channel.clone()).or_else(|| w.channel.clone()).unwrap_or(ChannelCfg::None);
    let rng = Rng::stream(sc.seed, sc.run, &format!("channel.{}", DIR_NAMES[dir]));
    match cfg {
        ChannelCfg::None => Channel::None,
        ChannelCfg::Uniform { p } => Channel::Uniform { p, rng },
        ChannelCfg::TwoState { good, bad } => {
            Channel::TwoState(TwoState::new(good.ber, good.mean.0, bad.ber, bad.mean.0, rng))
        }
        ChannelCfg::Fading { pe, fdt, frame_time } => {
            Channel::Fading(Fading::new(pe, fdt, Some(frame_time.map(|d| d.0).unwrap_or(frame_airtime)), rng))
        }
        ChannelCfg::DropList { frames } => Channel::droplist(frames),
    }
}

/// `side` 0 is the gateway (network side), 1 the mobile.
pub fn arq(sc: &Scenario, side: usize) -> Arq {
    let a = sc.wireless.arq.clone().unwrap_or_default();
    let max_payload = sc.wireless.frame.0 as u32;
    match a.protocol.as_str() {
        "raw" => Arq::Raw(Raw::new(max_payload)),
        "rlc" => Arq::Rlc(Box::new(Rlc::new(rlc_config(&a, max_payload)))),
        "is707" => Arq::Is707(Box::new(Is707::new(is707_config(&a, max_payload)))),
        "gprs" => {
            let c = gprs_config(&a, side);
            Arq::Gprs(Box::new(Gprs::new(
                c,
                Rng::stream(sc.seed, sc.run, "gprs.outage"),
                Rng::stream(sc.seed, sc.run, "gprs.poor"),
                Rng::stream(sc.seed, sc.run, &format!("gprs.setup.{}", DIR_NAMES[side])),
            )))
        }
        "rlp-gsm" => Arq::Gsm(Box::new(GsmCsd::new(csd_config(&a, max_payload, side == 0)))),
        _ => Arq::Sr(Box::new(Sr::new(sr_config(&a, max_payload)))),
    }
}

/// `side` 0 sends the downlink, 1 the uplink.
pub fn gprs_config(a: &ArqCfg, side: usize) -> GprsConfig {
    let d = if side == 0 { GprsConfig::downlink() } else { GprsConfig::uplink() };
    let range = |v: &Option<Vec<crate::config::Dur>>, d: (Duration, Duration)| {
        v.as_ref().map(|v| (v[0].0, v[1].0)).unwrap_or(d)
    };
    GprsConfig {
        tbf_idle: a.tbf_idle.map(|x| x.0).unwrap_or(d.tbf_idle),
        setup: range(if side == 0 { &a.setup_down } else { &a.setup_up }, d.setup),
        rlc_buffer: a.rlc_buffer.map(|x| x as usize).unwrap_or(d.rlc_buffer),
        pdu_lifetime: a.pdu_lifetime.map(|x| x.0).unwrap_or(d.pdu_lifetime),
        outage_every: a.outage_every.map(|x| x.0).or(d.outage_every),
        outage_duration: range(&a.outage_duration, d.outage_duration),
        outage_list: a.outages.as_ref().map(|v| v.iter().map(|o| (o[0].0, o[1].0)).collect()).unwrap_or_default(),
        period: if side == 1 { a.uplink_period.map(|x| x.0) } else { None },
        poor_every: a.poor_every.map(|x| x.0).or(d.poor_every),
        poor_duration: range(&a.poor_duration, d.poor_duration),
        poor_share: a.poor_share.unwrap_or(d.poor_share),
    }
}

pub fn csd_config(a: &ArqCfg, max_payload: u32, network_side: bool) -> CsdConfig {
    let d = RlpConfig::default();
    let rlp = RlpConfig {
        payload: max_payload,
        window: a.window.unwrap_or(d.window),
        t1: a.t1.map(|x| x.0).unwrap_or(d.t1),
        n2: a.n2.unwrap_or(d.n2),
        on_n2: if a.on_n2.as_deref() == Some("drop-call") { OnN2::DropCall } else { OnN2::Reset },
    };
    let c = CsdConfig::default();
    CsdConfig {
        rlp,
        vj: a.header_compression.unwrap_or(c.vj),
        vj_toss_on_error: a.vj_toss_on_error.unwrap_or(c.vj_toss_on_error),
        l2r_rate: a.l2r_rate.map(|r| r.0 / 8),
        l2r_buffer: a.l2r_buffer.map(|b| b.0 as u32).unwrap_or(c.l2r_buffer),
        network_side,
    }
}

pub fn is707_config(a: &ArqCfg, max_payload: u32) -> Is707Config {
    let d = Is707Config::default();
    Is707Config {
        max_payload,
        nak_rounds: a.nak_rounds.clone().unwrap_or(d.nak_rounds),
        nak_timer: a.nak_timer.map(|x| x.0).unwrap_or(d.nak_timer),
        idle_frames: match &a.idle_frames {
            None => d.idle_frames,
            Some(crate::config::IdleFrames::Count(n)) => Some(*n),
            Some(_) => None,
        },
    }
}

pub fn sr_config(a: &ArqCfg, max_payload: u32) -> SrConfig {
    let d = SrConfig::default();
    let timeout = a.timeout.map(|x| x.0).unwrap_or(d.timeout);
    let adaptive = if a.protocol == "asr" {
        Some(a.policy.as_deref().and_then(crate::config::parse_policy).unwrap_or((3, 2)))
    } else {
        None
    };
    SrConfig {
        window: a.window.unwrap_or(d.window),
        ack_delay: a.ack_delay.map(|x| x.0).unwrap_or(d.ack_delay),
        timeout,
        adaptive,
        initial_srtt: a.initial_srtt.map(|x| x.0).unwrap_or(d.initial_srtt),
        tick: d.tick,
        renack: a.renack.map(|x| x.0).unwrap_or(timeout),
        max_payload,
    }
}

pub fn rlc_config(a: &ArqCfg, max_payload: u32) -> RlcConfig {
    let d = RlcConfig::preset(a.preset.as_deref().unwrap_or("uniform")).unwrap_or_default();
    RlcConfig {
        window: a.window.unwrap_or(d.window),
        max_payload,
        pad: a.pad.unwrap_or(d.pad),
        max_retransmissions: a.max_retransmissions.unwrap_or(d.max_retransmissions),
        poll_timer: a.poll_timer.map(|t| t.0).unwrap_or(d.poll_timer),
        poll_window: a.poll_window.map(|p| (p > 0).then_some(p)).unwrap_or(d.poll_window),
        poll_last_tx: a.poll_last_tx.unwrap_or(d.poll_last_tx),
        poll_last_retx: a.poll_last_retx.unwrap_or(d.poll_last_retx),
        poll_prohibit: a.poll_prohibit.map(|t| t.0).unwrap_or(d.poll_prohibit),
        status_missing: a.status_missing.unwrap_or(d.status_missing),
        status_periodic: a.status_periodic.map(|t| t.0).unwrap_or(d.status_periodic),
        status_prohibit: a.status_prohibit.map(|t| t.0).unwrap_or(d.status_prohibit),
        mrw_timer: a.mrw_timer.map(|t| t.0).unwrap_or(d.mrw_timer),
    }
}

pub fn tcp_config(f: &FlowCfg) -> TcpConfig {
    let Some(t) = &f.tcp else {
        return TcpConfig::default();
    };
    let d = t.profile.as_deref().and_then(TcpConfig::profile).unwrap_or_default();
    let variant = t.variant.as_deref().and_then(Variant::parse).unwrap_or(d.variant);
    TcpConfig {
        variant,
        mss: t.mss.unwrap_or(d.mss),
        sack: t.sack.unwrap_or(if t.profile.is_some() { d.sack } else { variant == Variant::Sack }),
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
        cwnd_clamp: t.cwnd_clamp.map(|x| Some(x.0.min(1 << 30) as u32)).unwrap_or(d.cwnd_clamp),
    }
}

pub fn limit(q: &Option<crate::config::QueueCfg>, default: Limit) -> Limit {
    q.as_ref().map(|q| q.limit).unwrap_or(default)
}

/// The split-TCP proxy's configuration from `[proxy]`; the link rate defaults to
/// the wireless downlink's.
pub fn proxy_config(sc: &Scenario) -> Option<crate::proxy::ProxyConfig> {
    let p = sc.proxy.as_ref()?;
    let mut c = crate::proxy::ProxyConfig::default();
    let down = sc.wireless.down.as_ref().and_then(|d| d.rate).map(|r| r.0).unwrap_or(sc.wireless.rate.0);
    c.link_rate = p.link_rate.map(|r| r.0).unwrap_or(down) / 8;
    if let Some(d) = p.link_rtt {
        c.link_rtt = d.0;
    }
    if let Some(h) = p.headroom {
        c.headroom = h;
    }
    c.clamp = p.clamp.map(|s| s.0);
    c.estimate_clamp = p.estimate_clamp.unwrap_or(false);
    if let Some(o) = p.overprovision {
        c.overprovision = o;
    }
    c.growth = p.growth.map(|g| g.0 as f64);
    if let Some(n) = p.retransmit_at {
        c.retransmit_at = n;
    }
    if let Some(d) = p.min_rto {
        c.min_rto = d.0;
    }
    if let Some(d) = p.initial_rto {
        c.initial_rto = d.0;
    }
    if let Some(d) = p.max_rto {
        c.max_rto = d.0;
    }
    if let Some(m) = p.mss {
        c.mss = m;
    }
    if let Some(cs) = &p.classes {
        c.classes = cs.iter().map(|k| (k.port, k.priority, k.tickets)).collect();
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use crate::config::parse_scenario;
    use crate::time::Duration;
    const BASE: &str = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n";
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
        let c = super::rlc_config(sc.wireless.arq.as_ref().unwrap(), 250);
        assert_eq!((c.status_prohibit, c.max_retransmissions, c.poll_window, c.poll_last_retx), (None, 4, None, true));
        assert_eq!(c.mrw_timer, Duration::from_millis(110), "the rest comes from the two-state column");
    }
}
