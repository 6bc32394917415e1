//! Session applications' settings (the mobile host is the client; the driver that
//! opens and closes the connections is the simulator's, `engine/sim/apps.rs`):
//!
//! - `web`: Mah's HTTP model (app/web.rs), HTTP/1.0, a connection per exchange.
//! - `ttcp` (seed 004 §VI-A): `repeat` downloads of `bytes` (default 1 download),
//!   each on a fresh connection; a download's time runs from the SYN to the FIN
//!   reaching the mobile.
//! - `http` (seed 004 §VI-A): pages of `objects` objects (default 4) of `bytes`,
//!   each requested with `request` bytes (default 300 B), one request at a time;
//!   `persistent` (default false: HTTP/1.0, a connection per object; true:
//!   HTTP/1.1, one per page); `header` (default 0 B): each reply's first bytes
//!   are written apart, before the rest — a server's status line and headers
//!   (Python's `http.server` writes its 198-byte header, then the file), so TCP
//!   sends them as a segment of their own when nothing else is waiting.
//!
//! All: `think` between transactions (default 0 s), `gap` before each further
//! request of a page (default 0 s), `transactions` (pages; default unlimited), the
//! server's `port` (web/http 80, ttcp 5001).
use crate::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// Mah's model draws each transaction.
    Web,
    /// Fixed downloads; each ends with the server's FIN.
    Ttcp { bytes: u64 },
    /// Fixed pages of objects.
    Http { bytes: u64, objects: u64, request: u64, persistent: bool, header: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionConfig {
    pub kind: SessionKind,
    /// Transactions (pages, downloads), then the flow is finished.
    pub limit: Option<u64>,
    pub think: Duration,
    pub gap: Duration,
    pub port: u16,
}

impl SessionConfig {
    pub fn web() -> SessionConfig {
        SessionConfig { kind: SessionKind::Web, limit: None, think: Duration::ZERO, gap: Duration::ZERO, port: 80 }
    }
    /// One download of `bytes`.
    pub fn ttcp(bytes: u64) -> SessionConfig {
        SessionConfig { kind: SessionKind::Ttcp { bytes }, limit: Some(1), port: 5001, ..Self::web() }
    }
    /// HTTP/1.0 pages of 4 objects of `bytes`, 300-byte requests.
    pub fn http(bytes: u64) -> SessionConfig {
        let kind = SessionKind::Http { bytes, objects: 4, request: 300, persistent: false, header: 0 };
        SessionConfig { kind, ..Self::web() }
    }
    /// The request/response sizes of a fixed transaction (None: drawn per transaction).
    pub fn exchanges(&self) -> Option<Vec<(u64, u64)>> {
        match self.kind {
            SessionKind::Web => None,
            SessionKind::Ttcp { bytes } => Some(vec![(0, bytes)]),
            SessionKind::Http { bytes, objects, request, .. } => Some(vec![(request, bytes); objects as usize]),
        }
    }
    /// The bytes of each reply written before the rest (http's `header`; 0: one write).
    pub fn reply_header(&self) -> u64 {
        match self.kind {
            SessionKind::Http { header, bytes, .. } => header.min(bytes),
            _ => 0,
        }
    }
    pub fn persistent(&self) -> bool {
        matches!(self.kind, SessionKind::Http { persistent: true, .. })
    }
    /// An exchange ends only when the server's FIN has reached the mobile.
    pub fn wait_fin(&self) -> bool {
        matches!(self.kind, SessionKind::Ttcp { .. })
    }
}
