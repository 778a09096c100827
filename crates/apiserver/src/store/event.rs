//! One change to the stored objects, as the watch stream and the history ring carry it.

use std::sync::OnceLock;

use bytes::Bytes;

use super::object::StoredObject;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
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
    pub event_type: EventType,
    /// Storage key of the resource: `group/plural`.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    /// The object after the change (its final state for DELETED), as stored: the bytes are shared
    /// with the store, so the history costs little more than the pointers while objects stand.
    pub object: StoredObject,
    /// The object before the change (MODIFIED and DELETED), for selector enter/leave (W11) and for
    /// lists at an earlier resourceVersion (W4).
    pub previous: Option<StoredObject>,
    pub resource_version: u64,
    /// The watch line for this event as first encoded (keyed by the apiVersion it was presented as),
    /// so N watchers of one type serialize a write once, not N times.
    pub encoded: OnceLock<(String, Bytes)>,
}
