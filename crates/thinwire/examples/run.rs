//! `cargo run --release --example run -- SCENARIO.toml [KEY=VALUE ...]`: runs a
//! scenario from Rust and prints the results (the CLI proper is `thinwire run`).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: run SCENARIO.toml [KEY=VALUE ...]");
        std::process::exit(2)
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("error: {path}: {e}");
        std::process::exit(2)
    });
    let sc = thinwire::config::parse_scenario_file(&text, &args[1..], path.as_ref()).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let t = std::time::Instant::now();
    let r = thinwire::engine::run_scenario(&sc);
    let wall = t.elapsed().as_secs_f64();
    // writeln! rather than println!: a closed pipe (`| head`) ends the output quietly.
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "events {} wall {:.3}s ({:.1} M events/s) sim {:.1}s",
        r.events,
        wall,
        r.events as f64 / wall / 1e6,
        r.sim_time_s
    );
    for f in &r.flows {
        let _ = writeln!(out, "{f:?}");
    }
    for (d, l) in r.link.iter().enumerate() {
        let _ = writeln!(out, "link {d}: {l:?} flr {:.4}", l.frames_lost as f64 / l.frames_sent.max(1) as f64);
    }
}
