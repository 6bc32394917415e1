//! Discrete-event engine: the simulator and its topology, built from a scenario.
/// The output writers (src/outputs.rs), shared with the emulator.
pub use crate::outputs;
pub mod sim;

pub use sim::{run_scenario, EndReason, FlowResult, LinkStats, RunResult, Sim, POLL_EVERY, STUCK_EVENTS};
