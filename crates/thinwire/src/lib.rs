//! thinwire core: a deterministic, sans-IO simulator of TCP over ARQ-protected
//! wireless links. See `ARCHITECTURE.md` in the project's shared material.
pub mod analysis;
pub mod app;
pub mod channel;
pub mod config;
pub mod engine;
pub mod fx;
pub mod link;
pub mod proxy;
pub mod queue;
pub mod rng;
pub mod sched;
pub mod tcp;
pub mod testkit;
pub mod time;
pub mod trace;
pub mod units;
pub mod wire;
