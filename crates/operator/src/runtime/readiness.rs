//! What `/readyz` reports: whether this pod can serve. Every controller's cache has synced and the
//! process's own listeners (the webhook server) answer; never an external dependency. A pod that is not
//! ready is taken out of its Services, so a database that is down would otherwise take the webhooks of
//! VoteConfig and WebApp, which never touch it, down with it.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

/// A named check, e.g. `webhook`, that says whether a part of this process serves right now.
pub type Check = Arc<dyn Fn() -> futures::future::BoxFuture<'static, bool> + Send + Sync>;

#[derive(Default)]
pub struct Readiness {
    /// Controller name -> whether its cache has synced.
    synced: Mutex<BTreeMap<&'static str, bool>>,
    checks: Mutex<Vec<(&'static str, Check)>>,
    /// Set when the process was told to stop: never ready again, so that the Services stop sending
    /// it requests while it still serves those already on their way.
    shutting_down: AtomicBool,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness").finish_non_exhaustive()
    }
}

impl Readiness {
    /// A controller that will report `mark_synced` later; until then the process is not ready.
    pub fn expect_controller(&self, controller: &'static str) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(controller)
            .or_insert(false);
    }

    pub fn mark_synced(&self, controller: &'static str) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(controller, true);
    }

    pub fn add_check(&self, name: &'static str, check: Check) {
        self.checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((name, check));
    }

    /// Not ready from now on, whatever else holds: the process is shutting down.
    pub fn shut_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Each failing item by name; empty when ready.
    pub async fn failing(&self) -> Vec<String> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return vec!["shutting down".to_owned()];
        }
        let mut failing: Vec<String> = self
            .synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, synced)| !**synced)
            .map(|(name, _)| format!("{name}: cache not synced"))
            .collect();
        let checks: Vec<(&'static str, Check)> =
            self.checks.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (name, check) in checks {
            if !check().await {
                failing.push(format!("{name}: not answering"));
            }
        }
        failing
    }
}
