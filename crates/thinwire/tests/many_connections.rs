//! A session that opens connection after connection (ttcp, web, http: one
//! connection per transfer) keeps working past any count: its 70,000th
//! connection's timers fire as its first's did. The simulator once named a
//! connection's timers by a 16-bit index into a list that only grew, so the
//! 65,537th connection's retransmission timer woke a long-closed one and the
//! session stalled for ever at 65,536 transfers (and every connection stayed in
//! memory, 4 KB each).
use thinwire::config::parse_scenario;
use thinwire::engine::{run_scenario, EndReason};

fn ttcp(repeat: u64) -> String {
    // Short transfers over a fast, lossy link: many connections per simulated
    // second, and lost SYNs and segments that only the timer repairs.
    format!(
        r#"seed = 3
stop = "end"
[wired]
rate = "100Mbps"
delay = "1ms"
[wireless]
rate = "10Mbps"
delay = "2ms"
[wireless.channel]
model = "uniform"
p = 0.03
[wireless.arq]
protocol = "raw"
[[flow]]
app = "ttcp"
bytes = "200B"
repeat = {repeat}
"#
    )
}

#[test]
fn a_session_finishes_seventy_thousand_connections_with_working_timers() {
    let few = run_scenario(&parse_scenario(&ttcp(20_000), &[]).unwrap());
    let many = run_scenario(&parse_scenario(&ttcp(70_000), &[]).unwrap());
    for (n, r) in [(20_000u64, &few), (70_000, &many)] {
        assert_eq!(r.end, EndReason::Finished, "{n} transfers: the run ended {:?}", r.end);
        assert!(r.unfinished.is_empty(), "{n} transfers: unfinished {:?}", r.unfinished);
        assert_eq!(r.flows[0].transactions, Some(n));
    }
    // Timeouts per transfer alike over 20,000 and 70,000 transfers (the same
    // loss on every connection): the late connections' timers fire.
    let rate = |r: &thinwire::engine::RunResult, n: f64| r.flows[0].tcp_timeouts as f64 / n;
    let (a, b) = (rate(&few, 20_000.0), rate(&many, 70_000.0));
    assert!(a > 0.05, "the link must need timeouts to repair losses: {a}");
    assert!((b / a - 1.0).abs() < 0.1, "timeouts per transfer {a:.4} over 20,000, {b:.4} over 70,000");
}
