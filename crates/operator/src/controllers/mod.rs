//! One file per controller. Each reads top-down as observe, compare, act; pure functions compute the
//! desired state and are unit-tested without a server. What they share with the manager is here.

mod runtime;

use std::{sync::Arc, time::Duration};

pub use runtime::ReconcileRuntime;

mod conditions;
pub mod postgres_writer;
pub mod vote_config;
pub mod web_app;

use crate::manager::{metrics::Metrics, readiness::Readiness};

/// What the manager hands every controller when it starts it.
#[derive(Clone)]
pub struct ControllerContext {
    pub client: kube::Client,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// Reconciles of this controller that may run at once.
    pub concurrency: u16,
    /// How often every object is reconciled even when nothing changed (drift repair).
    pub resync: Duration,
    /// Resolves when the process is shutting down: stop taking new work, finish in-flight reconciles.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
}

impl ControllerContext {
    /// A future that completes on shutdown, for `Controller::graceful_shutdown_on`.
    pub fn shutdown_signal(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown.clone();
        async move {
            // An error means the sender is gone: the manager has stopped, so shut down too.
            let _ = shutdown.wait_for(|stopping| *stopping).await;
        }
    }
}
