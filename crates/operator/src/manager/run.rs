//! The manager: serves metrics and probes, optionally waits to lead, runs the chosen controllers, and
//! stops them on shutdown (in-flight reconciles finish) or at once when leadership is lost.

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use serving::rustls;
use tokio::{sync::watch, task::JoinSet};

use super::{
    cli::{ControllerName, RunArgs, bind_address},
    leader::{self, Leadership},
    metrics_access::MetricsAccess,
    probes::{self, MetricsSecurity},
    shutdown::Drain,
};
use crate::{
    Error, Result,
    controllers::{postgres_writer, vote_config, web_app},
    runtime::{ControllerContext, events::EventRecorder, metrics::Metrics, readiness::Readiness},
    webhook,
};

pub use super::shutdown::GRACEFUL_SHUTDOWN_TIMEOUT;

/// Runs until `shutdown` turns true, a controller fails, or leadership is lost (an error). A held Lease
/// is released on the way out, so that another replica takes over at once; on a shutdown the webhooks
/// are drained first (see [`super::shutdown`]).
pub async fn run(client: kube::Client, args: RunArgs, shutdown: watch::Receiver<bool>) -> Result<()> {
    let manager = Manager::start(&args, &client).await?;
    // Before the election: a standby answers admission and conversion as the leader does.
    let mut local = None;
    let webhooks = match webhook_address(&args)? {
        None => None,
        Some(addr) if !args.webhook_cert_secret.is_empty() => {
            Some(serve_webhooks_self_issued(&manager, &client, addr, &args).await?)
        }
        Some(addr) if super::local_webhooks::wanted(&args) => {
            let serve = async |bind, tls| manager.serve_webhooks(bind, tls, &args).await;
            // On this machine for this run alone, behind no Service: nothing to drain.
            local = super::local_webhooks::start(serve, &client, addr, &args).await?;
            None
        }
        Some(addr) => serve_webhooks_from_cert_dir(&manager, addr, &args).await?,
    };
    let drain = Drain::start(
        manager.readiness.clone(),
        webhooks.as_ref(),
        shutdown.clone(),
        args.shutdown_drain(),
    );
    let outcome = manager.run_controllers(client, args, shutdown).await;
    // Outside a cluster: the conversion put back as it was, while the webhooks still answer.
    if let Some(local) = local {
        local.restore().await;
    }
    drain.finish(webhooks, outcome).await
}

/// What the manager's parts share: the metrics every part records, the readiness the probes report,
/// and the database pool when postgres-writer runs (its controller and the validating webhook use it).
pub struct Manager {
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    pool: Option<crate::db::Pool>,
}

impl Manager {
    /// Serves /metrics (its reviews of scrapers through `client`) and the probes as `args` say, and
    /// opens the database pool if it is needed.
    pub async fn start(args: &RunArgs, client: &kube::Client) -> Result<Self> {
        let metrics = Arc::new(Metrics::new());
        let readiness = Arc::new(Readiness::default());
        // Not ready before every controller's cache has synced. A standby replica runs no controller
        // and is ready: it is healthy, only not leading.
        if !args.leader_elect {
            expect_controllers(&readiness, &args.controllers);
        }
        if let Some(addr) = bind_address(&args.metrics_bind_address).map_err(Error::Config)? {
            let secure = args.metrics_secure_at(addr);
            let security = if secure {
                MetricsSecurity::Secure {
                    tls: Box::new(probes::metrics_tls(args.metrics_cert_dir.as_deref())?),
                    access: Arc::new(MetricsAccess::new(client.clone())),
                }
            } else {
                MetricsSecurity::Plain
            };
            let bound = probes::serve_metrics(addr, metrics.clone(), security)
                .await
                .map_err(|e| Error::Config(format!("metrics server on {addr}: {e}")))?;
            tracing::info!(%bound, secure, "serving /metrics");
        }
        if let Some(addr) = bind_address(&args.health_probe_bind_address).map_err(Error::Config)? {
            let bound = probes::serve_probes(addr, readiness.clone())
                .await
                .map_err(|e| Error::Config(format!("probe server on {addr}: {e}")))?;
            tracing::info!(%bound, "serving /healthz and /readyz");
        }
        // A Postgres pool is only needed, and only configured, when its controller runs.
        let pool = if args.controllers.contains(&ControllerName::PostgresWriter) {
            Some(args.database.connect()?)
        } else {
            None
        };
        Ok(Self {
            metrics,
            readiness,
            pool,
        })
    }

    /// Serves the webhooks on `addr` with `tls`, in the background; `/readyz` includes the listener.
    pub async fn serve_webhooks(
        &self,
        addr: SocketAddr,
        tls: rustls::ServerConfig,
        args: &RunArgs,
    ) -> Result<webhook::server::WebhookServer> {
        let tables = self.pool.as_ref().map(|pool| webhook::validation::TableCheck {
            store: crate::db::RowStore::new(pool.clone(), self.metrics.database.clone()),
            auto_create: args.postgres_writer.auto_create_tables,
        });
        let state = webhook::server::WebhookState {
            metrics: self.metrics.clone(),
            tables,
        };
        let server = webhook::server::serve(addr, tls, state, &self.readiness)
            .await
            .map_err(|e| Error::Config(format!("webhook server on {addr}: {e}")))?;
        tracing::info!(bound = %server.bound, "serving webhooks");
        Ok(server)
    }

    /// Waits to lead if `args` ask for leader election, then runs the chosen controllers until
    /// `shutdown`, a failure, or the loss of leadership.
    pub async fn run_controllers(
        self,
        client: kube::Client,
        args: RunArgs,
        shutdown: watch::Receiver<bool>,
    ) -> Result<()> {
        let Manager {
            metrics,
            readiness,
            pool,
        } = self;
        let mut leadership = None;
        if args.leader_elect {
            match leader::acquire(&client, &args.lease(), shutdown.clone()).await? {
                Some(held) => leadership = Some(held),
                None => return Ok(()), // Shut down while waiting to lead.
            }
            expect_controllers(&readiness, &args.controllers);
        }

        let ctx = ControllerContext {
            events: EventRecorder::start(client.clone(), &metrics, args.event_backlog_bytes()),
            client,
            metrics,
            readiness,
            namespace: args.leader_election_namespace.clone(),
            watch_namespace: Some(args.watch_namespace.clone()).filter(|n| !n.is_empty()),
            concurrency: args.max_concurrent_reconciles.max(1),
            resync: Duration::from_secs(args.resync_interval_seconds),
            shutdown: shutdown.clone(),
        };
        let mut controllers = JoinSet::new();
        // Which controller each task runs, to name the one that panics.
        let mut names = HashMap::new();
        for name in &args.controllers {
            let ctx = ctx.clone();
            let task = match name {
                ControllerName::PostgresWriter => {
                    let pool = pool
                        .clone()
                        .ok_or_else(|| Error::Config("postgres-writer needs a database".into()))?;
                    controllers.spawn(postgres_writer::run(ctx, pool, args.postgres_writer.clone()))
                }
                ControllerName::VoteConfig => controllers.spawn(vote_config::run(ctx)),
                ControllerName::WebApp => controllers.spawn(web_app::run(ctx)),
            };
            names.insert(task.id(), controller_name(*name));
        }
        tracing::info!(
            controllers = ?args.controllers,
            worker_threads = tokio::runtime::Handle::current().metrics().num_workers(),
            "controllers started"
        );
        let outcome = supervise(&mut controllers, &names, leadership.as_mut()).await;
        if let Some(leadership) = leadership {
            leadership.release().await;
        }
        outcome
    }
}

/// Where `--webhook-bind-address` asks the webhooks to be served; `None` when it turns them off.
pub fn webhook_address(args: &RunArgs) -> Result<Option<SocketAddr>> {
    bind_address(&args.webhook_bind_address).map_err(Error::Config)
}

/// Serves the webhooks with the certificate in `--webhook-cert-dir`; without one at the default
/// place, warns and serves none (see the flag).
async fn serve_webhooks_from_cert_dir(
    manager: &Manager,
    addr: SocketAddr,
    args: &RunArgs,
) -> Result<Option<webhook::server::WebhookServer>> {
    let dir = &args.webhook_cert_dir;
    if !webhook::tls::present_in(dir) {
        if dir.as_os_str() == super::cli::DEFAULT_WEBHOOK_CERT_DIR {
            tracing::warn!(dir = %dir.display(), "no webhook certificate: webhooks not served");
            return Ok(None);
        }
        return Err(Error::Config(format!(
            "--webhook-cert-dir {}: no {} and {} there",
            dir.display(),
            webhook::tls::CERT_FILE,
            webhook::tls::KEY_FILE
        )));
    }
    let tls = webhook::tls::server_config(dir)?;
    Ok(Some(manager.serve_webhooks(addr, tls, args).await?))
}

/// Serves the webhooks with the certificate the operator issues itself (`--webhook-cert-secret`), and
/// keeps it renewed and its CA injected in the background.
async fn serve_webhooks_self_issued(
    manager: &Manager,
    client: &kube::Client,
    addr: SocketAddr,
    args: &RunArgs,
) -> Result<webhook::server::WebhookServer> {
    let settings = webhook::issuer::IssuerSettings {
        namespace: args.leader_election_namespace.clone(),
        secret: args.webhook_cert_secret.clone(),
        service: args.webhook_service.clone(),
        validity: Duration::from_secs(args.webhook_cert_validity_seconds),
    };
    let issuer = webhook::issuer::SelfIssued::start(client.clone(), settings).await?;
    let tls = webhook::tls::server_config_with(issuer.slot())?;
    let server = manager.serve_webhooks(addr, tls, args).await?;
    tokio::spawn(issuer.keep());
    Ok(server)
}

/// Waits for the controllers to end (on shutdown) or one to fail; aborts them all when leadership is
/// lost, as controller-runtime exits at once then: another replica is already reconciling.
async fn supervise(
    controllers: &mut JoinSet<Result<()>>,
    names: &HashMap<tokio::task::Id, &'static str>,
    mut leadership: Option<&mut Leadership>,
) -> Result<()> {
    loop {
        tokio::select! {
            finished = controllers.join_next_with_id() => match finished {
                None => return Ok(()),
                Some(Ok((_, Ok(())))) => continue,
                Some(Ok((_, Err(error)))) => return Err(error),
                Some(Err(join)) => {
                    let controller = names.get(&join.id()).copied().unwrap_or("a controller");
                    return Err(Error::ControllerPanicked {
                        controller,
                        message: panic_message(join),
                    });
                }
            },
            () = lost(&mut leadership) => {
                controllers.abort_all();
                return Err(Error::LeadershipLost);
            }
        }
    }
}

/// What a panicking controller said, for the one line the process exits with.
fn panic_message(join: tokio::task::JoinError) -> String {
    if join.is_cancelled() {
        return "it was cancelled".into();
    }
    let payload = join.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Resolves when a held leadership is lost; never without leader election.
async fn lost(leadership: &mut Option<&mut Leadership>) {
    match leadership {
        Some(leadership) => leadership.lost().await,
        None => std::future::pending().await,
    }
}

fn controller_name(controller: ControllerName) -> &'static str {
    match controller {
        ControllerName::PostgresWriter => postgres_writer::NAME,
        ControllerName::VoteConfig => vote_config::NAME,
        ControllerName::WebApp => web_app::NAME,
    }
}

fn expect_controllers(readiness: &Readiness, controllers: &[ControllerName]) {
    for controller in controllers {
        readiness.expect_controller(controller_name(*controller));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_controller_ends_the_manager_with_its_name_and_message() {
        let mut controllers = JoinSet::new();
        let mut names = HashMap::new();
        let quiet = controllers.spawn(std::future::pending::<Result<()>>());
        names.insert(quiet.id(), vote_config::NAME);
        let panicking = controllers.spawn(async { panic!("the cache is gone") });
        names.insert(panicking.id(), web_app::NAME);
        let error = supervise(&mut controllers, &names, None).await.unwrap_err();
        assert!(
            matches!(&error, Error::ControllerPanicked { controller: "web-app", message } if message == "the cache is gone"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "controller web-app panicked: the cache is gone"
        );
    }
}
