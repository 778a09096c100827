//! The one reconcile loop every controller runs: a controller says what it reconciles, what else it
//! watches, and its observe/compare/act; the loop does the rest the same way for all: the watch and the
//! resync, instrumentation and back-off, the finalizer if it has one, the error policy, and shutdown.

use std::{future::Future, sync::Arc};

use kube::{
    Api,
    runtime::{
        Controller,
        controller::{self, Action},
        finalizer::{self, finalizer},
        reflector::ObjectRef,
        watcher,
    },
};

use super::{ControllerContext, Toolkit, Triggers, WorkQueue, backoff::Backoff, key, object_key};
use crate::{Error, Result};

/// A controller: its objects (namespaced, as every kind here is) and its observe/compare/act.
pub trait Reconciler: Send + Sync + Sized + 'static {
    type Object: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static;

    /// Names the controller everywhere: the metrics' label, readiness, the Events' reporter and the
    /// field manager of everything it applies.
    const NAME: &'static str;

    /// Which changes of its objects start a reconcile.
    const TRIGGERS: Triggers<Self::Object> = Triggers::EveryChange;

    /// A finalizer that holds each object until [`Self::cleanup`] has succeeded. None by default:
    /// children go with their owner through the garbage collector, which needs no operator.
    const FINALIZER: Option<&'static str> = None;

    /// What the controller watches besides its objects, e.g. the children it owns.
    fn watch(controller: Controller<Self::Object>, _ctx: &ControllerContext) -> Controller<Self::Object> {
        controller
    }

    /// Observe, compare, act: brings the world in line with `object`. With a finalizer, only for an
    /// object not being deleted.
    fn apply(&self, object: &Self::Object, kit: &Toolkit) -> impl Future<Output = Result<Action>> + Send;

    /// What must happen before an object being deleted may go; only with a finalizer.
    fn cleanup(&self, _object: &Self::Object, _kit: &Toolkit) -> impl Future<Output = Result<Action>> + Send {
        async { Ok(Action::await_change()) }
    }
}

/// What each reconcile of a running controller shares.
struct Running<R> {
    reconciler: R,
    kit: Toolkit,
    queue: WorkQueue,
}

/// Runs `reconciler` until shutdown.
pub async fn run<R: Reconciler>(ctx: ControllerContext, reconciler: R) -> Result<()> {
    let queue = WorkQueue::new(R::NAME, ctx.metrics.clone(), Backoff::default());
    let controller = R::watch(
        ctx.controller(ctx.watched::<R::Object>(), &queue, R::TRIGGERS),
        &ctx,
    );
    let running = Arc::new(Running {
        reconciler,
        kit: Toolkit::new(ctx.client.clone(), R::NAME, ctx.events.clone()),
        queue: queue.clone(),
    });
    drain(&queue, controller.run(reconcile, error_policy, running)).await;
    // Stopped: the Events its last reconciles recorded are written before the process goes, unless
    // the API server does not take them in time (the manager's shutdown has a bound of its own).
    if tokio::time::timeout(EVENTS_WRITTEN_WITHIN, ctx.events.idle())
        .await
        .is_err()
    {
        tracing::warn!(controller = R::NAME, "stopping with Events not yet written");
    }
    Ok(())
}

/// How long a stopping controller waits for the Event recorder to write what waits.
const EVENTS_WRITTEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The span of everything one reconcile of `key` logs, and its error policy: every line names the
/// controller and the object as `namespace/name`, however deep in the reconcile it is logged.
fn reconcile_span(controller: &'static str, key: &str) -> tracing::Span {
    tracing::info_span!("reconcile", controller = %controller, object = %key)
}

async fn reconcile<R: Reconciler>(object: Arc<R::Object>, running: Arc<Running<R>>) -> Result<Action> {
    use tracing::Instrument;
    let key = object_key(object.as_ref());
    let span = reconcile_span(R::NAME, &key);
    reconcile_object(object, &key, running.as_ref())
        .instrument(span)
        .await
}

async fn reconcile_object<R: Reconciler>(
    object: Arc<R::Object>,
    key: &str,
    running: &Running<R>,
) -> Result<Action> {
    let Running {
        reconciler,
        kit,
        queue,
    } = running;
    queue
        .instrument(key, async {
            let Some(name) = R::FINALIZER else {
                return reconciler.apply(&object, kit).await;
            };
            let api: Api<R::Object> = kit.api_beside(object.as_ref());
            finalizer(&api, name, object, |event| async {
                match event {
                    finalizer::Event::Apply(object) => reconciler.apply(&object, kit).await,
                    finalizer::Event::Cleanup(object) => reconciler.cleanup(&object, kit).await,
                }
            })
            .await
            .map_err(|e| Error::Finalizer(Box::new(e)))
        })
        .await
}

fn error_policy<R: Reconciler>(object: Arc<R::Object>, error: &Error, running: Arc<Running<R>>) -> Action {
    let key = object_key(object.as_ref());
    let _span = reconcile_span(R::NAME, &key).entered();
    running.queue.error_action(&key, error)
}

type Outcome<K> = Result<(ObjectRef<K>, Action), controller::Error<Error, watcher::Error>>;

/// Drives a running controller to its end. Reconciles that did not complete were already counted and
/// backed off by the work queue, so they are only logged here. A request for an object no longer in
/// the cache (deleted before its reconcile started, or before a retry) is the last word about that
/// object: what the queue kept for it goes. (A deletion is also seen on the watch, but a reconcile in
/// flight then may still fail after it and record a retry.)
async fn drain<K: kube::Resource>(queue: &WorkQueue, outcomes: impl futures::Stream<Item = Outcome<K>>) {
    use futures::StreamExt;
    outcomes
        .for_each(|outcome| async move {
            match outcome {
                Ok(_) => {}
                Err(controller::Error::ObjectNotFound(gone)) => {
                    queue.forget(&key(gone.namespace.as_deref(), &gone.name));
                }
                Err(error) => tracing::debug!(%error, "reconcile did not complete"),
            }
        })
        .await;
}
