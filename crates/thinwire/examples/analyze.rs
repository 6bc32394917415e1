//! Per-connection statistics of a capture: `cargo run --release --example analyze FILE`.
//! (The CLI `thinwire analyze` is the user-facing command; this is for benchmarks.)
use thinwire::analysis::analyze_file;

fn main() {
    let path = std::env::args().nth(1).expect("usage: analyze CAPTURE");
    let t0 = std::time::Instant::now();
    let a = match analyze_file(std::path::Path::new(&path), false) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2)
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    for w in &a.report.warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "{} packets ({} TCP) in {:.3} s: {:.2} M packets/s; {} connections",
        a.report.packets,
        a.tcp_packets,
        wall,
        a.report.packets as f64 / wall / 1e6,
        a.tracker.conns.len()
    );
    for c in a.tracker.conns.iter().take(20) {
        println!(
            "conn {}: {}:{} <-> {}:{} complete={}",
            c.id,
            c.addr_string(0),
            c.port[0],
            c.addr_string(1),
            c.port[1],
            c.complete()
        );
        for (d, s) in c.dirs.iter().enumerate() {
            let avg = if s.rtt_samples > 0 { s.rtt_sum_ns / s.rtt_samples as f64 / 1e6 } else { 0.0 };
            println!("  {}: pkts {} acks {} pure {} sack {} dsack {} data {} bytes {} unique {} rexmit {} / {} ooo {} rtt n={} min={:.1} max={:.1} avg={:.1} dup {} triple {} FR {} RTO {} spurious {} idle {:.1} ms",
                ["a->b", "b->a"][d], s.packets, s.ack_pkts, s.pure_acks, s.sack_pkts, s.dsack_pkts, s.data_pkts, s.data_bytes, s.unique_bytes,
                s.rexmit_pkts, s.rexmit_bytes, s.out_of_order_pkts, s.rtt_samples, s.rtt_min_ns as f64 / 1e6, s.rtt_max_ns as f64 / 1e6, avg,
                s.dupacks, s.triple_dupacks, s.fast_retransmits, s.timeouts, s.spurious_timeouts, s.idle_max_ns as f64 / 1e6);
        }
    }
}
