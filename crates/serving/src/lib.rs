#![warn(missing_docs)]
//! What the `apiserver` and `operator` binaries serve with, written once for both:
//! - [`listener`]: the HTTPS listener for `axum::serve` (TLS handshakes each in a task of its own,
//!   with a deadline) and the TLS configuration it offers (HTTP/1.1).
//! - [`authority`]: certificate authorities made on the spot and the serving certificates they sign
//!   (rcgen).
//! - [`certificates`]: what a server presents at each handshake: a certificate held in memory and
//!   swapped when renewed, or files read again when they change.
//! - [`client`]: the HTTPS client webhooks are called with, trusting only the CA bundle it is given.
//! - `allocator` (feature `jemalloc`): jemalloc and the options both binaries run it with.
//!
//! It knows neither binary: the API server keeps its own identity on disk, the operator issues its
//! webhook certificate through the API, each with these pieces.

pub mod authority;
pub mod certificates;
pub mod client;
pub mod listener;

#[cfg(feature = "jemalloc")]
pub mod allocator;

use std::sync::Arc;

/// The TLS library every configuration here is of, for callers that name its types.
pub use tokio_rustls::rustls;
use tokio_rustls::rustls::crypto::CryptoProvider;

/// The one error type of this crate: what failed, in words a start-up message can show as is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate or key could not be made, read or used.
    #[error("{0}")]
    Certificate(String),

    /// The TLS configuration could not be built from what was given.
    #[error("TLS configuration: {0}")]
    Tls(#[source] rustls::Error),

    /// Reading or writing a certificate or key file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for std::io::Error {
    fn from(error: Error) -> Self {
        match error {
            Error::Io(error) => error,
            other => std::io::Error::other(other.to_string()),
        }
    }
}

/// The cryptography every TLS configuration here uses: ring, as the rest of the workspace (kube's
/// rustls) does, so that one provider is built.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
