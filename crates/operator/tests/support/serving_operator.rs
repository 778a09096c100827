//! `operator run` as a child process that serves the webhooks the control plane calls: a certificate
//! for 127.0.0.1 under a CA made for the test (`--webhook-cert-dir`), VoteConfig's CRD converting
//! through it and the admission configurations pointing at it. For the fresh control planes only:
//! the configurations and CRDs are cluster-wide objects.

use std::{net::SocketAddr, time::Duration};

use kube::{Api, api::PostParams};
use operator::{
    api::vote_config::VoteConfig,
    webhook::{configurations::Endpoint, tls::ThrowawayCa},
};
use serde_json::json;

use super::{OperatorProcess, Scene, eventually, webhooks};

/// The operator process, where its probes and webhooks listen, and the certificate it serves.
pub struct ServingOperator {
    pub process: OperatorProcess,
    pub probes: SocketAddr,
    pub webhooks: SocketAddr,
    _certs: tempfile::TempDir,
}

/// `operator run --controllers <controllers> <extra>` with probes and webhooks on loopback ports the
/// kernel picks, its webhooks registered with the scene's control plane and called by it.
pub async fn start(
    scene: &Scene,
    controllers: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> ServingOperator {
    let certs = tempfile::tempdir().expect("a temporary directory");
    let ca = ThrowawayCa::generate(&["127.0.0.1", "localhost"]).expect("a throwaway CA");
    ca.write_to(certs.path()).expect("certificates written");
    let cert_dir = certs.path().display().to_string();
    let mut args = vec![
        "run",
        "--controllers",
        controllers,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--webhook-bind-address",
        "127.0.0.1:0",
        "--webhook-cert-dir",
        &cert_dir,
    ];
    args.extend_from_slice(extra);
    let mut process = scene.operator(&args, env);
    // In the order the manager announces them: probes at start, webhooks right after.
    let probes = process.bound_address("serving /healthz and /readyz").await;
    let webhooks = process.bound_address("serving webhooks").await;
    let endpoint = Endpoint::Url {
        base: format!("https://{webhooks}"),
        ca_pem: ca.ca_pem.clone(),
    };
    webhooks::apply_crds(&scene.client, &endpoint).await;
    webhooks::register(&scene.client, &endpoint).await;
    defaulting_answers(scene).await;
    ServingOperator {
        process,
        probes,
        webhooks,
        _certs: certs,
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
