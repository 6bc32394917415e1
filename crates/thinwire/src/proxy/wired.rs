//! The wired leg of a split connection, in one of two forms:
//!
//! - [`Wired::Tcp`]: thinwire's own TCP endpoint exchanging packets with the
//!   server (the simulator; it uses the mobile's address, port and ISN, so one
//!   sequence space runs across the split).
//! - [`Wired::Stream`]: a byte stream the driver carries over a kernel socket (the
//!   `thinwire proxy` daemon: no kernel API can share one congestion window
//!   across connections on the wireless side, but toward the servers the kernel's
//!   TCP is the faithful choice). The proxy tells the driver what to do through
//!   [`Command`]s, and the driver reports what the socket did (`Proxy::stream_*`).
//!   The kernel picks its own ISN toward the server, so with a stream the two
//!   legs have separate sequence spaces (addresses and ports stay transparent).
//!
//! Differences a stream cannot avoid, documented in docs/proxy.md: the kernel
//! acknowledges the server's FIN when it arrives (the proxy still does not
//! acknowledge the mobile's FIN before the server has acknowledged the proxy's:
//! the driver reports that from the socket's state), and the window the server
//! sees is the socket's free receive buffer, which closes when the proxy stops
//! reading (the connection's allowance, zero during a stall).
use crate::tcp::Tcp;
use crate::time::Instant;
use crate::wire::IpAddress;

/// What the proxy asks a stream driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Open a socket bound to `mobile` (transparently) and connect it to `server`;
    /// report `stream_connected` or `stream_refused`.
    Connect { conn: usize, mobile: (IpAddress, u16), server: (IpAddress, u16) },
    /// The connection's read allowance, upload data or half-close may have
    /// changed: read what `read_allowance` allows, write `upload`, and shut the
    /// socket down for writing once `wants_shutdown`.
    Wake(usize),
    /// The mobile reset the connection (or the proxy aborted it): abort the socket
    /// so the server gets a RST.
    Reset(usize),
    /// The split is finished (both FINs acknowledged): close the socket.
    Close(usize),
}

/// A wired leg carried by a kernel socket: what has crossed it, in bytes.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// The socket is connected.
    pub(crate) connected: bool,
    /// Bytes read from the server.
    pub(crate) received: u64,
    /// The server's FIN (end of file) was read.
    pub eof: bool,
    /// Bytes of the mobile's data available for the server, and whether its FIN
    /// follows them.
    pub up_limit: u64,
    pub up_fin: bool,
    /// Bytes the socket has taken (written).
    pub written: u64,
    /// The socket was shut down for writing, and the server acknowledged the FIN.
    pub shut: bool,
    pub(crate) shut_acked: bool,
    /// The window cap (bytes the proxy may hold unsent for this connection) as
    /// last set, and `received` at that moment.
    pub(crate) cap: u64,
    pub(crate) cap_at: u64,
}

pub enum Wired {
    Tcp(Box<Tcp>),
    Stream(Stream),
}

impl Wired {
    /// Bytes from the server received in order.
    pub fn delivered(&self) -> u64 {
        match self {
            Wired::Tcp(t) => t.delivered(),
            Wired::Stream(s) => s.received,
        }
    }
    /// The mobile's bytes the server side has taken: acknowledged by the server
    /// (TCP) or written into the socket (stream).
    pub fn acked_bytes(&self) -> u64 {
        match self {
            Wired::Tcp(t) => t.acked_bytes(),
            Wired::Stream(s) => s.written,
        }
    }
    /// The wired leg's FIN was sent and acknowledged.
    pub fn fin_acked(&self) -> bool {
        match self {
            Wired::Tcp(t) => t.fin_acked(),
            Wired::Stream(s) => s.shut_acked,
        }
    }
    /// Both directions of the wired leg are finished.
    pub fn is_closed(&self) -> bool {
        match self {
            Wired::Tcp(t) => t.is_closed(),
            Wired::Stream(s) => s.eof && s.shut_acked,
        }
    }
    /// The mobile's data up to `limit` bytes is available, then its FIN if `fin`.
    pub fn set_app_data(&mut self, limit: Option<u64>, fin: bool) {
        match self {
            Wired::Tcp(t) => t.set_app_data(limit, fin),
            Wired::Stream(s) => {
                s.up_limit = limit.unwrap_or(0);
                s.up_fin = fin;
            }
        }
    }
    /// Caps the window the server may fill: TCP's advertised window, or the
    /// stream's read allowance.
    pub fn set_window_cap(&mut self, cap: Option<u64>) {
        match self {
            Wired::Tcp(t) => t.set_window_cap(cap),
            Wired::Stream(s) => {
                // Counted from now: bytes read before are in the proxy's queue.
                s.cap = cap.unwrap_or(u64::MAX);
                s.cap_at = s.received;
            }
        }
    }
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Wired::Tcp(t) => t.poll_timeout(),
            Wired::Stream(_) => None,
        }
    }
    /// The TCP endpoint, when the leg is one.
    pub fn tcp(&mut self) -> Option<&mut Tcp> {
        match self {
            Wired::Tcp(t) => Some(t),
            Wired::Stream(_) => None,
        }
    }
    pub fn stream(&mut self) -> Option<&mut Stream> {
        match self {
            Wired::Tcp(_) => None,
            Wired::Stream(s) => Some(s),
        }
    }
}

impl Stream {
    /// Bytes the driver may read from the socket now.
    pub fn read_allowance(&self) -> u64 {
        if !self.connected || self.eof {
            return 0;
        }
        self.cap.saturating_sub(self.received - self.cap_at)
    }
    /// Whether the driver should shut the socket down for writing now.
    pub fn wants_shutdown(&self) -> bool {
        self.up_fin && !self.shut && self.written >= self.up_limit
    }
}
