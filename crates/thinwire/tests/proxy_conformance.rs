//! The proxy's mobile-side leg against scripted segments, as a kernel listener
//! and receiver would answer them (RFC 9293, RFC 5961, Linux `tcp_input.c`,
//! `inet_connection_sock.c`): the proxy in stream mode (the daemon's form), a
//! driver whose sockets connect at once, and a "mobile" that is nothing but the
//! segments each test writes — so it can misbehave as no TCP endpoint would.
use thinwire::proxy::{Command, Proxy, ProxyConfig, Side};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Meta, Packet, TcpFlags, TcpOptions, TcpRepr, L4};

const SERVER: [u8; 4] = [10, 0, 0, 1];
const MOBILE: [u8; 4] = [10, 0, 1, 2];
const MOBILE_ISN: u32 = 1_000;
const SERVER_ISN: u32 = 500_000;

struct Script {
    px: Proxy,
    now: Instant,
    /// Segments the proxy sent to the mobile, with when.
    out: Vec<(Instant, TcpRepr)>,
    /// Commands the driver got (connects are answered at once).
    resets: Vec<usize>,
    closes: Vec<usize>,
    /// Whether the driver's sockets take the mobile's upload.
    socket_takes_upload: bool,
    uploaded: usize,
}

impl Script {
    fn new(cfg: ProxyConfig) -> Script {
        Script {
            px: Proxy::with_streams(cfg),
            now: Instant::ZERO,
            out: vec![],
            resets: vec![],
            closes: vec![],
            socket_takes_upload: true,
            uploaded: 0,
        }
    }

    fn send(&mut self, port: u16, seq: u32, ack: u32, flags: u8, window: u16, data: &[u8]) {
        let r =
            TcpRepr { src_port: port, dst_port: 80, seq, ack, flags: TcpFlags(flags), window, ..Default::default() };
        self.send_repr(r, data);
    }

    fn send_repr(&mut self, r: TcpRepr, data: &[u8]) {
        let p = Packet::tcp_with_payload(MOBILE.into(), SERVER.into(), 0, r, data, Meta::new(0, self.now));
        self.px.on_packet(self.now, Side::Wireless, p);
        self.settle();
    }

    fn syn(&mut self, port: u16) {
        let r = TcpRepr {
            src_port: port,
            dst_port: 80,
            seq: MOBILE_ISN,
            flags: TcpFlags(TcpFlags::SYN),
            window: 65535,
            opts: TcpOptions { mss: Some(1460), ..Default::default() },
            ..Default::default()
        };
        self.send_repr(r, &[]);
    }

    /// SYN, SYN-ACK, ACK: an open connection from `port`.
    fn open(&mut self, port: u16) {
        self.syn(port);
        self.send(port, MOBILE_ISN + 1, SERVER_ISN + 1, TcpFlags::ACK, 65535, &[]);
    }

    /// Data from the mobile at stream offset `off` (0 = first byte).
    fn data(&mut self, port: u16, off: u32, len: usize) {
        let d = vec![0x5a; len];
        self.send(port, MOBILE_ISN + 1 + off, SERVER_ISN + 1, TcpFlags::ACK, 65535, &d);
    }

    fn settle(&mut self) {
        let now = self.now;
        loop {
            let mut any = false;
            while let Some(cmd) = self.px.poll_command() {
                any = true;
                match cmd {
                    Command::Connect { conn, .. } => self.px.stream_connected(conn, now, SERVER_ISN),
                    Command::Wake(_) => {}
                    Command::Reset(c) => self.resets.push(c),
                    Command::Close(c) => self.closes.push(c),
                }
            }
            while let Some((side, p)) = self.px.poll_transmit() {
                any = true;
                assert_eq!(side, Side::Wireless);
                let L4::Tcp(r) = p.l4 else { panic!("not TCP") };
                self.out.push((now, r));
            }
            if self.socket_takes_upload {
                let live: Vec<usize> = (0..self.px.slots()).filter(|&c| !self.px.is_closed(c)).collect();
                for c in live {
                    let up = self.px.stream_upload(c, 1 << 20);
                    if !up.is_empty() {
                        any = true;
                        self.uploaded += up.len();
                        self.px.stream_written(c, now, up.len());
                    }
                }
            }
            if !any {
                break;
            }
        }
    }

    /// Runs the proxy's timers up to `t`.
    fn until(&mut self, t: Instant) {
        while let Some(at) = self.px.poll_timeout().filter(|&at| at <= t) {
            self.now = at.max(self.now);
            self.px.handle_timeout(self.now);
            self.settle();
        }
        self.now = t;
    }

    fn last_ack(&self) -> (u32, u16) {
        let r = self.out.iter().rev().find(|(_, r)| r.flags.has(TcpFlags::ACK)).expect("an ACK").1;
        (r.ack.wrapping_sub(MOBILE_ISN + 1), r.window)
    }

    fn synacks(&self) -> Vec<Instant> {
        let both = TcpFlags::SYN | TcpFlags::ACK;
        self.out.iter().filter(|(_, r)| r.flags.0 & both == both).map(|(t, _)| *t).collect()
    }
}

fn secs(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s)
}

/// RFC 9293 §3.10.7.4: data beyond the window offered is trimmed — neither
/// acknowledged nor buffered. A mobile that ignores the window while the server
/// reads nothing fills 64 KB and no more; the window it is offered falls to 0;
/// and what is held counts in the daemon's `max_buffer` (`buffered`). (Before: the
/// daemon acknowledged 45–60 MB that the server never took.)
#[test]
fn data_beyond_the_window_is_neither_acknowledged_nor_buffered() {
    let mut s = Script::new(ProxyConfig::default());
    s.socket_takes_upload = false;
    s.open(40000);
    for i in 0..200u32 {
        s.data(40000, i * 1000, 1000);
    }
    let (acked, window) = s.last_ack();
    assert_eq!((acked, window), (65535, 0), "acknowledged up to the window's edge, and the window shut");
    assert_eq!(s.px.buffered(), 65535, "the upload held counts in the buffer");
    // The socket takes all it holds: the edge moves by as much, and no further.
    s.socket_takes_upload = true;
    s.settle();
    assert_eq!(s.uploaded, 65535);
    s.socket_takes_upload = false;
    for i in 0..135u32 {
        s.data(40000, 65535 + i * 1000, 1000);
    }
    let (acked, _) = s.last_ack();
    assert_eq!(acked, 2 * 65535, "the next window's worth, no more");
    assert_eq!(s.px.buffered(), 65535);
}

/// A FIN beyond the window's edge is not taken either (its retransmission, once
/// the window opens, is).
#[test]
fn a_fin_beyond_the_window_waits() {
    let mut s = Script::new(ProxyConfig::default());
    s.socket_takes_upload = false;
    s.open(40000);
    for i in 0..66u32 {
        s.data(40000, i * 1000, 1000);
    }
    // 66,000 bytes offered, 65,535 taken; the FIN after byte 66,000 is beyond.
    s.send(40000, MOBILE_ISN + 1 + 66_000, SERVER_ISN + 1, TcpFlags::ACK | TcpFlags::FIN, 65535, &[]);
    let c = 0;
    assert!(!s.px.stream(c).unwrap().up_fin, "the FIN beyond the edge is not taken");
    s.socket_takes_upload = true;
    s.settle();
    s.data(40000, 65_535, 66_000 - 65_535);
    s.send(40000, MOBILE_ISN + 1 + 66_000, SERVER_ISN + 1, TcpFlags::ACK | TcpFlags::FIN, 65535, &[]);
    assert!(s.px.stream(c).unwrap().up_fin, "inside the window it is");
    assert_eq!(s.uploaded, 66_000);
}

/// Linux `reqsk_timer_handler` with `tcp_synack_retries` = 5: a SYN-ACK the
/// mobile never acknowledges is resent after `initial_rto` (6 s), doubling (at
/// most `max_rto`, 60 s), five times; then the unfinished connection is dropped
/// — the server's socket reset, the mobile told nothing. (Before: one SYN-ACK, and
/// the half-open connection held for the 10-minute idle timeout.)
#[test]
fn an_unacknowledged_synack_is_resent_with_backoff_then_dropped() {
    let mut s = Script::new(ProxyConfig::default());
    s.syn(40000);
    s.until(secs(400.0));
    let want: Vec<Instant> = [0.0, 6.0, 18.0, 42.0, 90.0, 150.0].into_iter().map(secs).collect();
    assert_eq!(s.synacks(), want);
    assert_eq!(s.px.half_open_dropped, 1);
    assert_eq!((s.resets.as_slice(), s.closes.as_slice()), (&[0usize][..], &[0usize][..]));
    assert!(s.out.iter().all(|(_, r)| !r.flags.has(TcpFlags::RST)), "the mobile is told nothing");
    assert_eq!(s.px.live_connections(), 0);
    assert_eq!(s.px.poll_timeout(), None, "no timer left");
}

/// A retransmitted SYN is answered with the SYN-ACK again, and the handshake's
/// ACK stops the timer.
#[test]
fn a_retransmitted_syn_gets_the_synack_again_and_the_ack_stops_the_timer() {
    let mut s = Script::new(ProxyConfig::default());
    s.syn(40000);
    s.now = secs(1.0);
    s.syn(40000);
    s.now = secs(3.0);
    s.send(40000, MOBILE_ISN + 1, SERVER_ISN + 1, TcpFlags::ACK, 65535, &[]);
    s.until(secs(400.0));
    assert_eq!(s.synacks(), vec![secs(0.0), secs(1.0)]);
    assert_eq!((s.px.half_open_dropped, s.px.live_connections()), (0, 1));
}

/// A SYN flood from one mobile holds at most `max_half_open` (256) of its
/// connection slots — each new SYN beyond drops the oldest unfinished one — so
/// the mobile's real connections are still carried, and those open are
/// untouched. (Before: 244 half-open connections in 10 s used up the per-mobile
/// limit, and the mobile's later connections went unproxied.)
#[test]
fn a_syn_flood_cannot_hold_a_mobiles_slots() {
    let mut s = Script::new(ProxyConfig::default());
    s.open(40000);
    for i in 0..500u16 {
        s.now = secs(0.01 * i as f64);
        s.syn(41000 + i);
    }
    assert_eq!(s.px.mobile_connections(MOBILE.into()), 1 + 256);
    assert_eq!(s.px.half_open_dropped, 500 - 256);
    // A real connection in the middle of the flood completes its handshake.
    s.open(40001);
    assert_eq!(s.px.mobile_connections(MOBILE.into()), 1 + 256);
    assert!(s.px.tracks((MOBILE.into(), 40000), (SERVER.into(), 80)), "the open connection stays");
    assert!(s.px.tracks((MOBILE.into(), 40001), (SERVER.into(), 80)), "the new one is carried");
    s.data(40001, 0, 500);
    assert_eq!(s.last_ack().0, 500);
}

/// At a mobile's connection limit (the daemon's `max_connections_per_mobile`),
/// a stale unfinished handshake — its SYN-ACK unanswered through a timeout — is
/// dropped to make room; a young one (a burst of real connections) is not.
#[test]
fn at_the_limit_only_a_stale_half_open_connection_makes_room() {
    let mut s = Script::new(ProxyConfig::default());
    s.open(40000);
    s.syn(41000);
    assert!(!s.px.evict_stale_half_open(MOBILE.into(), s.now), "young: kept");
    s.until(secs(7.0)); // past the first SYN-ACK timeout (6 s)
    assert!(s.px.evict_stale_half_open(MOBILE.into(), s.now), "stale: dropped");
    assert!(!s.px.tracks((MOBILE.into(), 41000), (SERVER.into(), 80)));
    assert!(s.px.tracks((MOBILE.into(), 40000), (SERVER.into(), 80)), "the open one stays");
    assert!(!s.px.evict_stale_half_open(MOBILE.into(), s.now), "none left");
}
