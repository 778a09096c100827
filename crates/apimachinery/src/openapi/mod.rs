//! OpenAPI documents of the kinds the server serves: the built-ins' schemas from k8s-openapi's
//! generated `schemars` implementations (so they are the real API's, field by field), custom
//! resources' from their CRDs.
//!
//! - [`definitions`]: every built-in definition, generated once.
//! - [`schemas`]: the definitions a set of served kinds needs.
//! - [`operations`]: the paths and operations of a kind.
//! - [`v2`] and [`protobuf`]: the Swagger 2.0 document, as JSON and as protobuf.
//! - [`v3`]: the OpenAPI 3 index and group-version documents.

pub mod definitions;
pub mod operations;
pub mod protobuf;
pub mod schemas;
pub mod v2;
pub mod v3;
