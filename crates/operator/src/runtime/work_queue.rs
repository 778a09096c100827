//! The bookkeeping of one controller's work, as controller-runtime's rate-limited work queue keeps it
//! (kube-runtime's scheduler is private): around each reconcile, time it, count results and errors
//! under controller-runtime's metric names, track the objects waiting and the busy workers, and turn
//! errors into per-object back-off. What it keeps per object (a pending key, a failure count) is dropped when the
//! object is gone, so it is bounded by the objects that exist.

use std::{
    collections::HashSet,
    future::Future,
    sync::{Arc, Mutex},
    time::Instant,
};

use kube::runtime::controller::Action;
use prometheus_client::metrics::gauge::Gauge;

use super::{backoff::Backoff, metrics::Metrics};
use crate::{Error, Result};

/// Cheap to clone: every clone shares the same state.
#[derive(Debug, Clone)]
pub struct WorkQueue {
    controller: &'static str,
    metrics: Arc<Metrics>,
    backoff: Arc<Backoff>,
    pending: Arc<PendingObjects>,
    active_workers: Gauge,
    backoff_objects: Gauge,
}

/// Objects that changed and wait for a reconcile to start: `workqueue_depth`. Mirrored from the trigger
/// stream (see `ControllerContext::controller`) and from reconcile starts. Changes of owned children
/// are not counted.
#[derive(Debug, Default)]
struct PendingObjects {
    keys: Mutex<HashSet<String>>,
    depth: Gauge,
}

impl PendingObjects {
    fn add(&self, key: String) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.insert(key);
        self.depth.set(keys.len() as i64);
    }

    fn remove(&self, key: &str) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.remove(key);
        self.depth.set(keys.len() as i64);
    }
}

/// Decrements the busy-worker gauge however the reconcile ends (also when its future is dropped).
struct Busy(Gauge);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl WorkQueue {
    pub(super) fn new(controller: &'static str, metrics: Arc<Metrics>, backoff: Backoff) -> Self {
        let pending = Arc::new(PendingObjects {
            keys: Mutex::default(),
            depth: metrics.workqueue_depth(controller),
        });
        let active_workers = metrics.active_workers(controller);
        let backoff_objects = metrics.backoff_objects(controller);
        Self {
            controller,
            metrics,
            backoff: Arc::new(backoff),
            pending,
            active_workers,
            backoff_objects,
        }
    }

    pub(super) fn controller(&self) -> &'static str {
        self.controller
    }

    /// The object `key` changed: a reconcile of it is on its way.
    pub(super) fn added(&self, key: String) {
        self.pending.add(key);
    }

    /// Runs one reconcile of the object `key` (`namespace/name`), recording its outcome. Success
    /// resets the object's back-off.
    pub(super) async fn instrument(
        &self,
        key: &str,
        reconcile: impl Future<Output = Result<Action>>,
    ) -> Result<Action> {
        self.pending.remove(key);
        self.active_workers.inc();
        let _busy = Busy(self.active_workers.clone());
        let started = Instant::now();
        // The reconcile's span names the controller and the object.
        tracing::debug!("reconcile started");
        let outcome = reconcile.await;
        let result = match &outcome {
            Ok(action) if *action == Action::await_change() => "success",
            Ok(_) => "requeue_after",
            Err(_) => "error",
        };
        if outcome.is_ok() {
            self.reset_backoff(key);
        }
        tracing::debug!(result, elapsed = ?started.elapsed(), "reconcile finished");
        self.metrics
            .observe_reconcile(self.controller, result, started.elapsed());
        outcome
    }

    /// The error policy: terminal errors wait for the object to change; others retry after the object's
    /// next back-off delay.
    pub(super) fn error_action(&self, key: &str, error: &Error) -> Action {
        let terminal = error.is_terminal();
        self.metrics.observe_error(self.controller, terminal);
        if terminal {
            tracing::warn!(%error, "terminal reconcile error; waiting for the object to change");
            // No retry is scheduled, so nothing would ever read or reset the failure count.
            self.reset_backoff(key);
            Action::await_change()
        } else {
            let delay = self.backoff.on_failure(key);
            self.backoff_objects.set(self.backoff.len() as i64);
            tracing::info!(%error, ?delay, "reconcile failed; retrying");
            Action::requeue(delay)
        }
    }

    /// Drops what is kept for the object `key`, which is gone: it waits for no reconcile and will
    /// retry nothing.
    pub(super) fn forget(&self, key: &str) {
        self.pending.remove(key);
        self.reset_backoff(key);
    }

    fn reset_backoff(&self, key: &str) {
        self.backoff.reset(key);
        self.backoff_objects.set(self.backoff.len() as i64);
    }
}
