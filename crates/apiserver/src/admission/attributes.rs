//! What an admission review describes: the request's attributes, as webhooks and policies see them.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use kube::core::admission::Operation;
use serde_json::{Value, json};

/// What a review describes (its request fields).
#[derive(Debug, Clone)]
pub struct Attributes {
    pub rt: Arc<ResourceType>,
    pub namespace: String,
    pub name: String,
    pub subresource: Option<String>,
    pub operation: Operation,
    /// The object as it would be stored (none for a delete).
    pub object: Option<Value>,
    /// The current object (updates and deletes).
    pub old: Option<Value>,
    pub dry_run: bool,
    /// `CreateOptions`, `UpdateOptions` or `DeleteOptions` (meta.k8s.io/v1).
    pub options: Value,
    /// The kind of `object` when it is not the resource's own: a subresource's (see [`Kind`]).
    pub kind: Option<Kind>,
}

/// The kind of what a subresource is written with, when it is not its resource's kind: a `scale` is
/// an autoscaling/v1 Scale, an `eviction` a policy/v1 Eviction, a `binding` a v1 Binding. Admission
/// sees the subresource's object as that kind (a review's `kind` and `requestKind`), at the one
/// version the subresource serves, never converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

impl Kind {
    /// The kind a review names: `kind` if the write has one of its own, else `rt`'s.
    pub fn of(kind: Option<&Kind>, rt: &ResourceType) -> Value {
        match kind {
            Some(kind) => json!({"group": kind.group, "version": kind.version, "kind": kind.kind}),
            None => json!({"group": rt.group, "version": rt.version, "kind": rt.kind}),
        }
    }
}

pub fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}
