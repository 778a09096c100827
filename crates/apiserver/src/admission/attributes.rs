//! What an admission review describes: the request's attributes, as webhooks and policies see them.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use kube::core::admission::Operation;
use serde_json::Value;

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
}

pub fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}
