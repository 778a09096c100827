//! A Kubernetes API server inside your test's process, for the tests of kube-rs controllers: what
//! controller-runtime's envtest gives Go operators, with no Go toolchain, no downloaded etcd or
//! kube-apiserver binaries and no cluster. A server starts in under a fifth of a second in a test build
//! (a few milliseconds optimized) and takes about 40 MiB; BENCHMARKS.md has the figures.
//!
//! A test depends on it with one line (it uses kube 5 and k8s-openapi 0.29 with `v1_33`, as the
//! project's own dependencies must):
//!
//! ```toml
//! [dev-dependencies]
//! kube-envtest = "0.1.0"
//! ```
//!
//! An [`Environment`] is the embedded API server (the `apiserver` crate) on a free loopback port, with the CustomResourceDefinitions you name installed and `Established`; it hands
//! out a [`kube::Client`] with every right and a kubeconfig (as text, or written to a file for
//! kubectl). Dropping it stops the server.
//!
//! ```
//! use kube::{Api, CustomResource, api::PostParams};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! pub struct GreetingSpec {
//!     pub message: String,
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // A server with the Greeting CRD installed and Established.
//!     let env = kube_envtest::Environment::builder().crd_for::<Greeting>().start().await?;
//!
//!     let greetings: Api<Greeting> = Api::default_namespaced(env.client());
//!     let hello = Greeting::new("hello", GreetingSpec { message: "hi".into() });
//!     greetings.create(&PostParams::default(), &hello).await?;
//!     assert_eq!(greetings.get("hello").await?.spec.message, "hi");
//!
//!     // For kubectl and other tools the test runs: `KUBECONFIG=<path> kubectl get greetings`.
//!     let dir = tempfile::tempdir()?;
//!     env.write_kubeconfig(dir.path().join("kubeconfig"))?;
//!     Ok(())
//! } // `env` dropped: the server stops.
//! ```
//!
//! [`Builder`] has what a test tunes: [`Builder::crd_paths`] to install the CRDs of the YAML manifests
//! a project ships (`config/crd`) rather than Rust values, [`Builder::plain_http`] (no TLS, no token) instead of HTTPS with
//! a random bearer token, [`Builder::data_dir`] to keep objects across a restart instead of memory
//! only, [`Builder::watch_list`] for streaming lists, [`Builder::watch_history`] to provoke a 410 Gone.
//!
//! [`Builder::webhook_install_options`] installs the webhooks a test serves itself, as envtest's
//! `WebhookInstallOptions`: the configurations of `config/webhook` and the conversion webhooks of the
//! CRDs, pointed at a loopback port with a certificate made for the run ([`WebhookServing`]).
//!
//! # What it emulates, and what not
//!
//! The server is Kubernetes 1.33's API, checked request by request against the real kube-apiserver
//! (the repository's conformance corpus). It serves discovery and OpenAPI, every built-in kind, CRDs
//! with structural-schema validation, defaulting, pruning and CEL validation rules, conversion and
//! admission webhooks, the status and scale subresources, merge, JSON, strategic-merge and
//! server-side-apply patches (with managedFields and conflicts), watches with bookmarks and 410 Gone,
//! label and field selectors, pagination, finalizers, garbage collection by owner references
//! (background, foreground, orphan), namespace and CRD teardown, Events and Tables. What
//! kube-controller-manager does that operators lean on is done in-process, at once: garbage collection,
//! namespace teardown, Service cluster IPs, ready Deployments.
//!
//! No container ever runs: there is no kubelet or container runtime, so a pod's logs, exec and
//! port-forward have nothing behind them, and no network, DNS or Service routing exists. Requests are
//! authorized by RBAC, as kube-apiserver authorizes them, with its bootstrap roles:
//! [`Environment::client`] is the administrator's (`system:masters`), and [`Environment::add_user`]
//! gives a client for a user that may do what RBAC grants it, so a test can prove that your RBAC
//! rules suffice. Quotas and limit ranges are stored but not enforced, and the workload
//! kinds without an emulated controller (Jobs, StatefulSets, DaemonSets, CronJobs) are stored only.
//! Every difference the corpus measures is listed with its reason in `docs/conformance.md` (and the
//! ones that shape tests in `docs/control-planes.md`); the server itself is described in
//! `docs/apiserver.md`.
//!
//! # Versions and build
//!
//! kube 5 and k8s-openapi 0.29 with its `v1_33` feature (k8s-openapi allows one version feature in
//! a build, and the server is 1.33's). The server runs on the Tokio runtime of the test that starts it.
//! The build needs no Go and no network: the Kubernetes types the server needs come from a snapshot
//! the `apimachinery` crate ships (its `generated/`). The `go-modules` feature reads them from the
//! Kubernetes Go modules instead (it needs `go`), as the server's own repository builds it. It does need a C compiler: ring
//! (rustls's cryptography) is built from source. jemalloc, the `apiserver` binary's allocator, is not:
//! the server's library is used without its `jemalloc` feature.

#![warn(missing_docs)]

mod crds;
mod environment;
mod error;
mod manifests;
mod users;
mod webhooks;

pub use apiserver::Authorization;
pub use environment::{Builder, Environment};
pub use error::{Error, Result};
/// The TLS library [`WebhookServing::server_config`] is of (rustls 0.23), for a test that names its
/// types.
pub use serving::rustls;
pub use webhooks::{DEFAULT_CONVERSION_PATH, WebhookInstallOptions, WebhookServing};
