//! What every controller runs on, and what the manager starts controllers with: the context the manager
//! hands each one, the reconcile loop around a controller's observe/compare/act (instrumentation,
//! finalizer, error policy, back-off), the caches of what it watches besides its objects, what a
//! reconcile writes with (server-side apply, status, a not-ready report, Events), the metrics under
//! controller-runtime's names, and readiness. It knows no controller and no process
//! concern: the controllers and the manager depend on it, never it on them.

pub mod backoff;
mod cache;
mod context;
pub mod events;
pub mod metrics;
pub mod readiness;
mod reconciler;
mod toolkit;
mod watch;
mod work_queue;

pub use cache::{Cache, Watches};
pub use context::{ControllerContext, Triggers};
pub use reconciler::{Reconciler, run, run_with};
pub use toolkit::{ReadyStatus, Toolkit};
use work_queue::WorkQueue;

/// What every kind a controller reads, caches or writes is: namespaced (every kind here is), with the
/// static type information kube's typed API uses.
pub trait Kind:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// The key reconciles, back-off and the work-queue gauge use: `namespace/name`.
pub fn object_key<K: kube::Resource>(object: &K) -> String {
    use kube::ResourceExt;
    key(object.namespace().as_deref(), &object.name_any())
}

fn key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}
