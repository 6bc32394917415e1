//! Applications. `bulk` is driven directly through the TCP endpoint (a byte count,
//! or unlimited); `media` is an on/off UDP source (seed 002 §III).
pub mod media;
pub mod web;
