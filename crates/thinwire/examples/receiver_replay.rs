//! Replays a real Linux receiver's inbound segments (the mobile's capture of an
//! emulated download) through the model's receiver and shows where the ACKs part.
//!
//!     cargo run --release --example receiver_replay --features testkit -- \
//!         mobile.pcap [--profile linux] [--context N] [--list]
//!
//! The model's receiver is fed the server's segments at the times the mobile's
//! capture shows them; its ACKs are compared with the real mobile's, first ACK of
//! each acknowledgement number against first ACK of it: the same numbers, each
//! within 2 ms. TSecr values are rewritten to the model's clock (the time the
//! real mobile sent the segment whose TSval they echo), so the receiver's RTT
//! estimate (`tcp_rcv_rtt_measure_ts`) sees the same times.
use thinwire::tcp::{Tcp, TcpConfig};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{TcpFlags, TcpRepr};

mod capture;
use capture::P;

fn usage(msg: &str) -> ! {
    capture::usage("receiver_replay", msg)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let flag = |k: &str| args.iter().any(|a| a == k);
    let Some(pcap) = args.first() else { usage("usage: receiver_replay mobile.pcap [options]") };
    let profile = opt("--profile").unwrap_or_else(|| "linux".into());
    let context: usize = opt("--context").map_or(12, |x| x.parse().unwrap_or(12));

    let pk = capture::read("receiver_replay", pcap, |r| r.dst_port == 8000);
    // The download: the last connection to port 8000, from its first SYN.
    let Some(last) = pk.iter().rposition(|p| p.out && p.r.flags.has(TcpFlags::SYN)) else {
        usage("no SYN to port 8000")
    };
    let port = pk[last].r.src_port;
    let syn = pk.iter().position(|p| p.out && p.r.flags.has(TcpFlags::SYN) && p.r.src_port == port).unwrap_or(last);
    let (mport, iss, t0) = (port, pk[syn].r.seq, pk[syn].t);
    let pk: Vec<P> = pk
        .into_iter()
        .skip(syn)
        .filter(|p| (p.out && p.r.src_port == mport) || (!p.out && p.r.dst_port == mport))
        .collect();
    let at = |t: f64| Instant::ZERO + Duration(((t - t0) * 1e9).round() as i64);
    let ts_clock = |t: f64| ((t - t0) * 1e3) as u32 + 1;

    // The jiffies phase from the mobile's timer-driven ACKs (none of the server's
    // segments in the 2 ms before): a delayed ACK leaves just after a jiffy.
    let timer_tx: Vec<f64> = (0..pk.len())
        .filter(|&i| pk[i].out && pk[..i].iter().rev().find(|q| !q.out).is_none_or(|q| pk[i].t - q.t > 0.002))
        .map(|i| pk[i].t - t0)
        .collect();
    let score =
        |ph: f64| -> f64 { timer_tx.iter().filter(|&&t| ((t - ph) % 0.004 + 0.004) % 0.004 < 0.0003).count() as f64 };
    let phase = (0..80).map(|k| k as f64 * 0.00005).max_by(|a, b| score(*a).total_cmp(&score(*b))).unwrap_or(0.0);
    let off = (0.256 - phase).rem_euclid(0.256);

    let cfg = TcpConfig::profile(&profile).unwrap_or_else(|| usage(&format!("--profile: no profile {profile}")));
    let mut m = Tcp::new(cfg, mport, 8000, iss);
    m.set_wheel_phase(Duration((off * 1e9) as i64));
    // The request: what the real mobile sent.
    let request: u64 = pk.iter().filter(|p| p.out).map(|p| p.len as u64).sum();
    m.set_app_data(Some(request), false);
    let mut sent: Vec<(f64, TcpRepr, u32)> = vec![];
    let drain = |m: &mut Tcp, now: Instant, sent: &mut Vec<(f64, TcpRepr, u32)>| {
        while let Some(s) = m.poll_transmit(now) {
            sent.push((now.as_secs_f64(), s.repr, s.len));
        }
    };
    let fire = |m: &mut Tcp, until: Instant, sent: &mut Vec<(f64, TcpRepr, u32)>| {
        while let Some(d) = m.poll_timeout().filter(|&d| d <= until) {
            m.handle_timeout(d);
            drain(m, d, sent);
        }
    };
    m.connect(Instant::ZERO);
    drain(&mut m, Instant::ZERO, &mut sent);
    for p in pk.iter().filter(|p| !p.out) {
        let now = at(p.t);
        fire(&mut m, now, &mut sent);
        let mut r = p.r;
        if let Some((v, e)) = r.opts.timestamps {
            let echoed = pk.iter().rfind(|q| q.out && q.t <= p.t && q.r.opts.timestamps.map(|x| x.0) == Some(e));
            r.opts.timestamps = Some((v, echoed.map_or(0, |q| ts_clock(q.t))));
        }
        m.on_segment(now, &r, p.len);
        drain(&mut m, now, &mut sent);
    }
    let end = at(pk.last().map_or(t0, |p| p.t) + 0.3);
    fire(&mut m, end, &mut sent);

    // First ACK of each acknowledgement number, both sides.
    let real: Vec<(f64, u32, usize)> = firsts(pk.iter().filter(|p| p.out).map(|p| (p.t - t0, &p.r)));
    let model: Vec<(f64, u32, usize)> = firsts(sent.iter().map(|s| (s.0, &s.1)));
    let part = (0..real.len().max(model.len())).find(|&i| match (real.get(i), model.get(i)) {
        (Some(a), Some(b)) => a.1 != b.1 || (a.0 - b.0).abs() > 0.002,
        _ => true,
    });
    let late = |x: &[(f64, u32, usize)], src: &[(f64, bool)]| {
        // ACKs leaving more than 5 ms after the segment that preceded them.
        x.iter()
            .filter(|a| src.iter().rev().find(|s| !s.1 && s.0 <= a.0 + 1e-6).is_some_and(|s| a.0 - s.0 > 0.005))
            .count()
    };
    let inbound: Vec<(f64, bool)> = pk.iter().map(|p| (p.t - t0, p.out)).collect();
    println!(
        "jiffies phase {:.2} ms; ACK numbers: real {} (sent {} segments; {} more than 5 ms after an inbound segment), model {} (sent {}; {})",
        phase * 1e3,
        real.len(),
        pk.iter().filter(|p| p.out).count(),
        late(&real, &inbound),
        model.len(),
        sent.len(),
        late(&model, &inbound)
    );
    match part {
        None => println!("every ACK agrees"),
        Some(i) => {
            println!("ACKs agree up to #{i}");
            let lo = real.get(i.saturating_sub(context / 2)).map_or(0.0, |x| x.0);
            let hi = real.get(i + context / 2).map_or(f64::MAX, |x| x.0);
            let mut lines: Vec<(f64, String)> = vec![];
            for p in &pk {
                let t = p.t - t0;
                if p.out {
                    lines.push((t, format!("real  ack {:>8} win {}", p.r.ack.wrapping_sub(pk[0].r.ack), p.r.window)));
                } else {
                    lines.push((t, format!("   <- seq {:>8} len {}", p.r.seq.wrapping_sub(pk[0].r.ack), p.len)));
                }
            }
            for s in &sent {
                lines.push((
                    s.0,
                    format!(
                        "                              model ack {:>8} win {}",
                        s.1.ack.wrapping_sub(pk[0].r.ack),
                        s.1.window
                    ),
                ));
            }
            lines.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (t, l) in lines.iter().filter(|x| x.0 >= lo - 0.3 && x.0 <= hi) {
                println!("{t:9.4} {l}");
            }
        }
    }
    if flag("--list") {
        for (i, (a, b)) in real.iter().zip(&model).enumerate() {
            println!(
                "#{i} real {:9.4} {:>8} | model {:9.4} {:>8}",
                a.0,
                a.1.wrapping_sub(real[0].1),
                b.0,
                b.1.wrapping_sub(real[0].1)
            );
        }
    }
}

/// (time, ack, index) of the first segment carrying each new acknowledgement number.
fn firsts<'a>(it: impl Iterator<Item = (f64, &'a TcpRepr)>) -> Vec<(f64, u32, usize)> {
    let mut out: Vec<(f64, u32, usize)> = vec![];
    for (i, (t, r)) in it.enumerate() {
        if !r.flags.has(TcpFlags::ACK) || r.flags.has(TcpFlags::SYN) {
            continue;
        }
        if out.last().is_none_or(|l| (r.ack.wrapping_sub(l.1) as i32) > 0) {
            out.push((t, r.ack, i));
        }
    }
    out
}
