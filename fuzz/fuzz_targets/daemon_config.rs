//! The proxy daemon's configuration file (`[proxy]` and `[daemon]`) with overrides
//! after a line "--".
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (toml, sets) = text.split_once("\n--\n").unwrap_or((text, ""));
    let overrides: Vec<String> = sets.lines().map(str::to_string).collect();
    if let Err(e) = thinwire::config::daemon::parse_daemon(toml, &overrides) {
        assert!(!e.to_string().contains('\n'), "two-line error: {e}");
    }
});
