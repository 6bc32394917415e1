//! `cargo run --release --example runmany -- DIR [REPEATS]`: runs every `*.toml`
//! scenario in DIR, REPEATS times (default 3), and prints the fastest total wall
//! time and event rate: a steadier speed measure than single runs on a noisy machine.
#[path = "common/mod.rs"]
mod common;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: runmany DIR [REPEATS]");
        std::process::exit(2)
    };
    let repeats: usize = args.get(1).and_then(|x| x.parse().ok()).unwrap_or(3);
    let scenarios: Vec<_> = common::load_dir(dir).into_iter().map(|(_, sc)| sc).collect();
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
