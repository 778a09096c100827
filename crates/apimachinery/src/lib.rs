#![warn(missing_docs)]
//! Kubernetes API machinery as pure functions over `serde_json::Value`.
//!
//! Everything the embedded API server decides about an object's content lives here, free of I/O, so
//! that each rule can be unit-tested against the behaviour of the real kube-apiserver:
//! - [`patch`]: merge, JSON, strategic merge and server-side apply patches.
//! - [`schema`]: CRD structural schemas: validation, defaulting, pruning.
//! - [`validation`]: object names, labels, annotations, owner references.
//! - [`selector`]: label and field selectors.
//! - [`status_update`]: what a write through `/status` keeps of the stored object, kind by kind.
//! - [`stored_form`]: where and in which form a resource's objects are stored, and how they are read.
//! - [`resource`]: what a resource type is (built-ins and CRDs), and [`discovery`] documents about them.
//! - [`table`]: `meta.k8s.io/v1` Table rendering: the built-in kinds' columns and CRDs' printer columns.
//! - [`openapi`]: the OpenAPI schemas of the built-in kinds and of custom resources.
//! - [`defaults`]: defaults the real API server applies to built-in kinds.
//! - [`conversion`]: between the versions of a built-in kind served in more than one.
//! - [`protobuf`]: the protobuf form of the built-in kinds, to and from their JSON.
//! - [`quantity`]: resource quantities; [`quota`]: what a ResourceQuota counts and refuses.
//! - [`meta`]: accessors for the `metadata` of objects held as JSON, which every layer above reads.
//! - [`go_json`]: the JSON text Go writes, for messages that quote it; [`go_duration`]: Go's durations.
//!
//! Requirement ids (D1, P3, V2 ...) refer to docs/apiserver-requirements.md.

pub mod admission_policy;
pub mod conversion;
pub mod decoding;
pub mod defaults;
pub mod discovery;
pub mod error;
pub mod go_duration;
pub mod go_json;
pub mod json_syntax;
pub mod meta;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod quantity;
pub mod quota;
pub mod resource;
pub mod scale;
pub mod schema;
pub mod selector;
pub mod status_update;
pub mod stored_form;
pub mod table;
pub mod validation;
pub mod webhook_configurations;

#[cfg(all(test, feature = "go-modules"))]
mod snapshot_tests;

pub use error::{Error, FieldCause, Result};
