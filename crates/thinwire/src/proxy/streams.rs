//! The proxy's interface to a stream driver (the `thinwire proxy` daemon): what
//! the kernel socket of a connection's wired leg did, and what the driver may do
//! next. Commands come from [`Proxy::poll_command`]; every `stream_*` call may
//! queue packets for the mobile and further commands.
use super::conn::Phase;
use super::wired::{Command, Wired};
use super::{Proxy, Side};
use crate::time::Instant;
use crate::wire::{IpAddress, Packet, TcpFlags, TcpRepr, L4};

impl Proxy {
    /// The next thing the stream driver must do.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.cmds.pop_front()
    }

    /// The socket connected: answer the mobile's SYN, with `iss` as the wireless
    /// leg's initial sequence number.
    pub fn stream_connected(&mut self, c: usize, now: Instant, iss: u32) {
        let conn = &mut self.conns[c];
        let Wired::Stream(s) = &mut conn.wired else { return };
        if conn.phase != Phase::Connecting {
            return;
        }
        s.connected = true;
        conn.phase = Phase::Open;
        conn.iss = iss;
        self.send_synack(c, now);
        self.wake(c);
    }

    /// The server refused, or the connection timed out: the mobile gets a RST.
    pub fn stream_refused(&mut self, c: usize, now: Instant) {
        if self.conns[c].phase != Phase::Connecting {
            return;
        }
        let conn = &self.conns[c];
        let h = syn_reset(conn.sport, conn.mport, conn.irs);
        self.emit(c, Side::Wireless, h, 0, now);
        self.close(c, now);
    }

    /// Bytes read from the server.
    pub fn stream_data(&mut self, c: usize, now: Instant, data: &[u8]) {
        let conn = &mut self.conns[c];
        let (Wired::Stream(s), Some(d)) = (&mut conn.wired, &mut conn.down) else { return };
        if conn.phase != Phase::Open || s.eof || data.is_empty() {
            return;
        }
        d.push(data);
        s.received += data.len() as u64;
        let a = conn.acb;
        self.service(a, now);
    }

    /// The server closed its side (end of file): the mobile gets a FIN after the
    /// data.
    pub fn stream_eof(&mut self, c: usize, now: Instant) {
        let conn = &mut self.conns[c];
        let Wired::Stream(s) = &mut conn.wired else { return };
        if conn.phase != Phase::Open || s.eof {
            return;
        }
        s.eof = true;
        conn.fin_at = Some(1 + s.received);
        let a = conn.acb;
        self.service(a, now);
        self.drain_wired(c, now);
    }

    /// The server reset the connection (or the socket failed): the mobile gets a
    /// RST.
    pub fn stream_reset(&mut self, c: usize, now: Instant) {
        if self.conns[c].phase == Phase::Closed {
            return;
        }
        if self.conns[c].phase == Phase::Connecting {
            return self.stream_refused(c, now);
        }
        self.reset_mobile(c, now);
        self.close(c, now);
    }

    /// Ends a connection from the proxy's side (a timeout, shutdown): RST to both.
    pub fn abort(&mut self, c: usize, now: Instant) {
        match self.conns[c].phase {
            Phase::Closed => return,
            Phase::Connecting => return self.stream_refused(c, now),
            Phase::Open => self.reset_mobile(c, now),
        }
        self.cmds.push_back(Command::Reset(c));
        self.close(c, now);
    }

    fn reset_mobile(&mut self, c: usize, now: Instant) {
        let conn = &self.conns[c];
        let h = conn.header(conn.snd_nxt, TcpFlags::RST | TcpFlags::ACK);
        self.emit(c, Side::Wireless, h, 0, now);
    }

    /// Up to `max` of the mobile's bytes to write to the server (not consumed:
    /// report what the socket took with [`stream_written`](Self::stream_written)).
    pub fn stream_upload(&self, c: usize, max: usize) -> Vec<u8> {
        let conn = &self.conns[c];
        match (&conn.wired, &conn.up) {
            (Wired::Stream(s), Some(up)) if conn.phase == Phase::Open => {
                let n = max.min((s.up_limit - s.written) as usize);
                up.peek(n)
            }
            _ => vec![],
        }
    }

    /// The socket took `n` bytes of the upload: they leave the proxy's window
    /// toward the mobile, which reopens (a window update when it had closed).
    pub fn stream_written(&mut self, c: usize, now: Instant, n: usize) {
        let conn = &mut self.conns[c];
        let before = conn.window_to_mobile() as u64;
        let (Wired::Stream(s), Some(up)) = (&mut conn.wired, &mut conn.up) else { return };
        up.consume(n);
        s.written += n as u64;
        if (conn.window_to_mobile() as u64) >= before + conn.mss.min(32768) && before < conn.mss * 2 {
            conn.ack_owed = true;
            self.flush_acks(c, now);
        }
    }

    /// The socket was shut down for writing (the mobile's FIN, passed on).
    pub fn stream_shut(&mut self, c: usize) {
        if let Wired::Stream(s) = &mut self.conns[c].wired {
            s.shut = true;
        }
    }

    /// The server acknowledged the proxy's FIN: the mobile's FIN is acknowledged
    /// now, and the split ends if both directions are done.
    pub fn stream_fin_acked(&mut self, c: usize, now: Instant) {
        if let Wired::Stream(s) = &mut self.conns[c].wired {
            s.shut_acked = true;
        }
        if self.conns[c].phase == Phase::Open {
            self.drain_wired(c, now);
        }
    }

    /// The stream state of a connection (None for a TCP leg).
    pub fn stream(&self, c: usize) -> Option<&super::Stream> {
        match &self.conns[c].wired {
            Wired::Stream(s) => Some(s),
            Wired::Tcp(_) => None,
        }
    }

    /// Bytes the driver may read from the connection's socket now.
    pub fn read_allowance(&self, c: usize) -> u64 {
        let conn = &self.conns[c];
        match &conn.wired {
            Wired::Stream(s) if conn.phase == Phase::Open && !self.acbs[conn.acb].stalled => s.read_allowance(),
            _ => 0,
        }
    }

    /// Whether the connection is finished (closed or reset).
    pub fn is_closed(&self, c: usize) -> bool {
        self.conns[c].phase == Phase::Closed
    }

    /// Answers a mobile's SYN the proxy will not carry (a forbidden destination)
    /// with a RST, as a closed port would.
    pub fn refuse(&mut self, now: Instant, syn: &Packet) {
        let L4::Tcp(r) = syn.l4 else { return };
        let h = syn_reset(r.dst_port, r.src_port, r.seq);
        let p = Packet::new(syn.ip.dst(), syn.ip.src(), self.ident, L4::Tcp(h), 0, syn.meta.flow, now);
        self.ident = self.ident.wrapping_add(1);
        self.out.push_back((Side::Wireless, p));
    }

    /// Whether the proxy carries the connection of this 4-tuple (mobile side
    /// first) and it is not finished.
    pub fn tracks(&self, mobile: (IpAddress, u16), server: (IpAddress, u16)) -> bool {
        self.by_key
            .get(&(mobile.0, mobile.1, server.0, server.1))
            .is_some_and(|&c| self.conns[c].phase != Phase::Closed)
    }

    /// Connections not finished, in all and for one mobile host.
    pub fn live_connections(&self) -> usize {
        self.live.len()
    }
    pub fn mobile_connections(&self, mobile: IpAddress) -> usize {
        self.aggregate(mobile).map_or(0, |a| a.conns.len())
    }
    /// Makes room for a new connection of a mobile at its limit: drops its
    /// oldest unfinished handshake whose SYN-ACK has gone unanswered through a
    /// timeout — a SYN flood's, or a mobile that went away — so that a flood
    /// holds a mobile's slots no longer than one SYN-ACK timeout, while a burst
    /// of real connections still counts against the limit. False if there is
    /// none (RFC 4987 §3.4, "oldest drop" limited to stale entries).
    pub fn evict_stale_half_open(&mut self, mobile: IpAddress, now: Instant) -> bool {
        let Some(a) = self.aggregate(mobile) else { return false };
        let stale = a.conns.iter().copied().find(|&c| {
            let c = &self.conns[c];
            c.half_open() && c.phase == Phase::Open && c.synack_timeouts > 0
        });
        match stale {
            Some(c) => {
                self.drop_half_open(c, now);
                true
            }
            None => false,
        }
    }

    /// Bytes held for all mobiles: downloads queued or not yet acknowledged by
    /// them, and uploads acknowledged to them but not yet taken by the server
    /// socket.
    pub fn buffered(&self) -> u64 {
        self.live.iter().map(|&c| self.conns[c].held() + self.conns[c].upload_backlog()).sum()
    }

    /// One line per mobile host with live connections: its address, window, bytes
    /// queued (not yet sent), bytes in flight, smoothed RTT and connections.
    pub fn mobile_snapshots(&self) -> Vec<MobileSnapshot> {
        self.acbs
            .iter()
            .filter(|a| !a.conns.is_empty())
            .map(|a| MobileSnapshot {
                mobile: a.mobile,
                window: a.window(),
                queued: a.conns.iter().map(|&c| self.conns[c].unsent()).sum(),
                in_flight: a.outstanding(),
                srtt: a.rtt.srtt,
                connections: a.conns.len(),
                stalled: a.stalled,
            })
            .collect()
    }
}

/// The RST|ACK a closed port answers a SYN with (sequence `isn`) — RFC 793.
fn syn_reset(src_port: u16, dst_port: u16, isn: u32) -> TcpRepr {
    TcpRepr {
        src_port,
        dst_port,
        seq: 0,
        ack: isn.wrapping_add(1),
        flags: TcpFlags(TcpFlags::RST | TcpFlags::ACK),
        ..Default::default()
    }
}

/// The state of one mobile host's aggregate, for a stats report.
#[derive(Clone, Debug)]
pub struct MobileSnapshot {
    pub mobile: IpAddress,
    pub window: u64,
    pub queued: u64,
    pub in_flight: u64,
    pub srtt: Option<crate::time::Duration>,
    pub connections: usize,
    pub stalled: bool,
}
