//! Process concerns shared by every controller: the CLI, logs, metrics, probes, back-off, readiness, leader
//! election, shutdown, CRD installation and dev mode (with the `dev` feature).

pub mod backoff;
pub mod cli;
pub mod crds;
#[cfg(feature = "dev")]
pub mod dev;
pub mod leader;
pub mod logs;
pub mod metrics;
pub mod probes;
pub mod readiness;
pub mod run;
