//! An embedded Kubernetes-compatible API server: one process, in memory, faithful enough that kube-rs,
//! kubectl and the Python client work against it unmodified. The map:
//! - [`http`]: routing, content negotiation, Status errors, watch streaming.
//! - [`store`]: objects, the global resourceVersion, the event history ring.
//! - [`emulated`]: what kube-controller-manager would do (garbage collection, namespaces, Deployments).
//! - The content rules (patches, schemas, selectors, tables, discovery) live in the `apimachinery` crate.
//!
//! Requirement ids (D1, W6, P3 ...) refer to shared/design/apiserver.md.

pub mod emulated;
pub mod error;
pub mod http;
pub mod store;

pub use error::{Error, Result};
