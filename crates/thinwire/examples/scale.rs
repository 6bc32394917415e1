//! `cargo run --release --example scale -- FLOWS RATE [SECONDS]`: FLOWS unlimited
//! NewReno bulk flows sharing one raw wireless link of RATE (wired and wireless, e.g.
//! `1Gbps`), 10 ms each way, for SECONDS (default 60) simulated seconds. Prints one
//! line: flows, rate, events, wall seconds, events/s and the process's peak resident
//! memory (VmHWM), for `bench/scale.py` to turn into bytes per flow (issue
//! "Performance at scale", part 4).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(rate)) = (args.first().and_then(|x| x.parse::<usize>().ok()), args.get(1)) else {
        eprintln!("usage: scale FLOWS RATE [SECONDS]");
        std::process::exit(2)
    };
    let secs: f64 = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(60.0);
    let mut text = format!(
        "seed = 1\nstop = \"{secs}s\"\n[wired]\nrate = \"{rate}\"\ndelay = \"1ms\"\n\
         [wireless]\nrate = \"{rate}\"\ndelay = \"10ms\"\nframe = \"1500B\"\nheader = \"0B\"\n\
         queue = {{ limit = \"{}pkt\" }}\n[wireless.arq]\nprotocol = \"raw\"\n",
        (2 * n).max(1000)
    );
    for i in 0..n {
        // Starts spread over the first second, so the flows do not all open at once.
        text += &format!(
            "[[flow]]\napp = \"bulk\"\nbytes = \"unlimited\"\nstart = \"{}ms\"\n\
             tcp = {{ variant = \"newreno\", mss = 1448, rcv_buf = \"1MiB\", snd_buf = \"1MiB\" }}\n",
            i * 1000 / n
        );
    }
    let sc = thinwire::config::parse_scenario(&text, &[]).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let t = std::time::Instant::now();
    let r = thinwire::engine::run_scenario(&sc);
    let wall = t.elapsed().as_secs_f64();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l[6..].trim().to_string()))
        .unwrap_or_default();
    let bytes: u64 = r.flows.iter().map(|f| f.bytes_delivered).sum();
    println!(
        "flows {n} rate {rate} events {} wall {wall:.3} events_per_s {:.0} goodput_bps {:.0} hwm {hwm}",
        r.events,
        r.events as f64 / wall,
        bytes as f64 * 8.0 / secs
    );
}
