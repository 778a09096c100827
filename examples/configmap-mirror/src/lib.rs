//! An example kube-rs controller, and how to test one with `kube-envtest`.
//!
//! A `ConfigMapMirror` (`mirror.example.com/v1`) names a ConfigMap of its namespace, `spec.source`;
//! the controller keeps ConfigMap `<mirror name>` a copy of the source's data, owned by the mirror, and
//! writes how it went into the mirror's status (`Synced`, `SourceMissing`, `CopyNotOwned`). Deleting
//! the mirror deletes the copy through the garbage collector.
//!
//! The tests in `tests/controller.rs` start an embedded API server with the CRD installed
//! (`kube_envtest::Environment`), run [`run`] against it, and check what a user would see: the copy,
//! the status, a change to the source reaching the copy, the copy gone with its mirror. A binary would
//! call [`run`] with `kube::Client::try_default()`.

pub mod api;
pub mod controller;
pub mod desired;

pub use api::{ConfigMapMirror, ConfigMapMirrorSpec, ConfigMapMirrorStatus, Phase};
pub use controller::run;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed; the next try comes after a short delay.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// The CRD says namespaced; a mirror without a namespace means the CRD installed is not this one.
    #[error("a ConfigMapMirror without a namespace: is the installed CRD this crate's?")]
    NotNamespaced,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
