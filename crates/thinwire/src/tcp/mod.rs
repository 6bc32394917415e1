//! TCP: endpoint state machine, RTO estimator, congestion control variants.
pub mod buffer;
pub mod config;
pub mod endpoint;
pub mod ranges;
pub mod rtt;

pub use config::{TcpConfig, Variant};
pub use endpoint::{Segment, State, Tcp, TcpStats, TcpVar, VarEvent};
