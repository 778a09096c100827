//! Events (`events.k8s.io/v1`), recorded off the reconcile's path as client-go's broadcaster records
//! them: a reconcile hands its Event to a bounded queue and goes on, and a task per controller
//! publishes the queue. When the API server falls so far behind that the queue fills, new Events are
//! dropped and logged: an Event is a notice, never worth blocking a reconcile for.
//!
//! A repeat of an Event (same object, type, reason and action within six minutes) is counted in the
//! first one's `series` instead of creating another, as kube-runtime's `Recorder` and client-go do.
//! Hand-written rather than built on that `Recorder` because its memory of past Events is unbounded
//! and scanned in full on every publish: at 10,000 resources each writing a row that was ~10,000
//! cached Events, quadratic work and ~15 MiB for a burst. Here the memory is bounded in count.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::sync::mpsc;

pub use kube::runtime::events::EventType;

/// Events waiting to be published; a burst larger than this loses its newest Events.
const QUEUE: usize = 4_096;
/// Events in flight at once: enough to keep up with a burst without flooding the API server.
const IN_FLIGHT: usize = 4;
/// How long a repeat counts into the same Event, as kube-runtime and client-go do.
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);
/// Past Events remembered for series; the oldest are forgotten first.
const REMEMBERED: usize = 1_024;

#[derive(Clone)]
pub struct EventPublisher {
    queue: mpsc::Sender<Pending>,
}

struct Pending {
    regarding: ObjectReference,
    type_: EventType,
    reason: String,
    note: String,
}

/// What makes two Events the same Event: the object (by uid), type and reason.
type SeriesKey = (String, &'static str, String);

/// An Event already created, whose repeats are counted in its series.
struct Published {
    namespace: String,
    name: String,
    count: i32,
    first_seen: Instant,
}

/// The Events of the last window, bounded in count.
#[derive(Default)]
struct Memory {
    published: HashMap<SeriesKey, Published>,
    order: VecDeque<SeriesKey>,
}

impl Memory {
    /// The repeat count and Event name for `key`, if it was published within the window.
    fn repeat(&mut self, key: &SeriesKey) -> Option<(String, String, i32)> {
        let published = self.published.get_mut(key)?;
        if published.first_seen.elapsed() > SERIES_WINDOW {
            return None;
        }
        published.count += 1;
        Some((
            published.namespace.clone(),
            published.name.clone(),
            published.count,
        ))
    }

    fn remember(&mut self, key: SeriesKey, namespace: String, name: String) {
        let published = Published {
            namespace,
            name,
            count: 1,
            first_seen: Instant::now(),
        };
        if self.published.insert(key.clone(), published).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.published.remove(&oldest);
            }
        }
    }
}

impl EventPublisher {
    /// Starts the publishing task of `controller`; it ends when the last clone of the publisher is
    /// dropped, after publishing what is queued.
    pub fn start(client: kube::Client, controller: &'static str) -> EventPublisher {
        use futures::StreamExt;
        let (queue, pending) = mpsc::channel::<Pending>(QUEUE);
        let memory = Arc::new(Mutex::new(Memory::default()));
        let pending = futures::stream::unfold(pending, |mut pending| async move {
            pending.recv().await.map(|event| (event, pending))
        });
        tokio::spawn(pending.for_each_concurrent(IN_FLIGHT, move |event| {
            let (client, memory) = (client.clone(), memory.clone());
            async move {
                let reason = event.reason.clone();
                if let Err(error) = publish(&client, controller, &memory, event).await {
                    tracing::warn!(%error, reason, "could not record an event");
                }
            }
        }));
        EventPublisher { queue }
    }

    /// Queues an Event about `regarding`; returns at once.
    pub fn publish(&self, regarding: ObjectReference, type_: EventType, reason: &str, note: String) {
        let pending = Pending {
            regarding,
            type_,
            reason: reason.to_owned(),
            note,
        };
        if self.queue.try_send(pending).is_err() {
            tracing::debug!(reason, "event queue full; event dropped");
        }
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

async fn publish(
    client: &kube::Client,
    controller: &'static str,
    memory: &Mutex<Memory>,
    event: Pending,
) -> kube::Result<()> {
    let now = MicroTime(Timestamp::now());
    let key: SeriesKey = (
        event.regarding.uid.clone().unwrap_or_default(),
        type_name(event.type_),
        event.reason.clone(),
    );
    let repeat = memory.lock().unwrap_or_else(|p| p.into_inner()).repeat(&key);
    if let Some((namespace, name, count)) = repeat {
        let series = json!({"series": {"count": count, "lastObservedTime": now}});
        Api::<Event>::namespaced(client.clone(), &namespace)
            .patch(&name, &PatchParams::default(), &Patch::Merge(series))
            .await?;
        return Ok(());
    }
    // Events of cluster-scoped objects live in `default`, as kube-runtime and client-go put them.
    let namespace = event
        .regarding
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".into());
    let body = Event {
        metadata: ObjectMeta {
            // client-go's naming: the object's name and the time in hex nanoseconds. (A readable
            // generateName prefix would end in '.', which names cannot.)
            name: Some(format!(
                "{}.{:x}",
                event.regarding.name.as_deref().unwrap_or("event"),
                now.0.as_nanosecond()
            )),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        action: Some("Reconcile".into()),
        event_time: Some(now),
        note: Some(event.note),
        reason: Some(event.reason),
        regarding: Some(event.regarding),
        reporting_controller: Some(controller.into()),
        reporting_instance: Some(controller.into()),
        type_: Some(type_name(event.type_).into()),
        ..Event::default()
    };
    let created = Api::<Event>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &body)
        .await?;
    if let Some(name) = created.metadata.name {
        memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remember(key, namespace, name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uid: &str) -> SeriesKey {
        (uid.into(), "Normal", "Written".into())
    }

    #[test]
    fn a_repeat_within_the_window_counts_into_the_first_event() {
        let mut memory = Memory::default();
        assert_eq!(memory.repeat(&key("a")), None);
        memory.remember(key("a"), "default".into(), "w.1".into());
        assert_eq!(
            memory.repeat(&key("a")),
            Some(("default".into(), "w.1".into(), 2))
        );
        assert_eq!(
            memory.repeat(&key("a")),
            Some(("default".into(), "w.1".into(), 3))
        );
        assert_eq!(memory.repeat(&key("b")), None, "another object is another Event");
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_oldest_first() {
        let mut memory = Memory::default();
        for i in 0..REMEMBERED + 10 {
            memory.remember(key(&i.to_string()), "default".into(), format!("e.{i}"));
        }
        assert_eq!(memory.published.len(), REMEMBERED);
        assert_eq!(memory.repeat(&key("0")), None);
        assert!(memory.repeat(&key(&(REMEMBERED + 9).to_string())).is_some());
    }
}
