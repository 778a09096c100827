//! What every controller runs on, and what the manager starts controllers with: the context the manager
//! hands each one, the reconcile loop around a controller's observe/compare/act (instrumentation,
//! finalizer, error policy, back-off), what a reconcile writes with (server-side apply, status, Events),
//! the metrics under controller-runtime's names, and readiness. It knows no controller and no process
//! concern: the controllers and the manager depend on it, never it on them.

pub mod backoff;
mod context;
pub mod events;
pub mod metrics;
pub mod readiness;
mod reconciler;
mod toolkit;
mod watch;
mod work_queue;

pub use context::{ControllerContext, Triggers};
pub use reconciler::{Reconciler, run};
pub use toolkit::Toolkit;
use work_queue::WorkQueue;

/// The key reconciles, back-off and the work-queue gauge use: `namespace/name`.
pub fn object_key<K: kube::Resource>(object: &K) -> String {
    use kube::ResourceExt;
    key(object.namespace().as_deref(), &object.name_any())
}

fn key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}
