//! What may import what (docs/architecture.md, "Layers"): every `crate::MODULE`
//! reference in src/ is checked against this table, so a model that starts using
//! the simulator, or a wire format that starts using a protocol machine, fails here.
//! (Building with `--no-default-features` proves the model layer compiles without
//! the engine; this test also keeps the layers among the models in order.)
use std::collections::BTreeSet;
use std::path::Path;

/// Top-level module -> modules it may import (besides itself).
const ALLOWED: &[(&str, &[&str])] = &[
    // Foundations.
    ("time", &[]),
    ("units", &["time"]),
    ("schema", &["units"]),
    ("rng", &[]),
    ("sched", &["time"]),
    ("fx", &[]),
    ("pcap", &[]),
    ("describe", &[]),
    ("registry", &[]),
    // Wire formats.
    ("wire", &["time"]),
    // Models: sans-IO machines.
    ("channel", &["rng", "time"]),
    ("queue", &["fx", "registry", "rng", "schema", "time", "units", "wire"]),
    ("tcp", &["registry", "time", "wire"]),
    ("app", &["rng", "time"]),
    ("link", &["channel", "queue", "registry", "rng", "sched", "schema", "time", "units", "wire"]),
    ("proxy", &["fx", "tcp", "time", "wire"]),
    // Observing models: trace rows and pcap; capture analysis.
    ("trace", &["link", "queue", "tcp", "proxy", "wire", "time"]),
    ("analysis", &["fx", "pcap", "tcp", "time", "wire"]),
    // Output files written while a run goes (trace.parquet, pcaps): the
    // simulator's and the emulator's.
    ("outputs", &["link", "pcap", "trace", "wire"]),
    // Scenario schema (names models' presets) and the builder (scenario -> models).
    ("config", &["time", "units", "schema", "channel", "queue", "link", "tcp", "trace"]),
    ("build", &["config", "time", "units", "rng", "channel", "queue", "link", "tcp", "app", "proxy", "wire", "trace"]),
    // Drivers.
    (
        "engine",
        &[
            "build", "config", "time", "units", "rng", "sched", "fx", "pcap", "wire", "channel", "queue", "tcp", "app",
            "link", "proxy", "trace", "outputs",
        ],
    ),
    ("testkit", &["time", "sched", "wire", "channel", "queue", "tcp", "link"]),
    ("kernel_replay", &["time", "wire", "tcp"]),
    ("realtime", &["build", "config", "time", "sched", "fx", "wire", "queue", "link", "trace", "outputs"]),
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    sources(&src, &mut files);
    let mut bad = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel.iter().next().unwrap().to_str().unwrap().trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        let Some((_, allowed)) = ALLOWED.iter().find(|(m, _)| *m == top) else {
            panic!("src/{top}: a new top-level module; add it to ALLOWED here and to docs/architecture.md");
        };
        seen.insert(top.clone());
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices("crate::") {
            let before = &text[..i];
            if before.ends_with("thin") || before.ends_with('$') {
                continue; // `thinwire::...` in doc examples, macro paths
            }
            let name: String = text[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            // `describe` (the result-field descriptions and their `described!` macro)
            // is a foundation every layer may use.
            if name.is_empty() || name == top || name == "describe" || name == "described" {
                continue;
            }
            if !allowed.contains(&name.as_str()) {
                bad.insert(format!("{} uses crate::{name}", rel.display()));
            }
        }
    }
    assert!(bad.is_empty(), "imports across layers:\n{}", bad.into_iter().collect::<Vec<_>>().join("\n"));
    assert!(seen.contains("link") && seen.contains("engine"), "the scan found the sources");
}

/// The crates' own rule (docs/architecture.md, "Crates"): the core depends on no
/// other crate of the workspace; the emulator takes the model layer without the
/// simulator (`default-features = false`) and names neither `thinwire::engine`
/// nor the test harnesses; only the Python binding sits on both.
#[test]
fn crates_depend_only_downward() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let manifest = |c: &str| std::fs::read_to_string(crates.join(c).join("Cargo.toml")).unwrap();
    let deps = |c: &str| -> Vec<String> {
        let text = manifest(c);
        let start = text.find("\n[dependencies]").expect("a [dependencies] table");
        let rest = &text[start + 1..];
        let end = rest[1..].find("\n[").map_or(rest.len(), |i| i + 1);
        rest[..end].lines().filter(|l| l.contains("path = \"")).map(str::to_string).collect()
    };
    assert!(deps("thinwire").is_empty(), "the core depends on a workspace crate: {:?}", deps("thinwire"));
    let emu = deps("thinwire-emu");
    assert_eq!(emu.len(), 1, "thinwire-emu's workspace dependencies: {emu:?}");
    assert!(
        emu[0].starts_with("thinwire ") && emu[0].contains("default-features = false"),
        "thinwire-emu must take thinwire without the simulator: {}",
        emu[0]
    );
    let mut files = vec![];
    sources(&crates.join("thinwire-emu").join("src"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for forbidden in ["thinwire::engine", "thinwire::testkit"] {
            assert!(!text.contains(forbidden), "{} names {forbidden}", f.display());
        }
    }
    // The binding (the emulator only on Linux: a target-specific table).
    let py = manifest("thinwire-py");
    assert!(py.contains("\nthinwire = { path") && py.contains("\nthinwire-emu = { path"), "{py}");
}
