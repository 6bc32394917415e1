//! Open-loop replay of a real Linux sender (testkit): the segments a traced
//! kernel received, at the kernel's times, fed to the model's sender; what the
//! model sends and its state before each segment, beside the kernel's.
//!
//! A script comes from a real run (`examples/kernel_replay.rs` reads the
//! server's capture and, when traced, the kernel's `tcp_sock` before each
//! inbound segment: `bench/kernel_state/`). Because the inbound segments are
//! the kernel's, the model's and the kernel's transmissions stay comparable
//! only up to the first place they part; that place names a behaviour of the
//! model that is not the kernel's (`docs/studies/sim-vs-real.md`, "Replaying
//! the kernel's own segments"). What a script fixes besides the segments:
//! - the application's data: a real server (Python's `http.server`) hands the
//!   kernel data in bursts, and a kernel that waits for it is not window-limited;
//!   the script says how much the kernel had sent by each segment, application
//!   write and timer (`App`, `TimerLimit`), and the model may send no more;
//! - the jiffies counter's phase (`phase`), estimated from the kernel's
//!   timer-driven transmissions, so the model's timer wheel fires when the
//!   kernel's did;
//! - TSecr values, rewritten to the model's clock at the time the kernel sent
//!   what they echo — or, when the model sent that data segment too within
//!   10 ms of the kernel, at the time the model sent it (`echo_of_model`).
//!
//! Text format, one item per line (times in ns from the first SYN, sequence
//! numbers relative to the server's ISN, `#` comments):
//! `cfg <profile> [reno] [nosack]`, `iss <u32>`, `ports <local> <remote>`,
//! `phase <ns>`, `total <bytes>`;
//! `in <t> <seq> <ack> <flags> <window> <len> [mss=] [ws=] [sp] [ts=val,ecr]
//! [sack=l-r,l-r] [data=bytes]`; `app <t> <bytes> <close 0|1>`; `timer <t> <bytes>`;
//! `out <t> <seq> <len>` (the kernel's data segments); `state <cwnd> <ssthresh>
//! <ca> <packets_out> <sacked> <lost> <retrans>` (the kernel before each inbound
//! segment in the established state, in order).
use crate::tcp::{CcKind, LinuxView, State, Tcp, TcpConfig};
use crate::time::{Duration, Instant};
use crate::wire::{TcpFlags, TcpRepr};

/// One input of the replay.
#[derive(Clone, Debug)]
pub enum Event {
    /// A segment the kernel received; `data`: by then the application had given
    /// that many bytes (set before the segment is taken in).
    In { at: Instant, seg: TcpRepr, len: u32, data: Option<u64> },
    /// By `at` the application had given `bytes`; `close` after them.
    App { at: Instant, bytes: u64, close: bool },
    /// A timer firing from `at` on may send what the kernel had sent by then.
    Timer { at: Instant, bytes: u64 },
}

/// The kernel's state before an inbound segment (Linux `struct tcp_sock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub ca_state: u8,
    pub packets_out: u64,
    pub sacked_out: u64,
    pub lost_out: u64,
    pub retrans_out: u64,
}

/// A real run to replay, and what the kernel did.
#[derive(Clone, Debug)]
pub struct Script {
    pub cfg: TcpConfig,
    pub iss: u32,
    pub ports: (u16, u16),
    pub phase: Duration,
    pub total: u64,
    pub events: Vec<Event>,
    /// The kernel's data segments: time, sequence number, length.
    pub sent: Vec<(Instant, u32, u32)>,
    pub states: Vec<KernelState>,
}

/// What the model did with a script.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Every segment: time, sequence number, length, flags, a retransmission.
    pub sent: Vec<(Instant, u32, u32, u8, bool)>,
    /// The model's state before each inbound segment in the established state,
    /// and that segment's time.
    pub views: Vec<LinuxView>,
    pub view_times: Vec<Instant>,
}

/// Where the model and the kernel part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parting {
    /// The first data segment sent differently (sequence number, length, or a
    /// time more than max(4 ms, 10 % of the time, at most 300 ms) apart); None
    /// when every one agrees.
    pub data: Option<usize>,
    /// The first inbound segment before which the states differ (cwnd,
    /// ssthresh, congestion state, segments out; with SACK also SACKed and lost
    /// awaiting retransmission); None when all agree.
    pub state: Option<usize>,
}

fn field<'a>(w: &[&'a str], key: &str) -> Option<&'a str> {
    w.iter().find_map(|x| x.strip_prefix(key))
}

impl Script {
    /// Reads the text format (see the module's doc).
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut s = Script {
            cfg: TcpConfig::default(),
            iss: 0,
            ports: (0, 0),
            phase: Duration::ZERO,
            total: 0,
            events: vec![],
            sent: vec![],
            states: vec![],
        };
        for (n, line) in text.lines().enumerate() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let bad = || format!("line {}: {line}", n + 1);
            let num = |i: usize| -> Result<i64, String> { w.get(i).and_then(|x| x.parse().ok()).ok_or_else(bad) };
            let at = |i: usize| -> Result<Instant, String> { Ok(Instant::ZERO + Duration(num(i)?)) };
            match w.first().copied() {
                None | Some("#") => {}
                Some("cfg") => {
                    s.cfg = TcpConfig::profile(w.get(1).copied().unwrap_or("")).ok_or_else(bad)?;
                    if w.contains(&"reno") {
                        s.cfg.cc = CcKind::Reno;
                    }
                    if w.contains(&"nosack") {
                        s.cfg.sack = false;
                    }
                }
                Some("iss") => s.iss = num(1)? as u32,
                Some("ports") => s.ports = (num(1)? as u16, num(2)? as u16),
                Some("phase") => s.phase = Duration(num(1)?),
                Some("total") => s.total = num(1)? as u64,
                Some("in") => {
                    let mut seg = TcpRepr {
                        src_port: s.ports.1,
                        dst_port: s.ports.0,
                        seq: num(2)? as u32,
                        ack: s.iss.wrapping_add(num(3)? as u32),
                        flags: TcpFlags(num(4)? as u8),
                        window: num(5)? as u16,
                        ..TcpRepr::default()
                    };
                    seg.opts.mss = field(&w, "mss=").and_then(|x| x.parse().ok());
                    seg.opts.wscale = field(&w, "ws=").and_then(|x| x.parse().ok());
                    seg.opts.sack_permitted = w.contains(&"sp");
                    if let Some((v, e)) = field(&w, "ts=").and_then(|x| x.split_once(',')) {
                        seg.opts.timestamps = Some((v.parse().map_err(|_| bad())?, e.parse().map_err(|_| bad())?));
                    }
                    if let Some(blocks) = field(&w, "sack=") {
                        for b in blocks.split(',').take(4) {
                            let (l, r) = b.split_once('-').ok_or_else(bad)?;
                            let l: u32 = l.parse().map_err(|_| bad())?;
                            let r: u32 = r.parse().map_err(|_| bad())?;
                            seg.opts.sack[seg.opts.sack_len as usize] = (s.iss.wrapping_add(l), s.iss.wrapping_add(r));
                            seg.opts.sack_len += 1;
                        }
                    }
                    let data = field(&w, "data=").and_then(|x| x.parse().ok());
                    s.events.push(Event::In { at: at(1)?, seg, len: num(6)? as u32, data });
                }
                Some("app") => s.events.push(Event::App { at: at(1)?, bytes: num(2)? as u64, close: num(3)? != 0 }),
                Some("timer") => s.events.push(Event::Timer { at: at(1)?, bytes: num(2)? as u64 }),
                Some("out") => s.sent.push((at(1)?, num(2)? as u32, num(3)? as u32)),
                Some("state") => s.states.push(KernelState {
                    cwnd: num(1)? as u64,
                    ssthresh: num(2)? as u64,
                    ca_state: num(3)? as u8,
                    packets_out: num(4)? as u64,
                    sacked_out: num(5)? as u64,
                    lost_out: num(6)? as u64,
                    retrans_out: num(7)? as u64,
                }),
                Some(_) => return Err(bad()),
            }
        }
        Ok(s)
    }

    /// The text format (see the module's doc); `profile` and `extra` name the
    /// configuration (`cfg` line) — the script keeps only what it reads back.
    pub fn to_text(&self, profile: &str, extra: &str) -> String {
        use std::fmt::Write;
        let mut t = String::new();
        let _ = writeln!(t, "cfg {profile} {extra}");
        let _ = writeln!(
            t,
            "iss {}\nports {} {}\nphase {}\ntotal {}",
            self.iss,
            self.ports.0,
            self.ports.1,
            self.phase.nanos(),
            self.total
        );
        for ev in &self.events {
            let _ = match ev {
                Event::In { at, seg, len, data } => {
                    let o = &seg.opts;
                    let mut x = format!(
                        "in {} {} {} {} {} {}",
                        at.nanos(),
                        seg.seq,
                        seg.ack.wrapping_sub(self.iss),
                        seg.flags.0,
                        seg.window,
                        len
                    );
                    if let Some(v) = o.mss {
                        let _ = write!(x, " mss={v}");
                    }
                    if let Some(v) = o.wscale {
                        let _ = write!(x, " ws={v}");
                    }
                    if o.sack_permitted {
                        x.push_str(" sp");
                    }
                    if let Some((v, e)) = o.timestamps {
                        let _ = write!(x, " ts={v},{e}");
                    }
                    if o.sack_len > 0 {
                        let b: Vec<String> = o
                            .sack_blocks()
                            .iter()
                            .map(|&(l, r)| format!("{}-{}", l.wrapping_sub(self.iss), r.wrapping_sub(self.iss)))
                            .collect();
                        let _ = write!(x, " sack={}", b.join(","));
                    }
                    if let Some(d) = data {
                        let _ = write!(x, " data={d}");
                    }
                    writeln!(t, "{x}")
                }
                Event::App { at, bytes, close } => writeln!(t, "app {} {bytes} {}", at.nanos(), *close as u8),
                Event::Timer { at, bytes } => writeln!(t, "timer {} {bytes}", at.nanos()),
            };
        }
        for (at, seq, len) in &self.sent {
            let _ = writeln!(t, "out {} {seq} {len}", at.nanos());
        }
        for k in &self.states {
            let _ = writeln!(
                t,
                "state {} {} {} {} {} {} {}",
                k.cwnd, k.ssthresh, k.ca_state, k.packets_out, k.sacked_out, k.lost_out, k.retrans_out
            );
        }
        t
    }

    /// Feeds the script to the model's sender.
    pub fn run(&self) -> Outcome {
        let mut m = Tcp::new(self.cfg, self.ports.0, self.ports.1, self.iss);
        m.listen();
        m.set_wheel_phase(self.phase);
        let mut out = Outcome::default();
        let mut timer_limit = 0;
        let mut app = 0u64;
        let drain = |m: &mut Tcp, now: Instant, out: &mut Outcome| {
            while let Some(s) = m.poll_transmit(now) {
                out.sent.push((now, s.repr.seq.wrapping_sub(self.iss), s.len, s.repr.flags.0, s.retransmission));
            }
        };
        // The model's timers due by `until`; one firing may send what the kernel
        // had sent by the last `Timer` event.
        let fire = |m: &mut Tcp, until: Instant, app: &mut u64, timer_limit: u64, out: &mut Outcome| {
            while let Some(d) = m.poll_timeout().filter(|&d| d <= until) {
                if timer_limit > *app {
                    *app = timer_limit;
                    m.set_app_data(Some((*app).min(self.total)), *app >= self.total);
                }
                m.handle_timeout(d);
                drain(m, d, out);
            }
        };
        for ev in &self.events {
            let at = match ev {
                Event::In { at, .. } | Event::App { at, .. } | Event::Timer { at, .. } => *at,
            };
            fire(&mut m, at, &mut app, timer_limit, &mut out);
            match ev {
                Event::In { at, seg, len, data } => {
                    if let Some(d) = *data {
                        app = app.max(d);
                        m.set_app_data(Some(app.min(self.total)), app >= self.total);
                    }
                    if m.state == State::Established {
                        out.views.push(m.linux_view());
                        out.view_times.push(*at);
                    }
                    let seg = self.echo_of_model(seg, *at, &out);
                    m.on_segment(*at, &seg, *len);
                }
                Event::App { bytes, close, .. } => {
                    app = app.max(*bytes);
                    m.set_app_data(Some(app), *close);
                }
                Event::Timer { bytes, .. } => timer_limit = *bytes,
            }
            drain(&mut m, at, &mut out);
        }
        // Timers after the last inbound segment, as far as the kernel sent (and
        // the comparison's largest tolerance, 0.3 s, beyond).
        let end = self.sent.last().map_or(Instant::ZERO, |s| s.0) + Duration::from_millis(300);
        fire(&mut m, end, &mut app, timer_limit, &mut out);
        out
    }

    /// The segment with its TSecr moved to the model's transmission when it
    /// echoes a kernel data segment that the model sent too, within 10 ms (a
    /// timer of the model firing a jiffy or a wheel bucket off the kernel's,
    /// from the estimated phase): otherwise a kernel timestamp older than the
    /// model's retransmission made the model take the ACK for the original's
    /// (Eifel; `tcp_skb_spurious_retrans`) and part on that alone.
    fn echo_of_model(&self, seg: &TcpRepr, at: Instant, out: &Outcome) -> TcpRepr {
        let mut seg = *seg;
        let Some((v, e)) = seg.opts.timestamps.filter(|t| t.1 != 0) else { return seg };
        let ts = crate::tcp::tcb::ts_clock;
        let Some(&(kt, kseq, _)) = self.sent.iter().rev().find(|x| x.0 <= at && ts(x.0) == e) else { return seg };
        let model = out.sent.iter().rev().find(|x| x.0 <= at && x.1 == kseq && x.2 > 0);
        if let Some(&(mt, ..)) = model.filter(|x| (x.0 - kt).0.abs() <= Duration::from_millis(10).0) {
            seg.opts.timestamps = Some((v, ts(mt)));
        }
        seg
    }

    /// Where the model's outcome parts from the kernel's.
    pub fn compare(&self, o: &Outcome) -> Parting {
        let model: Vec<_> = o.sent.iter().filter(|x| x.2 > 0).collect();
        let data = (0..self.sent.len().max(model.len())).find(|&i| match (self.sent.get(i), model.get(i)) {
            (Some(&(kt, ks, kl)), Some(&&(mt, ms, ml, _, _))) => {
                let t = kt.as_secs_f64();
                let tol = (0.1 * t.min(3.0)).clamp(0.004, 0.3);
                ks != ms || kl != ml || (t - mt.as_secs_f64()).abs() > tol
            }
            _ => true,
        });
        let sack = self.cfg.sack;
        let state = (0..self.states.len().min(o.views.len())).find(|&i| {
            let (k, v) = (&self.states[i], &o.views[i]);
            let ss = |x: u64| if x > 1 << 20 { 0 } else { x };
            k.cwnd != v.cwnd
                || ss(k.ssthresh) != ss(v.ssthresh)
                || k.ca_state != v.ca_state
                || k.packets_out != v.packets_out
                || (sack
                    && (k.sacked_out != v.sacked_out || k.lost_out != v.lost_out || k.retrans_out != v.retrans_out))
        });
        Parting { data, state }
    }
}
