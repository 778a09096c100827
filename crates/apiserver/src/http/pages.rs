//! Paginated lists (W4): the snapshot a list's first page was cut from, kept so that every following
//! page (asked for by `continue` token) shows the same state under the same resourceVersion. Bounded
//! by count and by bytes (the JSON size of the items kept), the oldest forgotten first; a token
//! whose snapshot is gone is 410 Expired, as after an etcd compaction.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use serde_json::Value;

use crate::error::{Error, Result};

/// How many snapshots, and how many bytes of them, are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub snapshots: usize,
    pub bytes: usize,
}

/// One paginated list's items.
pub struct Snapshot {
    pub items: Arc<Vec<Value>>,
    pub resource_version: String,
    bytes: usize,
}

struct Kept {
    id: u64,
    snapshot: Arc<Snapshot>,
}

pub struct PageCache {
    kept: Mutex<VecDeque<Kept>>,
    next_id: AtomicU64,
    limits: Limits,
}

/// Counts what is written, so that a JSON size is measured without building the JSON.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn json_size(items: &[Value]) -> usize {
    let mut counter = Counter(0);
    for item in items {
        // Writing a Value to a writer that never fails cannot fail.
        let _ = serde_json::to_writer(&mut counter, item);
    }
    counter.0
}

impl PageCache {
    pub fn new(limits: Limits) -> PageCache {
        PageCache {
            kept: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(0),
            limits,
        }
    }

    /// The token of the page of `items` (one list's snapshot) starting at `offset`.
    pub fn keep(&self, items: Arc<Vec<Value>>, resource_version: &str, offset: usize) -> String {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = kept.iter().find(|k| Arc::ptr_eq(&k.snapshot.items, &items)) {
            return format!("{}.{offset}", existing.id);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = json_size(&items);
        kept.push_back(Kept {
            id,
            snapshot: Arc::new(Snapshot {
                items,
                resource_version: resource_version.to_owned(),
                bytes,
            }),
        });
        // The newest snapshot stays whatever its size: its next page is being asked for.
        while kept.len() > 1
            && (kept.len() > self.limits.snapshots.max(1)
                || kept.iter().map(|k| k.snapshot.bytes).sum::<usize>() > self.limits.bytes)
        {
            kept.pop_front();
        }
        format!("{id}.{offset}")
    }

    pub fn resume(&self, token: &str) -> Result<(Arc<Snapshot>, usize)> {
        let parsed = token
            .split_once('.')
            .and_then(|(id, offset)| Some((id.parse::<u64>().ok()?, offset.parse().ok()?)));
        let (id, offset) =
            parsed.ok_or_else(|| Error::BadRequest(format!("invalid continue token {token:?}")))?;
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter()
            .find(|k| k.id == id)
            .map(|k| (k.snapshot.clone(), offset))
            .ok_or_else(|| {
                Error::Expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into())
            })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `count` items of about `each` bytes of JSON.
    fn items(count: usize, each: usize) -> Arc<Vec<Value>> {
        Arc::new((0..count).map(|_| json!("x".repeat(each - 2))).collect())
    }

    #[test]
    fn w4_the_oldest_snapshots_go_once_the_bytes_are_spent() {
        let cache = PageCache::new(Limits {
            snapshots: 64,
            bytes: 2500,
        });
        let tokens: Vec<String> = (0..3).map(|_| cache.keep(items(10, 100), "7", 5)).collect();
        assert!(matches!(cache.resume(&tokens[0]), Err(Error::Expired(_))));
        for token in &tokens[1..] {
            let (snapshot, offset) = cache.resume(token).unwrap();
            assert_eq!(
                (snapshot.items.len(), offset, snapshot.resource_version.as_str()),
                (10, 5, "7")
            );
        }
    }

    #[test]
    fn w4_the_count_bounds_too_and_the_newest_snapshot_is_kept_whatever_its_size() {
        let cache = PageCache::new(Limits {
            snapshots: 2,
            bytes: 1_000_000,
        });
        let tokens: Vec<String> = (0..3).map(|_| cache.keep(items(1, 10), "1", 1)).collect();
        assert!(cache.resume(&tokens[0]).is_err());
        assert!(cache.resume(&tokens[2]).is_ok());
        let small = PageCache::new(Limits {
            snapshots: 64,
            bytes: 10,
        });
        let big = small.keep(items(100, 100), "1", 50);
        assert_eq!(small.resume(&big).unwrap().0.items.len(), 100);
    }

    #[test]
    fn w4_the_same_snapshot_is_kept_once_and_bad_tokens_are_bad_requests() {
        let cache = PageCache::new(Limits {
            snapshots: 64,
            bytes: 1_000_000,
        });
        let snapshot = items(3, 10);
        let first = cache.keep(snapshot.clone(), "1", 1);
        let second = cache.keep(snapshot, "1", 2);
        assert_eq!(first.split('.').next(), second.split('.').next());
        assert!(matches!(cache.resume("nonsense"), Err(Error::BadRequest(_))));
        assert_eq!(json_size(&[json!({"a": 1})]), 7);
    }
}
