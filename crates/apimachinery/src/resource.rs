//! What a resource type is: the facts discovery, routing, validation and tables need about a kind.

use std::sync::Arc;

use serde_json::Value;

use crate::{FieldCause, schema::StructuralSchema, table::PrinterColumn};

/// Where a resource type comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    /// Served because of the CustomResourceDefinition with this name.
    Crd {
        name: String,
    },
}

/// One served resource (one group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource (C7).
    pub status_subresource: bool,
    /// Verbs served on the main resource (`create`, `delete`, `deletecollection`, `get`, `list`,
    /// `patch`, `update`, `watch`).
    pub verbs: Vec<String>,
    /// CRDs only: validation, defaulting and pruning (V2, V3).
    pub schema: Option<Arc<StructuralSchema>>,
    /// Printer columns besides Name (T1); CRDs' `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// Field selector labels allowed besides `metadata.name`/`metadata.namespace` (W2).
    pub field_labels: Vec<String>,
    pub origin: Origin,
}

impl ResourceType {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for core), as in Status messages: `postgreswriters.demo.yash.com "w1" not found`.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn is_builtin(&self) -> bool {
        self.origin == Origin::BuiltIn
    }
}

/// Every built-in resource type the server serves (B1).
pub fn builtins() -> Vec<ResourceType> {
    todo!("B1")
}

/// The resource types a CustomResourceDefinition serves (one per served version). The CRD must already
/// have passed [`crate::schema::validate_crd`].
pub fn from_crd(crd: &Value) -> Result<Vec<ResourceType>, Vec<FieldCause>> {
    let _ = crd;
    todo!("V1")
}
