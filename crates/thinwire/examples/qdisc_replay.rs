//! Replays an arrival sequence through one queue discipline in front of a
//! constant-rate transmitter, for comparing thinwire's disciplines with another
//! implementation on exactly the same input (`bench/aqm_ns3.py` runs ns-3's
//! queue discs on the same file).
//!
//!     cargo run --release --example qdisc_replay -- ARRIVALS.csv RATE_BPS 'QUEUE_TOML'
//!
//! ARRIVALS.csv: `time_ns,size,flow,ect` per line (IP packet size in bytes, a
//! flow number giving the UDP source port 1000 + flow, ect 0/1). QUEUE_TOML is a
//! scenario's queue table, e.g. `{ discipline = "codel", limit = "1000pkt" }`.
//! The transmitter asks for a packet when it is free (departures due at an
//! instant before arrivals at it), at once when idle. Prints one JSON object:
//! packets, drops (overflow and AQM), marks, sojourn percentiles (ms) of the
//! packets sent, per flow packets sent.
use std::collections::BTreeMap;
use thinwire::queue::{DropReason, Limit, Qdisc, QdiscEvent, Queue, Verdict};
use thinwire::rng::Rng;
use thinwire::time::{Duration, Instant};
use thinwire::wire::{ip, Packet, UdpRepr, L4};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 4 {
        eprintln!("usage: qdisc_replay ARRIVALS.csv RATE_BPS 'QUEUE_TOML'");
        std::process::exit(2);
    }
    let rate: u64 = a[2].parse().expect("rate in bit/s");
    let toml = format!("[wireless]\nrate = \"{rate}bps\"\ndelay = \"0ms\"\nqueue = {}\n", a[3]);
    let sc = thinwire::config::parse_links(&toml, &[], None).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let cfg = thinwire::build::qdisc_config(sc.wireless.queue(0), Limit::Packets(1000), rate);
    let mut q = Queue::new(cfg, Rng::stream(1, 0, "replay"));
    let text = std::fs::read_to_string(&a[1]).expect("arrivals file");
    let mut arrivals = vec![];
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let f: Vec<u64> = line.split(',').map(|x| x.trim().parse().expect("a number")).collect();
        arrivals.push((f[0] as i64, f[1] as u32, f[2] as u16, f[3] != 0));
    }
    let mut sojourns: Vec<f64> = vec![];
    let mut sent: BTreeMap<u16, u64> = BTreeMap::new();
    let mut ce_sent = 0u64;
    let mut busy_until: Option<Instant> = None;
    let mut serve = |q: &mut Queue, at: Instant, busy: &mut Option<Instant>, counts: &mut (u64, u64, u64)| {
        let p = q.dequeue(at);
        while let Some(e) = q.poll_event() {
            match e {
                QdiscEvent::Drop { reason: DropReason::Overflow, .. } => counts.0 += 1,
                QdiscEvent::Drop { reason: DropReason::Aqm, .. } => counts.1 += 1,
                QdiscEvent::Mark { .. } => counts.2 += 1,
            }
        }
        match p {
            Some(p) => {
                sojourns.push((at - p.meta.queued).as_secs_f64() * 1e3);
                ce_sent += (p.ip.ecn() == ip::CE) as u64;
                *sent.entry(p.meta.flow).or_default() += 1;
                *busy = Some(at + Duration::transmission(p.size() as u64, rate));
            }
            None => *busy = None,
        }
    };
    let mut counts = (0, 0, 0);
    for &(t, size, flow, ect) in &arrivals {
        let now = Instant(t);
        while let Some(b) = busy_until.filter(|&b| b <= now) {
            serve(&mut q, b, &mut busy_until, &mut counts);
        }
        let l4 = L4::Udp(UdpRepr { src_port: 1000 + flow, dst_port: 9 });
        let mut p = Packet::new([10, 0, 0, 1], [10, 0, 1, 2], 0, l4, size.saturating_sub(28), flow, now);
        if ect {
            p.ip.set_ecn(ip::ECT0);
        }
        match q.enqueue(now, p) {
            Verdict::Queued => {}
            Verdict::Marked => counts.2 += 1,
            Verdict::Dropped(DropReason::Overflow) => counts.0 += 1,
            Verdict::Dropped(DropReason::Aqm) => counts.1 += 1,
        }
        while let Some(e) = q.poll_event() {
            match e {
                QdiscEvent::Drop { reason: DropReason::Overflow, .. } => counts.0 += 1,
                QdiscEvent::Drop { reason: DropReason::Aqm, .. } => counts.1 += 1,
                QdiscEvent::Mark { .. } => counts.2 += 1,
            }
        }
        if busy_until.is_none() {
            serve(&mut q, now, &mut busy_until, &mut counts);
        }
    }
    while let Some(b) = busy_until {
        serve(&mut q, b, &mut busy_until, &mut counts);
    }
    let (overflow, aqm, marks) = counts;
    sojourns.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| sojourns.get(((sojourns.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);
    let per_flow: Vec<String> = sent.iter().map(|(f, n)| format!("\"{f}\": {n}")).collect();
    println!(
        "{{\"packets\": {}, \"sent\": {}, \"overflow\": {overflow}, \"aqm_drops\": {aqm}, \"marks\": {marks}, \"ce_sent\": {ce_sent}, \"sojourn_ms\": {{\"p50\": {:.3}, \"p90\": {:.3}, \"p99\": {:.3}, \"mean\": {:.3}}}, \"per_flow\": {{{}}}}}",
        arrivals.len(),
        sojourns.len(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        sojourns.iter().sum::<f64>() / sojourns.len().max(1) as f64,
        per_flow.join(", ")
    );
}
