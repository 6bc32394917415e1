//! thinwire core: a deterministic, sans-IO simulator of TCP over ARQ-protected
//! wireless links. See `ARCHITECTURE.md` in the project's shared material.
pub mod channel;
pub mod config;
pub mod engine;
pub mod link;
pub mod tcp;
pub mod time;
pub mod units;
pub mod wire;
