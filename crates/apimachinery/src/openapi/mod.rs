//! OpenAPI schemas of the kinds the server serves: the built-ins' from k8s-openapi's generated
//! `schemars` implementations (so they are the real API's, field by field), and custom resources'
//! from their CRDs.

pub mod definitions;
