//! What the operator's integration tests share: the embedded API server with our CRDs installed, a
//! throwaway PostgreSQL, a controller started in-process, and polling with a deadline.

#![allow(dead_code)]

use std::{future::Future, sync::Arc, time::Duration};

use apiserver::{ApiServer, Config};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, api::PostParams};
use operator::{
    controllers::ControllerContext,
    manager::{metrics::Metrics, readiness::Readiness},
};
use tokio::{sync::watch, task::JoinHandle};

pub async fn cluster() -> (ApiServer, kube::Client) {
    let server = ApiServer::start(Config::default())
        .await
        .expect("API server starts");
    let client = server.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("CRD installs");
    }
    (server, client)
}

/// A controller running in this process until the returned handle is dropped or stopped.
pub struct Running {
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops as a crash would: the task is aborted mid-flight.
    pub fn kill(self) {
        self.task.abort();
    }

    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }

    /// How many reconciles finished so far.
    pub fn reconciles(&self) -> u64 {
        let text = self.metrics.encode();
        text.lines()
            .filter(|l| l.starts_with("controller_runtime_reconcile_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }
}

pub fn context(client: &kube::Client, resync: Duration) -> (ControllerContext, watch::Sender<bool>) {
    let (shutdown, receiver) = watch::channel(false);
    let ctx = ControllerContext {
        client: client.clone(),
        metrics: Arc::new(Metrics::new()),
        readiness: Arc::new(Readiness::default()),
        concurrency: 4,
        resync,
        shutdown: receiver,
    };
    (ctx, shutdown)
}

pub fn spawn<F>(
    ctx: ControllerContext,
    shutdown: watch::Sender<bool>,
    run: impl FnOnce(ControllerContext) -> F,
) -> Running
where
    F: Future<Output = operator::Result<()>> + Send + 'static,
{
    let metrics = ctx.metrics.clone();
    let readiness = ctx.readiness.clone();
    let future = run(ctx);
    let task = tokio::spawn(async move {
        if let Err(error) = future.await {
            panic!("controller failed: {error}");
        }
    });
    Running {
        metrics,
        readiness,
        shutdown,
        task,
    }
}

/// Polls `check` until it yields `Some`, failing the test after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
