//! What a write or delete request asks for (its query options) and what a write answers with.

use serde_json::Value;

/// How unknown fields are treated, in custom resources (V3) and built-ins alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, with a `Warning` header for each (kube-apiserver's default).
    #[default]
    Warn,
    /// Refused with 400 (unknown or duplicate fields in a body).
    Strict,
}

/// The query options of a create, update or patch, and what was learnt decoding its body.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: everything but the commit runs, and the result is answered unstored.
    pub dry_run: bool,
    /// The manager managedFields record the write under: `fieldManager`, or derived from the user
    /// agent.
    pub field_manager: Option<String>,
    /// Whether the request named the field manager (rather than the user agent giving it): only then
    /// do admission webhooks see it in `options`.
    pub field_manager_named: bool,
    /// `fieldValidation`: what becomes of unknown and duplicate fields.
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
    /// The object goes at once; the garbage collector deletes its dependents afterwards.
    #[default]
    Background,
    /// The object stays, with the `foregroundDeletion` finalizer, until its blocking dependents are
    /// gone.
    Foreground,
    /// The object goes at once; its dependents lose their owner reference to it and stay.
    Orphan,
}

/// The options of a delete (a `DeleteOptions` body or query).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `dryRun=All`: checked and answered, not deleted.
    pub dry_run: bool,
    /// What becomes of the object's dependents.
    pub propagation: Propagation,
    /// `preconditions.uid`: refused with 409 unless the object has this uid.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`: refused with 409 unless the object is at this version.
    pub precondition_resource_version: Option<String>,
    /// Whether the request named a `propagationPolicy` (admission webhooks see it in `options`).
    pub propagation_named: bool,
}

/// The result of a write: the object as stored, `Warning` headers, and whether it was created.
#[derive(Debug)]
pub struct Written {
    /// The object as stored (or as it would be, under dry run).
    pub object: Value,
    /// The texts of the `Warning` headers to answer with.
    pub warnings: Vec<String>,
    /// Whether the write created the object (201 rather than 200).
    pub created: bool,
}
