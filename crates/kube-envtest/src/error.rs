//! The one error type of the crate: what failed, and why, for a test's failure message.

use std::{path::PathBuf, time::Duration};

/// Why starting the server, installing a CRD or a webhook, or writing a kubeconfig failed.
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
    UnnamedCrd {
        /// The manifest it was read from, if it came from [`crate::Builder::crd_paths`].
        file: Option<PathBuf>,
    },
    /// The server refused the CRD: its answer (a 422 names the invalid field) is the source.
    #[error("installing CustomResourceDefinition {name}{}: {source}", from(file))]
    InstallCrd {
        /// The CRD's `metadata.name`.
        name: String,
        /// The manifest it was read from ([`crate::Builder::crd_paths`]).
        file: Option<PathBuf>,
        /// The server's answer.
        #[source]
        source: kube::Error,
    },
    /// A path given to [`crate::Builder::crd_paths`] is missing or unreadable, or a document in it is
    /// not YAML or not a CustomResourceDefinition that Kubernetes 1.33 serves.
    #[error("reading CustomResourceDefinitions from {path}: {reason}")]
    ReadCrds {
        /// The file or directory, as given or as found in a directory given.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The CRD was stored but did not report `Established` in time (or the watch on it failed).
    #[error("CustomResourceDefinition {name} was not Established within {timeout:?}: {reason}")]
    NotEstablished {
        /// The CRD's `metadata.name`.
        name: String,
        /// How long it was waited for ([`crate::Builder::establish_timeout`]).
        timeout: Duration,
        /// Why the wait ended: the deadline, or the error of the watch on it.
        reason: String,
    },
    /// [`crate::Environment::add_user`] on a server without authentication
    /// ([`crate::Builder::plain_http`]), where every request is the administrator's.
    #[error(
        "a server started with plain_http() authenticates no one, so it has no users: start it with HTTPS"
    )]
    NoUsers,
    /// A path given to [`crate::WebhookInstallOptions::paths`] is missing or unreadable, or a document
    /// in it is not YAML or not a webhook configuration that Kubernetes 1.33 serves.
    #[error("reading webhook configurations from {path}: {reason}")]
    ReadWebhooks {
        /// The file or directory, as given or as found in a directory given.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The port, the certificate or its directory for the test's webhook server could not be made.
    #[error("{what} for the webhooks under test: {reason}")]
    WebhookServing {
        /// What could not be made: the port, the certificate or its directory.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A webhook configuration without `metadata.name` cannot be installed.
    #[error("a {kind}{} has no metadata.name", from(file))]
    UnnamedWebhookConfiguration {
        /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
        kind: &'static str,
        /// The manifest it was read from, if it came from [`crate::WebhookInstallOptions::paths`].
        file: Option<PathBuf>,
    },
    /// The server refused a webhook configuration: its answer (a 422 names the invalid field) is the
    /// source.
    #[error("installing {kind} {name}{}: {source}", from(file))]
    InstallWebhook {
        /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
        kind: &'static str,
        /// The configuration's `metadata.name`.
        name: String,
        /// The manifest it was read from ([`crate::WebhookInstallOptions::paths`]).
        file: Option<PathBuf>,
        /// The server's answer. Boxed: the other variants are small, and every Result of the crate
        /// carries this one's size.
        #[source]
        source: Box<kube::Error>,
    },
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig to {path}: {source}")]
    WriteKubeconfig {
        /// Where it was to be written.
        path: PathBuf,
        /// Why it could not be.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// ` (from FILE)` for an object read from a manifest, nothing for one given as a value.
fn from(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|file| format!(" (from {})", file.display()))
        .unwrap_or_default()
}

/// The crate's results: [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;
