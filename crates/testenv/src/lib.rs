//! Test-only: the control plane a test runs against, chosen per test.
//!
//! - [`Backend::Embedded`]: the `apiserver` crate in this process, milliseconds to start.
//! - [`Backend::Real`]: the upstream etcd, kube-apiserver (`--authorization-mode=RBAC`) and
//!   kube-controller-manager (garbage collector and namespace controllers) as child processes on free
//!   loopback ports, built from the Go module in `testenv/control-plane` (see [`real`]). No kubelet or
//!   scheduler runs there, as with controller-runtime's envtest: pods never start, so a test that needs
//!   a ready Deployment writes its status the way a kubelet's work would.
//! - [`Backend::Cluster`]: a real single-node cluster (kubelet, containerd, kube-proxy, cluster DNS,
//!   every default controller), started once per test run by `testenv/cluster/up.sh` and shared: each
//!   test works in namespaces of its own (see [`cluster`]).
//!
//! All hand out the same things: a [`kube::Client`] with full rights, a kubeconfig, the URL and CA.
//! [`each_control_plane!`] turns one async test function into a test per fresh backend, named
//! `<test>::embedded` and `<test>::real`; [`every_tier!`] adds `<test>::cluster`, and
//! [`cluster_tier!`] makes only that. The nextest profiles in `.config/nextest.toml` select a tier by
//! those names (see `docs/control-planes.md`).
//!
//! Beside the control planes, [`import_loops`] checks a crate's module layers for its tests.

mod access;
pub mod cluster;
mod discovery;
pub mod error;
pub mod import_loops;
mod process;
pub mod real;
mod users;

use std::path::Path;

pub use access::AdminAccess;
use access::{kube_config_for, write_private};
use apiserver::ApiServer;
use cluster::SharedCluster;
pub use discovery::discovered;
pub use error::{Error, Result};
use real::RealControlPlane;

/// Which control plane a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Real,
    Cluster,
}

/// A running control plane; dropping it stops it and removes everything it wrote.
pub struct ControlPlane {
    inner: Inner,
}

enum Inner {
    Embedded(ApiServer),
    Real(RealControlPlane),
    Cluster(SharedCluster),
}

impl ControlPlane {
    /// A control plane of the kind `backend` names, with its default settings.
    pub async fn start(backend: Backend) -> Result<ControlPlane> {
        match backend {
            Backend::Embedded => ControlPlane::embedded(apiserver::Config::default()).await,
            Backend::Real => Ok(ControlPlane {
                inner: Inner::Real(RealControlPlane::start().await?),
            }),
            Backend::Cluster => Ok(ControlPlane {
                inner: Inner::Cluster(SharedCluster::connect()?),
            }),
        }
    }

    /// The real control plane with `controllers` running in its controller manager.
    pub async fn real(controllers: real::Controllers) -> Result<ControlPlane> {
        Ok(ControlPlane {
            inner: Inner::Real(RealControlPlane::start_with(controllers).await?),
        })
    }

    /// The embedded server configured as `config` says.
    pub async fn embedded(config: apiserver::Config) -> Result<ControlPlane> {
        let server = ApiServer::start(config)
            .await
            .map_err(|e| Error::Embedded(Box::new(e)))?;
        Ok(ControlPlane {
            inner: Inner::Embedded(server),
        })
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Embedded(_) => Backend::Embedded,
            Inner::Real(_) => Backend::Real,
            Inner::Cluster(_) => Backend::Cluster,
        }
    }

    /// The embedded server, for what only it can do (inject faults, read its store or audit).
    pub fn as_embedded(&self) -> Option<&ApiServer> {
        match &self.inner {
            Inner::Embedded(server) => Some(server),
            Inner::Real(_) | Inner::Cluster(_) => None,
        }
    }

    /// The real control plane, for what only it has (its processes, more users).
    pub fn as_real(&self) -> Option<&RealControlPlane> {
        match &self.inner {
            Inner::Real(plane) => Some(plane),
            Inner::Embedded(_) | Inner::Cluster(_) => None,
        }
    }

    /// The shared cluster, for what only it has (its node, its state directory).
    pub fn as_cluster(&self) -> Option<&SharedCluster> {
        match &self.inner {
            Inner::Cluster(cluster) => Some(cluster),
            Inner::Embedded(_) | Inner::Real(_) => None,
        }
    }

    pub fn url(&self) -> String {
        match &self.inner {
            Inner::Embedded(server) => server.url(),
            Inner::Real(plane) => plane.access().url.clone(),
            Inner::Cluster(cluster) => cluster.access().url.clone(),
        }
    }

    /// The CA that signed the serving certificate; `None` only for an embedded server over plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        match &self.inner {
            Inner::Embedded(server) => server.ca_pem(),
            Inner::Real(plane) => Some(&plane.access().ca_pem),
            Inner::Cluster(cluster) => Some(&cluster.access().ca_pem),
        }
    }

    /// The bearer token with every right (`system:masters` on the real control plane).
    pub fn admin_token(&self) -> Option<&str> {
        match &self.inner {
            Inner::Embedded(server) => server.token(),
            Inner::Real(plane) => Some(&plane.access().token),
            Inner::Cluster(cluster) => Some(&cluster.access().token),
        }
    }

    /// A kube-rs configuration for this control plane that sends `token` (none: anonymous).
    pub fn kube_config_with_token(&self, token: Option<&str>) -> kube::Config {
        let ca_der = match &self.inner {
            Inner::Embedded(server) => server
                .kube_config()
                .root_cert
                .and_then(|certs| certs.into_iter().next()),
            Inner::Real(plane) => Some(plane.access().ca_der.clone()),
            Inner::Cluster(cluster) => Some(cluster.access().ca_der.clone()),
        };
        kube_config_for(&self.url(), ca_der, token)
    }

    /// A kube-rs configuration authenticated as the user `name` in `groups` (and
    /// `system:authenticated`), who may do what RBAC grants it and nothing else: a token of its own on
    /// the embedded server, a client certificate signed by the client CA on the real control plane,
    /// the administrator impersonating it on the cluster tier (see [`users`]).
    pub fn user_kube_config(&self, name: &str, groups: &[&str]) -> Result<kube::Config> {
        match &self.inner {
            Inner::Embedded(server) => {
                let token = server.add_user(name, groups);
                Ok(self.kube_config_with_token(token.as_deref()))
            }
            Inner::Real(plane) => {
                let (cert, key) = users::client_certificate(&plane.client_ca_file(), name, groups)?;
                Ok(users::with_client_certificate(
                    self.kube_config_with_token(None),
                    &cert,
                    &key,
                ))
            }
            Inner::Cluster(_) => {
                let mut config = self.kube_config();
                config.auth_info.impersonate = Some(name.to_owned());
                config.auth_info.impersonate_groups = Some(groups.iter().map(|g| (*g).to_owned()).collect());
                Ok(config)
            }
        }
    }

    /// A client authenticated as the user `name` in `groups`, namespace `default` (see
    /// [`ControlPlane::user_kube_config`]).
    pub fn add_user(&self, name: &str, groups: &[&str]) -> Result<kube::Client> {
        // A configuration with a parsed URL, a valid DER root certificate and a PEM identity made
        // here always yields a client.
        Ok(kube::Client::try_from(self.user_kube_config(name, groups)?).expect("client for a user"))
    }

    /// The administrator's kube-rs configuration.
    pub fn kube_config(&self) -> kube::Config {
        self.kube_config_with_token(self.admin_token())
    }

    /// A client with every right, namespace `default`.
    pub fn client(&self) -> kube::Client {
        // A configuration with a parsed URL and a valid DER root certificate always yields a client.
        kube::Client::try_from(self.kube_config()).expect("client for the control plane")
    }

    /// A kubeconfig for kubectl, kube-rs and the Python client that sends `token`.
    pub fn kubeconfig_yaml_with_token(&self, token: Option<&str>) -> String {
        apiserver::kubeconfig_yaml(&self.url(), self.ca_pem(), token)
    }

    /// The administrator's kubeconfig.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_yaml_with_token(self.admin_token())
    }

    /// Writes [`ControlPlane::kubeconfig_yaml`] to `path` (owner-only: it holds a token).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        write_private(path, &self.kubeconfig_yaml())
    }

    /// Writes [`ControlPlane::kubeconfig_yaml_with_token`] to `path`, owner-only.
    pub fn write_kubeconfig_with_token(&self, path: &Path, token: Option<&str>) -> Result<()> {
        write_private(path, &self.kubeconfig_yaml_with_token(token))
    }
}

/// The tests of `$test`s on each listed tier: `mod $test { async fn $tier() ... }` per tier, each on
/// tokio's multi-threaded runtime. The macros below name the tiers.
#[doc(hidden)]
#[macro_export]
macro_rules! tier_tests {
    ($tiers:tt $($test:ident),+ $(,)?) => {
        $( $crate::tier_test!($tiers $test); )+
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! tier_test {
    ([$($tier:ident => $backend:ident),+] $test:ident) => {
        mod $test {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $tier() {
                    super::$test($crate::Backend::$backend).await
                }
            )+
        }
    };
}

/// One test per fresh control plane from an async function taking a [`Backend`]: for
/// `async fn rows_follow(backend: Backend)`, `each_control_plane!(rows_follow)` makes the tests
/// `rows_follow::embedded` and `rows_follow::real`.
#[macro_export]
macro_rules! each_control_plane {
    ($($test:ident),+ $(,)?) => {
        $crate::tier_tests!([embedded => Embedded, real => Real] $($test),+);
    };
}

/// A test on the real control plane only, for what only it can show (its RBAC, its release): for
/// `async fn rbac_enforced(backend: Backend)`, `real_control_plane!(rbac_enforced)` makes
/// `rbac_enforced::real`, so that the real tier's filter selects it.
#[macro_export]
macro_rules! real_control_plane {
    ($($test:ident),+ $(,)?) => {
        $crate::tier_tests!([real => Real] $($test),+);
    };
}

/// One test per tier, the cluster tier included: for `async fn rows_follow(backend: Backend)`,
/// `every_tier!(rows_follow)` makes `rows_follow::embedded`, `rows_follow::real` and
/// `rows_follow::cluster`. The cluster is shared: such a test keeps to namespaces of its own.
#[macro_export]
macro_rules! every_tier {
    ($($test:ident),+ $(,)?) => {
        $crate::tier_tests!([embedded => Embedded, real => Real, cluster => Cluster] $($test),+);
    };
}

/// A test on the cluster tier only, for what needs a node (pods that run, Services that answer, the
/// operator deployed as pods): `cluster_tier!(web_app_serves)` makes `web_app_serves::cluster`.
#[macro_export]
macro_rules! cluster_tier {
    ($($test:ident),+ $(,)?) => {
        $crate::tier_tests!([cluster => Cluster] $($test),+);
    };
}
