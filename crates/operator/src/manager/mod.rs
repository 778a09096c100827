//! Process concerns shared by every controller: the CLI, logs, metrics, probes, back-off, readiness, leader
//! election, shutdown and dev mode.

pub mod backoff;
pub mod cli;
pub mod dev;
pub mod leader;
pub mod logs;
pub mod metrics;
pub mod probes;
pub mod readiness;
pub mod run;
