//! CRD structural schemas (V1-V3): validation with Kubernetes field paths, defaulting, pruning.

use serde_json::Value;

use crate::FieldCause;

/// A compiled `openAPIV3Schema` of one CRD version.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: Value,
}

impl StructuralSchema {
    /// Checks that `openapi_v3_schema` is structural (V1) and compiles it. Causes carry paths under
    /// `spec.versions[i].schema.openAPIV3Schema` relative to that schema (the caller prefixes them).
    pub fn compile(openapi_v3_schema: &Value) -> Result<Self, Vec<FieldCause>> {
        Ok(Self {
            root: openapi_v3_schema.clone(),
        })
    }

    /// Applies `default`s (V3) to the whole object (create, update and read).
    pub fn apply_defaults(&self, object: &mut Value) {
        let _ = (object, &self.root);
    }

    /// Removes fields the schema does not know unless `x-kubernetes-preserve-unknown-fields` (V3).
    /// `apiVersion`, `kind` and `metadata` are never pruned. Returns the dotted paths removed
    /// (`spec.x`), in document order, for `fieldValidation` Strict/Warn.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let _ = object;
        Vec::new()
    }

    /// Validates the object (V2). Empty when valid.
    pub fn validate(&self, object: &Value) -> Vec<FieldCause> {
        let _ = object;
        Vec::new()
    }
}

/// Validates a `CustomResourceDefinition` object (V1): name is `<plural>.<group>`, exactly one storage
/// version, names present, every schema structural. Empty when valid.
pub fn validate_crd(crd: &Value) -> Vec<FieldCause> {
    let _ = crd;
    Vec::new()
}
