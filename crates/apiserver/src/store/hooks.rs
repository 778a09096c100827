//! The seam between storage and the controllers. The store knows objects, resourceVersions and
//! events; what a controller adds to a write (a Service's cluster IP, a namespace's teardown, the
//! garbage collector's work) comes from a [`Hooks`] the server hands it when it opens, called at fixed
//! points of every write under the store's lock. The store calls no controller by name: whoever
//! implements the hooks does.

use std::collections::{BTreeMap, HashMap};

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use super::{DeletePropagation, Extensions, Registry, State, Store, StoredEvent};
use crate::error::Error;

/// Why the hooks refuse a write in admission.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The object breaks a kind's rules: 422 with these causes.
    Invalid(Vec<FieldCause>),
    /// A policy forbids it (a quota): 403 with this message.
    Forbidden(String),
}

/// Every point at which a kind adds to a write. Each method runs under the store's lock with the
/// state it guards, so what a hook writes is part of the same step as the write that called it.
pub(crate) trait Hooks: Send + Sync + 'static {
    /// Sets up a store opened with `objects` (storage key -> (namespace, name) -> object, empty for a
    /// new store): the types of `registry` the stored objects add (custom resources), and what the
    /// hooks keep in `extensions` about them.
    fn open(
        &self,
        registry: &mut Registry,
        extensions: &mut Extensions,
        objects: &HashMap<String, BTreeMap<(String, String), Value>>,
    );

    /// Sets up what every cluster holds (namespaces, APIServices, configuration), on a store just
    /// opened.
    fn populate(&self, store: &Store, state: &mut State);

    /// After a panic left the lock poisoned: drops work a step may have left half done.
    fn recover(&self, state: &mut State);

    /// Whether `name` of `rt` may be created in `namespace` now (it exists and is not terminating).
    fn admit_into_namespace(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<(), Error>;

    /// Kind-specific admission of a create (`old` = None) or an update, made through `subresource`.
    fn admit(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: Option<&Value>,
        object: &mut Value,
        subresource: Option<&str>,
    ) -> Result<(), Refusal>;

    /// Keeps the hooks' indexes current: the object under storage key `key` went from `before` to
    /// `after` (None: absent). Called for every stored and removed object.
    fn indexed(&self, state: &mut State, key: &str, before: Option<&Value>, after: Option<&Value>);

    /// A change was published (every write's last step, in resourceVersion order).
    fn published(&self, event: &StoredEvent);

    /// Whether an object being deleted whose finalizers are all gone may be removed by this update.
    fn may_go(&self, rt: &ResourceType, object: &Value) -> bool;

    /// Follow-up writes after `name` was stored as `stored`, over an object whose owner references
    /// were `previous_references` (none for a create).
    #[allow(clippy::too_many_arguments)]
    fn after_write(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        previous_references: &[Value],
        stored: &Value,
    );

    /// Whether `name` may be deleted at all.
    fn check_deletable(&self, rt: &ResourceType, name: &str) -> Result<(), Error>;

    /// A delete that is more than marking or removing one object: `Some` with its result when the
    /// hooks took it over (a teardown, an orphaning or foreground deletion).
    fn on_delete(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
        propagation: DeletePropagation,
    ) -> Option<Value>;

    /// After an object is gone for good.
    fn after_remove(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
    );
}
