//! The kube-runtime `Controller` of one controller's objects: what it watches, when it reconciles, and
//! how it stops.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, TryStreamExt};
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};

use super::{ControllerContext, Triggers, WorkQueue, object_key};

impl ControllerContext {
    /// The controller of `queue`, watching `api`, with `queue`'s concurrency limit. Build every
    /// controller here: besides watching, it
    /// - feeds `queue`'s work-queue gauge from the trigger stream, and drops what `queue` keeps for an
    ///   object when the watch reports it deleted;
    /// - reports the cache synced to /readyz once the first full list has gone through the cache. (Not
    ///   with `Store::wait_until_ready`: its channel wakes one waiter only, and a second waiter can
    ///   leave kube-runtime's own, which holds reconciles until then, asleep.)
    /// - reconciles on the changes `triggers` names, never on a deletion, and every object at each
    ///   resync;
    /// - stops gracefully on shutdown: no new reconciles start, in-flight ones finish. Shutdown also
    ///   drops the cache's writer. kube-runtime stops feeding the cache once shutdown begins, so a
    ///   shutdown before the first list completed (e.g. right after winning leader election) would
    ///   leave it waiting forever for a cache that cannot fill; without a writer the cache reports it
    ///   never will, and the controller, which had nothing in flight, ends at once.
    pub(super) fn controller<K>(
        &self,
        api: kube::Api<K>,
        queue: &WorkQueue,
        triggers: Triggers<K>,
    ) -> Controller<K>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default + std::fmt::Debug + Unpin,
    {
        let name = queue.controller();
        self.readiness.expect_controller(name);
        let readiness = self.readiness.clone();
        let added = queue.clone();
        let gone = queue.clone();
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
            // missing. Whatever a deletion must do runs before it, under a finalizer or the API
            // server's garbage collector.
            .applied_objects()
            .inspect_ok(move |object| {
                let key = object_key(object);
                tracing::debug!(controller = name, object = key, "change queued");
                added.added(key)
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
        self.metrics.started_controller(name, self.concurrency);
        Controller::for_stream(trigger, reader)
            .reconcile_all_on(every(self.resync))
            .graceful_shutdown_on(stop)
            .with_config(kube::runtime::controller::Config::default().concurrency(self.concurrency))
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
