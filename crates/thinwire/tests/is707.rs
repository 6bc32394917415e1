//! IS-707 RLP (seed 001 §II): NAK rounds of 1, 2 and 3 NAKs, partial recovery
//! (the receiver gives up and passes the hole on), and idle frames that reveal a
//! lost last frame.
use thinwire::link::is707::{Is707, Is707Config, Is707Stats};
use thinwire::link::Arq;
use thinwire::testkit::{ArqPair, DropFn};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

/// 576-byte packets: 31 frames of 19 bytes (the last one padded to the slot).
fn pkt(ident: u16) -> Packet {
    Packet::new(
        [10, 0, 0, 1],
        [10, 0, 1, 2],
        ident,
        L4::Udp(UdpRepr { src_port: 1, dst_port: 2 }),
        576 - 28,
        0,
        Instant::ZERO,
    )
}
fn is707(idle: Option<u32>) -> Arq {
    Is707::new(Is707Config { idle_frames: idle, ..Is707Config::default() }).into()
}
fn st(a: &Arq) -> Is707Stats {
    <&Is707>::try_from(a).expect("an IS-707 end").stats.clone()
}

fn transfer(n: u16, idle: Option<u32>, drop: DropFn, limit_s: i64) -> ArqPair {
    // 5-byte headers: 24-byte frames, one 20 ms slot each.
    let mut p = ArqPair::with_header(is707(idle), is707(Some(0)), 9600, Duration::from_millis(40), 5, drop);
    for i in 0..n {
        p.send(0, pkt(i));
    }
    p.run(Duration::from_secs(limit_s));
    p
}
fn idents(p: &ArqPair) -> Vec<u16> {
    p.delivered[1].iter().map(|p| p.ident() as u16).collect()
}
fn none() -> DropFn {
    Box::new(|_, _, _| false)
}
/// Drops frames of side 0 by index (originals and retransmissions are numbered together).
fn drop0(list: &[u64]) -> DropFn {
    let l = list.to_vec();
    Box::new(move |s, i, _| s == 0 && l.contains(&i))
}

#[test]
fn clean_channel_delivers_everything_one_frame_per_slot_without_naks() {
    let p = transfer(5, Some(0), none(), 60);
    assert_eq!(idents(&p), vec![0, 1, 2, 3, 4]);
    assert_eq!(p.frames(0), 5 * 31, "31 frames per 576-byte packet");
    assert_eq!(p.frames(1), 0, "the receiver acknowledges nothing");
    let s = st(p.side(1));
    assert_eq!((s.naks_sent, s.frames_abandoned), (0, 0));
}

#[test]
fn one_lost_frame_costs_one_nak_and_one_retransmission() {
    let p = transfer(5, Some(0), drop0(&[40]), 60);
    assert_eq!(idents(&p), vec![0, 1, 2, 3, 4]);
    assert_eq!(st(p.side(1)).naks_sent, 1);
    assert_eq!(st(p.side(0)).retransmissions, 1);
}

#[test]
fn a_lost_retransmission_escalates_to_two_naks_then_three() {
    // Frame 40 is lost, so is its first retransmission: when the round-1 timer
    // expires, round 2 sends 2 NAKs and the sender retransmits twice.
    let mut seen = 0;
    let drop: DropFn = Box::new(move |s, i, retx| {
        if s != 0 {
            return false;
        }
        if i == 40 {
            return true;
        }
        if retx {
            seen += 1;
            return seen == 1;
        }
        false
    });
    let p = transfer(5, Some(0), drop, 60);
    assert_eq!(idents(&p), vec![0, 1, 2, 3, 4]);
    assert_eq!(st(p.side(1)).naks_sent, 1 + 2);
    assert_eq!(st(p.side(0)).retransmissions, 1 + 2);
    assert_eq!(st(p.side(1)).frames_abandoned, 0);
}

#[test]
fn after_three_rounds_the_receiver_gives_up_and_the_packet_is_lost() {
    // Frame 40 (packet 1) and every retransmission are lost: 1 + 2 + 3 NAKs, then the
    // hole is passed on; packet 1 is lost, the others arrive.
    let drop: DropFn = Box::new(|s, i, retx| s == 0 && (i == 40 || retx));
    let p = transfer(5, Some(0), drop, 60);
    assert_eq!(idents(&p), vec![0, 2, 3, 4]);
    let r = st(p.side(1));
    assert_eq!((r.naks_sent, r.frames_abandoned), (6, 1));
    assert_eq!(st(p.side(0)).retransmissions, 6);
}

#[test]
fn a_lost_last_frame_needs_idle_frames_to_be_noticed() {
    let last = 3 * 31 - 1;
    let p = transfer(3, Some(0), drop0(&[last]), 60);
    assert_eq!(idents(&p), vec![0, 1], "without idle frames the receiver never learns of the loss");
    assert_eq!(st(p.side(1)).naks_sent, 0);
    let p = transfer(3, Some(3), drop0(&[last]), 60);
    assert_eq!(idents(&p), vec![0, 1, 2], "an idle frame carrying V(S) reveals it");
    assert_eq!(st(p.side(1)).naks_sent, 1);
    assert!(st(p.side(0)).idle_sent >= 3);
}

#[test]
fn idle_frame_budget_zero_n_or_unlimited() {
    for (idle, want) in [(Some(0), 0u64), (Some(5), 5)] {
        let p = transfer(2, idle, none(), 60);
        assert_eq!(st(p.side(0)).idle_sent, want);
    }
    // Unlimited: one idle frame per 20 ms slot once the data is out (62 data slots).
    let p = transfer(2, None, none(), 10);
    let idle = st(p.side(0)).idle_sent;
    assert!((10_000 / 20 - 62 - 2..=10_000 / 20 - 62 + 1).contains(&idle), "{idle}");
}

#[test]
fn a_lost_nak_is_repeated_in_the_next_round() {
    // The receiver's first NAK (its first frame on the reverse channel) is lost.
    let drop: DropFn = Box::new(|s, i, _| (s == 0 && i == 40) || (s == 1 && i == 0));
    let p = transfer(5, Some(0), drop, 60);
    assert_eq!(idents(&p), vec![0, 1, 2, 3, 4]);
    assert_eq!(st(p.side(1)).naks_sent, 1 + 2);
}

/// An idle frame whose arrival would change nothing (the receiver already knows of
/// every frame it announces) is not an event unless the link trace records
/// arrivals. Results must be those of a run where every arrival is an event (the
/// link-traced run): same flows, link counters and run length, fewer events.
#[test]
fn skipping_idle_frames_that_change_nothing_changes_no_result() {
    use thinwire::config::parse_scenario;
    use thinwire::engine::run_scenario;
    let mut skipped_any = false;
    for (case, (idle, mux, chan, extra)) in [
        ("\"unlimited\"", "pull", "model = \"fading\"\npe = 0.3\nfdt = 0.1", ""),
        ("\"unlimited\"", "shared-queue", "model = \"uniform\"\np = 0.1", "[[flow]]\napp = \"media\"\n"),
        ("3", "pull", "model = \"fading\"\npe = 0.1\nfdt = 1.0", "[[flow]]\napp = \"web\"\n"),
        ("0", "pull", "model = \"uniform\"\np = 0.05", ""),
    ]
    .into_iter()
    .enumerate()
    {
        let text = format!(
            "seed = {case}\nstop = \"400s\"\n[wireless]\nrate = \"9600bps\"\ndelay = \"10ms\"\nframe = \"19B\"\n\
             header = \"5B\"\nmux = \"{mux}\"\n[wireless.channel]\n{chan}\n[wireless.arq]\nprotocol = \"is707\"\n\
             idle_frames = {idle}\n[[flow]]\napp = \"bulk\"\nbytes = \"60KB\"\n\
             tcp = {{ variant = \"reno\", mss = 536 }}\n{extra}"
        );
        let plain = parse_scenario(&text, &[]).unwrap();
        let mut traced = plain.clone();
        traced.trace.layers = vec!["link".into()];
        let (a, b) = (run_scenario(&plain), run_scenario(&traced));
        assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows), "case {case}");
        assert_eq!(format!("{:?}", a.link), format!("{:?}", b.link), "case {case}");
        assert_eq!((a.end, a.sim_time_s), (b.end, b.sim_time_s), "case {case}");
        assert!(a.events <= b.events, "case {case}");
        skipped_any |= a.events < b.events;
        assert!(b.link[0].idle_frames > 0 || idle == "0", "case {case}: idle frames were sent");
    }
    assert!(skipped_any, "some idle arrivals were skipped");
}

/// A link left to run down (a few idle frames after the last data, nothing more to
/// do): the time of the last arrival, which a run ending for want of events lasts
/// until, is the same whether the arrivals that changed nothing were events or not.
#[test]
fn a_link_that_runs_down_reports_its_last_silent_arrival() {
    use thinwire::channel::Channel;
    use thinwire::link::wireless::{DirConfig, LinkTrace, Mux, Session, WirelessConfig, WirelessLink};
    use thinwire::queue::Limit;
    let last = |trace: bool| {
        let dir = DirConfig { rate: 9600, delay: Duration::from_millis(10), queue: Limit::Packets(50) };
        let cfg = WirelessConfig { dirs: [dir, dir], frame: 19, header: 5, mux: Mux::default() };
        let mut l = WirelessLink::new(cfg, [is707(Some(4)), is707(Some(4))], [Channel::None, Channel::None]);
        l.set_trace(LinkTrace { link: trace, queue: false, sojourn: false, channel: false });
        for i in 0..3 {
            l.offer(Instant::ZERO, 0, Session::Arq, pkt(i));
        }
        let mut t_last = Instant::ZERO;
        while let Some(t) = l.poll_timeout() {
            l.handle_timeout(t);
            while l.poll_deliver().is_some() {}
            while l.poll_event().is_some() {}
            t_last = t;
        }
        (t_last, l.silent_until())
    };
    let (every, _) = last(true);
    let (events_only, silent) = last(false);
    assert!(silent > events_only, "the last idle frames' arrivals were skipped");
    assert_eq!(every, events_only.max(silent));
}

/// Panics, showing where, if `a` and `b` print differently.
fn same(a: &impl std::fmt::Debug, b: &impl std::fmt::Debug, what: &str) {
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    if let Some(i) =
        a.bytes().zip(b.bytes()).position(|(x, y)| x != y).or((a.len() != b.len()).then_some(a.len().min(b.len())))
    {
        let from = i.saturating_sub(150);
        let cut = |s: &str| s.get(from..(i + 150).min(s.len())).unwrap_or("").to_string();
        panic!("{what}: differ at byte {i}:\n  {}\n  {}", cut(&a), cut(&b));
    }
}

/// Runs `sc` with idle stretches and with one event per frame, checks that
/// flows, link counters, trace, end, length and events agree, and returns the
/// first run.
fn same_without_stretches(sc: &thinwire::config::Scenario, what: &str) -> thinwire::engine::RunResult {
    use thinwire::engine::Sim;
    let a = Sim::new(sc).run();
    let mut b = Sim::new(sc);
    b.link_mut().no_idle_stretches();
    let b = b.run();
    same(&a.flows, &b.flows, what);
    same(&a.link, &b.link, what);
    same(&a.trace, &b.trace, what);
    assert_eq!((a.end, a.sim_time_s, a.events), (b.end, b.sim_time_s, b.events), "{what}");
    a
}

/// An idle stretch (idle frames the far end ignores, nothing else to send) runs
/// in one step up to the next other event instead of one event per frame. Every
/// result must be the run's with one event per frame: flows, link counters, the
/// TCP trace, the run's end and its count of events. Cases: unlimited and
/// counted idle frames, both directions idle at once with equal and unequal
/// airtimes, channels of every kind, bypass traffic (media) between stretches,
/// a run ending at its stop time and one ending when its transfer is done.
#[test]
fn idle_stretches_in_one_step_change_no_result() {
    use thinwire::config::parse_scenario;
    let mut stretched = 0;
    for (case, (idle, up_rate, chan, stop, extra)) in [
        ("\"unlimited\"", "9600bps", "model = \"fading\"\npe = 0.3\nfdt = 0.01", "600s", ""),
        ("\"unlimited\"", "4800bps", "model = \"fading\"\npe = 0.1\nfdt = 1.0", "600s", ""),
        ("\"unlimited\"", "9600bps", "model = \"uniform\"\np = 0.2", "end", ""),
        ("\"unlimited\"", "7200bps", "model = \"none\"", "300s", "[[flow]]\napp = \"media\"\nrate = \"800bps\"\n"),
        (
            "5",
            "9600bps",
            "model = \"two-state\"\ngood = { ber = 1e-5, mean = \"5s\" }\nbad = { ber = 1e-2, mean = \"500ms\" }",
            "600s",
            "[[flow]]\napp = \"web\"\n",
        ),
        ("2", "19200bps", "model = \"fading\"\npe = 0.3\nfdt = 0.1", "end", ""),
        ("0", "9600bps", "model = \"uniform\"\np = 0.05", "400s", ""),
    ]
    .into_iter()
    .enumerate()
    {
        for seed in 1..=3 {
            let text = format!(
                "seed = {seed}\nstop = \"{stop}\"\n[wired]\nrate = \"1.5Mbps\"\ndelay = \"200ms\"\n\
                 [wireless]\nrate = \"9600bps\"\ndelay = \"10ms\"\nframe = \"19B\"\nheader = \"5B\"\n\
                 [wireless.up]\nrate = \"{up_rate}\"\n[wireless.channel]\n{chan}\n[wireless.arq]\n\
                 protocol = \"is707\"\nidle_frames = {idle}\n[[flow]]\napp = \"bulk\"\nbytes = \"40KB\"\n\
                 tcp = {{ variant = \"reno\", mss = 536 }}\n{extra}[trace]\nlayers = [\"tcp\"]\n"
            );
            let sc = parse_scenario(&text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let what = format!("case {case} seed {seed}");
            let a = same_without_stretches(&sc, &what);
            assert!(a.trace_rows > 0, "{what}");
            stretched += (a.link[0].idle_frames + a.link[1].idle_frames > 0) as u32;
        }
    }
    assert!(stretched >= 15, "idle frames were sent in {stretched} runs");
}

/// Idle stretches where events fall on the radios' frame boundaries: the wired
/// link is timed so that both radios' frames start on multiples of 20 ms (the
/// mobile's SYN at 0; the SYN-ACK reaches the gateway at 80 ms: 70 ms for the
/// SYN's three frames and their delay, 2 × (320 µs + 4.68 ms) on the wired
/// link), and a probe of two frames and one of three (400 µs on the wired link)
/// reach the two radios together 1 ms before such a boundary every second, to
/// go on the air at that boundary. Both radios
/// then wake at the same instants (every frame with equal airtimes, every other
/// with the uplink's twice as long), one leaves its stretch a frame before the
/// other, and the sojourn trace records which radio took its probe first at an
/// instant. Results must be those with one event per frame.
#[test]
fn idle_stretches_keep_the_order_of_events_at_one_instant() {
    use thinwire::config::parse_scenario;
    for up_rate in ["9600bps", "4800bps", "19200bps"] {
        for (dir, up_probe, down_probe) in [("up", 38, 55), ("down", 55, 38)] {
            for seed in 1..=2 {
                // A down probe of 55 B crosses the wired link in 5.08 ms, one of
                // 38 B in 4.956364 ms: both reach the gateway at 0.519 s + k s,
                // to go at 0.52 s + k s, on the 40 ms frames' boundaries too.
                let down_start = if down_probe == 55 { "513920us" } else { "514043636ns" };
                let text = format!(
                    "seed = {seed}\nstop = \"300s\"\n[wired]\nrate = \"1100kbps\"\ndelay = \"4680us\"\n\
                     [wireless]\nrate = \"9600bps\"\ndelay = \"10ms\"\nframe = \"19B\"\nheader = \"5B\"\n\
                     [wireless.up]\nrate = \"{up_rate}\"\n[wireless.channel]\nmodel = \"uniform\"\np = 0.05\n\
                     [wireless.arq]\nprotocol = \"is707\"\nidle_frames = \"unlimited\"\n\
                     [[flow]]\napp = \"bulk\"\ndirection = \"{dir}\"\nbytes = \"10KB\"\n\
                     tcp = {{ variant = \"reno\", mss = 536, timestamps = false, sack = false, window_scaling = false }}\n\
                     [[flow]]\napp = \"probe\"\ndirection = \"up\"\npacket = \"{up_probe}B\"\nstart = \"519ms\"\n\
                     spacing = [\"1s\", \"1s\"]\n\
                     [[flow]]\napp = \"probe\"\ndirection = \"down\"\npacket = \"{down_probe}B\"\nstart = \"{down_start}\"\n\
                     spacing = [\"1s\", \"1s\"]\n\
                     [trace]\nlayers = [\"tcp\", \"queue\", \"sojourn\"]\n"
                );
                let sc = parse_scenario(&text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
                let what = format!("uplink {up_rate}, {dir}, seed {seed}");
                let a = same_without_stretches(&sc, &what);
                assert!(a.flows[0].completion_s.is_some(), "{what}");
            }
        }
    }
}
