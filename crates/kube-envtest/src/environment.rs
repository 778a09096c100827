//! [`Environment`]: a running server with what a test reaches it through, and [`Builder`], the few
//! settings a test tunes before starting it.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use apiserver::{ApiServer, Auth, Config};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{
    Error, Result, WebhookInstallOptions, WebhookServing,
    crds::{self, DEFAULT_ESTABLISH_TIMEOUT},
    manifests, webhooks,
};

/// An embedded Kubernetes API server running in this process, with the CRDs it was built with
/// installed and Established. Dropping it stops the server and frees everything it held; [`Environment::stop`]
/// also waits for in-flight requests.
///
/// The server runs on the Tokio runtime that started it: start it inside the test's runtime
/// (`#[tokio::test]`, current-thread or multi-thread).
pub struct Environment {
    server: ApiServer,
    client: kube::Client,
    establish_timeout: Duration,
    webhooks: Option<WebhookServing>,
}

impl Environment {
    /// A server with the defaults: loopback, a free port, HTTPS with a bearer token, in memory, no CRDs.
    pub async fn start() -> Result<Environment> {
        Builder::default().start().await
    }

    /// Settings to change before [`Builder::start`].
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A client with every right on the server, namespace `default`. Each call is a cheap clone of
    /// one client, so call it as often as convenient.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The kube-rs configuration [`Environment::client`] is made from: the URL, the CA, the token.
    pub fn kube_config(&self) -> kube::Config {
        self.server.kube_config()
    }

    /// A kubeconfig (YAML) that kubectl, kube-rs and the Python client use as is: the server, its CA and
    /// the bearer token. It holds the token: keep it out of logs.
    pub fn kubeconfig_yaml(&self) -> String {
        self.server.kubeconfig_yaml()
    }

    /// Writes [`Environment::kubeconfig_yaml`] to `path` (parent folders made), readable by the owner
    /// only, for a tool the test runs (`KUBECONFIG=path kubectl ...`).
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.server
            .write_kubeconfig(path)
            .map_err(|source| Error::WriteKubeconfig {
                path: path.to_owned(),
                source: Box::new(source),
            })
    }

    /// `https://127.0.0.1:PORT`, or `http://...` with [`Builder::plain_http`].
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The PEM of the CA that signed the serving certificate; `None` over plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        self.server.ca_pem()
    }

    /// The bearer token requests must carry; `None` over plain HTTP, where none is asked.
    pub fn token(&self) -> Option<&str> {
        self.server.token()
    }

    /// A client authenticated as the user `name` in `groups` (and `system:authenticated`), namespace
    /// `default`, which may do what RBAC grants it: bind it to a role with the administrator's
    /// [`Environment::client`] first. Fails under [`Builder::plain_http`], which authenticates no one.
    pub fn add_user(&self, name: &str, groups: &[&str]) -> Result<kube::Client> {
        crate::users::client_for(&self.server, name, groups)
    }

    /// Where the test serves the webhooks of [`Builder::webhook_install_options`], with what
    /// certificate; `None` when the environment was built without webhooks.
    pub fn webhook_serving(&self) -> Option<&WebhookServing> {
        self.webhooks.as_ref()
    }

    /// Installs more CRDs on the running server and waits until each is Established (a CRD converting
    /// through a webhook converts through [`Environment::webhook_serving`], if any).
    pub async fn install_crds(&self, crds: impl IntoIterator<Item = CustomResourceDefinition>) -> Result<()> {
        let mut crds: Vec<_> = crds.into_iter().map(manifests::Crd::from).collect();
        if let Some(serving) = &self.webhooks {
            webhooks::convert_through(serving, &mut crds);
        }
        crds::install(&self.client, &crds, self.establish_timeout).await
    }

    /// Installs the CRD of the kube-rs type `K` (`#[derive(CustomResource)]`) and waits until it is
    /// Established.
    pub async fn install_crd_for<K: CustomResourceExt>(&self) -> Result<()> {
        self.install_crds([K::crd()]).await
    }

    /// Stops accepting requests, lets in-flight ones finish (watches are cut after two seconds), and
    /// returns once the port and the data dir (if any) are free for the next server.
    pub async fn stop(self) {
        self.server.shutdown().await;
    }
}

// Hand-written: the URL says which server this is; the token stays out of Debug output.
impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// The settings of an [`Environment`], changed one call at a time:
///
/// ```no_run
/// # async fn run() -> kube_envtest::Result<()> {
/// let env = kube_envtest::Environment::builder()
///     .plain_http()
///     .data_dir("target/envtest-data")
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    config: Config,
    crds: Vec<CustomResourceDefinition>,
    crd_paths: Vec<PathBuf>,
    establish_timeout: Duration,
    webhooks: Option<WebhookInstallOptions>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            config: Config::default(),
            crds: Vec::new(),
            crd_paths: Vec::new(),
            establish_timeout: DEFAULT_ESTABLISH_TIMEOUT,
            webhooks: None,
        }
    }
}

impl Builder {
    /// Installs `crd` at start.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// Installs each of `crds` at start (the YAML of `config/crd`, read with serde_yaml, for example).
    pub fn crds(mut self, crds: impl IntoIterator<Item = CustomResourceDefinition>) -> Self {
        self.crds.extend(crds);
        self
    }

    /// Installs at start every CustomResourceDefinition in the YAML (or JSON) manifests at `paths`,
    /// as envtest's `CRDDirectoryPaths`: the CRDs a project deploys, e.g. `config/crd`. Each path is a
    /// file or a directory, whose `.yaml`, `.yml` and `.json` files are read (not its subdirectories);
    /// documents of other kinds (a `kustomization.yaml`) are passed over. A missing path, a document
    /// that is not YAML or not a valid CRD, and a CRD the server refuses are errors of
    /// [`Builder::start`] that name the file.
    pub fn crd_paths(mut self, paths: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        self.crd_paths.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Installs the CRD of the kube-rs type `K` (`#[derive(CustomResource)]`) at start.
    pub fn crd_for<K: CustomResourceExt>(self) -> Self {
        self.crd(K::crd())
    }

    /// Plain HTTP and no authentication at all, instead of HTTPS with a bearer token (the default).
    /// Anyone who can reach the port may do anything: keep the loopback address.
    pub fn plain_http(mut self) -> Self {
        self.config.auth = Auth::None;
        self
    }

    /// How requests are authorized: RBAC by default (kube-apiserver's bootstrap roles, the
    /// administrator in `system:masters`); [`crate::Authorization::AlwaysAllow`] lets every
    /// authenticated request through, for tests that do not care who may do what.
    pub fn authorization(mut self, authorization: crate::Authorization) -> Self {
        self.config.authorization = authorization;
        self
    }

    /// kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin, which hardened clusters
    /// enable (`--enable-admission-plugins`; off by default, as in kube-apiserver and envtest): on, a
    /// user who sets `blockOwnerDeletion` on an owner reference needs the right to update the owner's
    /// `finalizers`, and one who changes an object's owner references the right to delete it. A test
    /// that turns it on proves that an operator's RBAC grants what such a cluster asks for.
    pub fn owner_reference_permissions(mut self, on: bool) -> Self {
        self.config.owner_reference_permissions = on;
        self
    }

    /// HTTPS with this bearer token instead of a random one generated at start.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.config.auth = Auth::Token(token.into());
        self
    }

    /// Keeps objects in `dir` (one redb file, fsynced per write) instead of in memory only, so that
    /// a server started again on it serves the same objects with the same uids and resourceVersions.
    /// The generated token and the TLS CA are kept there too.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.data_dir = Some(dir.into());
        self
    }

    /// Where to listen; `127.0.0.1:0` (a free loopback port) by default.
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.config.addr = addr;
        self
    }

    /// kube-apiserver's `WatchList` feature gate, off by default as in Kubernetes 1.33: on, watches
    /// serve streaming lists (kube-rs's `watcher::Config::streaming_lists()`).
    pub fn watch_list(mut self, on: bool) -> Self {
        self.config.watch_list = on;
        self
    }

    /// How many watch events the server remembers for watches that resume from a resourceVersion
    /// (10,000 by default). A small number makes a resume fail with 410 Gone, to test a relist.
    pub fn watch_history(mut self, events: usize) -> Self {
        self.config.history_capacity = events;
        self
    }

    /// Whether one node is simulated (on by default): a ready Node on which Pods are scheduled and
    /// reported running and ready at once, as a kubelet would report them, so that Deployments become
    /// available. Off, no Node exists and Pods stay Pending, as under controller-runtime's envtest.
    pub fn simulated_node(mut self, on: bool) -> Self {
        self.config.simulated_node = on;
        self
    }

    /// How long each CRD may take to report Established (30 s by default).
    pub fn establish_timeout(mut self, timeout: Duration) -> Self {
        self.establish_timeout = timeout;
        self
    }

    /// Webhooks the test serves itself, as envtest's `WebhookInstallOptions`: at start, a CA and a
    /// serving certificate for `127.0.0.1` are made and a free port picked
    /// ([`Environment::webhook_serving`]), every webhook configuration is pointed there (a Service
    /// reference becomes `https://127.0.0.1:PORT<its path>`, every `caBundle` the CA) and installed, and
    /// so is the conversion webhook of every CRD whose conversion strategy is `Webhook`. The test then
    /// serves its webhooks on that address with that certificate.
    pub fn webhook_install_options(mut self, options: WebhookInstallOptions) -> Self {
        self.webhooks = Some(options);
        self
    }

    /// Reads the manifests of [`Builder::crd_paths`] (and of the webhooks), starts the server, then
    /// installs the CRDs, waits until each is Established, and installs the webhook configurations.
    pub async fn start(self) -> Result<Environment> {
        // Read first: a manifest that does not parse fails before anything listens.
        let mut crds: Vec<manifests::Crd> = self.crds.into_iter().map(manifests::Crd::from).collect();
        crds.extend(manifests::read(&self.crd_paths)?);
        let webhooks = self.webhooks.map(WebhookInstallOptions::prepare).transpose()?;
        if let Some(webhooks) = &webhooks {
            webhooks::convert_through(webhooks.serving(), &mut crds);
        }
        let server = ApiServer::start(self.config)
            .await
            .map_err(|e| Error::Start(Box::new(e)))?;
        let client = kube::Client::try_from(server.kube_config()).map_err(Error::Client)?;
        let mut environment = Environment {
            server,
            client,
            establish_timeout: self.establish_timeout,
            webhooks: None,
        };
        if !crds.is_empty() {
            crds::install(&environment.client, &crds, self.establish_timeout).await?;
        }
        if let Some(webhooks) = webhooks {
            environment.webhooks = Some(webhooks.install(&environment.client).await?);
        }
        tracing::debug!(url = %environment.url(), crds = crds.len(), "kube-envtest environment ready");
        Ok(environment)
    }
}
