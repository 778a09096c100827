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

/// The key reconciles, back-off and the work-queue gauge use: `namespace/name`.
pub fn object_key<K: kube::Resource>(object: &K) -> String {
    use kube::ResourceExt;
    format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any())
}

impl ControllerContext {
    /// A controller watching `api`, whose trigger stream also feeds `runtime`'s work-queue gauge.
    pub fn controller<K>(&self, api: kube::Api<K>, runtime: &ReconcileRuntime) -> kube::runtime::Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        use futures::TryStreamExt;
        use kube::runtime::{WatchStreamExt, reflector, watcher};
        let (reader, writer) = reflector::store();
        let queue = runtime.queue();
        let trigger = reflector(writer, watcher(api, watcher::Config::default()))
            .default_backoff()
            .touched_objects()
            .inspect_ok(move |object| queue.add(object_key(object)));
        kube::runtime::Controller::for_stream(trigger, reader)
    }

    /// What every controller does the same way: count it in readiness, limit its concurrency, stop it
    /// gracefully on shutdown, and mark it synced once its cache has the first full list.
    pub fn configure<K>(
        &self,
        name: &'static str,
        controller: kube::runtime::Controller<K>,
    ) -> kube::runtime::Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        self.readiness.expect_controller(name);
        self.metrics
            .max_concurrent_reconciles
            .get_or_create(&crate::manager::metrics::ControllerLabels {
                controller: name.to_owned(),
            })
            .set(i64::from(self.concurrency));
        let controller = controller
            .with_config(kube::runtime::controller::Config::default().concurrency(self.concurrency))
            .graceful_shutdown_on(self.shutdown_signal());
        let store = controller.store();
        let readiness = self.readiness.clone();
        tokio::spawn(async move {
            if store.wait_until_ready().await.is_ok() {
                readiness.mark_synced(name);
            }
        });
        controller
    }

    /// The Event recorder of controller `name`.
    pub fn recorder(&self, name: &'static str) -> kube::runtime::events::Recorder {
        kube::runtime::events::Recorder::new(
            self.client.clone(),
            kube::runtime::events::Reporter {
                controller: name.into(),
                instance: None,
            },
        )
    }
}

/// Drives a running controller to its end; reconciles that did not complete were already counted
/// and backed off by [`ReconcileRuntime`], so they are only logged here.
pub async fn drain<T, E: std::fmt::Display>(results: impl futures::Stream<Item = Result<T, E>>) {
    use futures::StreamExt;
    results
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile did not complete");
            }
        })
        .await;
}
