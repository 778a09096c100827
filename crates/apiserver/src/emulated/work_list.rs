//! The objects a controller still has to look at, each once, in the order they came: the garbage
//! collector's and the workload controllers'. Walking an owner graph by recursion made the stack as
//! deep as the graph (a 10,000-link chain) or endless (an object owning itself), and a controller's
//! sync that sets another in motion would recurse the same way; a queue drained in one loop makes the
//! stack depth the same for any graph.

use std::{
    collections::{HashSet, VecDeque},
    hash::Hash,
};

pub(crate) struct WorkList<Item> {
    queue: VecDeque<Item>,
    /// What `queue` holds: an object already waiting its turn is not queued twice, since it is read
    /// afresh when its turn comes. This keeps the queue no longer than the number of objects.
    queued: HashSet<Item>,
    /// Set while a drain runs, so that work found meanwhile joins its queue instead of starting a
    /// nested drain (which would bring the recursion back).
    draining: bool,
}

// Not derived: the derive would ask `Item: Default`, which no item needs for an empty list.
impl<Item> Default for WorkList<Item> {
    fn default() -> Self {
        WorkList {
            queue: VecDeque::new(),
            queued: HashSet::new(),
            draining: false,
        }
    }
}

impl<Item: Clone + Eq + Hash> WorkList<Item> {
    pub(crate) fn push(&mut self, item: Item) {
        if self.queued.insert(item.clone()) {
            self.queue.push_back(item);
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Item> {
        let item = self.queue.pop_front()?;
        self.queued.remove(&item);
        Some(item)
    }

    /// Marks a drain as started; false when one already runs further up the stack.
    pub(crate) fn start_draining(&mut self) -> bool {
        !std::mem::replace(&mut self.draining, true)
    }

    pub(crate) fn stop_draining(&mut self) {
        self.draining = false;
    }

    /// Forgets everything: for a store lock poisoned by a panic, whose drain never finished, so that
    /// the next write drains again instead of queueing behind a drain that no longer runs.
    pub(crate) fn reset(&mut self) {
        *self = WorkList::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str) -> (String, String, String) {
        ("/configmaps".into(), "default".into(), name.into())
    }

    #[test]
    fn an_object_is_queued_once_until_its_turn() {
        let mut list = WorkList::default();
        list.push(item("a"));
        list.push(item("b"));
        list.push(item("a"));
        assert_eq!(list.pop(), Some(item("a")));
        list.push(item("a"));
        assert_eq!(list.pop(), Some(item("b")));
        assert_eq!(list.pop(), Some(item("a")));
        assert_eq!(list.pop(), None);
    }

    #[test]
    fn only_the_outermost_drain_runs() {
        let mut list = WorkList::<(String, String, String)>::default();
        assert!(list.start_draining());
        assert!(!list.start_draining());
        list.stop_draining();
        assert!(list.start_draining());
        list.reset();
        assert!(list.start_draining());
    }
}
