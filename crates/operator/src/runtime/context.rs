//! What the manager hands every controller when it starts it.

use std::{sync::Arc, time::Duration};

use super::{events::EventRecorder, metrics::Metrics, readiness::Readiness};

#[derive(Clone)]
pub struct ControllerContext {
    pub client: kube::Client,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// Records every controller's Events, off the reconciles' path.
    pub events: EventRecorder,
    /// The operator's own namespace (its Lease's): where it keeps what a restart must find.
    pub namespace: String,
    /// The one namespace whose objects the controllers watch and reconcile (`--watch-namespace`);
    /// `None`: every namespace.
    pub watch_namespace: Option<String>,
    /// Reconciles of this controller that may run at once.
    pub concurrency: u16,
    /// How often every object is reconciled even when nothing changed (drift repair).
    pub resync: Duration,
    /// Resolves when the process is shutting down: stop taking new work, finish in-flight reconciles.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
}

impl ControllerContext {
    /// The objects of kind `K` the controllers may see: in the watched namespace, or everywhere.
    pub fn watched<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match &self.watch_namespace {
            Some(namespace) => kube::Api::namespaced(self.client.clone(), namespace),
            None => kube::Api::all(self.client.clone()),
        }
    }

    /// A future that completes on shutdown.
    pub fn shutdown_signal(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown.clone();
        async move {
            // An error means the sender is gone: the manager has stopped, so shut down too.
            let _ = shutdown.wait_for(|stopping| *stopping).await;
        }
    }
}

/// Which changes to a controller's own objects start a reconcile.
#[derive(Debug, Clone, Copy)]
pub enum Triggers<K> {
    /// Every change, the controller's own status writes included.
    EveryChange,
    /// Every change except one that leaves the object settled, as the function tells: already
    /// reconciled at its generation (its status says so), so the change is the controller's own status
    /// write coming back or a label. That is controller-runtime's GenerationChangedPredicate, read from
    /// the object itself rather than from a cache of what each object looked like before (kube's
    /// `predicate_filter` keeps one entry per object: about 3 MiB at 10,000). The initial list and
    /// relists always reconcile, so a restarted operator looks at everything; drift is the resync's job.
    UnlessSettled(fn(&K) -> bool),
}
