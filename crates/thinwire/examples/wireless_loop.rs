//! `cargo run --release --example wireless_loop -- SCENARIO.toml [PACKETS] [INTERVAL_MS]`
//!
//! Drives the scenario's wireless link (`build::wireless`: its protocol, channels,
//! queues and multiplexer) from a plain loop with no simulator: offers PACKETS
//! 1,500-byte UDP packets down the link, one every INTERVAL_MS (defaults 200 and
//! 100), runs the link's own timers, and prints what came out. The real-time
//! emulator drives the same type the same way, with wall-clock time.
use thinwire::link::wireless::{Session, WirelessLink};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Packet, UdpRepr, L4};

fn die(msg: String) -> ! {
    eprintln!("wireless_loop: {msg}");
    std::process::exit(2)
}

/// Runs every link step due by `now`; returns the packets that left the link.
fn advance(link: &mut WirelessLink, now: Instant, out: &mut Vec<(Instant, usize, Packet)>) {
    while let Some(t) = link.poll_timeout().filter(|&t| t <= now) {
        link.handle_timeout(t);
        while let Some((dir, p)) = link.poll_deliver() {
            out.push((t, dir, p));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else { die("usage: wireless_loop SCENARIO.toml [PACKETS] [INTERVAL_MS]".into()) };
    let num = |i: usize, default: u64| {
        args.get(i)
            .map_or(Ok(default), |s| s.parse::<u64>())
            .unwrap_or_else(|_| die(format!("{:?} is not a number", args[i])))
    };
    let (n, interval) = (num(1, 200), Duration::from_millis(num(2, 100) as i64));
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| die(format!("{path}: {e}")));
    let sc = thinwire::config::parse_scenario_file(&text, &[], path.as_ref())
        .unwrap_or_else(|e| die(format!("{path}: {e}")));
    let mut link = thinwire::build::wireless(&sc);
    let mut out = vec![];
    for i in 0..n {
        let now = Instant::ZERO + interval * i as i64;
        advance(&mut link, now, &mut out);
        let l4 = L4::Udp(UdpRepr { src_port: 9, dst_port: 9 });
        let p = Packet::new([10, 0, 0, 1], [10, 0, 1, 2], i as u16, l4, 1472, 0, now);
        link.offer(now, 0, Session::Arq, p);
    }
    advance(&mut link, Instant(i64::MAX), &mut out);
    let s = &link.stats()[0];
    let delays: Vec<f64> = out.iter().map(|(t, _, p)| (*t - p.meta.born).as_secs_f64() * 1e3).collect();
    println!(
        "{}: {} of {n} packets delivered ({} dropped at the full queue); delay min {:.1} ms, max {:.1} ms; {} frames sent down, {} lost, {} retransmitted",
        sc.name.as_deref().unwrap_or(path),
        out.len(),
        s.queue_drops,
        delays.iter().cloned().fold(f64::INFINITY, f64::min),
        delays.iter().cloned().fold(0.0, f64::max),
        s.frames_sent,
        s.frames_lost,
        s.frames_retransmitted
    );
}
