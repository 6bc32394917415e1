//! The emulator's I/O-free path (src/realtime.rs): its schedule depends only on
//! the packets and the times they came in, not on when the driver woke up, so an
//! emulated run can be replayed exactly from its input log.
use thinwire::realtime::{Decision, End, RealtimePath};
use thinwire::rng::Rng;
use thinwire::time::{Duration, Instant};
use thinwire::wire::{IpRepr, TcpFlags, TcpRepr};

fn scenario(protocol: &str) -> thinwire::config::Scenario {
    let text = format!(
        "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[wireless.channel]\nmodel = \"uniform\"\np = 0.05\n\
         [wireless.arq]\nprotocol = \"{protocol}\"\n[[flow]]\napp = \"bulk\"\nbytes = \"1MB\"\n"
    );
    thinwire::config::parse_scenario(&text, &[]).unwrap()
}

fn segment(from_mobile: bool, seq: u32, len: usize, rng: &mut Rng) -> Vec<u8> {
    let (m, s) = ([10, 0, 1, 2], [10, 0, 0, 1]);
    let (src, dst) = if from_mobile { (m, s) } else { (s, m) };
    let t = TcpRepr {
        src_port: if from_mobile { 40000 } else { 80 },
        dst_port: if from_mobile { 80 } else { 40000 },
        seq,
        ack: 1,
        flags: TcpFlags(TcpFlags::ACK),
        window: 65535,
        ..Default::default()
    };
    let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    let ip = IpRepr::new(src.into(), dst.into(), 6, seq as u16, t.header_len() + len);
    let mut b = vec![0u8; ip.total_len()];
    ip.emit(&mut b);
    t.emit(&mut b[20..], &payload, src.into(), dst.into());
    b
}

/// Random inputs from both ends at random times over 20 s.
fn inputs(seed: u64) -> Vec<(Instant, End, Vec<u8>)> {
    let mut rng = Rng::stream(seed, 0, "inputs");
    let mut t = Instant::ZERO;
    let mut out = vec![];
    for i in 0..300u32 {
        t += Duration::from_nanos(1 + rng.below(70_000_000) as i64);
        let up = rng.below(4) == 0;
        let len = if up { 0 } else { 1 + rng.below(1400) as usize };
        out.push((t, if up { End::Mobile } else { End::Server }, segment(up, i * 1400, len, &mut rng)));
    }
    out
}

/// Runs the inputs; `eager`: wake at every deadline (as a perfect real-time loop),
/// else only catch up when an input arrives (as a late one). Returns the schedule
/// and the bytes delivered per end.
fn run(protocol: &str, ins: &[(Instant, End, Vec<u8>)], eager: bool) -> (Vec<Decision>, Vec<Vec<u8>>) {
    let mut p = RealtimePath::new(&scenario(protocol), false);
    p.record_decisions();
    let mut got = vec![];
    let mut drain = |p: &mut RealtimePath| {
        while let Some(o) = p.poll_output() {
            got.push(o.packet.emit());
        }
    };
    for (t, end, b) in ins {
        if eager {
            while let Some(d) = p.next_deadline().filter(|d| d <= t) {
                p.advance(d);
                drain(&mut p);
            }
        }
        p.advance(*t);
        drain(&mut p);
        p.input(*t, *end, b.clone()).unwrap();
    }
    p.advance(Instant::ZERO + Duration::from_secs(3600));
    drain(&mut p);
    (p.take_decisions(), got)
}

#[test]
fn the_schedule_does_not_depend_on_when_the_driver_wakes() {
    for protocol in ["raw", "sr", "rlc", "gprs", "rlp-gsm"] {
        let ins = inputs(3);
        let (a, got_a) = run(protocol, &ins, true);
        let (b, got_b) = run(protocol, &ins, false);
        assert_eq!(a, b, "{protocol}: schedules differ");
        assert_eq!(got_a, got_b);
        let outs = a.iter().filter(|d| matches!(d, Decision::Out { .. })).count();
        let ins_n = a.iter().filter(|d| matches!(d, Decision::In { .. })).count();
        assert_eq!(ins_n, 300);
        assert!(outs > 0, "{protocol}: nothing came out");
        // Every packet that came out is one that went in, unchanged.
        let sent: std::collections::HashSet<Vec<u8>> = ins.iter().map(|(_, _, b)| b.clone()).collect();
        assert!(got_a.iter().all(|g| sent.contains(g)), "{protocol}: altered bytes");
        // Times in the schedule never go backwards.
        let times: Vec<i64> = a
            .iter()
            .map(|d| match *d {
                Decision::In { at, .. } | Decision::Drop { at, .. } | Decision::Out { at, .. } => at.nanos(),
            })
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{protocol}: time went backwards");
    }
}

#[test]
fn same_inputs_same_schedule_different_inputs_different_schedule() {
    let (a, _) = run("sr", &inputs(5), false);
    let (b, _) = run("sr", &inputs(5), false);
    let (c, _) = run("sr", &inputs(6), false);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // The log's text form is stable (what `simulate-log` compares).
    let text: Vec<String> = a.iter().map(|d| d.to_string()).collect();
    assert!(text[0].ends_with(&format!(
        "{:016x}",
        match a[0] {
            Decision::In { hash, .. } => hash,
            _ => panic!(),
        }
    )));
}
