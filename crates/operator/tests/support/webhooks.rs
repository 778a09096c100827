//! The operator's webhook server in the test process, and a control plane that calls it, wired by
//! kube-envtest's `WebhookInstallOptions` from the manifests the project ships: `config/crd`
//! (VoteConfig's conversion) and `config/webhook` (the admission configurations), each Service
//! reference pointed at the test's server under a CA kube-envtest made.
//!
//! On the embedded tier the control plane is a kube-envtest `Environment` built with the options; on
//! the real tier, testenv's upstream control plane, on which the same options are installed through a
//! client (`WebhookInstallOptions::install`, what kube-envtest offers for a server it did not start).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use kube_envtest::{Environment, WebhookInstallOptions, WebhookServing};
use operator::{
    runtime::{metrics::Metrics, readiness::Readiness},
    webhook::{
        configurations::{self, Endpoint},
        server::{self, WebhookServer, WebhookState},
        tls::{self, ThrowawayCa},
        validation::TableCheck,
    },
};
use testenv::{Backend, ControlPlane};

/// What the API server calls: the admission webhooks as well as VoteConfig's conversion, or the
/// conversion alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    ConversionOnly,
    Admission,
}

/// The control plane of a webhook test: kube-envtest's embedded server, or testenv's real one.
pub enum Plane {
    // Boxed: an Environment is several times a ControlPlane's size.
    Embedded(Box<Environment>),
    Real(ControlPlane),
}

impl Plane {
    /// A control plane of kind `backend` with nothing installed.
    pub async fn start(backend: Backend) -> Plane {
        match backend {
            Backend::Embedded => {
                Plane::Embedded(Box::new(Environment::start().await.expect("kube-envtest starts")))
            }
            other => Plane::Real(ControlPlane::start(other).await.expect("control plane starts")),
        }
    }

    pub fn client(&self) -> kube::Client {
        match self {
            Plane::Embedded(env) => env.client(),
            Plane::Real(plane) => plane.client(),
        }
    }

    /// Writes the administrator's kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: &Path) {
        match self {
            Plane::Embedded(env) => env.write_kubeconfig(path).expect("kubeconfig written"),
            Plane::Real(plane) => plane.write_kubeconfig(path).expect("kubeconfig written"),
        }
    }
}

/// The webhook server on the address kube-envtest picked, serving the certificate it made.
pub struct Webhooks {
    pub server: WebhookServer,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// The CA the API server trusts for the server.
    pub ca_pem: String,
    /// The directory the server reads its certificate from (again whenever it changes), kept as long
    /// as the server when nothing else keeps it: kube-envtest's, or the one of [`serve_alone`].
    _serving: Option<WebhookServing>,
    _certs: Option<tempfile::TempDir>,
}

fn config(dir: &str) -> PathBuf {
    super::repository().join("config").join(dir)
}

/// The options of `registered`: `config/webhook`'s configurations, or none (conversion only).
fn options(registered: Registered) -> WebhookInstallOptions {
    match registered {
        Registered::ConversionOnly => WebhookInstallOptions::default(),
        Registered::Admission => WebhookInstallOptions::default().paths([config("webhook")]),
    }
}

/// A control plane of kind `backend` with `config/crd` installed, VoteConfig converting through the
/// operator's webhook server (checking PostgresWriter tables in `tables`), and, when `registered`
/// says so, `config/webhook`'s admission configurations pointing at it.
pub async fn start(
    backend: Backend,
    registered: Registered,
    tables: Option<TableCheck>,
) -> (Plane, Webhooks) {
    if backend != Backend::Embedded {
        let plane = Plane::start(backend).await;
        let hooks = install(&plane.client(), registered, tables).await;
        return (plane, hooks);
    }
    // As a kube-rs project's own tests would: the manifests it ships, read by kube-envtest at start.
    let env = Environment::builder()
        .crd_paths([config("crd")])
        .webhook_install_options(options(registered))
        .start()
        .await
        .expect("kube-envtest starts with the webhooks");
    let serving = env.webhook_serving().expect("webhooks were asked for");
    let hooks = serve(serving.addr(), serving.cert_dir(), serving.ca_pem(), tables).await;
    (Plane::Embedded(Box::new(env)), hooks)
}

/// The same on a control plane already running: the webhooks installed through `client`, then
/// `config/crd`'s CRDs (as `operator crds` writes them) applied, VoteConfig's converting through them.
pub async fn install(client: &kube::Client, registered: Registered, tables: Option<TableCheck>) -> Webhooks {
    let serving = options(registered)
        .install(client)
        .await
        .expect("webhook configurations install");
    serving
        .install_crds(client, configurations::crds(&Endpoint::InCluster))
        .await
        .expect("CRDs install");
    let mut hooks = serve(serving.addr(), serving.cert_dir(), serving.ca_pem(), tables).await;
    hooks._serving = Some(serving);
    hooks
}

/// The webhook server alone, under a CA of its own, for tests of the server that need no API server.
pub async fn serve_alone() -> Webhooks {
    let certs = tempfile::tempdir().expect("a temporary directory");
    let ca = ThrowawayCa::generate(&["127.0.0.1", "localhost"]).expect("a throwaway CA");
    ca.write_to(certs.path()).expect("certificates written");
    let mut hooks = serve("127.0.0.1:0".parse().unwrap(), certs.path(), &ca.ca_pem, None).await;
    hooks._certs = Some(certs);
    hooks
}

async fn serve(addr: SocketAddr, cert_dir: &Path, ca_pem: &str, tables: Option<TableCheck>) -> Webhooks {
    let metrics = Arc::new(Metrics::new());
    let readiness = Arc::new(Readiness::default());
    let state = WebhookState {
        metrics: metrics.clone(),
        tables,
    };
    let tls = tls::server_config(cert_dir).expect("certificate loads");
    let server = server::serve(addr, tls, state, &readiness)
        .await
        .expect("webhook server binds");
    Webhooks {
        server,
        metrics,
        readiness,
        ca_pem: ca_pem.to_owned(),
        _serving: None,
        _certs: None,
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

/// How long the API server takes to call a webhook configuration it was just given: kube-apiserver
/// learns of new configurations through a watch, a moment after they are created.
pub const REGISTERED_WITHIN: Duration = Duration::from_secs(15);
