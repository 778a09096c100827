//! An embedded Kubernetes-compatible API server: one process, in memory (or kept in a data dir, see
//! [`Config::data_dir`]), faithful enough that kube-rs, kubectl and the Python client work against it
//! unmodified. Its layers, each calling only the ones below it:
//!
//! ```text
//!  http/         filters/ wrapped around handlers/, as kube-apiserver layers them: authentication
//!    |           (impersonation), flow control, authorization, audit; handlers/: discovery, resources
//!    |           by verb with their watches, subresources by kind (pods/, namespaces/ ...), reviews;
//!    |           one request reader (request.rs), Status and negotiation (respond.rs)
//!  admission/    a request's write in stages, each run once (counted on /metrics): decode,
//!    |           mutating webhooks, validate, policies and validating webhooks, conversion, commit
//!  strategy/     what each kind's write does to an object: decoding, pruning, defaulting,
//!    |           validation, server-set fields, managedFields, patches
//!  store/        the commit under one lock, resourceVersions, the watch history, persistence. It
//!    |           names no kind and no controller: what others add to a write comes through its
//!    |           hooks, one small trait per concern (store/hooks/)
//!    ^ implement the store's hooks (wired in by ApiServer::start)
//!  kinds/        what is special about each kind (server-set fields, names, validation, deletion),
//!    |           one module per kind in one table by group and resource, which strategy/ asks too:
//!    |           a change for one kind goes in its module there
//!  emulated/     what kube-controller-manager and a kubelet would do: garbage collection, namespaces,
//!                workloads, quotas, the `kubernetes` Service; flowcontrol/ keeps API Priority and
//!                Fairness, rbac/ RBAC's authorizer, escalation check and bootstrap policy
//! ```
//!
//! Only a kind's home names it: kinds/, its group's folder (rbac/, flowcontrol/), the controllers,
//! and the handlers of its subresources (http/handlers/pods/ ...); the code that routes, stores,
//! admits, calls webhooks or filters asks the kind at hand (tests/import_graph.rs keeps it so).
//!
//! The content rules (patches, schemas, selectors, tables, discovery) live in the `apimachinery` crate.
//!
//! Requirement ids (D1, W6, P3 ...) refer to docs/apiserver-requirements.md.

// `Error` carries a Kubernetes Status (kind, subject, field causes) and is large; it is built only on
// the failure path of a request and turned into a response at once, so boxing it would add noise at
// every construction site and save nothing measurable.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

pub(crate) mod admission;
pub mod emulated;
pub mod error;
pub(crate) mod flowcontrol;
pub mod http;
pub(crate) mod kinds;
pub(crate) mod rbac;
pub mod store;
pub(crate) mod strategy;
pub(crate) mod token_holder;
pub(crate) mod webhooks;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
};

pub use error::{Error, Result};
pub use http::filters::{
    audit::{Audit, AuditRecord},
    authentication::Auth,
    authorization::mode::Authorization,
};
use secrecy::{ExposeSecret, SecretString};
pub use store::Store;
use tokio::{sync::oneshot, task::JoinHandle};

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen; loopback by default, port 0 picks a free one.
    pub addr: SocketAddr,
    /// Larger request bodies are refused with 413.
    pub max_body_bytes: usize,
    /// How many watch events are remembered for watches that resume from a resourceVersion (W6).
    pub history_capacity: usize,
    /// How many bytes of watch events (the JSON of the objects they carry) are remembered at most;
    /// the oldest go first, beyond this or beyond `history_capacity`.
    pub history_bytes: usize,
    /// Who may send requests: by default only holders of a token generated at start-up.
    pub auth: Auth,
    /// How requests are authorized: by RBAC (the default, with kube-apiserver's bootstrap policy and
    /// the holder of the server's token in `system:masters`), or all allowed.
    pub authorization: Authorization,
    /// kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin, which hardened
    /// clusters enable (off by default, as in kube-apiserver): setting `blockOwnerDeletion` on an
    /// owner reference takes the right to update the owner's `finalizers`, and changing an object's
    /// owner references the right to delete it.
    pub owner_reference_permissions: bool,
    /// Where objects are kept across restarts; `None` (the default) keeps everything in memory only.
    /// A generated token and the TLS CA and certificate are kept there too, so that a kubeconfig written
    /// before a restart still works after it (on the same address).
    pub data_dir: Option<PathBuf>,
    /// Whether each request's authorization attributes are recorded (see [`http::filters::audit`]); off
    /// by default.
    pub audit: Audit,
    /// kube-apiserver's `WatchList` feature gate: whether watches serve streaming lists
    /// (`sendInitialEvents`). Off by default, as in kube-apiserver 1.33, which refuses such a watch
    /// with 422 unless the gate is on.
    pub watch_list: bool,
    /// Whether one node is simulated (on by default): a ready Node object on which Pods are
    /// scheduled and reported running and ready at once, as a kubelet would report them, so that
    /// Deployments become available. Off, no node exists and Pods stay Pending, as on a control plane
    /// without nodes. See `emulated::workloads::node`.
    pub simulated_node: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_body_bytes: 3 * 1024 * 1024,
            history_capacity: 10_000,
            history_bytes: 64 * 1024 * 1024,
            auth: Auth::default(),
            authorization: Authorization::default(),
            owner_reference_permissions: false,
            data_dir: None,
            audit: Audit::Off,
            watch_list: false,
            simulated_node: true,
        }
    }
}

/// A running server. Dropping it stops serving and frees everything.
pub struct ApiServer {
    addr: SocketAddr,
    store: Arc<Store>,
    token: Option<SecretString>,
    /// Present exactly when a token is required: clients send credentials over https only.
    tls: Option<http::tls::Identity>,
    audit: Option<Arc<http::filters::audit::AuditLog>>,
    users: Arc<http::filters::authentication::static_users::StaticUsers>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    /// Wakes the workload controllers for what waits for time.
    ticker: JoinHandle<()>,
}

impl ApiServer {
    /// Opens the data dir (if any), then listens. Errors say which of the two failed.
    pub async fn start(config: Config) -> Result<ApiServer> {
        let data_dir = config.data_dir.as_deref();
        let history = store::HistoryLimits {
            events: config.history_capacity,
            bytes: config.history_bytes,
        };
        let controllers = Arc::new(emulated::Controllers::default());
        let store = Store::open(history, data_dir, controllers.clone())?;
        if config.simulated_node {
            emulated::simulate_node(&store);
        }
        let auth = match (config.auth, data_dir) {
            (Auth::GeneratedToken, Some(dir)) => Auth::Token(kept_token(dir)?),
            (auth, _) => auth,
        };
        let token = auth.into_token();
        let tls = match (&token, data_dir) {
            (None, _) => None,
            (Some(_), Some(dir)) => Some(http::tls::Identity::kept_in(dir)?),
            (Some(_), None) => Some(http::tls::Identity::generate()?),
        };
        let audit = http::filters::audit::AuditLog::open(&config.audit)?.map(Arc::new);
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", config.addr)))?;
        let addr = listener.local_addr()?;
        emulated::serve_on(&store, addr.port());
        let users = Arc::new(http::filters::authentication::static_users::StaticUsers::default());
        let shared = Arc::new(http::Shared {
            store: store.clone(),
            max_body_bytes: config.max_body_bytes,
            token: token.clone(),
            audit: audit.clone(),
            openapi: Default::default(),
            started: apimachinery::meta::now_rfc3339(),
            address: addr,
            watch_list: config.watch_list,
            service_account_tokens: Default::default(),
            flow_control: Default::default(),
            controllers,
            users: users.clone(),
            authorization: config.authorization,
            owner_reference_permissions: config.owner_reference_permissions,
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = http::router(shared);
        let task = match &tls {
            Some(identity) => tokio::spawn(serve(identity.listener(listener), app, stopped)),
            None => {
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(serving::listener::no_delay);
                tokio::spawn(serve(listener, app, stopped))
            }
        };
        let ticker = tokio::spawn(tick_workloads(Arc::downgrade(&store)));
        tracing::info!(%addr, tls = tls.is_some(), "embedded API server listening");
        Ok(ApiServer {
            addr,
            store,
            token,
            tls,
            audit,
            users,
            shutdown: Some(shutdown),
            task,
            ticker,
        })
    }

    /// The address the server listens on, with the port picked when [`Config::addr`] asked for 0.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT` when a token is required, `http://...` without authentication.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The PEM certificate of the CA that signed the serving certificate, when serving https.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(http::tls::Identity::ca_pem)
    }

    /// The requests recorded so far, oldest first (see [`http::filters::audit`]); empty when
    /// [`Config::audit`] is off.
    pub fn audit(&self) -> Vec<AuditRecord> {
        self.audit.as_ref().map(|log| log.records()).unwrap_or_default()
    }

    /// The server's store, for reading and writing objects in-process, without HTTP.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The bearer token requests must carry, or `None` when the server runs without authentication.
    pub fn token(&self) -> Option<&str> {
        self.token.as_ref().map(|token| token.expose_secret())
    }

    /// Adds the user `name` in `groups` (and `system:authenticated`), known by the new bearer token
    /// returned, as a user of kube-apiserver's static token file: RBAC then decides what it may do
    /// (a ClusterRoleBinding of `view` to it, say). `None` when the server runs without
    /// authentication, where every request is the administrator's. The token lasts while the server
    /// runs.
    pub fn add_user(&self, name: &str, groups: &[&str]) -> Option<String> {
        self.token.as_ref()?;
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        Some(self.users.add(name, &groups))
    }

    /// A kube-rs client for this server (namespace `default`), sending the bearer token.
    pub fn client(&self) -> kube::Client {
        // A kube Config with a valid DER root certificate (or none, over plain HTTP) always yields a client.
        kube::Client::try_from(self.kube_config()).expect("client for the embedded server")
    }

    /// The kube-rs configuration [`ApiServer::client`] uses: the URL, the CA and the bearer token.
    pub fn kube_config(&self) -> kube::Config {
        // A URL built from a bound socket address always parses.
        let url = self.url().parse().expect("server URL parses");
        let mut config = kube::Config::new(url);
        config.auth_info.token = self.token.clone();
        config.root_cert = self.tls.as_ref().map(|tls| vec![tls.ca_der()]);
        config
    }

    /// A kubeconfig that kubectl, kube-rs and the Python client use as is (D1), with the bearer token.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(&self.url(), self.ca_pem(), self.token())
    }

    /// Writes [`ApiServer::kubeconfig_yaml`] to `path`, owner-only since it holds the token, creating
    /// its directory.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        // Owner-only: the kubeconfig holds the token.
        write_private(path, self.kubeconfig_yaml().as_bytes())?;
        Ok(())
    }

    /// Stops accepting requests, lets in-flight ones finish, and returns when the listener is closed
    /// and the data dir (if any) is saved and closed, free for the next server.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Watches would keep graceful shutdown waiting for up to their timeout; cut them off.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), &mut self.task).await;
        self.task.abort();
        self.ticker.abort();
        self.store.close();
    }
}

/// Once a second, syncs the workloads whose time has come, while the store lives.
async fn tick_workloads(store: std::sync::Weak<Store>) {
    let mut interval = tokio::time::interval(std::time::Duration::from_secs(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let Some(store) = store.upgrade() else {
            return;
        };
        // The lock is taken off the runtime's threads: a write may wait on the disk.
        let _ = tokio::task::spawn_blocking(move || emulated::tick(&store)).await;
    }
}

/// A kubeconfig for the server at `url`, trusting the CA in `ca_pem` (none over plain HTTP), sending
/// `token` (none: anonymous). Also what test harnesses write for other servers.
pub fn kubeconfig_yaml(url: &str, ca_pem: Option<&str>, token: Option<&str>) -> String {
    // A JSON string is a valid YAML double-quoted scalar, whatever a caller-chosen token holds.
    let user = match token {
        Some(token) => format!("{{token: {}}}", serde_json::Value::from(token)),
        None => "{}".to_owned(),
    };
    let ca = match ca_pem {
        Some(pem) => format!(
            "\n    certificate-authority-data: {}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pem)
        ),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {url}{ca}\nusers:\n- name: embedded\n  user: {user}\ncontexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: embedded\n    namespace: default\ncurrent-context: embedded\n"
    )
}

/// Serves `app` on `listener` until `stopped` fires.
async fn serve<L>(listener: L, app: axum::Router, stopped: oneshot::Receiver<()>)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let serving = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    if let Err(error) = serving.await {
        tracing::error!(%error, "API server stopped");
    }
}

/// The token kept in `dir/token`, generated there (owner-only) the first time. Kept because a
/// kubeconfig handed out before a restart should still get in after it.
fn kept_token(dir: &Path) -> std::io::Result<String> {
    let path = dir.join("token");
    let unreadable = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(unreadable(e)),
    }
    let token = http::filters::authentication::random_token::generate_token();
    // Synced: a token lost to a power cut would lock out the kubeconfigs handed out since.
    write_private(&path, token.as_bytes())
        .and_then(|file| file.sync_all())
        .map_err(unreadable)?;
    Ok(token)
}

/// Replaces `path` with `contents`, owner-only, atomically: a crash leaves the old file or the new one.
pub(crate) fn replace_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".new");
    let aside = PathBuf::from(aside);
    write_private(&aside, contents)?.sync_all()?;
    std::fs::rename(&aside, path)?;
    // The rename itself is only durable once the directory is synced.
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Writes `contents` to `path`, readable and writable by the owner only.
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    std::io::Write::write_all(&mut file, contents)?;
    Ok(file)
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.task.abort();
        self.ticker.abort();
        // Frees the data dir even when the server is dropped without `shutdown`.
        self.store.close();
    }
}
