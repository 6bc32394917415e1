//! Discrete-event engine: event queue, random streams, simulator and topology.
pub mod build;
pub mod queue;
pub mod rng;
pub mod sim;

pub use sim::{run_scenario, FlowResult, LinkStats, RunResult, Sim};
