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
use thinwire::queue::{Limit, Queue};
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
    Sr::new(SrConfig { timeout: t, renack: Some(t), ..SrConfig::default() }).into()
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
    [Raw::new(250).into(), Raw::new(250).into()]
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
    #[derive(Clone, Copy, PartialEq)]
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

// ----- a shared cell: one ARQ session per mobile -----

/// A link of `mobiles` mobiles: mobile 0 on `Session::Arq`, the others added.
fn cell(
    mux: Mux,
    arq: impl Fn() -> [Arq; 2],
    mobiles: u16,
    queue: Limit,
    channels: [Channel; 2],
) -> (WirelessLink, Vec<Session>) {
    let mut l = link(mux, arq(), queue, channels);
    let mut sessions = vec![Session::Arq];
    for _ in 1..mobiles {
        sessions.push(l.add_mobile(arq(), [Queue::droptail(queue), Queue::droptail(queue)]));
    }
    assert_eq!(l.mobiles(), mobiles as usize);
    (l, sessions)
}

#[test]
fn a_cells_mobiles_take_turns_on_the_radio() {
    let (mut l, ss) = cell(Mux::default(), raw, 3, Limit::Packets(50), [Channel::None, Channel::None]);
    assert_eq!(ss, [Session::Arq, Session::Mobile(1), Session::Mobile(2)]);
    assert_eq!([ss[1].index(), ss[2].index(), Session::Mobile(0).index()], [2, 3, 0]);
    for i in 0..8 {
        for (m, &s) in ss.iter().enumerate() {
            assert_eq!(l.offer(Instant::ZERO, 0, s, pkt(m as u16, i, 250)), Offer::Queued);
        }
    }
    let (out, evs) = drain(&mut l, Duration::from_secs(60));
    let order = down_frames(&evs);
    assert_eq!(order.len(), 24);
    // After the first frame (mobile 0's, sent as it was offered), the radio cycles
    // through the three mobiles' sessions.
    assert!(order.windows(3).all(|w| w[0] != w[1] && w[1] != w[2] && w[0] != w[2]), "{order:?}");
    for m in 0..3u16 {
        let idents: Vec<u16> = out[0].iter().filter(|p| p.meta.flow == m).map(|p| p.ident() as u16).collect();
        assert_eq!(idents, (0..8).collect::<Vec<_>>(), "mobile {m}'s packets once, in order");
    }
}

#[test]
fn each_mobile_has_its_own_ip_queue() {
    let (mut l, ss) = cell(Mux::default(), raw, 2, Limit::Packets(3), [Channel::None, Channel::None]);
    let full: Vec<Offer> = (0..6).map(|i| l.offer(Instant::ZERO, 0, ss[0], pkt(0, i, 250))).collect();
    assert_eq!(full.iter().filter(|&&o| o == Offer::QueueFull).count(), 2);
    // Mobile 1's queue is empty: its three packets all wait.
    for i in 0..3 {
        assert_eq!(l.offer(Instant::ZERO, 0, ss[1], pkt(1, i, 250)), Offer::Queued);
    }
    assert_eq!((l.queue_len(0, ss[0]), l.queue_len(0, ss[1])), (3, 3));
    let (out, _) = drain(&mut l, Duration::from_secs(10));
    assert_eq!(out[0].len(), 7);
}

/// SR delivers in order: a lost frame holds back what follows it in its session,
/// and only there. One session for both mobiles makes mobile 1's packet wait for
/// mobile 0's retransmission; a session each does not.
#[test]
fn a_loss_holds_back_only_its_own_mobiles_packets() {
    let when_delivered = |sessions: bool| {
        let (mut l, ss) = cell(
            Mux::default(),
            || [sr(600), sr(600)],
            2,
            Limit::Packets(50),
            [Channel::droplist(vec![0]), Channel::None],
        );
        let s1 = if sessions { ss[1] } else { Session::Arq };
        l.offer(Instant::ZERO, 0, ss[0], pkt(0, 0, 250));
        l.offer(Instant::ZERO, 0, s1, pkt(1, 0, 250));
        let mut at = [None; 2];
        while let Some(t) = l.poll_timeout() {
            l.handle_timeout(t);
            while let Some((_, p)) = l.poll_deliver() {
                at[p.meta.flow as usize] = Some(t);
            }
        }
        assert!(l.stats()[0].frames_retransmitted >= 1);
        at.map(|t| (t.expect("delivered") - Instant::ZERO).as_secs_f64())
    };
    let ([a0, a1], [b0, b1]) = (when_delivered(false), when_delivered(true));
    // Airtime of a frame at 64 kbit/s: 31.75 ms; one-way delay 50 ms.
    assert!(a1 >= a0, "one session: mobile 1's packet after mobile 0's retransmission ({a0}, {a1})");
    assert!(b1 < 0.2, "own session: mobile 1's packet at once ({b1})");
    // Mobile 0's loss: in one session mobile 1's later frame reveals the gap (a
    // NACK, ~0.25 s); alone in its session only its timer (600 ms) does.
    assert!(a0 < 0.3 && b0 > 0.6, "mobile 0's retransmission: by NACK {a0}, by timer {b0}");
}

#[test]
fn strict_priority_with_mobiles_serves_the_arq_sessions_in_turn() {
    for (sched, arq_first) in [(Scheduler::ArqFirst, true), (Scheduler::BypassFirst, false)] {
        let (mut l, ss) = cell(Mux::Pull(sched), raw, 2, Limit::Packets(50), [Channel::None, Channel::None]);
        for i in 0..5 {
            l.offer(Instant::ZERO, 0, ss[0], pkt(0, i, 250));
            l.offer(Instant::ZERO, 0, ss[1], pkt(1, i, 250));
            l.offer(Instant::ZERO, 0, Session::Bypass, pkt(9, i, 250));
        }
        let (_, evs) = drain(&mut l, Duration::from_secs(60));
        let order = down_frames(&evs);
        let rest = &order[1..];
        let (arq, bypass): (Vec<u16>, Vec<u16>) = rest.iter().partition(|&&f| f != 9);
        let arq_part = if arq_first { &rest[..arq.len()] } else { &rest[bypass.len()..] };
        assert!(arq_part.iter().all(|&f| f != 9), "{sched:?}: {order:?}");
        assert!(arq_part.windows(2).all(|w| w[0] != w[1]), "{sched:?}: the mobiles alternate: {order:?}");
    }
}

#[test]
fn every_mobiles_arq_recovers_losses_with_its_own_timers() {
    for mux in [Mux::default(), Mux::SharedQueue { limit: 20 }] {
        let chan = |d: &str| Channel::Uniform { p: 0.15, rng: Rng::stream(3, 0, d) };
        let (mut l, ss) = cell(mux, || [sr(600), sr(600)], 4, Limit::Packets(100), [chan("down"), chan("up")]);
        for i in 0..30 {
            for (m, &s) in ss.iter().enumerate() {
                l.offer(Instant::ZERO, (i % 2) as usize, s, pkt(m as u16, i, 400));
            }
        }
        let (out, _) = drain(&mut l, Duration::from_secs(3600));
        for (d, out) in out.iter().enumerate() {
            for m in 0..4u16 {
                let got: Vec<u16> = out.iter().filter(|p| p.meta.flow == m).map(|p| p.ident() as u16).collect();
                let want: Vec<u16> = (0..30).filter(|i| i % 2 == d as u16).collect();
                assert_eq!(got, want, "{mux:?} dir {d} mobile {m}");
            }
        }
        let st = l.stats();
        assert!(st[0].frames_lost > 10 && st[0].arq_timeouts > 0, "{mux:?} {:?}", st[0]);
    }
}

#[test]
#[should_panic(expected = "one mobile per circuit")]
fn a_circuit_takes_no_second_mobile() {
    use thinwire::link::gsm_csd::{CsdConfig, GsmCsd};
    let gsm = |gw| Arq::from(GsmCsd::new(CsdConfig { network_side: gw, ..CsdConfig::default() }));
    let mut l = link(Mux::default(), [gsm(true), gsm(false)], Limit::Packets(5), [Channel::None, Channel::None]);
    l.add_mobile([gsm(true), gsm(false)], [Queue::droptail(Limit::Packets(5)), Queue::droptail(Limit::Packets(5))]);
}
