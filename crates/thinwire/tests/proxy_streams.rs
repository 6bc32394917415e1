//! The split-TCP proxy in stream mode (the `thinwire proxy` daemon's form): the
//! wired legs are byte streams a driver carries over sockets, the wireless leg
//! carries real bytes. Here a scripted driver plays the kernel sockets and the
//! servers, and a thinwire TCP endpoint with byte buffers plays each mobile over a
//! slow, lossy link; every byte is checked.
use std::collections::BTreeMap;
use thinwire::proxy::{Command, Proxy, ProxyConfig, Side, LINGER};
use thinwire::tcp::{Tcp, TcpConfig};
use thinwire::time::{Duration, Instant};
use thinwire::wire::{Meta, Packet, TcpFlags, L4};

const SERVER: [u8; 4] = [10, 0, 0, 1];
const MOBILE: [u8; 4] = [10, 0, 1, 2];
const REFUSING_PORT: u16 = 9;

fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The server side of one connection, as the driver sees its socket.
#[derive(Default)]
struct ServerEnd {
    conn: Option<usize>,
    /// What the server sends, and how much of it the socket has delivered.
    send: Vec<u8>,
    sent: usize,
    /// Close after sending; reset instead of closing.
    close: bool,
    reset_at: Option<usize>,
    got: Vec<u8>,
    got_fin: bool,
    /// What the server does on end of file from the client: echo everything
    /// received, then close.
    echo: bool,
    reset_seen: bool,
    /// The proxy closed the connection (its slot may be reused later).
    done: bool,
}

struct Net {
    now: Instant,
    q: BTreeMap<(i64, u64), (bool, Packet)>,
    n: u64,
    proxy: Proxy,
    mobiles: Vec<Tcp>,
    to_write: Vec<Vec<u8>>,
    close_after: Vec<bool>,
    got: Vec<Vec<u8>>,
    servers: Vec<ServerEnd>,
    free: [Instant; 2],
    sent: [u64; 2],
    loss: Box<dyn FnMut(usize, u64) -> bool>,
    /// (connection, time) the driver must report the server's ACK of our FIN.
    fin_acks: Vec<(usize, Instant)>,
    max_held: u64,
}

impl Net {
    fn new(loss: Box<dyn FnMut(usize, u64) -> bool>) -> Net {
        Net {
            now: Instant::ZERO,
            q: BTreeMap::new(),
            n: 0,
            proxy: Proxy::with_streams(ProxyConfig::default()),
            mobiles: vec![],
            to_write: vec![],
            close_after: vec![],
            got: vec![],
            servers: vec![],
            free: [Instant::ZERO; 2],
            sent: [0; 2],
            loss,
            fin_acks: vec![],
            max_held: 0,
        }
    }

    fn conn(&mut self, up: Vec<u8>, close: bool, server: ServerEnd, port: u16) -> usize {
        let i = self.mobiles.len();
        let mut m =
            Tcp::new(TcpConfig::profile("linux-2.4").unwrap(), 40000 + i as u16, port, 1_000_000 * i as u32 + 7);
        m.use_byte_buffers();
        m.connect(self.now);
        self.mobiles.push(m);
        self.to_write.push(up);
        self.close_after.push(close);
        self.got.push(vec![]);
        self.servers.push(server);
        self.flush();
        i
    }

    fn radio(&mut self, d: usize, p: Packet) {
        let rate = [4150u64, 1400][d];
        let start = self.now.max(self.free[d]);
        let done = start + Duration::transmission(p.size() as u64, rate * 8);
        self.free[d] = done;
        let i = self.sent[d];
        self.sent[d] += 1;
        if !(self.loss)(d, i) {
            self.n += 1;
            let delay = Duration::from_millis([700, 500][d]);
            self.q.insert(((done + delay).nanos(), self.n), (d == 0, p));
        }
    }

    fn flush(&mut self) {
        let now = self.now;
        for i in 0..self.mobiles.len() {
            let m = &mut self.mobiles[i];
            let n = m.write(&self.to_write[i]);
            self.to_write[i].drain(..n);
            if self.to_write[i].is_empty() && self.close_after[i] && !m.is_closed() {
                m.close();
                self.close_after[i] = false;
            }
            let r = m.read(usize::MAX);
            self.got[i].extend(r);
            while let Some(seg) = self.mobiles[i].poll_transmit(now) {
                let data = self.mobiles[i].segment_data(&seg);
                let p = Packet::tcp_with_payload(
                    MOBILE.into(),
                    SERVER.into(),
                    0,
                    seg.repr,
                    &data,
                    Meta::new(i as u16, now),
                );
                self.radio(1, p);
            }
        }
        self.drive();
        while let Some((side, p)) = self.proxy.poll_transmit() {
            assert_eq!(side, Side::Wireless, "stream mode sends nothing to the wired side but passed packets");
            self.radio(0, p);
        }
    }

    /// The driver: carries out the proxy's commands and moves bytes between the
    /// "sockets" and the proxy.
    fn drive(&mut self) {
        let now = self.now;
        while let Some(cmd) = self.proxy.poll_command() {
            match cmd {
                Command::Connect { conn, mobile, server } => {
                    let i = (mobile.1 - 40000) as usize;
                    assert_eq!((mobile.0, server.0), (MOBILE.into(), SERVER.into()));
                    if server.1 == REFUSING_PORT {
                        self.proxy.stream_refused(conn, now);
                    } else {
                        self.servers[i].conn = Some(conn);
                        self.proxy.stream_connected(conn, now, 77_000 * i as u32 + 5);
                    }
                }
                Command::Wake(_) => {}
                Command::Reset(c) => {
                    if let Some(s) = self.servers.iter_mut().find(|s| s.conn == Some(c) && !s.done) {
                        s.reset_seen = true;
                    }
                }
                Command::Close(c) => {
                    if let Some(s) = self.servers.iter_mut().find(|s| s.conn == Some(c) && !s.done) {
                        s.done = true;
                    }
                }
            }
        }
        for i in 0..self.servers.len() {
            let Some(c) = self.servers[i].conn else { continue };
            if self.servers[i].done || self.proxy.is_closed(c) {
                continue;
            }
            // Upload: the socket takes everything.
            let up = self.proxy.stream_upload(c, 1 << 20);
            if !up.is_empty() {
                self.servers[i].got.extend(&up);
                self.proxy.stream_written(c, now, up.len());
            }
            let s = self.proxy.stream(c).unwrap().clone();
            if s.wants_shutdown() {
                self.proxy.stream_shut(c);
                self.fin_acks.push((c, now + Duration::from_millis(40)));
            }
            if s.up_fin && s.written >= s.up_limit && !self.servers[i].got_fin {
                self.servers[i].got_fin = true;
                if self.servers[i].echo {
                    let g = self.servers[i].got.clone();
                    self.servers[i].send.extend(g);
                    self.servers[i].close = true;
                }
            }
            // Download: read what the allowance permits.
            let srv = &mut self.servers[i];
            if let Some(at) = srv.reset_at {
                if srv.sent >= at {
                    srv.reset_at = None;
                    self.proxy.stream_reset(c, now);
                    continue;
                }
            }
            let room = self.proxy.read_allowance(c) as usize;
            let n = room.min(srv.send.len() - srv.sent).min(srv.reset_at.map_or(usize::MAX, |a| a - srv.sent));
            if n > 0 {
                let chunk = srv.send[srv.sent..srv.sent + n].to_vec();
                srv.sent += n;
                self.proxy.stream_data(c, now, &chunk);
            }
            let srv = &self.servers[i];
            if srv.close && srv.sent == srv.send.len() && !self.proxy.stream(c).unwrap().eof {
                self.proxy.stream_eof(c, now);
            }
        }
        let due: Vec<usize> = self.fin_acks.iter().filter(|f| f.1 <= now).map(|f| f.0).collect();
        self.fin_acks.retain(|f| f.1 > now);
        for c in due {
            self.proxy.stream_fin_acked(c, now);
        }
        let held: u64 = self.proxy.connections().map(|c| c.held()).sum();
        self.max_held = self.max_held.max(held);
    }

    fn step(&mut self) -> bool {
        let mut next = self.q.keys().next().map(|k| Instant(k.0));
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        };
        for m in &self.mobiles {
            consider(m.poll_timeout());
        }
        consider(self.proxy.poll_timeout());
        consider(self.fin_acks.iter().map(|f| f.1).min());
        let Some(t) = next else { return false };
        // The driver polls its sockets at least every 100 ms.
        self.now = t.min(self.now + Duration::from_millis(100)).max(self.now);
        let now = self.now;
        if let Some(&k) = self.q.keys().next().filter(|k| k.0 <= now.nanos()) {
            let (to_mobile, p) = self.q.remove(&k).unwrap();
            if to_mobile {
                let L4::Tcp(r) = p.l4 else { unreachable!() };
                let i = (r.dst_port - 40000) as usize;
                let data = p.l4_payload().map(<[u8]>::to_vec).unwrap_or_default();
                assert_eq!(data.len(), p.payload_len as usize, "data segments carry real bytes");
                self.mobiles[i].on_segment_data(now, &r, &data);
            } else {
                self.proxy.on_packet(now, Side::Wireless, p);
            }
        }
        for m in &mut self.mobiles {
            if m.poll_timeout().is_some_and(|t| t <= now) {
                m.handle_timeout(now);
            }
        }
        if self.proxy.poll_timeout().is_some_and(|t| t <= now) {
            self.proxy.handle_timeout(now);
        }
        self.flush();
        true
    }

    fn run(&mut self, secs: i64) {
        let end = self.now + Duration::from_secs(secs);
        while self.now < end && !self.mobiles.iter().all(|m| m.is_closed()) {
            if !self.step() {
                break;
            }
        }
    }
}

fn no_loss() -> Box<dyn FnMut(usize, u64) -> bool> {
    Box::new(|_, _| false)
}

#[test]
fn downloads_and_uploads_are_byte_exact_over_a_lossy_link() {
    let mut net = Net::new(Box::new(|d, i| i % [23, 17][d] == 5));
    let down = bytes(60_000, 1);
    let up = bytes(30_000, 2);
    let srv = ServerEnd { send: down.clone(), close: true, ..Default::default() };
    net.conn(up.clone(), true, srv, 80);
    net.run(600);
    assert_eq!(net.got[0].len(), down.len());
    assert!(net.got[0] == down, "download differs");
    assert!(net.servers[0].got == up, "upload differs ({} of {} bytes)", net.servers[0].got.len(), up.len());
    assert!(net.mobiles[0].is_closed(), "mobile state {:?}", net.mobiles[0].state);
    assert!(net.proxy.stats().retransmits > 0, "losses were repaired by the proxy");
    // Flow control: the proxy never held more than its buffer target allows.
    let cfg = ProxyConfig::default();
    assert!(
        net.max_held as f64 <= cfg.target() + cfg.clamp_bytes() as f64 + 2.0 * cfg.mss as f64,
        "held {}",
        net.max_held
    );
}

#[test]
fn an_echo_with_a_half_close_returns_every_byte() {
    // The PEPsal case: the client sends, half-closes, and reads the echo.
    let mut net = Net::new(no_loss());
    let data = bytes(100_000, 3);
    net.conn(data.clone(), true, ServerEnd { echo: true, ..Default::default() }, 7);
    net.run(900);
    assert_eq!(net.got[0].len(), data.len());
    assert!(net.got[0] == data);
    assert!(net.mobiles[0].is_closed());
}

#[test]
fn the_mobiles_fin_is_acknowledged_only_after_the_server_acknowledged_the_proxys() {
    let mut net = Net::new(no_loss());
    net.conn(bytes(10, 4), true, ServerEnd::default(), 80);
    // Hold the server's ACK of the proxy's FIN back for a long time.
    let mut acked_early = false;
    let end = Instant::ZERO + Duration::from_secs(60);
    while net.now < end {
        for f in &mut net.fin_acks {
            f.1 = Instant::ZERO + Duration::from_secs(30);
        }
        if !net.step() {
            break;
        }
        let m = &net.mobiles[0];
        if net.now < Instant::ZERO + Duration::from_secs(30) && m.fin_acked() {
            acked_early = true;
        }
    }
    assert!(!acked_early, "the proxy acknowledged the mobile's FIN before the server had the proxy's");
    assert!(net.mobiles[0].fin_acked(), "and acknowledges it afterwards");
}

#[test]
fn a_refused_server_port_resets_the_mobile() {
    let mut net = Net::new(no_loss());
    net.conn(vec![], true, ServerEnd::default(), REFUSING_PORT);
    net.run(30);
    assert!(net.mobiles[0].is_closed(), "state {:?}", net.mobiles[0].state);
    assert!(net.got[0].is_empty());
}

#[test]
fn resets_cross_in_both_directions() {
    // The server resets after 5,000 bytes: the mobile is reset.
    let mut net = Net::new(no_loss());
    let srv = ServerEnd { send: bytes(20_000, 5), reset_at: Some(5_000), ..Default::default() };
    net.conn(vec![], false, srv, 80);
    net.run(120);
    assert!(net.mobiles[0].is_closed(), "mobile state {:?}", net.mobiles[0].state);
    assert!(net.got[0].len() <= 5_000);
    // The mobile resets: the driver is told to reset the server's socket.
    let mut net = Net::new(no_loss());
    let srv = ServerEnd { send: bytes(200_000, 6), ..Default::default() };
    net.conn(vec![], false, srv, 80);
    let until = Instant::ZERO + Duration::from_secs(20);
    while net.now < until && net.step() {}
    assert!(!net.got[0].is_empty());
    let mut h =
        thinwire::wire::TcpRepr { src_port: 40000, dst_port: 80, flags: TcpFlags(TcpFlags::RST), ..Default::default() };
    h.seq = 7u32.wrapping_add(1);
    let p = Packet::new(MOBILE, SERVER, 0, L4::Tcp(h), 0, 0, net.now);
    net.proxy.on_packet(net.now, Side::Wireless, p);
    net.flush();
    assert!(net.servers[0].reset_seen, "the server's socket is reset");
    assert!(net.proxy.is_closed(net.servers[0].conn.unwrap()));
}

#[test]
fn several_connections_of_one_mobile_share_one_window() {
    let mut net = Net::new(Box::new(|d, i| d == 0 && i % 31 == 3));
    let files: Vec<Vec<u8>> = (0..6).map(|k| bytes(15_000 + 1000 * k, 10 + k as u64)).collect();
    for f in &files {
        net.conn(vec![], true, ServerEnd { send: f.clone(), close: true, ..Default::default() }, 80);
    }
    net.run(900);
    for (i, f) in files.iter().enumerate() {
        assert!(net.got[i] == *f, "connection {i}: {} of {} bytes", net.got[i].len(), f.len());
    }
    let a = net.proxy.aggregate(MOBILE.into()).unwrap();
    assert_eq!(a.window(), ProxyConfig::default().clamp_bytes());
    assert_eq!(net.proxy.stats().connections, 6);
}

#[test]
fn a_closed_connections_slot_is_reused_only_after_the_linger_time() {
    let mut net = Net::new(no_loss());
    let files: Vec<Vec<u8>> = (0..3).map(|k| bytes(5_000 + k, 20 + k as u64)).collect();
    let get = |net: &mut Net, k: usize| {
        let f: &Vec<u8> = &files[k];
        let i = net.conn(vec![], true, ServerEnd { send: f.clone(), close: true, ..Default::default() }, 80);
        net.run(300);
        assert!(net.got[i] == *f, "connection {i}: {} of {} bytes", net.got[i].len(), f.len());
    };
    get(&mut net, 0);
    // Within the linger time the closed connection keeps its slot.
    get(&mut net, 1);
    assert_eq!(net.proxy.slots(), 2);
    net.now = net.now + LINGER + Duration::from_secs(1);
    get(&mut net, 2);
    assert_eq!(net.proxy.slots(), 2, "the third connection reuses a released slot");
    assert_eq!(net.proxy.stats().connections, 3);
}
