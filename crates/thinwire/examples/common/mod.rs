//! What the benchmark examples share: loading scenarios, exiting 2 with one line on
//! bad input. A scenario file's leading `#set KEY=VALUE` lines are applied as
//! overrides (the study mix of `bench/core.py` uses them).
use std::path::Path;
use thinwire::config::Scenario;

fn die(what: &dyn std::fmt::Display, e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {what}: {e}");
    std::process::exit(2)
}

pub fn load(path: &Path) -> Scenario {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| die(&path.display(), &e));
    let sets: Vec<String> = text.lines().map_while(|l| l.strip_prefix("#set ")).map(|l| l.trim().to_string()).collect();
    thinwire::config::parse_scenario_file(&text, &sets, path).unwrap_or_else(|e| die(&path.display(), &e))
}

/// Every `*.toml` in `dir`, in name order, with its file name (no extension).
pub fn load_dir(dir: &str) -> Vec<(String, Scenario)> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| die(&dir, &e))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| (p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), load(p))).collect()
}
