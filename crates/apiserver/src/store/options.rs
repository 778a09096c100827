//! What a write or delete request asks for (its query options) and what a write answers with.

use serde_json::Value;

/// How unknown fields are treated, in custom resources (V3) and built-ins alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    /// Whether the request named the field manager (rather than the user agent giving it): only then
    /// do admission webhooks see it in `options`.
    pub field_manager_named: bool,
    pub field_validation: FieldValidation,
    /// The paths of the fields the request body repeats (found while decoding it).
    pub duplicate_fields: Vec<String>,
    /// A create's or update's JSON body: a built-in kind's decoder names its unknown and repeated
    /// fields in the order the body holds them.
    pub document: Option<bytes::Bytes>,
    /// The keys an apply body repeats, as the YAML decoder words them (`line 7: key "a" already set in
    /// map`): refused under Strict, warned of under Warn, once the apply itself succeeded.
    pub repeated_yaml_keys: Vec<String>,
    /// Server-side apply: take ownership of conflicting fields.
    pub force: bool,
    /// The subresource other than `status` that makes the write (`scale`, `ephemeralcontainers`):
    /// managedFields record it under that name.
    pub subresource: Option<&'static str>,
}

/// `propagationPolicy` of a delete (C9, L5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// Whether the request named a `propagationPolicy` (admission webhooks see it in `options`).
    pub propagation_named: bool,
}

/// The result of a write: the object as stored, `Warning` headers, and whether it was created.
#[derive(Debug)]
pub struct Written {
    pub object: Value,
    pub warnings: Vec<String>,
    pub created: bool,
}
