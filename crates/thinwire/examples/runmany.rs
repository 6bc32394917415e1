//! `cargo run --release --example runmany -- DIR [REPEATS]`: runs every `*.toml`
//! scenario in DIR, REPEATS times (default 3), and prints the fastest total wall
//! time and event rate: a steadier speed measure than single runs on a noisy machine.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: runmany DIR [REPEATS]");
        std::process::exit(2)
    };
    let repeats: usize = args.get(1).and_then(|x| x.parse().ok()).unwrap_or(3);
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| {
            eprintln!("error: {dir}: {e}");
            std::process::exit(2)
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let scenarios: Vec<_> = paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            thinwire::config::parse_scenario(&text, &[]).unwrap_or_else(|e| {
                eprintln!("error: {}: {e}", p.display());
                std::process::exit(2)
            })
        })
        .collect();
    let mut best = f64::INFINITY;
    let mut events = 0;
    for _ in 0..repeats {
        let t = std::time::Instant::now();
        events = scenarios.iter().map(|sc| thinwire::engine::run_scenario(sc).events).sum::<u64>();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{} scenarios, {} events: best of {repeats}: {:.3} s ({:.1} ms/run, {:.2} M events/s)",
        scenarios.len(),
        events,
        best,
        best * 1e3 / scenarios.len() as f64,
        events as f64 / best / 1e6
    );
}
