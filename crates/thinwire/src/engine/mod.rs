//! Discrete-event engine: the simulator and its topology, built from a scenario.
pub mod sim;

pub use sim::{run_scenario, FlowResult, LinkStats, RunResult, Sim};
