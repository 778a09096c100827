//! What every controller does around its reconcile function: time it, count results and errors under
//! controller-runtime's metric names, and turn errors into per-object back-off.

use std::{future::Future, sync::Arc, time::Instant};

use kube::runtime::controller::Action;

use crate::{
    Error, Result,
    manager::{backoff::Backoff, metrics::Metrics},
};

#[derive(Debug)]
pub struct ReconcileRuntime {
    controller: &'static str,
    metrics: Arc<Metrics>,
    backoff: Backoff,
}

impl ReconcileRuntime {
    pub fn new(controller: &'static str, metrics: Arc<Metrics>, backoff: Backoff) -> Self {
        Self {
            controller,
            metrics,
            backoff,
        }
    }

    pub fn controller(&self) -> &'static str {
        self.controller
    }

    /// Runs one reconcile of the object `key` (`namespace/name`), recording its outcome. Success
    /// resets the object's back-off.
    pub async fn instrument(
        &self,
        key: &str,
        reconcile: impl Future<Output = Result<Action>>,
    ) -> Result<Action> {
        let started = Instant::now();
        let outcome = reconcile.await;
        let result = match &outcome {
            Ok(action) if *action == Action::await_change() => "success",
            Ok(_) => "requeue_after",
            Err(_) => "error",
        };
        if outcome.is_ok() {
            self.backoff.on_success(key);
        }
        self.metrics
            .observe_reconcile(self.controller, result, started.elapsed());
        outcome
    }

    /// The error policy: terminal errors wait for the object to change; others retry after the object's
    /// next back-off delay.
    pub fn error_action(&self, key: &str, error: &Error) -> Action {
        let terminal = error.is_terminal();
        self.metrics.observe_error(self.controller, terminal);
        if terminal {
            tracing::warn!(controller = self.controller, object = key, %error, "terminal reconcile error");
            Action::await_change()
        } else {
            let delay = self.backoff.on_failure(key);
            tracing::info!(controller = self.controller, object = key, %error, ?delay, "reconcile failed; retrying");
            Action::requeue(delay)
        }
    }
}
