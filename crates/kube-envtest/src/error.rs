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
    #[error("a CustomResourceDefinition has no metadata.name")]
    UnnamedCrd,
    /// The server refused the CRD: its answer (a 422 names the invalid field) is the source.
    #[error("installing CustomResourceDefinition {name}: {source}")]
    InstallCrd {
        name: String,
        #[source]
        source: kube::Error,
    },
    /// The CRD was stored but did not report `Established` in time (or the watch on it failed).
    #[error("CustomResourceDefinition {name} was not Established within {timeout:?}: {reason}")]
    NotEstablished {
        name: String,
        timeout: Duration,
        reason: String,
    },
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig to {path}: {source}")]
    WriteKubeconfig {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
