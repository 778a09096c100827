//! An embedded Kubernetes-compatible API server: one process, in memory, faithful enough that kube-rs,
//! kubectl and the Python client work against it unmodified. The map:
//! - [`http`]: routing, content negotiation, Status errors, watch streaming.
//! - [`store`]: objects, the global resourceVersion, the event history ring, every write's semantics.
//! - [`emulated`]: what kube-controller-manager would do (garbage collection, namespaces, Deployments).
//! - The content rules (patches, schemas, selectors, tables, discovery) live in the `apimachinery` crate.
//!
//! Requirement ids (D1, W6, P3 ...) refer to shared/design/apiserver.md.

pub mod emulated;
pub mod error;
pub mod http;
pub mod store;

use std::{net::SocketAddr, path::Path, sync::Arc};

pub use error::{Error, Result};
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_body_bytes: 3 * 1024 * 1024,
            history_capacity: 10_000,
        }
    }
}

/// A running server. Dropping it stops serving and frees everything.
pub struct ApiServer {
    addr: SocketAddr,
    store: Arc<Store>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl ApiServer {
    pub async fn start(config: Config) -> Result<ApiServer> {
        let listener = tokio::net::TcpListener::bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let store = Store::new(config.history_capacity);
        let shared = Arc::new(http::Shared {
            store: store.clone(),
            max_body_bytes: config.max_body_bytes,
            pages: Default::default(),
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = http::router(shared);
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serving.await {
                tracing::error!(%error, "API server stopped");
            }
        });
        tracing::info!(%addr, "embedded API server listening");
        Ok(ApiServer {
            addr,
            store,
            shutdown: Some(shutdown),
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// A kube-rs client for this server (namespace `default`).
    pub fn client(&self) -> kube::Client {
        // A URL built from a bound socket address always parses; a kube Config over plain HTTP always
        // yields a client.
        let url = self.url().parse().expect("server URL parses");
        kube::Client::try_from(kube::Config::new(url)).expect("client for plain HTTP")
    }

    /// A kubeconfig that kubectl, kube-rs and the Python client use as is (D1).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {url}\nusers:\n- name: embedded\n  user: {{}}\ncontexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: embedded\n    namespace: default\ncurrent-context: embedded\n",
            url = self.url()
        )
    }

    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, self.kubeconfig_yaml())?;
        Ok(())
    }

    /// Stops accepting requests, lets in-flight ones finish, and returns when the listener is closed.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Watches would keep graceful shutdown waiting for up to their timeout; cut them off.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), &mut self.task).await;
        self.task.abort();
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
