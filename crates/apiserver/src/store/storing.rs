//! Reading an object back under the lock, and storing or removing one under a new resourceVersion,
//! with its event published and the owner index kept current.

use std::sync::OnceLock;

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

use super::{EventType, State, Store, StoredEvent, object::StoredObject, storage_key};

impl Store {
    pub(crate) fn stored(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        Self::stored_object(state, rt, namespace, name).map(StoredObject::decode)
    }

    /// The object as stored, for checks that need not decode it.
    pub(crate) fn stored_object<'s>(
        state: &'s State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Option<&'s StoredObject> {
        state
            .objects
            .get(&storage_key(rt))?
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Stores `object` under a new resourceVersion and publishes the event. Private to storage: every
    /// write reaches it through a commit (the strategy's stages ran before it) or a step of a delete.
    pub(super) fn put(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut object: Value,
        previous: Option<Value>,
    ) -> Value {
        state.resource_version += 1;
        let rv = state.resource_version;
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        meta::drop_empty_fields(metadata);
        let key = storage_key(rt);
        let stored = StoredObject::encode(&object);
        let mut size = stored.len();
        let replaced = state
            .objects
            .entry(key.clone())
            .or_default()
            .insert((namespace.to_owned(), name.to_owned()), stored.clone());
        // The event carries the previous object too.
        size += replaced.as_ref().map_or(0, StoredObject::len);
        // The owner index needs the old object: the caller's copy, decoded only if it passed none.
        let decoded = match (&previous, &replaced) {
            (None, Some(replaced)) => Some(replaced.decode()),
            _ => None,
        };
        state.owners.record(
            &key,
            namespace,
            name,
            previous.as_ref().or(decoded.as_ref()),
            Some(&object),
        );
        let before = previous.as_ref().or(decoded.as_ref());
        self.hooks.indexes.indexed(state, &key, before, Some(&object));
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.publish(
            state,
            StoredEvent {
                event_type,
                resource: key,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                object: stored,
                previous: replaced,
                resource_version: rv,
                encoded: OnceLock::new(),
            },
            size,
        );
        object
    }

    /// Removes the object for good: DELETED carries the final state with the deletion's own
    /// resourceVersion (W7). Then whatever depended on it is collected (L4-L6). Private to storage, as
    /// [`Store::put`] is.
    pub(super) fn remove(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut object: Value,
    ) -> Value {
        let key = storage_key(rt);
        let removed = state
            .objects
            .get_mut(&key)
            .and_then(|objects| objects.remove(&(namespace.to_owned(), name.to_owned())));
        let Some(removed) = removed else {
            // Already gone (removed by a step this one set in motion): a second DELETED would be a lie.
            return object;
        };
        // The event carries the final state and the state before it, about twice the stored size.
        let size = 2 * removed.len();
        let decoded = removed.decode();
        state.owners.record(&key, namespace, name, Some(&decoded), None);
        self.hooks.indexes.indexed(state, &key, Some(&decoded), None);
        state.resource_version += 1;
        let rv = state.resource_version;
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        meta::drop_empty_fields(metadata);
        self.publish(
            state,
            StoredEvent {
                event_type: EventType::Deleted,
                resource: key,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                object: StoredObject::encode(&object),
                previous: Some(removed),
                resource_version: rv,
                encoded: OnceLock::new(),
            },
            size,
        );
        self.hooks
            .reactions
            .after_remove(self, state, rt, namespace, &object);
        object
    }
}
