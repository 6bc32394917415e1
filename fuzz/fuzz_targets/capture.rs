//! The capture reader and the connection tracker: a whole file, and the same bytes
//! fed in small chunks (the first byte chooses the chunk size) so that records
//! straddle chunk boundaries. Both must agree, and nothing may come out negative.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinwire::analysis::{analyze, analyze_chunks, Analysis, Chunks};

/// The chunks in reverse order (popped from the end).
struct Pieces(Vec<Vec<u8>>);
impl Chunks for Pieces {
    fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        self.0.pop().map(Ok)
    }
}

fn check(a: &Analysis) {
    for c in &a.tracker.conns {
        assert!(c.last_ns >= c.first_ns, "connection ends before it starts");
        for d in &c.dirs {
            assert!(d.idle_max_ns >= 0, "negative idle time");
            if d.rtt_samples > 0 {
                assert!(d.rtt_min_ns >= 0 && d.rtt_max_ns >= d.rtt_min_ns, "negative RTT");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&k, body)) = data.split_first() else { return };
    let whole = analyze(body, true);
    let size = 1 + k as usize;
    let chunked = analyze_chunks(Pieces(body.chunks(size).rev().map(<[u8]>::to_vec).collect()), true);
    match (&whole, &chunked) {
        (Ok(a), Ok(b)) => {
            check(a);
            assert_eq!(a.report.packets, b.report.packets, "chunking changed the packet count");
            assert_eq!(a.tracker.conns.len(), b.tracker.conns.len());
        }
        (Err(_), Err(_)) => {}
        _ => panic!("whole and chunked reads disagree: {:?} vs {:?}", whole.is_ok(), chunked.is_ok()),
    }
});
