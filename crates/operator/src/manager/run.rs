//! The manager: serves metrics and probes, optionally waits to lead, runs the chosen controllers, and
//! stops them on shutdown (in-flight reconciles finish) or at once when leadership is lost.

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinSet};

use super::{
    cli::{ControllerName, RunArgs, bind_address},
    leader::{self, Leadership},
    probes,
};
use crate::{
    Error, Result,
    controllers::{postgres_writer, vote_config, web_app},
    runtime::{ControllerContext, metrics::Metrics, readiness::Readiness},
};

/// Runs until `shutdown` turns true, a controller fails, or leadership is lost (an error). A held Lease
/// is released on the way out, so that another replica takes over at once.
pub async fn run(client: kube::Client, args: RunArgs, shutdown: watch::Receiver<bool>) -> Result<()> {
    let metrics = Arc::new(Metrics::new());
    let readiness = Arc::new(Readiness::default());
    // Not ready before every controller's cache has synced. A standby replica runs no controller and
    // is ready: it is healthy, only not leading.
    if !args.leader_elect {
        expect_controllers(&readiness, &args.controllers);
    }
    if let Some(addr) = bind_address(&args.metrics_bind_address).map_err(Error::Config)? {
        let bound = probes::serve_metrics(addr, metrics.clone())
            .await
            .map_err(|e| Error::Config(format!("metrics server on {addr}: {e}")))?;
        tracing::info!(%bound, "serving /metrics");
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

    let mut leadership = None;
    if args.leader_elect {
        match leader::acquire(&client, &args, shutdown.clone()).await? {
            Some(held) => leadership = Some(held),
            None => return Ok(()), // Shut down while waiting to lead.
        }
        expect_controllers(&readiness, &args.controllers);
    }

    let ctx = ControllerContext {
        client,
        metrics,
        readiness,
        concurrency: args.max_concurrent_reconciles.max(1),
        resync: Duration::from_secs(args.resync_interval_seconds),
        shutdown: shutdown.clone(),
    };
    let mut controllers = JoinSet::new();
    for name in &args.controllers {
        let ctx = ctx.clone();
        match name {
            ControllerName::PostgresWriter => {
                let pool = pool
                    .clone()
                    .ok_or_else(|| Error::Config("postgres-writer needs a database".into()))?;
                controllers.spawn(postgres_writer::run(ctx, pool, args.postgres_writer.clone()));
            }
            ControllerName::VoteConfig => {
                controllers.spawn(vote_config::run(ctx));
            }
            ControllerName::WebApp => {
                controllers.spawn(web_app::run(ctx));
            }
        }
    }
    tracing::info!(controllers = ?args.controllers, "controllers started");
    let outcome = supervise(&mut controllers, leadership.as_mut()).await;
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    outcome
}

/// Waits for the controllers to end (on shutdown) or one to fail; aborts them all when leadership is
/// lost, as controller-runtime exits at once then: another replica is already reconciling.
async fn supervise(
    controllers: &mut JoinSet<Result<()>>,
    mut leadership: Option<&mut Leadership>,
) -> Result<()> {
    loop {
        tokio::select! {
            finished = controllers.join_next() => match finished {
                None => return Ok(()),
                Some(Ok(Ok(()))) => continue,
                Some(Ok(Err(error))) => return Err(error),
                Some(Err(join)) => return Err(Error::Config(format!("a controller panicked: {join}"))),
            },
            () = lost(&mut leadership) => {
                controllers.abort_all();
                return Err(Error::LeadershipLost);
            }
        }
    }
}

/// Resolves when a held leadership is lost; never without leader election.
async fn lost(leadership: &mut Option<&mut Leadership>) {
    match leadership {
        Some(leadership) => leadership.lost().await,
        None => std::future::pending().await,
    }
}

fn expect_controllers(readiness: &Readiness, controllers: &[ControllerName]) {
    for controller in controllers {
        readiness.expect_controller(match controller {
            ControllerName::PostgresWriter => postgres_writer::NAME,
            ControllerName::VoteConfig => vote_config::NAME,
            ControllerName::WebApp => web_app::NAME,
        });
    }
}
