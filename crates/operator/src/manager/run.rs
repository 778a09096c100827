//! The manager: serves metrics and probes, optionally waits to lead, runs the chosen controllers, and
//! stops them on shutdown (in-flight reconciles finish) or at once when leadership is lost.

use std::{sync::Arc, time::Duration};

use kube_lease_manager::LeaseManagerBuilder;
use tokio::{sync::watch, task::JoinSet};

use super::{
    cli::{ControllerName, RunArgs, bind_address},
    metrics::Metrics,
    probes,
    readiness::Readiness,
};
use crate::{
    Error, Result,
    controllers::{ControllerContext, postgres_writer, vote_config, web_app},
};

/// Runs until `shutdown` turns true, a controller fails, or leadership is lost (an error).
pub async fn run(client: kube::Client, args: RunArgs, shutdown: watch::Receiver<bool>) -> Result<()> {
    let metrics = Arc::new(Metrics::new());
    let readiness = Arc::new(Readiness::default());
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

    let mut leader = None;
    if args.leader_elect {
        match acquire_leadership(&client, &args, shutdown.clone()).await? {
            Some(held) => leader = Some(held),
            None => return Ok(()), // Shut down while waiting to lead.
        }
    }

    let ctx = ControllerContext {
        client,
        metrics,
        readiness,
        concurrency: args.max_concurrent_reconciles.max(1),
        resync: Duration::from_secs(args.postgres_writer.resync_interval_seconds.max(1)),
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
    loop {
        tokio::select! {
            finished = controllers.join_next() => match finished {
                None => return Ok(()),
                Some(Ok(Ok(()))) => continue,
                Some(Ok(Err(error))) => return Err(error),
                Some(Err(join)) => return Err(Error::Config(format!("a controller panicked: {join}"))),
            },
            lost = lost_leadership(&mut leader) => {
                if lost {
                    // controller-runtime exits at once: another replica is already reconciling.
                    controllers.abort_all();
                    return Err(Error::Config("leadership lost; stopping so that the new leader reconciles alone".into()));
                }
            }
        }
    }
}

/// Waits until this process holds the Lease. `Ok(None)`: shutdown came first.
async fn acquire_leadership(
    client: &kube::Client,
    args: &RunArgs,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Option<watch::Receiver<bool>>> {
    let identity = format!("{}-{}", hostname(), std::process::id());
    let duration = args.lease_duration_seconds.max(3);
    let manager = LeaseManagerBuilder::new(client.clone(), &args.leader_election_id)
        .with_namespace(&args.leader_election_namespace)
        .with_identity(&identity)
        .with_duration(duration)
        .with_grace((duration / 3).max(1))
        .build()
        .await
        .map_err(|e| Error::Config(format!("leader election: {e}")))?;
    let (mut leader, _task) = manager.watch().await;
    tracing::info!(%identity, lease = %args.leader_election_id, "waiting to become the leader");
    tokio::select! {
        acquired = leader.wait_for(|is_leader| *is_leader) => {
            acquired.map_err(|_| Error::Config("leader election stopped".into()))?;
        }
        _ = shutdown.wait_for(|stop| *stop) => return Ok(None),
    }
    tracing::info!(%identity, "became the leader");
    Ok(Some(leader))
}

/// Resolves `true` when a held leadership is lost; never resolves without leader election.
async fn lost_leadership(leader: &mut Option<watch::Receiver<bool>>) -> bool {
    match leader {
        None => std::future::pending().await,
        Some(receiver) => match receiver.changed().await {
            Ok(()) => !*receiver.borrow_and_update(),
            Err(_) => true,
        },
    }
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
