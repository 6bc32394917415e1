//! Replays a real Linux sender's inbound segments through the model's sender
//! (`thinwire::kernel_replay`) and shows where the two part.
//!
//!     cargo run --release --example kernel_replay --features testkit -- \
//!         server.pcap [--state bt.txt] [--profile linux] [--reno] [--nosack] \
//!         [--total BYTES] [--write script.txt] [--context N] [--states A-B]
//!
//! `server.pcap`: the server-side capture of an emulated download (`thinwire
//! emulate`, the sim-vs-real study's real runs keep it); the server listens on
//! port 8000 and writes the response header, then the body (`--total`: header +
//! body bytes, default 200,204). `--state`: the kernel's `tcp_sock` before each
//! inbound segment, as `bench/kernel_state/tcpstate.bt` prints it. `--write`:
//! the script as text, for a test fixture (`tests/kernel_replay.rs`).
use std::collections::HashMap;
use thinwire::kernel_replay::{Event, KernelState, Script};
use thinwire::tcp::TcpConfig;
use thinwire::time::{Duration, Instant};
use thinwire::wire::TcpFlags;

mod capture;
use capture::P;

fn usage(msg: &str) -> ! {
    capture::usage("kernel_replay", msg)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let flag = |k: &str| args.iter().any(|a| a == k);
    let Some(pcap) = args.first() else { usage("usage: kernel_replay server.pcap [options]") };
    let profile = opt("--profile").unwrap_or_else(|| "linux".into());
    let total: u64 = opt("--total").map_or(200_204, |x| x.parse().unwrap_or_else(|_| usage("--total: a number")));
    let context: usize = opt("--context").map_or(12, |x| x.parse().unwrap_or(12));

    let pk = capture::read("kernel_replay", pcap, |r| r.src_port == 8000);
    // The download: the last SYN to port 8000, and its segments.
    let Some(syn) = pk.iter().rposition(|p| !p.out && p.r.flags.has(TcpFlags::SYN) && p.r.dst_port == 8000) else {
        usage("no connection to port 8000")
    };
    let mport = pk[syn].r.src_port;
    let pk: Vec<P> =
        pk.into_iter().filter(|p| (p.out && p.r.dst_port == mport) || (!p.out && p.r.src_port == mport)).collect();
    let t0 = pk.iter().find(|p| !p.out && p.r.flags.has(TcpFlags::SYN)).map(|p| p.t).unwrap_or(0.0);
    let Some(synack) = pk.iter().find(|p| p.out && p.r.flags.has(TcpFlags::SYN)) else { usage("no SYN-ACK") };
    let iss = synack.r.seq;
    let at = |t: f64| Instant::ZERO + Duration(((t - t0) * 1e9).round() as i64);
    let ts_clock = |t: f64| ((t - t0) * 1e3) as u32 + 1;

    // The kernel's jiffies phase: its timer-driven transmissions (no inbound
    // segment in the 2 ms before, no other transmission in the 1 ms before) leave
    // just after a jiffy, and the outer levels' ones after a 32 or 256 ms edge.
    let timer_tx: Vec<f64> = (0..pk.len())
        .filter(|&i| {
            let p = &pk[i];
            p.out
                && p.len > 0
                && pk[..i].iter().rev().find(|q| !q.out).is_none_or(|q| p.t - q.t > 0.002)
                && pk[..i].iter().rev().find(|q| q.out).is_none_or(|q| p.t - q.t > 0.001)
        })
        .map(|i| pk[i].t - t0)
        .collect();
    let score = |ph: f64| -> f64 {
        let near = |t: f64, m: f64| (((t - ph) % m + m) % m < 0.0003) as u8 as f64;
        timer_tx.iter().map(|&t| near(t, 0.004) + 0.5 * near(t, 0.032) + 0.25 * near(t, 0.256)).sum()
    };
    let phase = (0..5120).map(|k| k as f64 * 0.00005).max_by(|a, b| score(*a).total_cmp(&score(*b))).unwrap_or(0.0);
    let off = (0.256 - phase).rem_euclid(0.256);

    // The kernel's highest byte sent by `t` (stream offset: header and body).
    let ksent: Vec<(f64, u64)> = pk
        .iter()
        .filter(|p| p.out && p.len > 0)
        .map(|p| (p.t, p.r.seq.wrapping_sub(iss) as u64 - 1 + p.len as u64))
        .collect();
    let kmax = |t: f64| ksent.iter().filter(|x| x.0 <= t).map(|x| x.1).max().unwrap_or(0);
    let first_data = pk.iter().find(|p| p.out && p.len > 0).unwrap_or_else(|| usage("no data sent"));
    let (t_write, header) = (first_data.t, first_data.len as u64);

    let mut events: Vec<(f64, u8, Event)> = vec![];
    let inbound: Vec<&P> = pk.iter().filter(|p| !p.out).collect();
    for (k, p) in inbound.iter().enumerate() {
        let mut r = p.r;
        if let Some((v, e)) = r.opts.timestamps {
            // The echoed TSval on the model's clock when the kernel sent it.
            let sent = pk.iter().rfind(|q| q.out && q.t <= p.t && q.r.opts.timestamps.map(|x| x.0) == Some(e));
            let echo = sent.map_or(0, |q| ts_clock(q.t));
            r.opts.timestamps = Some((v, if e == 0 { 0 } else { echo }));
        }
        // The data the kernel had for its answer: what it sent within 2 ms.
        let data = (p.t > t_write).then(|| kmax(p.t + 0.002).min(total));
        events.push((p.t, 1, Event::In { at: at(p.t), seg: r, len: p.len, data }));
        if p.t > t_write {
            let next = inbound.get(k + 1).map_or(f64::MAX, |q| q.t);
            events.push((p.t, 2, Event::Timer { at: at(p.t), bytes: kmax(next - 1e-5).min(total) }));
        }
    }
    // The application's writes: the header, then what went out at once; later
    // new data sent more than 2 ms after an inbound segment.
    events.push((t_write, 0, Event::App { at: at(t_write), bytes: header, close: false }));
    let b = kmax(t_write + 0.002);
    events.push((t_write, 1, Event::App { at: at(t_write), bytes: b.min(total), close: b >= total }));
    let next = inbound.iter().find(|q| q.t > t_write).map_or(f64::MAX, |q| q.t);
    events.push((t_write, 2, Event::Timer { at: at(t_write), bytes: kmax(next - 1e-5).min(total) }));
    let mut hi = 0;
    for (i, p) in pk.iter().enumerate() {
        if !p.out || p.len == 0 {
            continue;
        }
        let end = p.r.seq.wrapping_sub(iss).wrapping_add(p.len);
        if end > hi && p.t > t_write + 0.001 && pk[..i].iter().rev().find(|q| !q.out).is_none_or(|q| p.t - q.t > 0.002)
        {
            let b = kmax(p.t + 0.0005);
            events.push((p.t, 0, Event::App { at: at(p.t), bytes: b.min(total), close: b >= total }));
        }
        hi = hi.max(end);
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));

    // The kernel's state before each inbound segment (bpftrace `P` lines).
    let mut states = vec![];
    if let Some(path) = opt("--state") {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| usage(&format!("{path}: {e}")));
        for line in text.lines().filter(|l| l.starts_with("P ")) {
            let w: Vec<&str> = line.split_whitespace().collect();
            let dport: u32 = w.get(2).and_then(|x| x.parse().ok()).unwrap_or(0);
            if ((dport & 0xff) << 8 | dport >> 8) as u16 != mport {
                continue;
            }
            let kv: HashMap<&str, u64> = w[3..]
                .iter()
                .filter_map(|x| x.split_once('='))
                .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
                .collect();
            let g = |k: &str| kv.get(k).copied().unwrap_or(0);
            states.push(KernelState {
                cwnd: g("cwnd"),
                ssthresh: g("ssth"),
                ca_state: g("ca") as u8,
                packets_out: g("out"),
                sacked_out: g("sacked"),
                lost_out: g("lost"),
                retrans_out: g("retr"),
            });
        }
    }

    let mut cfg = TcpConfig::profile(&profile).unwrap_or_else(|| usage(&format!("--profile: no profile {profile}")));
    let mut extra = String::new();
    if flag("--reno") {
        cfg.cc = thinwire::tcp::CcKind::Reno;
        extra.push_str(" reno");
    }
    if flag("--nosack") {
        cfg.sack = false;
        extra.push_str(" nosack");
    }
    let script = Script {
        cfg,
        iss,
        ports: (8000, mport),
        phase: Duration((off * 1e9) as i64),
        total,
        events: events.into_iter().map(|e| e.2).collect(),
        sent: pk.iter().filter(|p| p.out && p.len > 0).map(|p| (at(p.t), p.r.seq.wrapping_sub(iss), p.len)).collect(),
        states,
    };
    if let Some(w) = opt("--write") {
        std::fs::write(&w, script.to_text(&profile, extra.trim())).unwrap_or_else(|e| usage(&format!("{w}: {e}")));
    }
    let o = script.run();
    if let Some(until) = opt("--dump").and_then(|x| x.parse::<f64>().ok()) {
        for &(t, s, l, fl, rx) in o.sent.iter().filter(|x| x.0.as_secs_f64() <= until) {
            println!(
                "model {:9.4} seq {s:>8} len {l:>4} flags {fl:02x}{}",
                t.as_secs_f64(),
                if rx { " again" } else { "" }
            );
        }
    }
    let part = script.compare(&o);
    let model_data = o.sent.iter().filter(|x| x.2 > 0).count();
    println!(
        "jiffies phase {:.2} ms ({} timer-driven transmissions); kernel data segments {}, model {}",
        phase * 1e3,
        timer_tx.len(),
        script.sent.len(),
        model_data
    );
    match part.data {
        None => println!("every data segment agrees"),
        Some(i) => println!("data segments agree up to #{i}"),
    }
    match (part.state, script.states.len()) {
        (_, 0) => {}
        (None, n) => println!("the state agrees before all {n} inbound segments"),
        (Some(i), _) => {
            println!("the state agrees up to inbound segment #{i}: {:?} / {:?}", script.states[i], o.views[i])
        }
    }
    // `--states A-B`: the kernel's and the model's state before inbound segments A to B.
    if let Some((a, b)) = opt("--states").and_then(|x| {
        let (a, b) = x.split_once('-')?;
        Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?))
    }) {
        // Past the kernel's trace (a bpftrace run that stopped early), the model's alone.
        for i in a..=b.min(o.views.len().saturating_sub(1)) {
            let v = &o.views[i];
            let kernel = script.states.get(i).map_or("kernel -".to_string(), |k| {
                format!(
                    "kernel ca {} cwnd {} ssth {} out {} sacked {} lost {} retr {}",
                    k.ca_state, k.cwnd, k.ssthresh, k.packets_out, k.sacked_out, k.lost_out, k.retrans_out
                )
            });
            println!(
                "#{i} {:9.4} {kernel} | model ca {} cwnd {} ssth {} out {} sacked {} lost {} retr {} rto {} srtt {} min_rtt {} ms",
                o.view_times[i].as_secs_f64(),
                v.ca_state, v.cwnd, v.ssthresh, v.packets_out, v.sacked_out, v.lost_out, v.retrans_out, v.rto_us / 1000, v.srtt_us / 1000, v.min_rtt_us / 1000
            );
        }
    }
    // The kernel's and the model's data segments around the parting.
    if let Some(i) = part.data {
        let lo = script.sent.get(i.saturating_sub(context / 2)).map_or(0.0, |x| x.0.as_secs_f64());
        let hi = script.sent.get(i + context / 2).map_or(f64::MAX, |x| x.0.as_secs_f64());
        let mut lines: Vec<(f64, String)> = vec![];
        for &(t, s, l) in &script.sent {
            lines.push((t.as_secs_f64(), format!("kernel seq {s:>8} len {l}")));
        }
        for &(t, s, l, _, rx) in o.sent.iter().filter(|x| x.2 > 0) {
            lines.push((
                t.as_secs_f64(),
                format!("                              model seq {s:>8} len {l}{}", if rx { " (again)" } else { "" }),
            ));
        }
        for p in &inbound {
            let sk: Vec<String> =
                p.r.sack_blocks()
                    .iter()
                    .map(|&(l, r)| format!("{}-{}", l.wrapping_sub(iss), r.wrapping_sub(iss)))
                    .collect();
            lines.push((p.t - t0, format!("   <- ack {:>8} {}", p.r.ack.wrapping_sub(iss), sk.join(" "))));
        }
        lines.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (t, l) in lines.iter().filter(|x| x.0 >= lo && x.0 <= hi) {
            println!("{t:9.4} {l}");
        }
    }
}
