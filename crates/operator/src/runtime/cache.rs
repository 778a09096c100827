//! What a controller reads besides its own objects: the children it owns and the other objects it
//! watches, each kept in a cache by the one watch that also starts its reconciles, as
//! controller-runtime's cache serves both its event handlers and its client's reads. A converged
//! resync then reads every child from memory and sends the API server nothing.
//!
//! A cache lags: the watch delivers a write some time after the API server took it, and a controller
//! that just applied a child may be reconciling again before the watch brings that child back. So
//! what a reconcile acts on is read again from the API server ([`Cache::current`]): the cache is
//! trusted only to say that nothing needs doing. A child missing from the cache may exist (not seen
//! yet, or made by someone else), and a child that differs may already have been repaired; reading
//! it before acting keeps a reconcile from taking over someone else's object or repeating a repair.
//!
//! Each watch is confined to what the controller may see (`--watch-namespace`, see
//! [`ControllerContext::watched`]) and to what a selector picks, so that the caches hold the
//! operator's objects rather than every Deployment or ConfigMap of the cluster.

use std::sync::Arc;

use futures::StreamExt;
use kube::{
    Api, Resource, ResourceExt,
    runtime::{
        Controller, WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};

use super::{ControllerContext, Kind};
use crate::Result;

/// The objects of one kind a controller watches, as its watch last delivered them.
pub struct Cache<K: Kind> {
    store: Store<K>,
    client: kube::Client,
}

impl<K: Kind> Cache<K> {
    /// The cached object `name` in `namespace`; `None` when the watch has not delivered it (it does
    /// not exist, is not selected, or is not seen yet).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.store.get(&ObjectRef::new(name).within(namespace))
    }

    /// The cached objects of `namespace` that `keep` selects.
    pub fn list(&self, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.store
            .state_filter(|object| object.namespace().as_deref() == Some(namespace) && keep(object))
    }

    /// The object `name` beside `owner`, to act on: the cached one when `settled` says it needs
    /// nothing, otherwise as the API server has it now (see the module doc). `None`: it does not
    /// exist.
    pub async fn current(
        &self,
        owner: &impl Resource,
        name: &str,
        settled: impl FnOnce(&K) -> bool,
    ) -> Result<Option<K>> {
        let namespace = owner.namespace().unwrap_or_default();
        if let Some(cached) = self.get(&namespace, name)
            && settled(&cached)
        {
            return Ok(Some(K::clone(&cached)));
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), &namespace);
        Ok(api.get_opt(name).await?)
    }
}

/// Drops what no controller reads before an object enters a cache. managedFields are the API
/// server's bookkeeping and, for small objects, the larger part of them (controller-runtime's
/// TransformStripManagedFields does the same).
pub(super) fn strip_managed_fields<K: Resource>(object: &mut K) {
    // `take`, not `clear`: a cleared Vec would keep its buffer for every cached object.
    drop(std::mem::take(object.managed_fields_mut()));
}

type Attach<K> = Box<dyn FnOnce(Controller<K>) -> Controller<K> + Send>;

/// What a controller of `K` watches besides its own objects, gathered before it runs: each watch
/// starts reconciles of the objects it maps to and keeps the cache it returns.
pub struct Watches<K: Kind> {
    ctx: ControllerContext,
    attach: Vec<Attach<K>>,
}

impl<K: Kind> Watches<K> {
    pub fn new(ctx: &ControllerContext) -> Self {
        Watches {
            ctx: ctx.clone(),
            attach: Vec::new(),
        }
    }

    /// Watches the children of kind `Child` that `config` selects: a change to one (its deletion
    /// included) reconciles the object its controller owner reference names.
    pub fn owns<Child: Kind>(&mut self, config: watcher::Config) -> Cache<Child> {
        let (cache, changes) = self.cached(config, strip_managed_fields);
        self.attach
            .push(Box::new(move |controller| controller.owns_stream(changes)));
        cache
    }

    /// Watches the objects of kind `Other` that `config` selects: a change to one reconciles the
    /// object `owner_of` names, if any.
    pub fn watches<Other: Kind>(
        &mut self,
        config: watcher::Config,
        owner_of: impl Fn(Other) -> Option<ObjectRef<K>> + Send + Sync + 'static,
    ) -> Cache<Other> {
        self.watches_trimmed(config, strip_managed_fields, owner_of)
    }

    /// As [`Self::watches`], each object cut down by `trim` before it enters the cache and before
    /// `owner_of` sees it: for objects the controller reads little of and holds many of, as
    /// controller-runtime's cache transforms do. `trim` must keep what `owner_of` and the controller
    /// read.
    pub fn watches_trimmed<Other: Kind>(
        &mut self,
        config: watcher::Config,
        trim: fn(&mut Other),
        owner_of: impl Fn(Other) -> Option<ObjectRef<K>> + Send + Sync + 'static,
    ) -> Cache<Other> {
        let (cache, changes) = self.cached(config, trim);
        self.attach.push(Box::new(move |controller| {
            controller.watches_stream(changes, owner_of)
        }));
        cache
    }

    /// The controller of `K` with every watch added.
    pub(super) fn attach(self, controller: Controller<K>) -> Controller<K> {
        self.attach
            .into_iter()
            .fold(controller, |controller, attach| attach(controller))
    }

    /// A cache of the `W` that `config` selects where the controller looks, each cut down by `trim`,
    /// and the stream of their changes that keeps it: each change is in the cache before it is handed
    /// on.
    fn cached<W: Kind>(
        &self,
        config: watcher::Config,
        trim: fn(&mut W),
    ) -> (
        Cache<W>,
        impl futures::Stream<Item = Result<W, watcher::Error>> + Send + 'static,
    ) {
        let (store, writer) = reflector::store();
        let changes = reflector::reflector(writer, watcher(self.ctx.watched::<W>(), config).modify(trim))
            .default_backoff()
            // Deletions too: a child deleted by hand is made again.
            .touched_objects()
            .boxed();
        let cache = Cache {
            store,
            client: self.ctx.client.clone(),
        };
        (cache, changes)
    }
}
