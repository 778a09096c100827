//! The operator's webhook server in the test process, with a throwaway CA, and a control plane that
//! calls it: VoteConfig's CRD converting through it and the admission configurations pointing at it.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use operator::{
    runtime::{metrics::Metrics, readiness::Readiness},
    webhook::{
        configurations::{self, Endpoint},
        server::{self, WebhookServer, WebhookState},
        tls::{self, ThrowawayCa},
        validation::TableCheck,
    },
};

/// A webhook server on a loopback port; its certificate is valid for 127.0.0.1 under its own CA.
pub struct Webhooks {
    pub server: WebhookServer,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    pub endpoint: Endpoint,
    _certs: tempfile::TempDir,
}

pub async fn start(tables: Option<TableCheck>) -> Webhooks {
    let certs = tempfile::tempdir().expect("a temporary directory");
    let ca = ThrowawayCa::generate(&["127.0.0.1", "localhost"]).expect("a throwaway CA");
    ca.write_to(certs.path()).expect("certificates written");
    let metrics = Arc::new(Metrics::new());
    let readiness = Arc::new(Readiness::default());
    let state = WebhookState {
        metrics: metrics.clone(),
        tables,
    };
    let tls = tls::server_config(certs.path()).expect("certificate loads");
    let server = server::serve("127.0.0.1:0".parse().unwrap(), tls, state, &readiness)
        .await
        .expect("webhook server binds");
    let endpoint = Endpoint::Url {
        base: format!("https://{}", server.bound),
        ca_pem: ca.ca_pem.clone(),
    };
    Webhooks {
        server,
        metrics,
        readiness,
        endpoint,
        _certs: certs,
    }
}

impl Webhooks {
    /// How many requests `webhook` (its path) answered with HTTP `code`.
    pub fn requests(&self, webhook: &str, code: u16) -> f64 {
        let sample =
            format!("controller_runtime_webhook_requests_total{{webhook=\"{webhook}\",code=\"{code}\"}} ");
        self.metrics
            .encode()
            .lines()
            .find_map(|l| l.strip_prefix(&sample)?.parse().ok())
            .unwrap_or(0.0)
    }
}

/// Our CRDs, VoteConfig's converting through `endpoint`, applied (created or upgraded) and
/// Established.
pub async fn apply_crds(client: &kube::Client, endpoint: &Endpoint) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in configurations::crds(endpoint) {
        let name = crd.metadata.name.clone().unwrap();
        crds.patch(&name, &PatchParams::apply("test").force(), &Patch::Apply(&crd))
            .await
            .expect("CRD applies");
    }
    super::wait_established(client).await;
}

/// The validating and mutating configurations, pointing at `endpoint`.
pub async fn register(client: &kube::Client, endpoint: &Endpoint) {
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    validating
        .create(&PostParams::default(), &configurations::validating(endpoint))
        .await
        .expect("validating configuration");
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    mutating
        .create(&PostParams::default(), &configurations::mutating(endpoint))
        .await
        .expect("mutating configuration");
}

/// How long the API server takes to call a webhook configuration it was just given: it learns of
/// new configurations through a watch, a moment after they are created.
pub const REGISTERED_WITHIN: Duration = Duration::from_secs(15);
