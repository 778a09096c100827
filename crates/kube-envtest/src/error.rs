//! The one error type of the crate: what failed, and why, for a test's failure message.

use std::{path::PathBuf, time::Duration};

/// Why starting the server, installing a CRD or writing a kubeconfig failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server could not listen, or could not open its data dir.
    #[error("the embedded API server did not start: {0}")]
    Start(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// kube-rs refused the server's own configuration (a TLS backend missing from kube's features).
    #[error("no kube::Client for the embedded API server: {0}")]
    Client(#[source] kube::Error),
    /// A CustomResourceDefinition without `metadata.name` cannot be installed or waited for.
    #[error("a CustomResourceDefinition{} has no metadata.name", from(file))]
    UnnamedCrd { file: Option<PathBuf> },
    /// The server refused the CRD: its answer (a 422 names the invalid field) is the source.
    #[error("installing CustomResourceDefinition {name}{}: {source}", from(file))]
    InstallCrd {
        name: String,
        /// The manifest it was read from ([`crate::Builder::crd_paths`]).
        file: Option<PathBuf>,
        #[source]
        source: kube::Error,
    },
    /// A path given to [`crate::Builder::crd_paths`] is missing or unreadable, or a document in it is
    /// not YAML or not a CustomResourceDefinition that Kubernetes 1.33 serves.
    #[error("reading CustomResourceDefinitions from {path}: {reason}")]
    ReadCrds { path: PathBuf, reason: String },
    /// The CRD was stored but did not report `Established` in time (or the watch on it failed).
    #[error("CustomResourceDefinition {name} was not Established within {timeout:?}: {reason}")]
    NotEstablished {
        name: String,
        timeout: Duration,
        reason: String,
    },
    /// [`crate::Environment::add_user`] on a server without authentication
    /// ([`crate::Builder::plain_http`]), where every request is the administrator's.
    #[error(
        "a server started with plain_http() authenticates no one, so it has no users: start it with HTTPS"
    )]
    NoUsers,
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig to {path}: {source}")]
    WriteKubeconfig {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// ` (from FILE)` for a CRD read from a manifest, nothing for one given as a value.
fn from(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|file| format!(" (from {})", file.display()))
        .unwrap_or_default()
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
