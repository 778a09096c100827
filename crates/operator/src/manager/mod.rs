//! Process concerns shared by every controller: metrics, back-off, (later) CLI, leader election,
//! probes, shutdown and dev mode.

pub mod backoff;
pub mod metrics;
