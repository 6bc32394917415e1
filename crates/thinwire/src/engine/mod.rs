//! Discrete-event engine: event queue, random streams, simulator and topology.
pub mod queue;
pub mod rng;
