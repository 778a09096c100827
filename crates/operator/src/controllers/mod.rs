//! One file per controller. Each reads top-down as observe, compare, act; pure functions compute the
//! desired state and are unit-tested without a server. What they share with the manager is here.

mod runtime;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

pub use runtime::ReconcileRuntime;

mod conditions;
pub mod events;
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

/// Which changes to a controller's own objects start a reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Triggers {
    /// Every change, the controller's own status writes included.
    EveryChange,
    /// Changes to the spec (generation), finalizers, labels or annotations. A status-only change is
    /// the controller's own write coming back, as controller-runtime's GenerationChangedPredicate has
    /// it; for a controller whose status follows only its object and the outside world, that is a
    /// reconcile (and, for postgres-writer, a row read) per write saved. Drift is the resync's job.
    SpecAndMetadata,
}

/// The key reconciles, back-off and the work-queue gauge use: `namespace/name`.
pub fn object_key<K: kube::Resource>(object: &K) -> String {
    use kube::ResourceExt;
    format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any())
}

impl ControllerContext {
    /// The controller of `runtime`, watching `api`. Build every controller here: besides watching, it
    /// - feeds `runtime`'s work-queue gauge from the trigger stream;
    /// - reports the cache synced to /readyz once the first full list has gone through the cache. (Not
    ///   with `Store::wait_until_ready`: its channel wakes one waiter only, and a second waiter can
    ///   leave kube-runtime's own, which holds reconciles until then, asleep.)
    /// - reconciles on the changes `triggers` names;
    /// - stops gracefully on shutdown: no new reconciles start, in-flight ones finish. Shutdown also
    ///   drops the cache's writer. kube-runtime stops feeding the cache once shutdown begins, so a
    ///   shutdown before the first list completed (e.g. right after winning leader election) would
    ///   leave it waiting forever for a cache that cannot fill; without a writer the cache reports it
    ///   never will, and the controller, which had nothing in flight, ends at once.
    pub fn controller<K>(
        &self,
        api: kube::Api<K>,
        runtime: &ReconcileRuntime,
        triggers: Triggers,
    ) -> kube::runtime::Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        use futures::{StreamExt, TryStreamExt};
        use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
        let name = runtime.controller();
        runtime.set_resync(self.resync);
        self.readiness.expect_controller(name);
        let readiness = self.readiness.clone();
        let queue = runtime.queue();
        let (reader, writer) = reflector::store();
        // managedFields are the API server's bookkeeping; no controller reads them, and for small
        // objects they are the larger part, so the cache drops them (controller-runtime's
        // TransformStripManagedFields does the same).
        let objects = watcher(api, watcher::Config::default()).modify(|object| {
            // `take`, not `clear`: a cleared Vec would keep its buffer for every cached object.
            drop(std::mem::take(kube::ResourceExt::managed_fields_mut(object)));
        });
        let trigger = reflector(writer, objects)
            .inspect_ok(move |event| {
                if matches!(event, watcher::Event::InitDone) {
                    readiness.mark_synced(name);
                }
            })
            .default_backoff()
            .touched_objects()
            .boxed();
        let trigger = match triggers {
            Triggers::EveryChange => trigger,
            Triggers::SpecAndMetadata => trigger
                .predicate_filter(
                    predicates::generation
                        .combine(predicates::finalizers)
                        .combine(predicates::labels)
                        .combine(predicates::annotations),
                    PredicateConfig::default(),
                )
                .boxed(),
        };
        let trigger = trigger
            .inspect_ok(move |object| queue.add(object_key(object)))
            .boxed();
        // Shared by the trigger and the shutdown future, which the same controller task polls, the
        // future first: never contended.
        let source = Arc::new(Mutex::new(Some(trigger)));
        let polled = source.clone();
        let trigger = futures::stream::poll_fn(move |cx| {
            match polled.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                Some(trigger) => trigger.poll_next_unpin(cx),
                None => std::task::Poll::Ready(None),
            }
        });
        let stopping = self.shutdown_signal();
        let stop = async move {
            stopping.await;
            // Dropped in the future that ends the trigger, so no object can slip in between the two.
            drop(source.lock().unwrap_or_else(|p| p.into_inner()).take());
        };
        kube::runtime::Controller::for_stream(trigger, reader).graceful_shutdown_on(stop)
    }

    /// What every controller does the same way beyond [`Self::controller`]: publish and apply its
    /// concurrency limit.
    pub fn configure<K>(
        &self,
        name: &'static str,
        controller: kube::runtime::Controller<K>,
    ) -> kube::runtime::Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        self.metrics
            .max_concurrent_reconciles
            .get_or_create(&crate::manager::metrics::ControllerLabels {
                controller: name.to_owned(),
            })
            .set(i64::from(self.concurrency));
        controller.with_config(kube::runtime::controller::Config::default().concurrency(self.concurrency))
    }

    /// The Event publisher of controller `name`.
    pub fn events(&self, name: &'static str) -> events::EventPublisher {
        events::EventPublisher::start(self.client.clone(), name)
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
