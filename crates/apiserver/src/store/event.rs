//! One change to the stored objects, as the watch stream and the history ring carry it.

use std::sync::OnceLock;

use bytes::Bytes;

use super::object::StoredObject;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed (a deletionTimestamp set included).
    Modified,
    /// The object is gone.
    Deleted,
}

impl EventType {
    /// As a watch event's `type` spells it: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as the watch stream and the history ring carry it.
#[derive(Debug)]
pub struct StoredEvent {
    /// What happened to the object.
    pub event_type: EventType,
    /// Storage key of the resource: `group/plural`.
    pub resource: String,
    /// The object's namespace, empty for cluster-scoped kinds.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object after the change (its final state for DELETED), as stored: the bytes are shared
    /// with the store, so the history costs little more than the pointers while objects stand.
    pub object: StoredObject,
    /// The object before the change (MODIFIED and DELETED), for selector enter/leave (W11) and for
    /// lists at an earlier resourceVersion (W4).
    pub previous: Option<StoredObject>,
    /// The resourceVersion of the write that made this change.
    pub resource_version: u64,
    /// The watch line for this event as first encoded (keyed by the apiVersion it was presented as),
    /// so N watchers of one type serialize a write once, not N times.
    pub encoded: OnceLock<(String, Bytes)>,
}
