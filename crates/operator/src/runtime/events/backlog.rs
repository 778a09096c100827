//! The recorder's bookkeeping, with no I/O: which Events wait to be written, which were written and
//! may still count repeats, and how much memory the waiting ones take.
//!
//! An Event is a series: what one object reported with one type and reason. Its first occurrence
//! creates it; a repeat within [`SERIES_WINDOW`] of the first is counted in its `series`, as client-go's
//! events broadcaster does, whether the Event is written yet or not. So a burst of repeats costs one
//! waiting entry and one write, however long it is. Only new series take memory in the backlog, and
//! only up to the budget: past it, a new series is dropped and counted.

use std::{
    collections::{HashMap, VecDeque},
    mem::size_of,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;

/// How long repeats count into one Event, as kube-runtime and client-go do.
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// Written Events remembered for their repeats, beyond those waiting for a write; the oldest idle ones
/// are forgotten first (a later repeat then starts a new Event: none is lost, one is not aggregated).
pub const REMEMBERED: usize = 1_024;

/// What makes two occurrences one series: the object (by uid), the type and the reason.
pub type SeriesKey = (String, &'static str, &'static str);

/// One occurrence, as a reconcile reports it.
#[derive(Debug, Clone)]
pub struct Occurrence {
    pub controller: &'static str,
    pub regarding: ObjectReference,
    pub type_: EventType,
    pub reason: &'static str,
    pub note: String,
}

impl Occurrence {
    /// The object it is about, `namespace/name`, for log lines.
    pub fn regarding(&self) -> String {
        format!(
            "{}/{}",
            self.regarding.namespace.as_deref().unwrap_or_default(),
            self.regarding.name.as_deref().unwrap_or_default()
        )
    }

    pub fn key(&self) -> SeriesKey {
        let object = match (&self.regarding.uid, &self.regarding.name) {
            (Some(uid), _) if !uid.is_empty() => uid.clone(),
            _ => self.regarding(),
        };
        (object, type_name(self.type_), self.reason)
    }

    /// What this occurrence holds in memory while it waits: its own size, its strings, its key and
    /// the slots of the map and the queue that point at it. An estimate (allocators round up), close
    /// enough to size a budget in MiB.
    fn footprint(&self, key: &SeriesKey) -> usize {
        let r = &self.regarding;
        let strings = [
            &r.api_version,
            &r.kind,
            &r.name,
            &r.namespace,
            &r.uid,
            &r.resource_version,
            &r.field_path,
        ]
        .iter()
        .map(|s| s.as_ref().map_or(0, String::len))
        .sum::<usize>()
            + self.note.len()
            + key.0.len();
        size_of::<Series>() + 2 * size_of::<SeriesKey>() + strings + MAP_SLOT_OVERHEAD
    }
}

/// A hash map's control bytes and spare capacity, per entry, on average.
const MAP_SLOT_OVERHEAD: usize = 16;

pub fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// The Event of a series once the API server has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventName {
    pub namespace: String,
    pub name: String,
    /// The object it is about, `namespace/name`, for log lines.
    pub regarding: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// Nothing to write: the API server has every occurrence.
    Idle,
    /// Waiting in the queue for a writer.
    Queued,
    /// A writer is writing it.
    Writing,
}

#[derive(Debug)]
struct Series {
    controller: &'static str,
    /// Until the Event exists: what it is created from.
    occurrence: Option<Occurrence>,
    event: Option<EventName>,
    /// Occurrences seen.
    count: i32,
    /// Occurrences the API server's Event holds.
    recorded: i32,
    first_seen: Instant,
    last_seen: k8s_openapi::jiff::Timestamp,
    progress: Progress,
    /// Memory charged to the backlog for it (while it waits to be created).
    charged: usize,
}

/// What a writer is to do next.
#[derive(Debug, Clone)]
pub enum Job {
    /// Create the Event, counting `count` occurrences (a series when more than one).
    Create {
        occurrence: Occurrence,
        count: i32,
        last_seen: k8s_openapi::jiff::Timestamp,
    },
    /// Set the Event's series to `count` occurrences.
    Update {
        event: EventName,
        count: i32,
        last_seen: k8s_openapi::jiff::Timestamp,
    },
}

/// How a writer's job ended.
#[derive(Debug)]
pub enum Outcome {
    Created(EventName),
    Updated,
    /// The API server did not take it, after retries: its unrecorded occurrences are lost.
    Failed,
}

/// What [`Backlog::record`] did with an occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A write was queued: wake a writer.
    Queued,
    /// Counted into a series already waiting or being written.
    Counted,
    /// The backlog is full: dropped.
    Dropped,
}

#[derive(Debug)]
pub struct Backlog {
    budget: usize,
    charged: usize,
    queue: VecDeque<SeriesKey>,
    /// Boxed: a burst grows the map to thousands of slots, and a hash map keeps its capacity, so a
    /// slot holds the key and a pointer (64 bytes) rather than a whole series (about 450). At 10,000
    /// Events written at once that was 1.8 MB of slots, most of them empty (jemalloc's heap profile).
    series: HashMap<SeriesKey, Box<Series>>,
    /// Series whose Event exists, oldest first, to forget the idle ones beyond [`REMEMBERED`].
    written: VecDeque<SeriesKey>,
    writing: usize,
}

impl Backlog {
    /// A backlog whose waiting Events may take `budget` bytes.
    pub fn new(budget: usize) -> Self {
        Backlog {
            budget,
            charged: 0,
            queue: VecDeque::new(),
            series: HashMap::new(),
            written: VecDeque::new(),
            writing: 0,
        }
    }

    /// Memory the waiting Events take.
    pub fn charged(&self) -> usize {
        self.charged
    }

    /// Nothing waits and nothing is being written.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.writing == 0
    }

    pub fn record(&mut self, occurrence: Occurrence, now: Instant) -> Recorded {
        let key = occurrence.key();
        let timestamp = k8s_openapi::jiff::Timestamp::now();
        if let Some(series) = self.series.get_mut(&key) {
            let expired = series.event.is_some()
                && series.progress == Progress::Idle
                && now.saturating_duration_since(series.first_seen) >= SERIES_WINDOW;
            if !expired {
                series.count += 1;
                series.last_seen = timestamp;
                if series.progress != Progress::Idle {
                    return Recorded::Counted;
                }
                series.progress = Progress::Queued;
                self.queue.push_back(key);
                return Recorded::Queued;
            }
            // Past the window: the next occurrence starts a new Event.
            self.series.remove(&key);
        }
        let charge = occurrence.footprint(&key);
        if self.charged + charge > self.budget {
            return Recorded::Dropped;
        }
        self.charged += charge;
        self.series.insert(
            key.clone(),
            Box::new(Series {
                controller: occurrence.controller,
                occurrence: Some(occurrence),
                event: None,
                count: 1,
                recorded: 0,
                first_seen: now,
                last_seen: timestamp,
                progress: Progress::Queued,
                charged: charge,
            }),
        );
        self.queue.push_back(key);
        Recorded::Queued
    }

    /// The next write, if any waits; the series is then being written until [`Self::finish`].
    pub fn next(&mut self) -> Option<(SeriesKey, Job)> {
        while let Some(key) = self.queue.pop_front() {
            let Some(series) = self.series.get_mut(&key) else {
                continue;
            };
            let job = match (&series.event, &series.occurrence) {
                (Some(event), _) => Job::Update {
                    event: event.clone(),
                    count: series.count,
                    last_seen: series.last_seen,
                },
                (None, Some(occurrence)) => Job::Create {
                    occurrence: occurrence.clone(),
                    count: series.count,
                    last_seen: series.last_seen,
                },
                (None, None) => continue,
            };
            series.progress = Progress::Writing;
            self.writing += 1;
            return Some((key, job));
        }
        None
    }

    /// A writer finished `key`'s job, which wrote `written` occurrences (the job's count). Returns the
    /// controller and how many occurrences were lost, if the write failed. Occurrences that came in
    /// meanwhile queue another write.
    pub fn finish(&mut self, key: &SeriesKey, written: i32, outcome: Outcome) -> (&'static str, u64) {
        self.writing = self.writing.saturating_sub(1);
        let Some(series) = self.series.get_mut(key) else {
            return ("", 0);
        };
        let controller = series.controller;
        let mut lost = 0;
        match outcome {
            Outcome::Created(event) => {
                series.event = Some(event);
                series.occurrence = None;
                series.recorded = written;
                self.charged -= std::mem::take(&mut series.charged);
                self.written.push_back(key.clone());
            }
            Outcome::Updated => series.recorded = written,
            Outcome::Failed if series.event.is_none() => {
                lost = series.count;
                self.charged -= series.charged;
                self.series.remove(key);
                return (controller, lost as u64);
            }
            Outcome::Failed => {
                // What the Event does not count stays uncounted; later repeats count on top of it.
                lost = written - series.recorded;
                series.recorded = written;
            }
        }
        if series.count > series.recorded {
            series.progress = Progress::Queued;
            self.queue.push_back(key.clone());
        } else {
            series.progress = Progress::Idle;
        }
        self.forget_beyond_remembered();
        if self.is_idle() {
            self.release_spare_capacity();
        }
        (controller, lost.max(0) as u64)
    }

    /// Gives back what a burst left behind: once nothing waits, the queue and the map need room for
    /// the remembered series only, and the allocator can return the rest.
    fn release_spare_capacity(&mut self) {
        if self.series.capacity() > 2 * self.series.len().max(REMEMBERED) {
            self.series.shrink_to(self.series.len());
        }
        if self.queue.capacity() > REMEMBERED {
            self.queue.shrink_to_fit();
        }
        if self.written.capacity() > 2 * REMEMBERED {
            self.written.shrink_to(REMEMBERED);
        }
    }

    /// Forgets the oldest idle written series while more than [`REMEMBERED`] are kept. One that waits
    /// for a write is kept, and looked at again later.
    fn forget_beyond_remembered(&mut self) {
        let mut looked = 0;
        while self.written.len() > REMEMBERED && looked < self.written.len() {
            let Some(key) = self.written.pop_front() else {
                break;
            };
            looked += 1;
            match self.series.get(&key) {
                Some(series) if series.event.is_some() && series.progress != Progress::Idle => {
                    self.written.push_back(key);
                }
                Some(series) if series.event.is_some() => {
                    self.series.remove(&key);
                }
                // Gone, or a newer series of the same key that is not written yet (it is in `written`
                // again once it is): nothing to forget here.
                _ => {}
            }
        }
    }

    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.series.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(uid: &str, reason: &'static str) -> Occurrence {
        Occurrence {
            controller: "postgres-writer",
            regarding: ObjectReference {
                api_version: Some("demo.yash.com/v1".into()),
                kind: Some("PostgresWriter".into()),
                name: Some(format!("w-{uid}")),
                namespace: Some("default".into()),
                uid: Some(uid.into()),
                ..ObjectReference::default()
            },
            type_: EventType::Normal,
            reason,
            note: format!("row default/w-{uid} written to students"),
        }
    }

    fn event(name: &str) -> EventName {
        EventName {
            namespace: "default".into(),
            name: name.into(),
            regarding: "default/w".into(),
        }
    }

    fn count_of(job: &Job) -> i32 {
        match job {
            Job::Create { count, .. } | Job::Update { count, .. } => *count,
        }
    }

    #[test]
    fn repeats_while_waiting_make_one_create_that_counts_them_all() {
        let now = Instant::now();
        let mut backlog = Backlog::new(1 << 20);
        assert_eq!(backlog.record(occurrence("a", "Written"), now), Recorded::Queued);
        assert_eq!(backlog.record(occurrence("a", "Written"), now), Recorded::Counted);
        assert_eq!(
            backlog.record(occurrence("a", "Deleted"), now),
            Recorded::Queued,
            "another reason"
        );
        let (key, job) = backlog.next().unwrap();
        assert!(matches!(job, Job::Create { count: 2, .. }), "{job:?}");
        assert_eq!(
            backlog.finish(&key, 2, Outcome::Created(event("w.1"))),
            ("postgres-writer", 0)
        );
        let (_, deleted) = backlog.next().unwrap();
        assert_eq!(count_of(&deleted), 1);
        assert!(backlog.next().is_none());
        assert!(!backlog.is_idle(), "one write is still out");
    }

    #[test]
    fn a_repeat_during_a_write_queues_an_update_with_the_new_count() {
        let now = Instant::now();
        let mut backlog = Backlog::new(1 << 20);
        backlog.record(occurrence("a", "Written"), now);
        let (key, job) = backlog.next().unwrap();
        assert_eq!(count_of(&job), 1);
        assert_eq!(backlog.record(occurrence("a", "Written"), now), Recorded::Counted);
        backlog.finish(&key, 1, Outcome::Created(event("w.1")));
        let (key, job) = backlog.next().unwrap();
        let Job::Update {
            event: name, count, ..
        } = job
        else {
            panic!("{job:?}")
        };
        assert_eq!((name, count), (event("w.1"), 2));
        backlog.finish(&key, 2, Outcome::Updated);
        assert!(backlog.is_idle());
        // A later repeat updates the same Event again.
        assert_eq!(backlog.record(occurrence("a", "Written"), now), Recorded::Queued);
        assert_eq!(count_of(&backlog.next().unwrap().1), 3);
    }

    #[test]
    fn after_the_window_a_repeat_starts_a_new_event() {
        let now = Instant::now();
        let mut backlog = Backlog::new(1 << 20);
        backlog.record(occurrence("a", "Written"), now);
        let (key, _) = backlog.next().unwrap();
        backlog.finish(&key, 1, Outcome::Created(event("w.1")));
        backlog.record(occurrence("a", "Written"), now + SERIES_WINDOW);
        assert!(matches!(backlog.next().unwrap().1, Job::Create { count: 1, .. }));
    }

    #[test]
    fn new_series_past_the_budget_are_dropped_and_the_budget_frees_as_events_are_written() {
        let now = Instant::now();
        let one = occurrence("a", "Written").footprint(&occurrence("a", "Written").key());
        let mut backlog = Backlog::new(3 * one);
        for uid in ["a", "b", "c"] {
            assert_eq!(backlog.record(occurrence(uid, "Written"), now), Recorded::Queued);
        }
        assert_eq!(backlog.charged(), 3 * one);
        assert_eq!(backlog.record(occurrence("d", "Written"), now), Recorded::Dropped);
        assert_eq!(
            backlog.record(occurrence("a", "Written"), now),
            Recorded::Counted,
            "a repeat costs nothing"
        );
        let (key, _) = backlog.next().unwrap();
        backlog.finish(&key, 2, Outcome::Created(event("w.a")));
        assert_eq!(backlog.charged(), 2 * one, "a written Event leaves the budget");
        assert_eq!(backlog.record(occurrence("d", "Written"), now), Recorded::Queued);
    }

    #[test]
    fn a_failed_write_reports_the_occurrences_it_loses() {
        let now = Instant::now();
        let mut backlog = Backlog::new(1 << 20);
        backlog.record(occurrence("a", "Written"), now);
        backlog.record(occurrence("a", "Written"), now);
        let (key, _) = backlog.next().unwrap();
        assert_eq!(backlog.finish(&key, 2, Outcome::Failed), ("postgres-writer", 2));
        assert_eq!(backlog.charged(), 0);
        assert!(backlog.is_idle());

        backlog.record(occurrence("b", "Written"), now);
        let (key, _) = backlog.next().unwrap();
        backlog.finish(&key, 1, Outcome::Created(event("w.b")));
        backlog.record(occurrence("b", "Written"), now);
        backlog.record(occurrence("b", "Written"), now);
        let (key, job) = backlog.next().unwrap();
        assert_eq!(count_of(&job), 3);
        assert_eq!(backlog.finish(&key, 3, Outcome::Failed), ("postgres-writer", 2));
        assert!(backlog.is_idle(), "not retried for ever");
    }

    #[test]
    fn written_series_are_forgotten_oldest_first_beyond_the_remembered_count() {
        let now = Instant::now();
        let mut backlog = Backlog::new(usize::MAX);
        for i in 0..REMEMBERED + 10 {
            backlog.record(occurrence(&i.to_string(), "Written"), now);
            let (key, _) = backlog.next().unwrap();
            backlog.finish(&key, 1, Outcome::Created(event(&format!("w.{i}"))));
        }
        assert_eq!(backlog.remembered(), REMEMBERED);
        assert!(
            matches!(backlog.record(occurrence("0", "Written"), now), Recorded::Queued)
                && matches!(backlog.next().unwrap().1, Job::Create { .. }),
            "the oldest was forgotten: its repeat is a new Event"
        );
        let newest = (REMEMBERED + 9).to_string();
        backlog.record(occurrence(&newest, "Written"), now);
        assert!(matches!(backlog.next().unwrap().1, Job::Update { count: 2, .. }));
    }
}
