//! Objects, the global resourceVersion and the event history.
//!
//! One mutex guards every object, the counter and the ring, so resourceVersions are handed out in the
//! order writes happen and every watcher sees events in that order (C2, W5). Watchers never hold the
//! lock: events go out through a broadcast channel, and a watcher that falls behind catches up from
//! the ring (W12).
//!
//! With a data dir every change is also saved to disk before its writer is answered (`persist`).

mod deletion;
mod event;
mod extensions;
pub(crate) mod generated_name;
mod history;
mod hooks;
mod object;
mod options;
mod owners;
mod past;
mod persist;
mod registry;
mod stages;
mod storing;
mod write;

use std::{
    path::Path,
    sync::{Arc, Mutex, MutexGuard, OnceLock},
};

use apimachinery::{resource::ResourceType, stored_form};
use serde_json::Value;
use tokio::sync::broadcast;

pub use event::{EventType, StoredEvent};
pub use extensions::Extensions;
pub use history::Limits as HistoryLimits;
pub(crate) use hooks::{AdmissionPlugins, Hooks, Indexes, KindRules, Lifecycle, Preparing, WriteReactions};
pub use object::StoredObject;
pub use options::{DeleteOptions, FieldValidation, Propagation as DeletePropagation, WriteOptions, Written};
pub(crate) use past::ListKey;
pub use registry::Registry;
pub use stages::{Origin, Stage, WriteStages};
pub(crate) use write::{Create, Update};

use crate::error::{Error, Subject};

pub(crate) struct State {
    pub resource_version: u64,
    /// resource -> (namespace, name) -> object.
    pub objects: object::Objects,
    pub history: history::History,
    pub registry: Registry,
    /// A cursor the hooks keep with the objects, saved and restored with them (where the Service
    /// address allocator looks first); 1 in a new store.
    pub saved_cursor: u32,
    /// Dependents by owner uid, for the garbage collector.
    pub owners: owners::OwnerIndex,
    /// What the hooks keep beside the objects, by type.
    pub extensions: Extensions,
}

/// The objects of every kind, their resourceVersions and watch history, under one lock: every write
/// is committed (and, with a data dir, journaled) whole or not at all, as etcd behind kube-apiserver
/// would.
pub struct Store {
    state: Mutex<State>,
    events: broadcast::Sender<Arc<StoredEvent>>,
    /// The data dir, when there is one; `None` keeps the store memory-only.
    journal: Option<persist::Journal>,
    /// What the kinds add to each write.
    hooks: Hooks,
    /// How often each stage of the writes ran.
    write_stages: WriteStages,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

pub use apimachinery::stored_form::storage_key;

/// Names `name` of `rt` in an error (see [`Subject::of`]).
pub fn subject(rt: &ResourceType, name: &str) -> Subject {
    Subject::of(rt, name)
}

/// Where a watch starts: the events to replay, then the live channel.
pub struct WatchStart {
    /// The events after the watch's resourceVersion that are already stored, oldest first.
    pub replay: Vec<Arc<StoredEvent>>,
    /// The events written from then on.
    pub live: broadcast::Receiver<Arc<StoredEvent>>,
    /// The store's resourceVersion when the watch started: `replay` ends there and `live` begins
    /// after it.
    pub resource_version: u64,
}

impl Store {
    /// A memory-only store: everything is gone when it is dropped.
    pub(crate) fn new(history: HistoryLimits, hooks: Hooks) -> Arc<Store> {
        let store = Store::with_state(history, persist::Loaded::default(), None, hooks);
        store.populate();
        store
    }

    /// A store kept in `data_dir` (created when missing), holding whatever was saved there before;
    /// memory-only when `None`. Fails when the dir cannot be used: no permission, a corrupt file,
    /// or another process holding it.
    pub(crate) fn open(
        history: HistoryLimits,
        data_dir: Option<&Path>,
        hooks: impl Into<Hooks>,
    ) -> std::io::Result<Arc<Store>> {
        let hooks = hooks.into();
        let Some(dir) = data_dir else {
            return Ok(Store::new(history, hooks));
        };
        let (journal, loaded) = persist::Journal::open(dir)?;
        let store = Store::with_state(history, loaded, Some(journal), hooks);
        store.populate();
        if let Some(journal) = &store.journal {
            // Fails now, not at the first request, when the disk refuses the first commit.
            journal.wait_durable(store.current_resource_version())?;
        }
        Ok(store)
    }

    fn with_state(
        history: HistoryLimits,
        loaded: persist::Loaded,
        journal: Option<persist::Journal>,
        hooks: Hooks,
    ) -> Arc<Store> {
        let (events, _) = broadcast::channel(4096);
        let mut registry = Registry::default();
        let mut extensions = Extensions::default();
        hooks
            .lifecycle
            .open(&mut registry, &mut extensions, &loaded.objects);
        let owners = owners::OwnerIndex::build(&loaded.objects);
        Arc::new(Store {
            state: Mutex::new(State {
                resource_version: loaded.resource_version,
                objects: object::encode_all(loaded.objects),
                history: history::History::new(history, loaded.resource_version),
                registry,
                saved_cursor: loaded.saved_cursor.unwrap_or(1),
                owners,
                extensions,
            }),
            events,
            journal,
            hooks,
            write_stages: WriteStages::default(),
        })
    }

    /// How often each stage of the writes ran.
    pub fn write_stages(&self) -> &WriteStages {
        &self.write_stages
    }

    /// Saves what is queued and closes the data dir, so that another store may open it; later writes
    /// fail with 500. Does nothing for a memory-only store.
    pub fn close(&self) {
        if let Some(journal) = &self.journal {
            journal.close();
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| {
            let mut state = poisoned.into_inner();
            // A panic ended a step mid-way, maybe a garbage collector's drain: the hooks start afresh.
            self.hooks.lifecycle.recover(&mut state);
            state
        })
    }

    /// The lock, for a write request: with a data dir, first waits until the persister has room for
    /// it, so that a write waiting for the disk does not hold up the readers behind the lock.
    pub(crate) fn write_lock(&self) -> MutexGuard<'_, State> {
        if let Some(journal) = &self.journal {
            journal.wait_for_room();
        }
        self.lock()
    }

    /// Between the objects of a long write (a collection deletion): lets the lock go while the
    /// persister makes room, as [`Store::write_lock`] does before the first.
    pub(crate) fn keep_room<'s>(&'s self, state: MutexGuard<'s, State>) -> MutexGuard<'s, State> {
        match &self.journal {
            Some(journal) if !journal.has_room() => {
                drop(state);
                self.write_lock()
            }
            _ => state,
        }
    }

    /// Ends a write request: releases the lock and, with a data dir, waits until every change made so
    /// far (this request's included) is on disk, so that no response acknowledges a write a crash
    /// could lose. A write that could not be saved becomes a 500.
    pub(crate) fn settle<T>(
        &self,
        state: MutexGuard<'_, State>,
        result: Result<T, Error>,
    ) -> Result<T, Error> {
        let Some(journal) = &self.journal else {
            return result;
        };
        let written_up_to = state.resource_version;
        drop(state);
        journal.wait_durable(written_up_to)?;
        result
    }

    /// The resourceVersion of the latest write (every write, of any kind, increments it).
    pub fn current_resource_version(&self) -> u64 {
        self.lock().resource_version
    }

    /// The resource types served now (a copy: later CRD changes do not show in it).
    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    /// The type served at `group`/`version`/`plural`, if any ([`Registry::resolve`]).
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.lock().registry.resolve(group, version, plural)
    }

    /// The object `name` in `namespace` of the type served at `group`/`version`/`plural`, when both
    /// the type and the object exist: for the places that read one object of a kind they know.
    pub fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let rt = self.resolve(group, version, plural)?;
        self.get(&rt, namespace, name).ok()
    }

    /// The object `name` in `namespace` (empty for cluster-scoped kinds), presented at `rt`'s
    /// version; [`Error::NotFound`] when there is none.
    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, Error> {
        self.get_stored(rt, namespace, name)
            .map(|object| stored_form::present_owned(rt, object))
    }

    /// The object as stored, before it is presented as `rt` (still at the version it was written in,
    /// for a conversion webhook to convert).
    pub fn get_stored(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, Error> {
        let stored = self
            .lock()
            .objects
            .get(&storage_key(rt))
            .and_then(|objects| objects.get(&(namespace.to_owned(), name.to_owned())))
            .cloned();
        stored
            .map(|object| object.decode())
            .ok_or_else(|| Error::NotFound(subject(rt, name)))
    }

    /// Every object of `rt` (in `namespace`, or all when `None`), sorted by namespace and name, and the
    /// resourceVersion the list is consistent with.
    pub fn list(&self, rt: &ResourceType, namespace: Option<&str>) -> (Vec<Value>, u64) {
        let (objects, resource_version) = self.list_stored(rt, namespace);
        let objects = objects
            .into_iter()
            .map(|object| stored_form::present_owned(rt, object))
            .collect();
        (objects, resource_version)
    }

    /// Whether any object of `rt` is stored: a lookup under the lock, nothing decoded (every write
    /// asks it of the webhook configurations).
    pub fn holds_any(&self, rt: &ResourceType) -> bool {
        let state = self.lock();
        state
            .objects
            .get(&storage_key(rt))
            .is_some_and(|objects| !objects.is_empty())
    }

    /// [`Store::list`] with the objects as stored, not yet presented as `rt`.
    pub fn list_stored(&self, rt: &ResourceType, namespace: Option<&str>) -> (Vec<Value>, u64) {
        // Pointers are copied under the lock; decoding happens after it is released.
        let (stored, resource_version) = {
            let state = self.lock();
            let stored: Vec<object::StoredObject> = state
                .objects
                .get(&storage_key(rt))
                .map(|objects| {
                    objects
                        .iter()
                        .filter(|((ns, _), _)| namespace.is_none_or(|wanted| wanted == ns))
                        .map(|(_, object)| object.clone())
                        .collect()
                })
                .unwrap_or_default();
            (stored, state.resource_version)
        };
        (
            stored.iter().map(object::StoredObject::decode).collect(),
            resource_version,
        )
    }

    /// Starts a watch after `since` (`None`: from the current state, replayed as ADDED events).
    /// A `since` older than the history ring is 410 Expired (W6).
    pub fn watch(&self, rt: &ResourceType, since: Option<u64>) -> Result<WatchStart, Error> {
        let key = storage_key(rt);
        // As in `list`: the current objects are snapshotted under the lock and decoded after it.
        let (snapshot, replay, live, resource_version) = {
            let state = self.lock();
            let live = self.events.subscribe();
            let (snapshot, replay) = match since {
                None => {
                    let snapshot: Vec<(ListKey, object::StoredObject)> = state
                        .objects
                        .get(&key)
                        .map(|objects| {
                            objects
                                .iter()
                                .map(|(key, object)| (key.clone(), object.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    (snapshot, Vec::new())
                }
                Some(since) => (Vec::new(), state.history.after(since, state.resource_version)?),
            };
            (snapshot, replay, live, state.resource_version)
        };
        let replay = if snapshot.is_empty() {
            replay
        } else {
            snapshot
                .into_iter()
                .map(|((namespace, name), object)| {
                    Arc::new(StoredEvent {
                        event_type: EventType::Added,
                        resource: key.clone(),
                        namespace,
                        name,
                        object,
                        previous: None,
                        resource_version,
                        encoded: OnceLock::new(),
                    })
                })
                .collect()
        };
        Ok(WatchStart {
            replay,
            live,
            resource_version,
        })
    }

    /// Events after `since` from the ring, for a watcher that fell behind the live channel.
    pub fn events_after(&self, since: u64) -> Result<Vec<Arc<StoredEvent>>, Error> {
        let state = self.lock();
        state.history.after(since, state.resource_version)
    }

    /// Subscribes to every change (the emulated controllers use this).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.events.subscribe()
    }

    /// Records and publishes one change, whose objects are `size` bytes of JSON. Called with the state
    /// lock held, so publishing order is resourceVersion order.
    pub(crate) fn publish(&self, state: &mut State, event: StoredEvent, size: usize) {
        let event = Arc::new(event);
        if let Some(journal) = &self.journal {
            journal.record(&event, state.saved_cursor);
        }
        self.hooks.reactions.published(&event);
        state.history.push(event.clone(), size);
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(event);
    }
}
