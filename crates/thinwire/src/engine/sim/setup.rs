//! Building a simulator from a scenario: the links, the flows (TCP pairs, UDP
//! sources and sessions, made by `build`), their first events, the trace and
//! the output taps.
use super::*;

impl Sim {
    pub fn new(sc: &Scenario) -> Sim {
        let mask = LayerMask::from_names(&sc.trace.layers);
        let mk_wired = |d: usize| {
            let mut w = build::wired(sc, d);
            w.set_trace(mask.has(Layer::Queue), mask.has(Layer::Sojourn));
            w
        };
        let mut link = build::wireless(sc);
        // mm-link logs are made from the link's queue and delivery events.
        let mm = sc.trace.mahimahi;
        let link_trace = LinkTrace {
            link: mask.has(Layer::Link) || mm,
            queue: mask.has(Layer::Queue) || mm,
            sojourn: mask.has(Layer::Sojourn),
            channel: mask.has(Layer::Channel),
        };
        link.set_trace(link_trace);
        let mut q = EventQueue::new();
        let mut flows = Vec::new();
        let mut media = Vec::new();
        let mut webs = Vec::new();
        let mut slots = Vec::new();
        let mut session = Vec::new();
        for (i, f) in sc.flow.iter().enumerate() {
            let start = Instant::ZERO + f.start();
            let sender = if f.direction() == Direction::Up { 1 } else { 0 };
            session.push(match (f.session(), f.mobile()) {
                (LinkSession::Arq, 0) => Session::Arq,
                (LinkSession::Arq, k) => Session::Mobile(k),
                (LinkSession::Bypass, _) => Session::Bypass,
            });
            if let Some(src) = build::udp_source(sc, i, f, start) {
                q.schedule(start, Event::MediaNext(media.len() as u16));
                slots.push(Slot::Media(media.len()));
                media.push(Media {
                    id: i,
                    src,
                    sender,
                    mobile: f.mobile(),
                    addr: mobile_addr(f.mobile()),
                    ident: 1,
                    sent_born: BornCount::default(),
                    recv_born: BornCount::default(),
                    delays: vec![],
                    bytes: 0,
                    start,
                });
                continue;
            }
            if let Some(cfg) = build::session(f) {
                q.schedule(start, Event::WebNext(webs.len() as u16));
                slots.push(Slot::Web(webs.len()));
                webs.push(Web::new(sc, i, f, cfg, start));
                continue;
            }
            let mut rng = build::flow_stream(sc, i, "isn");
            let chat = match f {
                FlowCfg::Interactive(c) => Some(Interactive::new(build::interactive(c))),
                _ => None,
            };
            let port = match (f, &chat) {
                (FlowCfg::Bulk(b), _) => b.port.unwrap_or(build::BULK_PORT),
                (_, Some(c)) => c.port(),
                _ => unreachable!("bulk or interactive"),
            };
            let [mut server, mut mobile] = build::tcp_pair(f, port, 40000 + i as u16, &mut rng, mask.has(Layer::Tcp));
            let bytes = match &chat {
                Some(c) => c.total(),
                None => f.bytes(),
            };
            if let Some(c) = &chat {
                server.set_app_data(Some(0), false);
                q.schedule(c.first_tick(start), Event::Tick(flows.len() as u16));
            } else if sender == 0 {
                server.set_app_data(bytes, true);
            } else {
                mobile.set_app_data(bytes, true);
            }
            q.schedule(start, Event::FlowStart(flows.len() as u16));
            if let FlowCfg::Bulk(crate::config::flow::BulkCfg { abort: Some(a), .. }) = f {
                q.schedule(start + a.0, Event::FlowAbort(flows.len() as u16));
            }
            slots.push(Slot::Tcp(flows.len()));
            flows.push(Flow {
                id: i,
                cfg: f.clone(),
                ep: [server, mobile],
                sched: [None, None],
                timers_until: Instant::ZERO,
                ident: [1, 1],
                start,
                bytes,
                sender,
                completed: None,
                chat,
                addr: mobile_addr(f.mobile()),
            });
        }
        let pending_finite =
            flows.iter().filter(|f| f.bytes.is_some()).count() + webs.iter().filter(|w| w.finite()).count();
        let max_time = build::max_time(sc);
        let epoch = sc.trace.pcap_epoch_ns().unwrap_or(0); // validated with the scenario
        let pcap = if sc.trace.pcap { [Some(Tap::memory(epoch)), Some(Tap::memory(epoch))] } else { [None, None] };
        Sim {
            q,
            wired: [mk_wired(0), mk_wired(1)],
            link,
            link_traced: link_trace.link || link_trace.queue || link_trace.channel,
            flows,
            media,
            webs,
            slots,
            session,
            stop: sc.stop,
            max_time,
            pending_finite,
            rec: Recorder::new(mask, TraceOut::default()),
            pcap,
            mm: mm.then(|| {
                build::mm_logs(sc, [Out::Mem(Vec::new()), Out::Mem(Vec::new())], "thinwire run")
                    .expect("writes to memory")
            }),
            proxy: build::proxy_config(sc).map(|c| {
                let mut p = crate::proxy::Proxy::new(c);
                if mask.has(Layer::Proxy) {
                    p.enable_trace();
                }
                p
            }),
            proxy_sched: None,
            next_client_port: 0,
        }
    }

    /// Like [`Sim::new`], but the trace (`trace.parquet`), the pcap taps
    /// (`server.pcap`, `mobile.pcap`) and the mm-link logs (`mm-down.log`,
    /// `mm-up.log`) the scenario asks for are streamed into files of `dir` while the
    /// run goes (src/outputs.rs), not kept in memory.
    pub fn with_output_dir(sc: &Scenario, dir: &std::path::Path) -> std::io::Result<Sim> {
        let mut sim = Sim::new(sc);
        if sim.rec.mask.0 != 0 {
            let mut sink = ParquetSink::create(dir)?;
            sink.set_horizon(sim.link.channel_horizon().nanos());
            sim.rec.sink = TraceOut::File(Box::new(sink));
        }
        let epoch = sc.trace.pcap_epoch_ns().unwrap_or(0); // validated with the scenario
        for (i, name) in ["server.pcap", "mobile.pcap"].into_iter().enumerate() {
            if sim.pcap[i].is_some() {
                sim.pcap[i] = Some(Tap::file(dir, name, epoch)?);
            }
        }
        if sim.mm.is_some() {
            let files = [FileOut::create(dir, "mm-down.log")?, FileOut::create(dir, "mm-up.log")?];
            sim.mm = Some(build::mm_logs(sc, files.map(Out::File), "thinwire run")?);
        }
        Ok(sim)
    }
}
