//! `operator run` as a child process that serves the webhooks the control plane calls, wired by
//! kube-envtest's `WebhookInstallOptions` as a controller-runtime manager is under envtest: the port
//! and the certificate for 127.0.0.1 it makes (`--webhook-bind-address`, `--webhook-cert-dir`),
//! `config/webhook`'s configurations and VoteConfig's CRD pointed at them. For the fresh control planes
//! only: the configurations and CRDs are cluster-wide objects.

use std::{net::SocketAddr, time::Duration};

use kube::{Api, api::PostParams};
use kube_envtest::{WebhookInstallOptions, WebhookServing};
use operator::{
    api::vote_config::VoteConfig,
    webhook::configurations::{self, Endpoint},
};
use serde_json::json;

use super::{OperatorProcess, Scene, eventually, webhooks};

/// The operator process, where its probes and webhooks listen, and the certificate it serves.
pub struct ServingOperator {
    pub process: OperatorProcess,
    pub probes: SocketAddr,
    pub webhooks: SocketAddr,
    /// The certificate directory the operator reads (again whenever it changes).
    _serving: WebhookServing,
}

/// `operator run --controllers <controllers> <extra>` with probes and webhooks on loopback ports the
/// kernel picks, its webhooks registered with the scene's control plane and called by it.
pub async fn start(
    scene: &Scene,
    controllers: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> ServingOperator {
    let serving = WebhookInstallOptions::default()
        .paths([super::repository().join("config/webhook")])
        .install(&scene.client)
        .await
        .expect("webhook configurations install");
    let cert_dir = serving.cert_dir().display().to_string();
    let webhook_addr = serving.addr().to_string();
    let mut args = vec![
        "run",
        "--controllers",
        controllers,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--webhook-bind-address",
        &webhook_addr,
        "--webhook-cert-dir",
        &cert_dir,
    ];
    args.extend_from_slice(extra);
    let mut process = scene.operator(&args, env);
    // In the order the manager announces them: probes at start, webhooks right after.
    let probes = process.bound_address("serving /healthz and /readyz").await;
    let webhooks = process.bound_address("serving webhooks").await;
    serving
        .install_crds(&scene.client, configurations::crds(&Endpoint::InCluster))
        .await
        .expect("CRDs install");
    defaulting_answers(scene).await;
    ServingOperator {
        process,
        probes,
        webhooks,
        _serving: serving,
    }
}

/// Waits until the control plane calls the defaulting webhook: a dry-run create comes back with the
/// colors it fills in.
async fn defaulting_answers(scene: &Scene) {
    let api: Api<VoteConfig> = scene.api();
    let body: VoteConfig = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "registration-probe"},
        "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
    .expect("a VoteConfig");
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    eventually(
        "the control plane to call the operator's webhooks",
        webhooks::REGISTERED_WITHIN,
        || async {
            let created = api.create(&dry_run, &body).await.ok()?;
            created
                .spec
                .options
                .iter()
                .all(|o| o.color.is_some())
                .then_some(())
        },
    )
    .await;
}

/// How long `/readyz` is polled between two looks: often enough to see a one-probe blip.
pub const PROBE_EVERY: Duration = Duration::from_millis(100);
