//! Events, recorded off the reconcile's path as client-go's broadcaster records them: a reconcile
//! hands its Event to a bounded queue and goes on, and a task per controller publishes the queue
//! through kube-runtime's `Recorder` (which turns repeats into a series). Waiting for each Event's
//! round trip made it a third API call on the path of every row write, a third of the time of a
//! burst. When the API server falls so far behind that the queue fills, new Events are dropped and
//! logged: an Event is a notice, never worth blocking a reconcile for.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};
use tokio::sync::mpsc;

/// Events waiting to be published; a burst larger than this loses its newest Events.
const QUEUE: usize = 4_096;
/// Events in flight at once: enough to keep up with a burst without flooding the API server.
const IN_FLIGHT: usize = 4;

#[derive(Clone)]
pub struct EventPublisher {
    queue: mpsc::Sender<(ObjectReference, Event)>,
}

impl EventPublisher {
    /// Starts the publishing task; it ends when the last clone of the publisher is dropped, after
    /// publishing what is queued.
    pub fn start(recorder: Recorder) -> EventPublisher {
        use futures::StreamExt;
        let (queue, pending) = mpsc::channel::<(ObjectReference, Event)>(QUEUE);
        let pending = futures::stream::unfold(pending, |mut pending| async move {
            pending.recv().await.map(|event| (event, pending))
        });
        tokio::spawn(pending.for_each_concurrent(IN_FLIGHT, move |(object, event)| {
            let recorder = recorder.clone();
            async move {
                if let Err(error) = recorder.publish(&event, &object).await {
                    tracing::warn!(%error, reason = event.reason, "could not record an event");
                }
            }
        }));
        EventPublisher { queue }
    }

    /// Queues an Event about `object`; returns at once.
    pub fn publish(&self, object: ObjectReference, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        if self.queue.try_send((object, event)).is_err() {
            tracing::debug!(reason, "event queue full; event dropped");
        }
    }
}
