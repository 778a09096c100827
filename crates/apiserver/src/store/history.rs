//! The watch history: the most recent events, for watches that resume from a resourceVersion (W6).
//! Bounded by count and by bytes (the JSON size of the objects the events carry), the oldest
//! forgotten first; a resume from before the oldest kept event is 410 Expired, as after an etcd
//! compaction.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use super::event::StoredEvent;
use crate::error::Error;

/// How much history is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many events.
    pub events: usize,
    /// At most this many bytes of the JSON of the objects the events carry.
    pub bytes: usize,
}

pub(crate) struct History {
    events: VecDeque<(Arc<StoredEvent>, usize)>,
    bytes: usize,
    limits: Limits,
    /// The resourceVersion the history starts after: what came before (an earlier process's writes)
    /// is not known.
    started: u64,
    /// The resourceVersion of the last change of each resource (by storage key), kept after its
    /// event is forgotten: a list at an older resourceVersion of a resource that has not changed
    /// since is the current list, however much else was written.
    changed: HashMap<String, u64>,
}

impl History {
    /// An empty history of the changes after `started`.
    pub fn new(limits: Limits, started: u64) -> History {
        History {
            events: VecDeque::new(),
            bytes: 0,
            limits,
            started,
            changed: HashMap::new(),
        }
    }

    /// Remembers `event`, which carries `size` bytes of JSON, and forgets the oldest events beyond
    /// the limits. The newest event is always kept, whatever its size: a watcher one event behind
    /// can still resume.
    pub fn push(&mut self, event: Arc<StoredEvent>, size: usize) {
        match self.changed.get_mut(&event.resource) {
            Some(changed) => *changed = event.resource_version,
            None => {
                self.changed
                    .insert(event.resource.clone(), event.resource_version);
            }
        }
        self.events.push_back((event, size));
        self.bytes += size;
        while self.events.len() > 1
            && (self.events.len() > self.limits.events.max(1) || self.bytes > self.limits.bytes)
        {
            if let Some((_, forgotten)) = self.events.pop_front() {
                self.bytes -= forgotten;
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.events.len()
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `resource` is known not to have changed after `since`.
    pub fn unchanged_since(&self, resource: &str, since: u64) -> bool {
        since >= self.started && self.changed.get(resource).is_none_or(|changed| *changed <= since)
    }

    /// The events after `since`, when `current` is the newest resourceVersion; 410 Expired when some
    /// of them are forgotten.
    pub fn after(&self, since: u64, current: u64) -> Result<Vec<Arc<StoredEvent>>, Error> {
        if since >= current {
            return Ok(Vec::new());
        }
        let oldest = self
            .events
            .front()
            .map(|(e, _)| e.resource_version)
            .unwrap_or(u64::MAX);
        if since + 1 < oldest {
            return Err(Error::Expired(format!(
                "too old resource version: {since} ({})",
                oldest.saturating_sub(1)
            )));
        }
        Ok(self
            .events
            .iter()
            .filter(|(e, _)| e.resource_version > since)
            .map(|(e, _)| e.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use serde_json::json;

    use super::*;
    use crate::store::EventType;

    fn event(resource_version: u64) -> Arc<StoredEvent> {
        Arc::new(StoredEvent {
            event_type: EventType::Added,
            resource: "/configmaps".into(),
            namespace: "default".into(),
            name: "x".into(),
            object: crate::store::StoredObject::encode(&json!({})),
            previous: None,
            resource_version,
            encoded: OnceLock::new(),
        })
    }

    fn versions(history: &History, since: u64, current: u64) -> Vec<u64> {
        history
            .after(since, current)
            .unwrap()
            .iter()
            .map(|e| e.resource_version)
            .collect()
    }

    #[test]
    fn w6_the_oldest_events_go_once_the_bytes_are_spent() {
        let mut history = History::new(
            Limits {
                events: 100,
                bytes: 1000,
            },
            0,
        );
        for rv in 1..=4 {
            history.push(event(rv), 300);
        }
        assert_eq!((history.len(), history.bytes()), (3, 900));
        assert_eq!(versions(&history, 1, 4), [2, 3, 4]);
        assert!(matches!(history.after(0, 4), Err(Error::Expired(_))));
    }

    #[test]
    fn w6_the_count_bounds_too_and_the_newest_event_is_kept_whatever_its_size() {
        let mut history = History::new(
            Limits {
                events: 2,
                bytes: 1000,
            },
            0,
        );
        for rv in 1..=3 {
            history.push(event(rv), 10);
        }
        assert_eq!(versions(&history, 1, 3), [2, 3]);
        history.push(event(4), 5000);
        assert_eq!((history.len(), history.bytes()), (1, 5000));
        assert_eq!(versions(&history, 3, 4), [4]);
        assert!(matches!(history.after(2, 4), Err(Error::Expired(_))));
        assert!(versions(&history, 4, 4).is_empty());
    }
}
