//! Leader election with a Lease, as controller-runtime does it: wait to hold it, keep renewing it, stop
//! at once when it is lost, and release it on shutdown so that the next replica need not wait it out.

use std::time::Duration;

use futures::{StreamExt, stream::BoxStream};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::{sync::watch, task::JoinHandle};

use crate::{Error, Result};

/// The Lease leader election holds, and for how long (`--leader-election-id`, `POD_NAMESPACE`,
/// `--lease-duration`).
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    pub name: String,
    pub namespace: String,
    pub duration_seconds: u64,
}

/// The shortest Lease: it is renewed a third of its duration before it ends, and at least one second
/// before, which must leave time between renewals.
pub const MIN_LEASE_DURATION_SECONDS: u64 = 3;

/// `seconds` if a Lease may last that long, else what to do instead.
pub fn check_lease_duration(seconds: u64) -> std::result::Result<u64, String> {
    if seconds < MIN_LEASE_DURATION_SECONDS {
        return Err(format!(
            "a Lease must last at least {MIN_LEASE_DURATION_SECONDS} seconds (it is renewed a third of its \
             duration, and at least a second, before it ends); got {seconds}"
        ));
    }
    Ok(seconds)
}

/// How long releasing the Lease may hold up the exit; past it, the Lease expires on its own.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A held Lease, renewed in the background until released.
pub struct Leadership {
    is_leader: watch::Receiver<bool>,
    renewal: JoinHandle<std::result::Result<LeaseManager, LeaseManagerError>>,
}

impl Leadership {
    /// Resolves when the Lease is no longer held: taken over, or renewal stopped.
    pub async fn lost(&mut self) {
        let _ = self.is_leader.wait_for(|leading| !*leading).await;
    }

    /// Why renewal ended on its own before this process led.
    async fn stopped(self) -> Error {
        let reason = match tokio::time::timeout(RELEASE_TIMEOUT, self.renewal).await {
            Ok(Ok(Err(error))) => error.to_string(),
            Ok(Ok(Ok(_))) => "the lease manager stopped".to_owned(),
            Ok(Err(join)) => format!("the lease manager failed: {join}"),
            Err(_) => "the lease manager stopped answering".to_owned(),
        };
        Error::LeaderElection(reason)
    }

    /// Stops renewing and clears the holder if it is still this process. The renewal task only lets go
    /// when its last receiver is gone, so the receiver is dropped and the task awaited: returning sooner
    /// would end the process with the Lease still held until it expires.
    pub async fn release(self) {
        let Leadership { is_leader, renewal } = self;
        let held = *is_leader.borrow();
        drop(is_leader);
        match tokio::time::timeout(RELEASE_TIMEOUT, renewal).await {
            Ok(Ok(Ok(_))) if held => tracing::info!("released the leader Lease"),
            Ok(Ok(Ok(_))) => tracing::debug!("stopped waiting for the leader Lease"),
            Ok(Ok(Err(error))) => {
                tracing::warn!(%error, "could not release the leader Lease; it will expire")
            }
            Ok(Err(join)) => tracing::warn!(%join, "Lease renewal task failed"),
            Err(_) => {
                tracing::warn!(timeout = ?RELEASE_TIMEOUT, "releasing the leader Lease timed out; it will expire")
            }
        }
    }
}

/// Waits until this process holds the Lease. `Ok(None)`: shutdown came first.
pub async fn acquire(
    client: &kube::Client,
    settings: &LeaseSettings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Option<Leadership>> {
    let identity = format!("{}-{}", hostname(), std::process::id());
    let duration = check_lease_duration(settings.duration_seconds).map_err(Error::Config)?;
    tracing::info!(%identity, lease = %settings.name, "waiting to become the leader");
    // Watched from before the lease manager first looks, so that no release can fall in between.
    let leases: Api<Lease> = Api::namespaced(client.clone(), &settings.namespace);
    let mut lease = tokio::select! {
        watch = LeaseWatch::start(leases, &settings.name) => watch,
        _ = shutdown.wait_for(|stopping| *stopping) => return Ok(None),
    };
    loop {
        let manager = LeaseManagerBuilder::new(client.clone(), &settings.name)
            .with_namespace(&settings.namespace)
            .with_identity(&identity)
            .with_duration(duration)
            .with_grace((duration / 3).max(1))
            .build()
            .await
            .map_err(|e| Error::LeaderElection(e.to_string()))?;
        let (is_leader, renewal) = manager.watch().await;
        let mut candidate = Leadership { is_leader, renewal };
        let step = tokio::select! {
            acquired = candidate.is_leader.wait_for(|leading| *leading) => match acquired {
                Ok(_) => Step::Acquired,
                Err(_) => Step::Failed,
            },
            _ = shutdown.wait_for(|stopping| *stopping) => Step::ShutDown,
            () = lease.released() => Step::Released,
        };
        match step {
            Step::Acquired => {
                tracing::info!(%identity, "became the leader");
                return Ok(Some(candidate));
            }
            Step::Failed => return Err(candidate.stopped().await),
            Step::ShutDown => {
                candidate.release().await;
                return Ok(None);
            }
            Step::Released => {
                // The lease manager sleeps out the holder's term before it looks again, even when the
                // holder has let go; a fresh one reads the freed Lease and takes it now.
                tracing::info!(lease = %settings.name, "the leader released the Lease; trying at once");
                candidate.release().await;
            }
        }
    }
}

enum Step {
    Acquired,
    Failed,
    ShutDown,
    Released,
}

/// Whether the Lease is held, as a watch sees it change.
struct LeaseWatch {
    events: BoxStream<'static, std::result::Result<watcher::Event<Lease>, watcher::Error>>,
    held: bool,
}

impl LeaseWatch {
    /// Watches Lease `name` and reads its current state (giving up on that after a few seconds: the
    /// watch only speeds a takeover up).
    async fn start(leases: Api<Lease>, name: &str) -> Self {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut watch = LeaseWatch {
            events: watcher(leases, config).default_backoff().boxed(),
            held: false,
        };
        let listed = async {
            while let Some(event) = watch.events.next().await {
                match event {
                    Ok(watcher::Event::InitApply(lease)) => watch.held = is_held(&lease),
                    Ok(watcher::Event::InitDone) => return,
                    _ => {}
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), listed).await;
        watch
    }

    /// Resolves when the Lease goes from held (by anyone) to free. A Lease that is free when watching
    /// starts is not a release: the lease manager takes it on its first look.
    async fn released(&mut self) {
        while let Some(event) = self.events.next().await {
            let held = match event {
                Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease)) => is_held(&lease),
                Ok(watcher::Event::Delete(_)) => false,
                _ => continue,
            };
            if self.held && !held {
                self.held = false;
                return;
            }
            self.held = held;
        }
        std::future::pending().await
    }
}

fn is_held(lease: &Lease) -> bool {
    lease
        .spec
        .as_ref()
        .and_then(|spec| spec.holder_identity.as_deref())
        .is_some_and(|holder| !holder.is_empty())
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "operator".into())
}
