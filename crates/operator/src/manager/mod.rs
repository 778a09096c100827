//! Process concerns shared by every controller: metrics, back-off, readiness, (later) CLI, leader
//! election, probes, shutdown and dev mode.

pub mod backoff;
pub mod metrics;
pub mod readiness;
