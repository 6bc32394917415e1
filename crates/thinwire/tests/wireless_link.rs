//! The wireless link as one machine (src/link/wireless.rs), driven from a plain
//! loop on its own timers: how the two sessions share the radio (seed 002 §III),
//! the shared frame queue of ns-2's structure, and that the own-timer and
//! external-queue forms of the API make the same decisions.
use thinwire::channel::Channel;
use thinwire::link::wireless::{
    DirConfig, FrameEvent, LinkEvent, LinkTimer, LinkTrace, Mux, Offer, Scheduler, Session, WirelessConfig,
    WirelessLink,
};
use thinwire::link::{
    raw::Raw,
    sr::{Sr, SrConfig},
    Arq,
};
use thinwire::queue::Limit;
use thinwire::rng::Rng;
use thinwire::sched::EventQueue;
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

const RATE: u64 = 64_000;

fn pkt(flow: u16, ident: u16, size: u32) -> Packet {
    let l4 = L4::Udp(UdpRepr { src_port: 1, dst_port: 2 });
    Packet::new([10, 0, 0, 1], [10, 0, 1, 2], ident, l4, size - 28, flow, Instant::ZERO)
}

fn sr(timeout_ms: i64) -> Arq {
    let t = Duration::from_millis(timeout_ms);
    Arq::Sr(Box::new(Sr::new(SrConfig { timeout: t, renack: Some(t), ..SrConfig::default() })))
}

fn link(mux: Mux, arq: [Arq; 2], queue: Limit, channels: [Channel; 2]) -> WirelessLink {
    let dir = DirConfig { rate: RATE, delay: Duration::from_millis(50), queue };
    let cfg = WirelessConfig { dirs: [dir, dir], frame: 250, header: 4, mux };
    let mut l = WirelessLink::new(cfg, arq, channels);
    l.set_trace(LinkTrace { link: true, queue: true, sojourn: false, channel: true });
    l
}

/// Runs the link on its own timers until it is idle or `limit` passes; returns the
/// packets delivered per direction and every trace event.
fn drain(l: &mut WirelessLink, limit: Duration) -> ([Vec<Packet>; 2], Vec<LinkEvent>) {
    let mut out: [Vec<Packet>; 2] = Default::default();
    let mut evs = vec![];
    let end = Instant::ZERO + limit;
    while let Some(t) = l.poll_timeout() {
        if t > end {
            break;
        }
        l.handle_timeout(t);
        while let Some((d, p)) = l.poll_deliver() {
            out[d].push(p);
        }
        while let Some(e) = l.poll_event() {
            evs.push(e);
        }
    }
    (out, evs)
}

/// The flows of the data frames sent down, in order.
fn down_frames(evs: &[LinkEvent]) -> Vec<u16> {
    evs.iter()
        .filter_map(|e| match *e {
            LinkEvent::Frame { dir: 0, kind: FrameEvent::Send | FrameEvent::Retransmit, flow: Some(f), .. } => Some(f),
            _ => None,
        })
        .collect()
}

/// Offers `n` one-frame packets of flow 0 to the ARQ session and `n` of flow 1 to
/// the bypass session, all at time 0.
fn contend(l: &mut WirelessLink, n: u16) {
    for i in 0..n {
        assert_eq!(l.offer(Instant::ZERO, 0, Session::Arq, pkt(0, i, 250)), Offer::Queued);
        assert_eq!(l.offer(Instant::ZERO, 0, Session::Bypass, pkt(1, i, 250)), Offer::Queued);
    }
}

fn raw() -> [Arq; 2] {
    [Arq::Raw(Raw::new(250)), Arq::Raw(Raw::new(250))]
}

#[test]
fn round_robin_alternates_between_sessions_with_frames_ready() {
    let mut l = link(Mux::Pull(Scheduler::RoundRobin), raw(), Limit::Packets(50), [Channel::None, Channel::None]);
    contend(&mut l, 10);
    let (out, evs) = drain(&mut l, Duration::from_secs(60));
    let order = down_frames(&evs);
    assert_eq!(order.len(), 20);
    // The first frame goes out at the first offer (only ARQ has one); then the radio
    // alternates.
    assert!(order.windows(2).all(|w| w[0] != w[1]), "{order:?}");
    assert_eq!(out[0].len(), 20);
}

#[test]
fn strict_priority_serves_one_session_first() {
    for (s, first) in [(Scheduler::ArqFirst, 0u16), (Scheduler::BypassFirst, 1)] {
        let mut l = link(Mux::Pull(s), raw(), Limit::Packets(50), [Channel::None, Channel::None]);
        contend(&mut l, 10);
        let (_, evs) = drain(&mut l, Duration::from_secs(60));
        let order = down_frames(&evs);
        // The radio starts on the first ARQ packet as it is offered; after that the
        // preferred session empties its queue before the other gets a frame.
        let rest = &order[1..];
        let switch = rest.iter().position(|&f| f != first).unwrap_or(rest.len());
        assert!(rest[switch..].iter().all(|&f| f != first), "{s:?}: {order:?}");
        assert!(switch >= 9, "{s:?}: {order:?}");
    }
}

#[test]
fn shared_frame_queue_makes_arq_timers_include_queueing() {
    // Under contention, ARQ frames wait behind bypass frames in the shared queue while
    // their SR timers run: a timeout shorter than that wait fires spuriously on a
    // clean channel. With the pull multiplexer the timer starts on the radio.
    let run = |mux| {
        let mut l = link(mux, [sr(900), sr(900)], Limit::Packets(100), [Channel::None, Channel::None]);
        contend(&mut l, 40);
        let (out, _) = drain(&mut l, Duration::from_secs(600));
        (l.stats()[0].clone(), out[0].iter().filter(|p| p.meta.flow == 0).count())
    };
    let (pull, pull_got) = run(Mux::Pull(Scheduler::RoundRobin));
    let (shared, shared_got) = run(Mux::SharedQueue { limit: 100 });
    assert_eq!((pull.frames_lost, shared.frames_lost), (0, 0));
    assert_eq!(pull.frames_retransmitted, 0);
    assert!(shared.frames_retransmitted > 5, "{}", shared.frames_retransmitted);
    assert_eq!((pull_got, shared_got), (40, 40), "SR delivers every packet either way");
}

#[test]
fn shared_frame_queue_drops_frames_that_find_it_full_and_sr_recovers_them() {
    let mut l =
        link(Mux::SharedQueue { limit: 5 }, [sr(1100), sr(1100)], Limit::Packets(100), [Channel::None, Channel::None]);
    for i in 0..30 {
        l.offer(Instant::ZERO, 0, Session::Arq, pkt(0, i, 250));
    }
    let (out, evs) = drain(&mut l, Duration::from_secs(600));
    assert!(l.stats()[0].frame_queue_drops > 0);
    assert!(evs.iter().any(|e| matches!(e, LinkEvent::FrameQueueDrop { limit: 5, .. })));
    let idents: Vec<u16> = out[0].iter().map(|p| p.ident() as u16).collect();
    assert_eq!(idents, (0..30).collect::<Vec<_>>(), "every packet once, in order");
}

#[test]
fn a_full_ip_queue_drops_the_offered_packet() {
    let mut l = link(Mux::default(), raw(), Limit::Packets(3), [Channel::None, Channel::None]);
    let offers: Vec<Offer> = (0..6).map(|i| l.offer(Instant::ZERO, 1, Session::Arq, pkt(0, i, 250))).collect();
    // The first packet goes straight onto the radio; three wait; two are dropped.
    assert_eq!(offers.iter().filter(|&&o| o == Offer::QueueFull).count(), 2);
    assert_eq!(l.stats()[1].queue_drops, 2);
    let (out, _) = drain(&mut l, Duration::from_secs(10));
    assert_eq!(out[1].len(), 4);
}

/// The same offers through the own-timer API and through an outer event queue (as
/// the simulator drives it) give the same frames at the same times.
#[test]
fn own_timers_and_an_outer_queue_make_the_same_decisions() {
    let mk = || {
        let chan = |d: &str| Channel::Uniform { p: 0.1, rng: Rng::stream(7, 0, d) };
        link(Mux::default(), [sr(600), sr(600)], Limit::Packets(50), [chan("down"), chan("up")])
    };
    let offers: Vec<(Instant, usize, Packet)> = (0..60)
        .map(|i| (Instant::ZERO + Duration::from_millis(37 * i as i64), (i % 3 == 0) as usize, pkt(0, i, 400)))
        .collect();
    // Own timers: before each offer, run everything due up to its time.
    let mut a = mk();
    let mut ev_a = vec![];
    for (t, d, p) in offers.clone() {
        while a.poll_timeout().is_some_and(|x| x <= t) {
            let x = a.poll_timeout().unwrap();
            a.handle_timeout(x);
            while a.poll_deliver().is_some() {}
        }
        a.offer(t, d, Session::Arq, p);
    }
    ev_a.extend(drain(&mut a, Duration::from_secs(600)).1);
    // Outer queue: the link's timers among the driver's own events.
    #[derive(Clone, Copy)]
    enum Ev {
        Offer(usize),
        Link(LinkTimer),
    }
    impl From<LinkTimer> for Ev {
        fn from(t: LinkTimer) -> Ev {
            Ev::Link(t)
        }
    }
    let mut b = mk();
    let mut q: EventQueue<Ev> = EventQueue::new();
    for (i, (t, _, _)) in offers.iter().enumerate() {
        q.schedule(*t, Ev::Offer(i));
    }
    let mut ev_b = vec![];
    while let Some((now, e)) = q.pop() {
        match e {
            Ev::Offer(i) => {
                let (_, d, p) = offers[i].clone();
                b.offer_with(now, d, Session::Arq, p, &mut q);
            }
            Ev::Link(t) => {
                b.on_timer_with(now, t, &mut q);
                while b.poll_deliver().is_some() {}
                b.resume_with(&mut q);
            }
        }
        while let Some(e) = b.poll_event() {
            ev_b.push(e);
        }
    }
    // The own-timer run logged its events in batches; compare them as sets per
    // kind and time, and the stats exactly.
    let key = |e: &LinkEvent| format!("{e:?}");
    let (mut ka, mut kb): (Vec<String>, Vec<String>) = (ev_a.iter().map(key).collect(), ev_b.iter().map(key).collect());
    ka.sort();
    kb.sort();
    assert_eq!(ka, kb);
    assert_eq!(a.stats(), b.stats());
    assert!(a.stats()[0].frames_lost > 0 && a.stats()[0].frames_retransmitted > 0);
}

/// The machines can move to another thread (the emulator's and the proxy daemon's
/// I/O threads): nothing in them is `Rc` or thread-bound.
#[test]
fn machines_are_send() {
    fn send<T: Send>() {}
    send::<WirelessLink>();
    send::<thinwire::link::Frame>();
    send::<Packet>();
    send::<thinwire::tcp::Tcp>();
    send::<thinwire::proxy::Proxy>();
}
