//! What the workload controllers have yet to sync, kept in the store's state: objects in the order
//! they were queued (each once), and what waits for a time.

use std::collections::BTreeSet;

use super::objects::Kind;
use crate::emulated::work_list::WorkList;

/// One object to sync: its kind, namespace and name.
pub(crate) type Item = (Kind, String, String);

#[derive(Default)]
pub(crate) struct Queue {
    /// What to sync now.
    pub(crate) now: WorkList<Item>,
    /// Objects to sync again at a time (seconds since the epoch), for what waits for time.
    pub(super) timers: BTreeSet<(i64, Item)>,
}

impl Queue {
    /// Syncs `kind` `namespace`/`name` again at `at` (seconds since the epoch).
    pub(crate) fn after(&mut self, at: i64, kind: Kind, namespace: &str, name: &str) {
        self.timers
            .insert((at, (kind, namespace.to_owned(), name.to_owned())));
    }
}
