//! The emulator's recorded inputs (`inputs.pcapng`) replayed through a scenario's
//! path, as `thinwire simulate-log` does: a damaged or edited file gives an error or
//! a schedule, never a panic or an overflow.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use thinwire::config::Scenario;

const SCENARIO: &str = "[wireless]\nrate = \"64kbps\"\ndelay = \"50ms\"\n[wireless.arq]\nprotocol = \"sr\"\n[wireless.channel]\nmodel = \"uniform\"\np = 0.1\n";

fuzz_target!(|data: &[u8]| {
    static SC: OnceLock<Scenario> = OnceLock::new();
    let sc = SC.get_or_init(|| thinwire::config::parse_links(SCENARIO, &[], None).expect("valid"));
    let end = thinwire::time::Instant(60_000_000_000);
    use thinwire_emu::{fabric::Cell, Layout};
    for (gateway, mobiles, cell) in [(false, 1, Cell::Separate), (true, 1, Cell::Separate), (false, 3, Cell::Separate), (true, 3, Cell::Shared)] {
        let _ = thinwire_emu::replay_from(sc, data, end, Layout { gateway, mobiles, cell, udp_bypass: mobiles == 3 });
    }
});
