//! The order of a graceful shutdown, so that a replica that is told to stop (a rolling upgrade, a
//! drained node, a scale-down) refuses no request on its way out:
//!
//! 1. At the signal, `/readyz` fails at once, and the controllers stop (their in-flight reconciles
//!    finish, then the Lease is released, so a standby takes over as soon as the work is done).
//! 2. The webhooks keep being served for the drain period (`--shutdown-drain-seconds`), each
//!    connection closed after its response: the API server reaches this pod through the webhook
//!    Service, and it takes a moment for the Service to stop sending new connections here.
//! 3. Then the webhook listener stops accepting, lets the requests in flight finish, and the process
//!    exits.
//!
//! The controllers stop at once rather than after the drain: nothing reaches them through a Service,
//! and a Lease released sooner is a leader elected sooner. controller-runtime orders it the same way
//! (controllers, then webhooks last). The drain and the controllers' stop run side by side, so the
//! process takes the longer of the two, within `--shutdown-drain-seconds` plus
//! [`GRACEFUL_SHUTDOWN_TIMEOUT`].

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{Result, runtime::readiness::Readiness, webhook::server::WebhookServer};

/// How long in-flight reconciles and webhook requests get after SIGTERM or Ctrl-C (after the drain
/// period) before the process exits anyway, with status 1 (controller-runtime's
/// GracefulShutdownTimeout). A clean shutdown exits 0 before it.
pub const GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The drain of one process: started with the process, acting at the shutdown signal.
pub struct Drain {
    /// Ends a drain period after the signal.
    period: JoinHandle<()>,
    shutdown: watch::Receiver<bool>,
}

impl Drain {
    /// At `shutdown`, fails `/readyz` and closes the webhooks' connections after each response, for
    /// `period` (none when no webhooks are served: nothing waits on this pod then).
    pub fn start(
        readiness: Arc<Readiness>,
        webhooks: Option<&WebhookServer>,
        shutdown: watch::Receiver<bool>,
        period: Duration,
    ) -> Drain {
        let draining = webhooks.map(WebhookServer::drain_handle);
        let mut signalled = shutdown.clone();
        let period = tokio::spawn(async move {
            // A dropped sender is no signal: the process ends some other way.
            if signalled.wait_for(|stop| *stop).await.is_err() {
                return;
            }
            readiness.shut_down();
            let Some(draining) = draining else {
                return;
            };
            draining.start();
            tracing::info!(
                seconds = period.as_secs(),
                "not ready; serving webhooks for the drain period"
            );
            tokio::time::sleep(period).await;
        });
        Drain { period, shutdown }
    }

    /// After the controllers ended with `outcome`: on a shutdown, waits for the rest of the drain
    /// period, then stops `webhooks` gracefully. A failure or a lost Lease ends the process at once,
    /// as before: another replica is already serving.
    pub async fn finish(self, webhooks: Option<WebhookServer>, outcome: Result<()>) -> Result<()> {
        if outcome.is_err() || !*self.shutdown.borrow() {
            self.period.abort();
            return outcome;
        }
        let _ = self.period.await;
        if let Some(webhooks) = webhooks {
            webhooks.shut_down().await;
            tracing::info!("webhook server stopped");
        }
        outcome
    }
}
