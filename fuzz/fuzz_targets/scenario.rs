//! The scenario parser with `--set` overrides: the input is TOML text, then lines
//! after a line "--" are overrides. Whatever is accepted must run (for at most one
//! simulated second, so each input stays fast) without a panic or overflow, and
//! every error must be one line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (toml, sets) = text.split_once("\n--\n").unwrap_or((text, ""));
    let overrides: Vec<String> = sets.lines().map(str::to_string).collect();
    match thinwire::config::parse_scenario(toml, &overrides) {
        Ok(_) => {
            let mut o = overrides.clone();
            o.push("stop=\"1s\"".into());
            if let Ok(sc) = thinwire::config::parse_scenario(toml, &o) {
                let r = thinwire::engine::Sim::new(&sc).run();
                for s in &r.link {
                    assert!((0.0..=1.0).contains(&s.utilization), "utilisation {}", s.utilization);
                }
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "two-line error: {e}"),
    }
    if let Err(e) = thinwire::config::parse_links(toml, &overrides, None) {
        assert!(!e.to_string().contains('\n'), "two-line error: {e}");
    }
});
