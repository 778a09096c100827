//! What the workload controllers have yet to sync, kept in the store's state: objects in the order
//! they were queued (each once), and what waits for a time.

use std::collections::{BTreeSet, HashSet, VecDeque};

use super::objects::Kind;

/// One object to sync: its kind, namespace and name.
pub(crate) type Item = (Kind, String, String);

#[derive(Default)]
pub(crate) struct Queue {
    queue: VecDeque<Item>,
    queued: HashSet<Item>,
    pub(super) draining: bool,
    /// Objects to sync again at a time (seconds since the epoch), for what waits for time.
    pub(super) timers: BTreeSet<(i64, Item)>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl Queue {
    pub(crate) fn push(&mut self, item: Item) {
        if self.queued.insert(item.clone()) {
            self.queue.push_back(item);
        }
    }

    pub(super) fn pop(&mut self) -> Option<Item> {
        let item = self.queue.pop_front()?;
        self.queued.remove(&item);
        Some(item)
    }

    /// Syncs `kind` `namespace`/`name` again at `at` (seconds since the epoch).
    pub(crate) fn after(&mut self, at: i64, kind: Kind, namespace: &str, name: &str) {
        self.timers
            .insert((at, (kind, namespace.to_owned(), name.to_owned())));
    }

    /// Forgets the queue (a lock poisoned by a panic mid-drain), keeping the timers.
    pub(crate) fn reset(&mut self) {
        self.queue.clear();
        self.queued.clear();
        self.draining = false;
    }
}
