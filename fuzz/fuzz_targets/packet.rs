//! Packet decoding: thinwire's own wire format and the analyser's link-layer/IP/TCP
//! decoder for each link type it knows.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = thinwire::wire::Packet::parse(data);
    for lt in [0u32, 1, 101, 108, 113, 228, 229, 276] {
        let _ = thinwire::analysis::decode::decode(lt, data, data.len() as u32);
    }
});
