//! Lists as they stood at a resourceVersion (W4): the pages of a paginated list all show the state of
//! its first page, as etcd's multi-version store gives kube-apiserver.
//!
//! Nothing is kept per list. A page is the current objects after the last key served, with the ones
//! changed since the list's resourceVersion put back as they were, from the event history (a change's
//! event carries the object before it). Fifty clients paging through a large collection at once then
//! cost no more memory than one; a token older than the history is 410 Expired, as a token older
//! than an etcd compaction is.

use std::{
    collections::{BTreeMap, BTreeSet},
    ops::Bound,
    sync::Arc,
};

use apimachinery::resource::ResourceType;

use super::{EventType, Store, StoredEvent, object::StoredObject, storage_key};
use crate::error::Error;

/// Where an object sits in a list: (namespace, "" when cluster-scoped; name).
pub(crate) type ListKey = (String, String);

/// Up to the asked number of objects of a list, in key order, at one resourceVersion.
pub(crate) struct Chunk {
    /// Each object as it is stored now, or as it was before a later change.
    pub items: Vec<(ListKey, StoredObject)>,
    /// How many objects of the list come after these.
    pub remaining: usize,
    pub resource_version: u64,
}

/// A continue token older than what the server still knows.
fn expired() -> Error {
    Error::Expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into())
}

/// The key an event's object has in its list.
fn event_key(event: &StoredEvent) -> ListKey {
    (event.namespace.clone(), event.name.clone())
}

impl Store {
    /// Up to `take` objects of `rt` (only `namespace`'s, when given) that come after `after` in key
    /// order, as they stood at resourceVersion `at` (`None`: now). 410 Expired when `at` is older than
    /// the history and the objects changed since.
    pub(crate) fn list_chunk(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        at: Option<u64>,
        after: Option<&ListKey>,
        take: usize,
    ) -> Result<Chunk, Error> {
        let key = storage_key(rt);
        let in_range =
            |k: &ListKey| namespace.is_none_or(|ns| ns == k.0) && after.is_none_or(|after| k > after);
        // Under the lock only pointers are copied: decoding and merging happen after it.
        let (current, current_remaining, changes, resource_version) = {
            let state = self.lock();
            let now = state.resource_version;
            let at = at.unwrap_or(now);
            if at > now {
                return Err(expired());
            }
            let changes: Vec<Arc<StoredEvent>> = if state.history.unchanged_since(&key, at) {
                Vec::new()
            } else {
                let events = state.history.after(at, now).map_err(|_| expired())?;
                events
                    .into_iter()
                    .filter(|event| event.resource == key && in_range(&event_key(event)))
                    .collect()
            };
            let changed: BTreeSet<ListKey> = changes.iter().map(|e| event_key(e)).collect();
            let lower = match (after, namespace) {
                (Some(after), _) => Bound::Excluded(after.clone()),
                (None, Some(ns)) => Bound::Included((ns.to_owned(), String::new())),
                (None, None) => Bound::Unbounded,
            };
            let mut range = state
                .objects
                .get(&key)
                .into_iter()
                .flat_map(move |objects| objects.range((lower.clone(), Bound::Unbounded)))
                .take_while(|((ns, _), _)| namespace.is_none_or(|wanted| wanted == ns))
                .filter(|(k, _)| !changed.contains(*k));
            let current: Vec<(ListKey, StoredObject)> = range
                .by_ref()
                .take(take)
                .map(|(k, object)| (k.clone(), object.clone()))
                .collect();
            (current, range.count(), changes, at)
        };
        // What changed since, as it was: the first change after the list's resourceVersion tells.
        let mut past: BTreeMap<ListKey, Option<StoredObject>> = BTreeMap::new();
        for event in &changes {
            past.entry(event_key(event))
                .or_insert_with(|| match event.event_type {
                    EventType::Added => None,
                    EventType::Modified | EventType::Deleted => {
                        event.previous.clone().or_else(|| Some(event.object.clone()))
                    }
                });
        }
        let past: Vec<(ListKey, StoredObject)> = past
            .into_iter()
            .filter_map(|(k, object)| Some((k, object?)))
            .collect();
        let total = current.len() + current_remaining + past.len();
        let mut items: Vec<(ListKey, StoredObject)> = merge_by_key(current, past).take(take).collect();
        items.shrink_to_fit();
        Ok(Chunk {
            remaining: total - items.len(),
            items,
            resource_version,
        })
    }
}

/// Two lists sorted by key, as one.
fn merge_by_key(
    current: Vec<(ListKey, StoredObject)>,
    past: Vec<(ListKey, StoredObject)>,
) -> impl Iterator<Item = (ListKey, StoredObject)> {
    let mut current = current.into_iter().peekable();
    let mut past = past.into_iter().peekable();
    std::iter::from_fn(move || {
        let take_past = match (current.peek(), past.peek()) {
            (Some((c, _)), Some((p, _))) => p < c,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_past { past.next() } else { current.next() }
    })
}
