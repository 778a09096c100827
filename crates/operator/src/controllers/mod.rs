//! One file per controller. Each reads top-down as observe, compare, act; pure functions compute the
//! desired state and are unit-tested without a server. What they share with the manager is here.

mod runtime;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

pub use runtime::ReconcileRuntime;

mod conditions;
mod drift;
pub mod events;
mod ownership;
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

/// The key reconciles, back-off and the work-queue gauge use: `namespace/name`.
pub fn object_key<K: kube::Resource>(object: &K) -> String {
    use kube::ResourceExt;
    key(object.namespace().as_deref(), &object.name_any())
}

fn key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

impl ControllerContext {
    /// The controller of `runtime`, watching `api`. Build every controller here: besides watching, it
    /// - feeds `runtime`'s work-queue gauge from the trigger stream;
    /// - reports the cache synced to /readyz once the first full list has gone through the cache. (Not
    ///   with `Store::wait_until_ready`: its channel wakes one waiter only, and a second waiter can
    ///   leave kube-runtime's own, which holds reconciles until then, asleep.)
    /// - reconciles on the changes `triggers` names, never on a deletion;
    /// - stops gracefully on shutdown: no new reconciles start, in-flight ones finish. Shutdown also
    ///   drops the cache's writer. kube-runtime stops feeding the cache once shutdown begins, so a
    ///   shutdown before the first list completed (e.g. right after winning leader election) would
    ///   leave it waiting forever for a cache that cannot fill; without a writer the cache reports it
    ///   never will, and the controller, which had nothing in flight, ends at once.
    pub fn controller<K>(
        &self,
        api: kube::Api<K>,
        runtime: &ReconcileRuntime,
        triggers: Triggers<K>,
    ) -> kube::runtime::Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        use futures::{StreamExt, TryStreamExt};
        use kube::runtime::{WatchStreamExt, reflector, watcher};
        let name = runtime.controller();
        self.readiness.expect_controller(name);
        let readiness = self.readiness.clone();
        let queue = runtime.queue();
        let gone = runtime.clone();
        let (reader, writer) = reflector::store();
        // managedFields are the API server's bookkeeping; no controller reads them, and for small
        // objects they are the larger part, so the cache drops them (controller-runtime's
        // TransformStripManagedFields does the same).
        let objects = watcher(api, watcher::Config::default()).modify(|object| {
            // `take`, not `clear`: a cleared Vec would keep its buffer for every cached object.
            drop(std::mem::take(kube::ResourceExt::managed_fields_mut(object)));
        });
        let settled = match triggers {
            Triggers::EveryChange => |_: &K| false,
            Triggers::UnlessSettled(settled) => settled,
        };
        let trigger = reflector(writer, objects)
            .inspect_ok(move |event| match event {
                watcher::Event::InitDone => readiness.mark_synced(name),
                // Nothing is reconciled for a deleted object; what was kept for it goes now.
                watcher::Event::Delete(object) => gone.forget(&object_key(object)),
                _ => {}
            })
            .default_backoff()
            .try_filter(move |event| {
                std::future::ready(!matches!(event, watcher::Event::Apply(object) if settled(object)))
            })
            // Not deletions: a deleted object has left the cache, so kube-runtime would only report it
            // missing, and its key would wait in the work-queue gauge forever. Whatever a deletion
            // must do runs before it, under a finalizer or the API server's garbage collector.
            .applied_objects()
            .inspect_ok(move |object| {
                let key = object_key(object);
                tracing::debug!(controller = name, object = key, "change queued");
                queue.add(key)
            })
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
        kube::runtime::Controller::for_stream(trigger, reader)
            .reconcile_all_on(every(self.resync))
            .graceful_shutdown_on(stop)
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

/// Ticks every `period`, the first time one period from now: the resync. Every object is reconciled
/// at once at each tick, as controller-runtime's SyncPeriod does, rather than each object asking for a
/// requeue: that kept a scheduler entry per object (about 5 MiB at 10,000 objects, heaptrack).
fn every(period: Duration) -> impl futures::Stream<Item = ()> + Send + 'static {
    let ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    futures::stream::unfold(ticker, |mut ticker| async move {
        ticker.tick().await;
        Some(((), ticker))
    })
}

/// What a running controller yields for each reconcile request it handled.
pub type Outcome<K, E> = Result<
    (
        kube::runtime::reflector::ObjectRef<K>,
        kube::runtime::controller::Action,
    ),
    kube::runtime::controller::Error<E, kube::runtime::watcher::Error>,
>;

/// Drives a running controller to its end. Reconciles that did not complete were already counted and
/// backed off by [`ReconcileRuntime`], so they are only logged here. A request for an object no longer
/// in the cache (deleted before its reconcile started, or before a retry) is the last word about that
/// object: what `runtime` kept for it goes. (A deletion is also seen on the watch, but a reconcile in
/// flight then may still fail after it and record a retry.)
pub async fn drain<K, E>(runtime: &ReconcileRuntime, results: impl futures::Stream<Item = Outcome<K, E>>)
where
    K: kube::Resource,
    E: std::error::Error + 'static,
{
    use futures::StreamExt;
    results
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                Err(kube::runtime::controller::Error::ObjectNotFound(gone)) => {
                    runtime.forget(&key(gone.namespace.as_deref(), &gone.name));
                }
                Err(error) => tracing::debug!(%error, "reconcile did not complete"),
            }
        })
        .await;
}
