//! `cargo run --release --example core_bench -- SCENARIO [MIX_DIR] [REPEATS]`: the
//! event core against a bare event loop, in one process and one run, so the ratio
//! survives a noisy machine (bench/RESULTS.md, issue "Performance at scale").
//!
//! The bare loop is what any discrete-event simulator must at least do per event: pop
//! the earliest (time, seq) from a `BinaryHeap` and push one successor a random
//! (xorshift) increment later, with as many entries pending as thinwire's queue
//! typically holds. It does no model work, so it is an upper bound, not a target.
//! Each round runs the bare loop, SCENARIO, and every `*.toml` in MIX_DIR (e.g. the
//! study mix written by `bench/core.py`); the best of REPEATS (default 5) rounds is
//! reported as events per second and as a fraction of the bare loop's rate. With
//! `PER_RUN=1` it also prints, per mix scenario, events, link frames, events per
//! frame and nanoseconds per event (each run's best round).
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

#[path = "common/mod.rs"]
mod common;

/// Pending entries in the bare loop's heap (thinwire's holds up to ~50, RESULTS.md).
const PENDING: u64 = 64;

#[inline(never)] // its own function, so `bench/instructions.py` can count it
fn bare_loop(events: u64) -> (f64, u64) {
    let mut heap = BinaryHeap::with_capacity(PENDING as usize + 1);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let next = |x: &mut u64| {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    };
    for seq in 0..PENDING {
        heap.push(Reverse((next(&mut x) % 1_000_000, seq)));
    }
    let t = Instant::now();
    let mut check = 0u64;
    for seq in PENDING..PENDING + events {
        let Reverse((at, s)) = heap.pop().unwrap();
        check = check.wrapping_add(at ^ s);
        heap.push(Reverse((at + 1 + next(&mut x) % 1_000_000, seq)));
    }
    (t.elapsed().as_secs_f64(), check)
}

/// One scenario's run: wall seconds, events, link frames sent (both directions).
#[derive(Clone, Copy)]
struct One {
    wall: f64,
    events: u64,
    frames: u64,
}

/// Runs the scenarios once; (wall seconds, events, each run).
fn run_all(scs: &[thinwire::config::Scenario]) -> (f64, u64, Vec<One>) {
    let t = Instant::now();
    let runs: Vec<One> = scs
        .iter()
        .map(|sc| {
            let t = Instant::now();
            let r = thinwire::engine::run_scenario(sc);
            let frames = r.link.iter().map(|l| l.frames_sent).sum();
            One { wall: t.elapsed().as_secs_f64(), events: r.events, frames }
        })
        .collect();
    (t.elapsed().as_secs_f64(), runs.iter().map(|r| r.events).sum(), runs)
}

/// Where the mix's time goes, per scenario (best of the rounds).
fn per_run(names: &[String], best: &[One]) {
    println!("| scenario | events | frames | events/frame | ms | ns/event |");
    println!("|---|---|---|---|---|---|");
    for (n, r) in names.iter().zip(best) {
        println!(
            "| {n} | {} | {} | {:.2} | {:.1} | {:.0} |",
            r.events,
            r.frames,
            r.events as f64 / r.frames.max(1) as f64,
            r.wall * 1e3,
            r.wall * 1e9 / r.events as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(a) = args.first() else {
        eprintln!("usage: core_bench SCENARIO [MIX_DIR] [REPEATS]");
        std::process::exit(2)
    };
    let single = vec![common::load(std::path::Path::new(a))];
    let (names, mix): (Vec<String>, Vec<_>) =
        args.get(1).map(|d| common::load_dir(d)).unwrap_or_default().into_iter().unzip();
    let repeats: usize = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(5);
    let mut best_each: Vec<Option<One>> = vec![None; mix.len()];
    let (mut best_bare, mut best_a, mut best_mix) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let (mut ev_a, mut ev_mix, mut check) = (0, 0, 0);
    for _ in 0..repeats {
        let (t, e, _) = run_all(&single);
        (best_a, ev_a) = (best_a.min(t), e);
        // As many bare events as scenario (a) has, so both run equally long.
        let (t, c) = bare_loop(ev_a);
        (best_bare, check) = (best_bare.min(t), c);
        if !mix.is_empty() {
            let (t, e, each) = run_all(&mix);
            (best_mix, ev_mix) = (best_mix.min(t), e);
            for (b, r) in best_each.iter_mut().zip(each) {
                if b.is_none_or(|b| r.wall < b.wall) {
                    *b = Some(r);
                }
            }
        }
    }
    let bare = ev_a as f64 / best_bare;
    println!("bare heap loop: {:.2} M events/s (checksum {check:x})", bare / 1e6);
    let a_rate = ev_a as f64 / best_a;
    println!("{a}: {ev_a} events, {:.2} M events/s = {:.0} % of the bare loop", a_rate / 1e6, 100.0 * a_rate / bare);
    if !mix.is_empty() {
        let m = ev_mix as f64 / best_mix;
        println!(
            "mix ({} scenarios): {ev_mix} events, {:.2} M events/s = {:.0} % of the bare loop ({:.1} ms/run)",
            mix.len(),
            m / 1e6,
            100.0 * m / bare,
            best_mix * 1e3 / mix.len() as f64
        );
    }
    println!("best of {repeats} rounds");
    if std::env::var_os("PER_RUN").is_some() {
        per_run(&names, &best_each.into_iter().flatten().collect::<Vec<_>>());
    }
}
