//! Mahimahi packet-delivery traces (`[wireless.down] delivery_trace`): parsed, then
//! walked through several repeats, whose times must never go back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use thinwire::link::capacity::DeliveryTrace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match DeliveryTrace::parse(text) {
        Ok(t) => {
            let t = Arc::new(t);
            let n = 3 * t.len() + 1;
            let mut last = None;
            for at in t.opportunities(true).take(n) {
                assert!(last.is_none_or(|l| at >= l), "time went back: {last:?} then {at:?}");
                last = Some(at);
            }
        }
        Err(e) => assert!(!e.contains('\n'), "two-line error: {e}"),
    }
});
