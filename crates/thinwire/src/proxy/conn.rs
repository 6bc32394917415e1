//! One split connection: the wired leg (wired.rs) faces the server — in the
//! simulator a full TCP endpoint (`tcp::Tcp`) using the mobile's address, port
//! and initial sequence number, in the daemon a kernel socket bound to the
//! mobile's address; the wireless leg faces the mobile with the server's address,
//! port and (simulator) ISN. In the simulator both legs therefore share one
//! sequence space per direction, so the proxy is transparent: either end host
//! sees the other's numbers, and every byte keeps its stream offset across the
//! split. With real bytes (the daemon) the connection keeps the server's data
//! until the mobile acknowledges it (`down`) and reassembles the mobile's data
//! for the server (`up`).
//!
//! The wireless leg's sender is driven by the aggregate (acb.rs); this file keeps
//! its per-connection state: send and acknowledgement offsets, the mobile's
//! receive window, the held FIN, and the receiving side for the mobile's own
//! data (requests, uploads), which goes to the wired leg. The wireless leg ACKs
//! the mobile's data at once, with SACK blocks when SACK was agreed, but a FIN
//! from either end is acknowledged only when the other end has acknowledged the
//! proxy's FIN (seed 004 §IV-B: never early-ACK a FIN).
use super::wired::Wired;
use crate::tcp::buffer::{RecvBuf, SendBuf};
use crate::tcp::ranges::Ranges;
use crate::time::Instant;
use crate::wire::IpAddress;
use crate::wire::{TcpFlags, TcpRepr};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The mobile's SYN came; the wired leg is connecting to the server.
    Connecting,
    /// The server answered; the proxy has answered the mobile.
    Open,
    /// Both directions closed, or reset.
    Closed,
}

pub struct Conn {
    /// The persist timer (RFC 9293 §3.8.6.1): when the next zero-window probe
    /// goes out, and how many have gone unanswered by an open window.
    pub(crate) persist: Option<Instant>,
    pub(crate) persist_backoff: u32,
    /// The SYN-ACK timer while the mobile has not completed the handshake
    /// (Linux `reqsk_timer_handler`), and its expiries so far.
    pub(crate) synack_at: Option<Instant>,
    pub(crate) synack_timeouts: u32,
    pub(crate) flow: u16,
    /// Connections the proxy had opened before this one (`stats.connections`
    /// at its open): the scheduler's last tie-break (a closed connection's place
    /// in `conns` is reused).
    pub(crate) serial: u64,
    pub(crate) mobile: IpAddress,
    pub(crate) server: IpAddress,
    pub(crate) mport: u16,
    pub(crate) sport: u16,
    pub(crate) acb: usize,
    pub(crate) phase: Phase,
    pub(crate) wired: Wired,
    /// Real bytes (daemon): the server's data from stream offset 0 (wireless
    /// offset 1) not yet acknowledged by the mobile, and the mobile's data.
    pub(crate) down: Option<SendBuf>,
    pub(crate) up: Option<RecvBuf>,
    /// The server's ISN (our ISN toward the mobile) and the mobile's ISN.
    pub(crate) iss: u32,
    pub(crate) irs: u32,
    /// The mobile has acknowledged our SYN-ACK.
    pub(crate) established: bool,
    pub(crate) mss: u64,
    pub(crate) sack: bool,
    // --- wireless sender (offsets in the server→mobile stream; 0 is the SYN) ---
    pub(crate) snd_una: u64,
    pub(crate) snd_nxt: u64,
    pub(crate) rwnd: u64,
    /// The server's FIN, held until the mobile acknowledges ours: its offset.
    pub(crate) fin_at: Option<u64>,
    pub(crate) fin_sent: bool,
    pub(crate) fin_acked: bool,
    // --- wireless receiver (offsets in the mobile→server stream) ---
    pub(crate) rcv_nxt: u64,
    pub(crate) ooo: Ranges,
    pub(crate) mobile_fin_at: Option<u64>,
    pub(crate) mobile_fin_in: bool,
    /// The mobile's FIN has been acknowledged (after the server ACKed ours).
    pub(crate) mobile_fin_acked: bool,
    pub(crate) ack_owed: bool,
    // --- scheduling and flow control ---
    pub(crate) class: u8,
    pub(crate) tickets: u32,
    pub(crate) pass: u64,
    pub(crate) allowance: f64,
    pub(crate) fc_at: Instant,
    pub(crate) last_cap: Option<u64>,
    pub(crate) last_queue: u64,
}

impl Conn {
    /// End of the data the wired leg has received in order (an offset).
    pub(crate) fn avail_end(&self) -> u64 {
        1 + self.wired.delivered()
    }
    /// Bytes held at the proxy for the mobile: early-ACKed, not yet ACKed by it.
    pub fn held(&self) -> u64 {
        self.avail_end().saturating_sub(self.snd_una.max(1))
    }
    /// Bytes in the connection's queue: early-ACKed, not yet sent to the mobile.
    pub(crate) fn unsent(&self) -> u64 {
        self.avail_end().saturating_sub(self.snd_nxt.max(1))
    }
    /// Mobile data not yet acknowledged by the server (in the daemon: not yet
    /// taken by the server socket).
    pub(crate) fn upload_backlog(&self) -> u64 {
        (self.rcv_nxt - 1).saturating_sub(self.wired.acked_bytes())
    }
    /// The window the wireless leg offers the mobile.
    pub(crate) fn window_to_mobile(&self) -> u16 {
        65535u64.saturating_sub(self.upload_backlog()) as u16
    }
    /// The acknowledgement number toward the mobile: its FIN only once the
    /// server has acknowledged the wired leg's.
    pub(crate) fn ack_to_mobile(&self) -> u32 {
        let fin = self.mobile_fin_in && self.wired.fin_acked();
        self.irs.wrapping_add((self.rcv_nxt + fin as u64) as u32)
    }

    /// A wireless-leg header (server → mobile), with SACK blocks for the mobile's
    /// out-of-order data when SACK was agreed (highest blocks first, RFC 2018).
    pub fn header(&self, seq_off: u64, flags: u8) -> TcpRepr {
        let mut r = TcpRepr {
            src_port: self.sport,
            dst_port: self.mport,
            seq: self.iss.wrapping_add(seq_off as u32),
            ack: self.ack_to_mobile(),
            flags: TcpFlags(flags),
            window: self.window_to_mobile(),
            ..Default::default()
        };
        if self.sack && flags & TcpFlags::ACK != 0 && flags & TcpFlags::SYN == 0 {
            for (i, &(a, b)) in self.ooo.v.iter().rev().take(TcpRepr::max_sack_blocks(false)).enumerate() {
                r.opts.sack[i] = (self.irs.wrapping_add(a as u32), self.irs.wrapping_add(b as u32));
                r.opts.sack_len = i as u8 + 1;
            }
        }
        r
    }

    /// The mobile's SYN came but its handshake is not complete: the server is
    /// being connected, or the SYN-ACK is not yet acknowledged.
    pub(crate) fn half_open(&self) -> bool {
        self.phase == Phase::Connecting || (self.phase == Phase::Open && !self.established)
    }

    /// Data or the FIN waits and nothing is in flight, but the mobile's window
    /// is shut: only a probe can learn when it opens.
    pub(crate) fn window_shut(&self) -> bool {
        let fin_waits = self.fin_at.is_some_and(|f| !self.fin_sent && self.snd_nxt == f);
        self.phase == Phase::Open
            && self.established
            && self.rwnd == 0
            && self.snd_nxt == self.snd_una
            && (self.snd_nxt < self.avail_end() || fin_waits)
    }

    /// The next sendable piece for the wireless leg, if any: (start, end, fin).
    /// Data goes in segments of min(MSS, queued) within the mobile's window (a
    /// smaller piece only when nothing of this connection is in flight); the FIN
    /// follows the last byte.
    pub(crate) fn sendable(&self) -> Option<(u64, u64, bool)> {
        if self.phase != Phase::Open || !self.established {
            return None;
        }
        let end = self.avail_end();
        if self.snd_nxt < end {
            let want = self.mss.min(end - self.snd_nxt);
            let room = (self.snd_una + self.rwnd).saturating_sub(self.snd_nxt);
            let len = want.min(room);
            if len == want || (self.snd_nxt == self.snd_una && len > 0) {
                return Some((self.snd_nxt, self.snd_nxt + len, false));
            }
            return None;
        }
        match self.fin_at {
            Some(f) if !self.fin_sent && self.snd_nxt == f => Some((f, f + 1, true)),
            _ => None,
        }
    }

    /// Takes in the mobile's data (with its bytes when the connection keeps real
    /// bytes) or FIN; returns true if anything new arrived.
    pub fn receive(&mut self, seq: u32, len: u32, fin: bool, payload: Option<&[u8]>) -> bool {
        // The offset nearest the receive edge (streams longer than 4 GB).
        let d = seq.wrapping_sub(self.irs.wrapping_add(self.rcv_nxt as u32)) as i32 as i64;
        let s = (self.rcv_nxt as i64 + d).max(0) as u64;
        // Only what fits the window offered is taken (RFC 9293 §3.10.7.4: trim
        // to the window; a zero window takes nothing): the right edge is the
        // server's acknowledged upload plus 64 KB, so it never shrinks, and a
        // mobile that ignores it is neither acknowledged nor buffered beyond it.
        // A FIN beyond the edge waits for its retransmission.
        let edge = self.rcv_nxt + self.window_to_mobile() as u64;
        let full = s + len as u64;
        let e = full.min(edge.max(s));
        let (len, fin) = ((e - s) as u32, fin && e == full);
        self.ack_owed = true;
        let before = (self.rcv_nxt, self.mobile_fin_in);
        if let (Some(up), Some(data)) = (&mut self.up, payload) {
            if len > 0 && data.len() >= len as usize && s >= 1 {
                up.insert(s - 1, &data[..len as usize]);
            }
        }
        if len > 0 {
            if s <= self.rcv_nxt && e > self.rcv_nxt {
                self.rcv_nxt = e;
            } else if s > self.rcv_nxt {
                self.ooo.insert(s, e);
            }
            while let Some(x) = self.ooo.pop_at(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(x);
            }
        }
        if let Some(up) = &mut self.up {
            up.advance(self.rcv_nxt - 1);
        }
        if fin {
            self.mobile_fin_at = Some(e);
        }
        if self.mobile_fin_at == Some(self.rcv_nxt) {
            self.mobile_fin_in = true;
        }
        (self.rcv_nxt, self.mobile_fin_in) != before
    }
}
