//! TCP: the endpoint state machine, the RTO estimator, and the two algorithm
//! families it is assembled from — congestion control (`cc/`) and loss recovery
//! (`recovery/`) — each a trait with one file per algorithm.
pub mod buffer;
pub mod cc;
pub mod compsack;
pub mod config;
pub mod delack;
pub mod endpoint;
pub mod ranges;
pub mod rate;
pub mod recovery;
pub mod rtt;
pub mod rwnd;
pub mod tcb;
pub mod wheel;

pub use cc::CcKind;
pub use config::{Ecn, IdleRestart, Push, Rwnd, TcpConfig, Variant};
#[cfg(feature = "testkit")]
pub use endpoint::LinuxView;
pub use endpoint::{Segment, State, Tcp, TcpStats, TcpVar, VarEvent};
pub use recovery::RecoveryKind;
pub use tcb::Tcb;
