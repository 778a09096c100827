//! Events (`events.k8s.io/v1`), recorded off the reconcile's path: a reconcile hands its Event to the
//! recorder and goes on, never waiting for the API server; writers publish the backlog.
//!
//! Nothing is dropped while the backlog has memory left: repeats of an Event (same object, type and
//! reason within six minutes) are counted in its `series` rather than queued again, as client-go's
//! events broadcaster aggregates them, and new Events wait in a backlog bounded in bytes
//! (`--event-backlog-mib`). Past the bound, or when the API server refuses an Event after retries, the
//! Event is dropped, counted in `controller_events_dropped_total` and logged at warn, at most every
//! few seconds. Hand-written rather than kube-runtime's `Recorder`, which writes each Event on the
//! caller's path and keeps every past Event in memory, scanned on every publish.

mod backlog;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use backlog::{Backlog, EventName, Job, Occurrence, Outcome, Recorded, SeriesKey, type_name};
use k8s_openapi::{api::events::v1::Event, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp};
use kube::{
    Api,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use prometheus_client::metrics::{counter::Counter, family::Family, gauge::Gauge};
use serde_json::json;
use tokio::sync::Notify;

pub use kube::runtime::events::EventType;

use super::metrics::{ControllerLabels, Metrics};

/// Events written at once. A reconcile that writes a row makes about two writes of its own (finalizer,
/// status) for each Event, so with the default 64 concurrent reconciles 32 writers keep pace: a burst's
/// Events are written while its resources converge, not long after (with 4, two thirds of a burst of
/// 10,000 were still waiting when every resource was Ready: `cargo bench -p operator --bench
/// convergence`). Idle writers cost a parked task each.
const WRITERS: usize = 32;
/// Tries per write before its Event is given up (client-go's broadcaster tries 12 times); the waits
/// between them double from [`FIRST_RETRY`] up to [`LONGEST_RETRY`], about half a minute in all.
const ATTEMPTS: u32 = 8;
const FIRST_RETRY: Duration = Duration::from_millis(200);
const LONGEST_RETRY: Duration = Duration::from_secs(10);
/// Drops are logged at most this often; the rest are summed into the next line.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Records Events for every controller of the process. Cheap to clone; the writers stop once the last
/// clone is dropped and what waits is written.
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
    _open: Arc<Open>,
}

struct Shared {
    client: kube::Client,
    backlog: Mutex<Backlog>,
    /// A write was queued, or the recorder closed.
    work: Notify,
    /// The backlog became idle.
    idle: Notify,
    closed: AtomicBool,
    dropped: Family<ControllerLabels, Counter>,
    backlog_bytes: Gauge,
    warnings: Mutex<DropWarnings>,
}

/// Closes the recorder when the last [`EventRecorder`] goes.
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.work.notify_waiters();
    }
}

/// Drops not logged yet, so that a burst of them is one warn line every [`WARN_EVERY`].
#[derive(Default)]
struct DropWarnings {
    last: Option<Instant>,
    unreported: u64,
}

impl EventRecorder {
    /// Starts the writers; Events waiting to be written may take `backlog_bytes` of memory.
    pub fn start(client: kube::Client, metrics: &Metrics, backlog_bytes: usize) -> Self {
        let shared = Arc::new(Shared {
            client,
            backlog: Mutex::new(Backlog::new(backlog_bytes)),
            work: Notify::new(),
            idle: Notify::new(),
            closed: AtomicBool::new(false),
            dropped: metrics.events_dropped_total.clone(),
            backlog_bytes: metrics.event_backlog_bytes.clone(),
            warnings: Mutex::default(),
        });
        for _ in 0..WRITERS {
            tokio::spawn(write_events(shared.clone()));
        }
        EventRecorder {
            _open: Arc::new(Open(shared.clone())),
            shared,
        }
    }

    /// Records an Event from `controller` about `regarding`; returns at once.
    pub fn publish(
        &self,
        controller: &'static str,
        regarding: k8s_openapi::api::core::v1::ObjectReference,
        type_: EventType,
        reason: &'static str,
        note: String,
    ) {
        let occurrence = Occurrence {
            controller,
            regarding,
            type_,
            reason,
            note,
        };
        let recorded = {
            let mut backlog = self.shared.lock();
            let recorded = backlog.record(occurrence, Instant::now());
            self.shared.backlog_bytes.set(backlog.charged() as i64);
            recorded
        };
        match recorded {
            Recorded::Queued => self.shared.work.notify_one(),
            Recorded::Counted => {}
            Recorded::Dropped => {
                self.shared
                    .lost(controller, 1, "the Event backlog is full (--event-backlog-mib)")
            }
        }
    }

    /// Waits until every Event recorded so far has been written (or given up).
    pub async fn idle(&self) {
        loop {
            let notified = self.shared.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.lock().is_idle() {
                return;
            }
            notified.await;
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `count` Events of `controller` are not recorded, because of `cause`.
    fn lost(&self, controller: &'static str, count: u64, cause: &str) {
        self.dropped
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .inc_by(count);
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        warnings.unreported += count;
        if warnings.last.is_none_or(|last| last.elapsed() >= WARN_EVERY) {
            tracing::warn!(
                dropped = warnings.unreported,
                cause,
                "Events dropped (controller_events_dropped_total counts them all)"
            );
            warnings.unreported = 0;
            warnings.last = Some(Instant::now());
        }
    }

    /// Logs the drops the rate limit held back, once the burst that caused them is over.
    fn report_held_back_drops(&self) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        if warnings.unreported > 0 {
            tracing::warn!(
                dropped = warnings.unreported,
                "more Events were dropped in the same burst"
            );
            warnings.unreported = 0;
            warnings.last = Some(Instant::now());
        }
    }
}

/// One writer: takes the next write from the backlog until the recorder is closed and nothing waits.
async fn write_events(shared: Arc<Shared>) {
    loop {
        let notified = shared.work.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let next = shared.lock().next();
        let Some((key, job)) = next else {
            if shared.closed.load(Ordering::SeqCst) && shared.lock().is_idle() {
                return;
            }
            notified.await;
            continue;
        };
        let written = match &job {
            Job::Create { count, .. } | Job::Update { count, .. } => *count,
        };
        let outcome = write(&shared.client, &key, job).await;
        let (controller, lost, idle) = {
            let mut backlog = shared.lock();
            let (controller, lost) = backlog.finish(&key, written, outcome);
            shared.backlog_bytes.set(backlog.charged() as i64);
            (controller, lost, backlog.is_idle())
        };
        if lost > 0 {
            shared.lost(controller, lost, "the API server did not take the Event");
        }
        if !idle {
            // Occurrences that came in during the write may have queued another.
            shared.work.notify_one();
        } else {
            shared.report_held_back_drops();
            shared.idle.notify_waiters();
            // Writers waiting to close may go now.
            shared.work.notify_waiters();
        }
    }
}

/// Writes one job, retrying what may succeed later; [`Outcome::Failed`] once it gives up.
async fn write(client: &kube::Client, key: &SeriesKey, job: Job) -> Outcome {
    let mut attempt = 0;
    loop {
        let result = match &job {
            Job::Create {
                occurrence,
                count,
                last_seen,
            } => create(client, occurrence, *count, *last_seen)
                .await
                .map(Outcome::Created),
            Job::Update {
                event,
                count,
                last_seen,
            } => update(client, event, *count, *last_seen)
                .await
                .map(|()| Outcome::Updated),
        };
        let error = match result {
            Ok(outcome) => return outcome,
            Err(error) => error,
        };
        attempt += 1;
        if attempt >= ATTEMPTS || !worth_retrying(&error) {
            let object = match &job {
                Job::Create { occurrence, .. } => occurrence.regarding(),
                Job::Update { event, .. } => event.regarding.clone(),
            };
            tracing::warn!(%error, object, reason = key.2, attempts = attempt, "could not record an Event");
            return Outcome::Failed;
        }
        // A name taken (two Events of one object in the same nanosecond) is retried at once with the
        // next name; anything else after a back-off.
        if !is_conflict(&error) {
            let wait = FIRST_RETRY.saturating_mul(1u32 << (attempt - 1).min(16));
            tokio::time::sleep(wait.min(LONGEST_RETRY)).await;
        }
    }
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// Errors that may go away: a name clash, throttling, the server's own trouble, no connection. A
/// refusal (invalid, forbidden, namespace gone) will not.
fn worth_retrying(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 409 || status.code == 429 || status.code >= 500,
        kube::Error::SerdeError(_) | kube::Error::BuildRequest(_) => false,
        _ => true,
    }
}

async fn create(
    client: &kube::Client,
    occurrence: &Occurrence,
    count: i32,
    last_seen: Timestamp,
) -> kube::Result<EventName> {
    let now = MicroTime(Timestamp::now());
    // Events of cluster-scoped objects live in `default`, as kube-runtime and client-go put them.
    let namespace = occurrence
        .regarding
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".into());
    // A series needs two occurrences at least (the API server refuses `count: 1`).
    let series = (count > 1).then_some(k8s_openapi::api::events::v1::EventSeries {
        count,
        last_observed_time: MicroTime(last_seen),
    });
    let body = Event {
        metadata: ObjectMeta {
            // client-go's naming: the object's name and the time in hex nanoseconds. (A readable
            // generateName prefix would end in '.', which names cannot.)
            name: Some(format!(
                "{}.{:x}",
                occurrence.regarding.name.as_deref().unwrap_or("event"),
                now.0.as_nanosecond()
            )),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        action: Some("Reconcile".into()),
        event_time: Some(now),
        note: Some(occurrence.note.clone()),
        reason: Some(occurrence.reason.into()),
        regarding: Some(occurrence.regarding.clone()),
        reporting_controller: Some(occurrence.controller.into()),
        reporting_instance: Some(occurrence.controller.into()),
        series,
        type_: Some(type_name(occurrence.type_).into()),
        ..Event::default()
    };
    let created = Api::<Event>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &body)
        .await?;
    Ok(EventName {
        namespace,
        name: created.metadata.name.unwrap_or_default(),
        regarding: occurrence.regarding(),
    })
}

async fn update(
    client: &kube::Client,
    event: &EventName,
    count: i32,
    last_seen: Timestamp,
) -> kube::Result<()> {
    let series = json!({"series": {"count": count, "lastObservedTime": MicroTime(last_seen)}});
    Api::<Event>::namespaced(client.clone(), &event.namespace)
        .patch(&event.name, &PatchParams::default(), &Patch::Merge(series))
        .await?;
    Ok(())
}
