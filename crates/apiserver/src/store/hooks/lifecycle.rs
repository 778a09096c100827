//! What a store holds when it opens, and its fresh start after a panic.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::store::{Extensions, Registry, State, Store};

/// The store's opening and recovery.
pub(crate) trait Lifecycle: Send + Sync + 'static {
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
}
