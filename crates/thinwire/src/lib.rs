//! thinwire core: sans-IO protocol machines for TCP over ARQ-protected wireless
//! links, the scenario schema and builder, and (feature `sim`, on by default) the
//! deterministic discrete-event simulator that drives them. The layers and what may
//! import what: `docs/architecture.md`.
pub mod analysis;
pub mod app;
pub mod build;
pub mod channel;
pub mod config;
pub mod describe;
#[cfg(feature = "sim")]
pub mod engine;
pub mod fx;
#[cfg(feature = "testkit")]
pub mod kernel_replay;
pub mod link;
pub mod outputs;
pub mod pcap;
pub mod proxy;
pub mod queue;
pub mod realtime;
pub mod registry;
pub mod rng;
pub mod sched;
pub mod schema;
pub mod tcp;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod time;
pub mod trace;
pub mod units;
pub mod wire;
