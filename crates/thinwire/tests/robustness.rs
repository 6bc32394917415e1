//! Parsers of outside input never panic: random bytes and mutated valid inputs.
use thinwire::config::parse_scenario;
use thinwire::rng::Rng;
use thinwire::time::Instant;
use thinwire::wire::{Packet, TcpFlags, TcpOptions, TcpRepr, L4};

#[test]
fn packet_parse_survives_garbage_and_mutations() {
    let mut rng = Rng::stream(9, 0, "fuzz.packet");
    let mut t = TcpRepr {
        src_port: 1,
        dst_port: 2,
        seq: 3,
        ack: 4,
        flags: TcpFlags(TcpFlags::ACK),
        window: 5,
        opts: TcpOptions { timestamps: Some((6, 7)), ..Default::default() },
    };
    t.opts.sack[0] = (1, 2);
    t.opts.sack_len = 1;
    let good = Packet::new([1, 2, 3, 4], [5, 6, 7, 8], 1, L4::Tcp(t), 100, 0, Instant::ZERO).emit();
    let mut ok = 0;
    for _ in 0..200_000 {
        let mut b =
            if rng.bernoulli(0.5) { good.clone() } else { (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect() };
        for _ in 0..rng.below(4) {
            if !b.is_empty() {
                let i = rng.below(b.len() as u64) as usize;
                b[i] = rng.next_u64() as u8;
            }
        }
        if rng.bernoulli(0.2) {
            let n = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(n);
        }
        if Packet::parse(&b).is_ok() {
            ok += 1;
        }
    }
    assert!(ok > 1000, "some unmutated packets must still parse: {ok}");
}

#[test]
fn scenario_parser_survives_mutations() {
    let base =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/shared-link-sr.toml")).unwrap();
    let mut rng = Rng::stream(9, 0, "fuzz.toml");
    let alphabet = b"[]{}=\".,#\n 0123456789abcdefkKMGms+-_eE";
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut b = base.clone().into_bytes();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len() as u64) as usize;
            match rng.below(3) {
                0 => b[i] = alphabet[rng.below(alphabet.len() as u64) as usize],
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, alphabet[rng.below(alphabet.len() as u64) as usize]),
            }
        }
        let Ok(text) = String::from_utf8(b) else { continue };
        match parse_scenario(&text, &[]) {
            Ok(_) => {
                accepted += 1;
                // Whatever the parser accepts, the simulator runs without panicking.
                if let Ok(sc) = parse_scenario(&text, &["stop=\"5s\"".into()]) {
                    thinwire::engine::run_scenario(&sc);
                }
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "error must be one line: {e}"),
        }
    }
    assert!(accepted > 100 && accepted < 20_000, "{accepted}");
}

fn scenario(o: &[&str]) -> thinwire::config::Scenario {
    let base = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[[flow]]\napp = \"bulk\"\nbytes = \"100KB\"\n";
    parse_scenario(base, &o.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn a_timer_of_zero_length_ends_the_run_as_stuck_instead_of_livelocking() {
    use thinwire::config::{Dur, FlowCfg, TcpCfg};
    use thinwire::engine::{EndReason, Sim};
    // The ranges reject a 0 s RTO; built by hand here to test the backstop.
    let mut sc = scenario(&[]);
    let FlowCfg::Bulk(b) = &mut sc.flow[0] else { panic!() };
    let zero = Some(Dur(thinwire::time::Duration::ZERO));
    b.tcp = Some(TcpCfg { min_rto: zero, initial_rto: zero, ..Default::default() });
    let r = Sim::new(&sc).run();
    assert_eq!(r.end, EndReason::Stuck);
    assert_eq!(r.unfinished, vec![0]);
}

#[test]
fn a_run_says_why_it_ended_and_which_flows_did_not_finish() {
    use thinwire::engine::{EndReason, Sim};
    let r = Sim::new(&scenario(&[])).run();
    assert_eq!((r.end, r.unfinished.len()), (EndReason::Finished, 0));
    let r = Sim::new(&scenario(&["stop=\"2s\""])).run();
    assert_eq!((r.end, r.unfinished), (EndReason::StopTime, vec![0]));
    let r = Sim::new(&scenario(&["max_time=\"2s\""])).run();
    assert_eq!((r.end, r.unfinished), (EndReason::MaxTime, vec![0]));
    assert_eq!(r.sim_time_s, 2.0, "a run that reached max_time lasted max_time");
    // A window that never opens (below the schema's range; built by hand).
    let mut sc = scenario(&[]);
    let thinwire::config::FlowCfg::Bulk(b) = &mut sc.flow[0] else { panic!() };
    b.tcp = Some(thinwire::config::TcpCfg { cwnd_clamp: Some(thinwire::config::Size(0)), ..Default::default() });
    let r = Sim::new(&sc).run();
    assert_eq!((r.end, r.unfinished), (EndReason::Idle, vec![0]));
}

#[test]
fn a_poll_that_asks_to_stop_interrupts_the_run() {
    use thinwire::engine::{EndReason, Sim, POLL_EVERY};
    let mut polls = 0;
    let r = Sim::new(&scenario(&["flow.0.bytes=\"unlimited\"", "stop=\"100000s\""])).run_polled(&mut || {
        polls += 1;
        polls == 2
    });
    assert_eq!(r.end, EndReason::Interrupted);
    assert_eq!(r.events, 2 * POLL_EVERY);
}

#[test]
fn link_utilisation_never_exceeds_one_with_a_frame_on_air_at_the_end() {
    // 1 bit/s: the first 254-byte frame takes 2,032 s, far past the 30 s run.
    let r = thinwire::engine::Sim::new(&scenario(&["wireless.rate=\"1bps\"", "stop=\"30s\""])).run();
    for s in &r.link {
        assert!((0.0..=1.0).contains(&s.utilization), "{}", s.utilization);
    }
    assert!(r.link[1].utilization > 0.99, "the uplink sent its SYN for the whole run: {}", r.link[1].utilization);
}

/// A raw-IP (link type 101) pcap of TCP packets (time ns, from a?, seq, ack, len, flags).
fn pcap_of(pkts: &[(i64, bool, u32, u32, u32, u8)]) -> Vec<u8> {
    let mut out = vec![];
    out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&101u32.to_le_bytes());
    for &(t, from_a, seq, ack, len, flags) in pkts {
        let (src, dst, sp, dp) =
            if from_a { ([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80) } else { ([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000) };
        let tcp = TcpRepr {
            src_port: sp,
            dst_port: dp,
            seq,
            ack,
            flags: TcpFlags(flags),
            window: 65535,
            ..Default::default()
        };
        let b = Packet::new(src, dst, 1, L4::Tcp(tcp), len, 0, Instant::ZERO).emit();
        out.extend_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((t % 1_000_000_000 / 1000) as u32).to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&b);
    }
    out
}

#[test]
fn time_going_backwards_gives_no_negative_rtt_and_a_warning() {
    const S: i64 = 1_000_000_000;
    let (syn, ack) = (TcpFlags::SYN, TcpFlags::ACK);
    // A SYN at 100 s and its SYN-ACK stamped 99.5 s (a clock step): once "RTT min −500 ms".
    let cap = pcap_of(&[
        (100 * S, true, 1000, 0, 0, syn),
        (99 * S + S / 2, false, 5000, 1001, 0, syn | ack),
        (100 * S + S / 10, true, 1001, 5001, 100, ack),
        (100 * S + S / 5, false, 5001, 1101, 0, ack),
    ]);
    let a = thinwire::analysis::analyze(&cap, true).unwrap();
    let d = &a.tracker.conns[0].dirs;
    for s in d {
        assert!(
            s.rtt_samples == 0 || (s.rtt_min_ns >= 0 && s.rtt_max_ns >= s.rtt_min_ns),
            "{} {}",
            s.rtt_min_ns,
            s.rtt_max_ns
        );
        assert!(s.idle_max_ns >= 0);
    }
    assert!(a.report.warnings.iter().any(|w| w.contains("1 packets were stamped earlier")), "{:?}", a.report.warnings);
}

#[test]
fn descending_sequence_numbers_are_analysed_whole() {
    // 300k segments sent highest first: once quadratic in `Ranges::insert` (55 s
    // for 800k packets); now each goes to the front of a deque. Speed is measured
    // in bench/, not asserted here: this checks the analysis of such a capture.
    let n = 300_000u32;
    let mut pkts = vec![(0, true, 0, 0, 0, TcpFlags::SYN)];
    for k in (0..n).rev() {
        pkts.push((1_000 + k as i64, true, 1 + 100 * k, 0, 100, TcpFlags::ACK));
    }
    let a = thinwire::analysis::analyze(&pcap_of(&pkts), false).unwrap();
    assert_eq!(a.tcp_packets, n as u64 + 1);
    let d = &a.tracker.conns[0].dirs[0];
    assert_eq!(d.data_bytes, 100 * n as u64);
    assert_eq!(d.unique_bytes, 100 * n as u64, "no byte counted twice");
}

#[test]
fn a_proxy_for_a_very_slow_link_still_carries_data() {
    // (1 + headroom)·8 bit/s·1.8 s is 2 bytes: once a window smaller than any
    // segment, so nothing was ever sent and the run ended at once.
    let sc = scenario(&["proxy.link_rate=\"8bps\"", "flow.0.bytes=\"20KB\""]);
    let r = thinwire::engine::Sim::new(&sc).run();
    assert_eq!((r.end, r.unfinished.len()), (thinwire::engine::EndReason::Finished, 0));
}

#[test]
fn a_pcapng_interface_can_be_chosen() {
    // One path seen at two capture points: interface 0 sees a segment once, and
    // interface 1 sees it twice (a retransmission there only).
    use thinwire::pcap::{Direction, PcapngWriter};
    let seg = |seq: u32| {
        let tcp = TcpRepr {
            src_port: 1000,
            dst_port: 80,
            seq,
            flags: TcpFlags(TcpFlags::ACK),
            window: 65535,
            ..Default::default()
        };
        Packet::new([10, 0, 0, 1], [10, 0, 0, 2], 1, L4::Tcp(tcp), 100, 0, Instant::ZERO).emit()
    };
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let a = w.interface("a").unwrap();
    let b = w.interface("b").unwrap();
    w.packet(a, 1_000, Direction::Outbound, &seg(1)).unwrap();
    w.packet(b, 2_000, Direction::Inbound, &seg(1)).unwrap();
    w.packet(b, 3_000, Direction::Inbound, &seg(1)).unwrap();
    let cap = w.into_inner();
    let chunks = || vec![cap.clone()].into_iter().map(Ok);
    let first = thinwire::analysis::analyze_chunks_on(Iter(chunks()), false, None).unwrap();
    assert_eq!(first.tracker.conns[0].dirs[0].rexmit_pkts, 0);
    assert!(first.report.warnings.iter().any(|w| w.contains("analysed interface 0 only")));
    let second = thinwire::analysis::analyze_chunks_on(Iter(chunks()), false, Some(1)).unwrap();
    assert_eq!(second.tracker.conns[0].dirs[0].rexmit_pkts, 1);
    assert!(second.report.warnings.iter().all(|w| !w.contains("interface")), "{:?}", second.report.warnings);
    let none = thinwire::analysis::analyze_chunks_on(Iter(chunks()), false, Some(5));
    assert!(none.is_err_and(|e| e.0.contains("interface 5 has no packets")));
}

struct Iter<I>(I);
impl<I: Iterator<Item = std::io::Result<Vec<u8>>>> thinwire::pcap::Chunks for Iter<I> {
    fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        self.0.next()
    }
}
