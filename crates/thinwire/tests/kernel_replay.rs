//! The model's sender against real Linux 6.18 senders, segment by segment
//! (`thinwire::kernel_replay`): each fixture is a real run's inbound segments,
//! the kernel's data segments and its `tcp_sock` before each inbound segment;
//! fed the same segments at the same times, the model must send the same data
//! at the same times and hold the same state (cwnd, ssthresh, congestion state,
//! segments out, SACKed and lost) throughout. Each of these Linux behaviours
//! was found where a replay parted, and each fixture parts early without it:
//! PRR's one packet credited at a RACK reordering-timer recovery
//! (`tcp_rack_reo_timeout`), no PRR extra packet on an ACK that marked a loss,
//! a new recovery at the end of one while a segment marked lost is out
//! (`tcp_fastretrans_alert` D then E, `lost_out`), F-RTO not in the Loss state,
//! the episode's first retransmission kept as the undo stamp, the timer
//! restarted by a SACK of data older than the head, the window from what is in
//! flight outside recovery (`tcp_cwnd_test`), growth by what an ACK delivered
//! and on the ACK that ends a recovery, `snd_cwnd_cnt` reset at a reduction,
//! the 2 ms floor of the probe and reordering timers (`TCP_TIMEOUT_MIN_US`),
//! a new recovery at the end of a loss episode while a segment marked lost is
//! out, and, without SACK, the recovery held until above its point; a
//! timeout's undo falling through to a recovery, a segment sent again while not
//! deemed lost counted twice in flight and holding the retransmissions while
//! `retrans_out ≥ lost_out`, RACK's window grown by DSACKs only once
//! reordering was seen, the loss probe scheduled after a timeout's undo, and
//! a segment RACK marked while sent again not judged again.
use thinwire::kernel_replay::Script;

fn replay(name: &str) {
    let path = format!("{}/tests/data/kernel_replay/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let script = Script::parse(&text).unwrap();
    let with_state = !name.ends_with("-data");
    assert!(script.sent.len() >= 90 && (!with_state || script.states.len() > 50), "{name}: a real run's worth");
    let outcome = script.run();
    let part = script.compare(&outcome);
    assert_eq!(part.data, None, "{name}: data segments part at #{:?}", part.data);
    assert_eq!(
        part.state,
        None,
        "{name}: state parts before inbound segment {:?}: kernel {:?}, model {:?}",
        part.state,
        part.state.map(|i| script.states[i]),
        part.state.map(|i| outcome.views[i])
    );
}

#[test]
fn cubic_with_sack_rack_and_prr_over_umts_rlc_sends_what_linux_sent() {
    replay("rlc-uniform-cubic-7");
}

/// Four more runs of the cell, their data segments only: the timer restarted
/// by a SACK of old data, the undo stamp kept across a second timeout, F-RTO off
/// in the Loss state, a recovery started at the end of a loss episode, PRR's
/// extra packet at such a start (the ACK advanced `snd_una` and marked nothing).
#[test]
fn four_more_runs_over_umts_rlc_send_what_linux_sent() {
    replay("rlc-uniform-cubic-9-data");
    replay("rlc-uniform-cubic-3-data");
    replay("rlc-uniform-cubic-12-data");
    replay("rlc-uniform-cubic-4-data");
}

/// Reno with SACK over the same cell. Run 2: F-RTO undoes a timeout on a SACK
/// of data never sent again (step 3.b) and, back in the open state, a segment
/// RACK deems lost starts a recovery on the same ACK; the timeout's
/// retransmission, no longer deemed lost, stays counted in flight
/// (`TCPCB_SACKED_RETRANS`), so new data goes before the lost segment
/// (`retrans_out ≥ lost_out`). Run 3: a DSACK before any reordering leaves
/// RACK's window at min RTT / 4 (`tcp_dsack_seen`).
#[test]
fn reno_with_sack_over_umts_rlc_sends_what_linux_sent() {
    replay("rlc-uniform-reno-2");
    replay("rlc-uniform-reno-3");
}

/// Run 10, its data segments to 16 s: a timeout's retransmission whose
/// original then arrived is DSACKed, the kernel undoes the timeout and, back in
/// the open state, schedules a loss probe after the undo (`tcp_set_xmit_timer`
/// at the end of `tcp_ack`): new data 1.07 s later, not the timeout 3.7 s later.
#[test]
fn a_probe_follows_a_timeouts_undo_as_in_linux() {
    replay("rlc-uniform-reno-10-data");
}

#[test]
fn reno_without_sack_over_a_lossy_link_sends_what_linux_sent() {
    replay("raw-lossy-reno-nosack-3");
}

/// The comparison itself parts where the model does something else: the same
/// run with the model's initial window one segment smaller.
#[test]
fn a_different_sender_parts_at_once() {
    let path = format!("{}/tests/data/kernel_replay/rlc-uniform-cubic-7.txt", env!("CARGO_MANIFEST_DIR"));
    let mut script = Script::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    script.cfg.initial_window -= 1;
    let part = script.compare(&script.run());
    assert!(part.data.is_some_and(|i| i < 12) && part.state.is_some_and(|i| i < 3), "{part:?}");
}

/// Run 13, whole, its data segments: a timeout's retransmission, undone and
/// then deemed lost by RACK while still counted in flight, leaves the kernel's
/// time-sorted list (`tcp_rack_detect_loss`: `list_del_init`) and is not judged
/// again: new data goes out, and the timer, 1.3 s later, resends it.
#[test]
fn a_segment_marked_while_sent_again_waits_for_the_timer_as_in_linux() {
    replay("rlc-uniform-reno-13-data");
}

/// Run 8, whole: the model's timeout fires a jiffy after the kernel's, and the
/// next ACK echoes the kernel's retransmission; the replay gives the model the
/// echo of its own (`Script::echo_of_model`), or the model would take the
/// timeout for spurious (Eifel) where the kernel goes on with F-RTO's new data.
#[test]
fn a_timeout_a_jiffy_late_is_judged_on_the_models_own_echo() {
    replay("rlc-uniform-reno-8");
}
