//! Process concerns: the CLI, logs, probes and the metrics server, leader election, shutdown, CRD
//! installation and dev mode (with the `dev` feature). The manager starts the controllers; what they
//! run on is [`crate::runtime`].

pub mod cli;
pub mod crds;
#[cfg(feature = "dev")]
pub mod dev;
pub mod leader;
pub mod local_webhooks;
pub mod logs;
pub mod metrics_access;
pub mod migrate;
pub mod probes;
pub mod run;
pub mod shutdown;
