//! CRD structural schemas (V1-V3): validation with Kubernetes field paths, defaulting, pruning.
//!
//! The server's order for a custom resource is the apiserver's: [`StructuralSchema::prune`], then
//! [`StructuralSchema::apply_defaults`], then [`StructuralSchema::validate`].
//! - `node`: the compiled schema; `structural`: compiling it and the structural rules (V1).
//! - `validate`: value validation (V2), worded by [`messages`], with `format`s from `formats`.
//! - `defaults` and `prune`: V3.
//! - `crd`: validation of the `CustomResourceDefinition` object itself (V1).
//! - `cel`: the CEL validation rules (`x-kubernetes-validations`, V4).

pub(crate) mod cel;
mod crd;
mod crd_internal;
mod crd_selectable;
mod defaults;
mod formats;
pub mod messages;
pub(crate) mod node;
mod prune;
mod structural;
mod validate;

use serde_json::Value;

pub use crd::validate_crd;

use crate::FieldCause;

/// A compiled `openAPIV3Schema` of one CRD version.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: node::Node,
    cel_rules: usize,
}

impl StructuralSchema {
    /// Checks that `openapi_v3_schema` is structural (V1) and compiles it. Causes carry paths under
    /// `spec.versions[i].schema.openAPIV3Schema` relative to that schema (the caller prefixes them):
    /// `properties[spec].type`, or `type` for the root itself.
    pub fn compile(openapi_v3_schema: &Value) -> Result<Self, Vec<FieldCause>> {
        structural::compile_root(openapi_v3_schema).map(|root| Self {
            root,
            cel_rules: count_cel_rules(openapi_v3_schema),
        })
    }

    /// The compiled root node, for walks over an object by its schema (managedFields).
    pub(crate) fn root(&self) -> &node::Node {
        &self.root
    }

    /// How many CEL `x-kubernetes-validations` rules the schema carries (all evaluated, V4).
    pub fn cel_rule_count(&self) -> usize {
        self.cel_rules
    }

    /// Applies `default`s (V3) to the whole object (create, update and read). Never overwrites a
    /// value; drops `null`s of non-nullable fields that have no default; leaves `metadata` alone.
    pub fn apply_defaults(&self, object: &mut Value) {
        defaults::default_root(&self.root, object);
    }

    /// Removes fields the schema does not know unless `x-kubernetes-preserve-unknown-fields` (V3).
    /// `apiVersion`, `kind` and `metadata` are never pruned. Returns the dotted paths removed
    /// (`spec.x`), in document order, for `fieldValidation` Strict/Warn.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        prune::prune_value(&self.root, object, "", true)
    }

    /// Validates a new object (V2, and its CEL rules, V4). Empty when valid.
    pub fn validate(&self, object: &Value) -> Vec<FieldCause> {
        self.validate_update(object, None)
    }

    /// Validates the object against the schema (V2), then its CEL rules (V4), transition rules
    /// comparing with `old`, the stored object, on update. As in kube-apiserver, the rules are not
    /// run when a value has the wrong type, since they could not read it.
    pub fn validate_update(&self, object: &Value, old: Option<&Value>) -> Vec<FieldCause> {
        let mut causes = validate::validate_update(&self.root, object, old, "");
        // A value of the wrong type, missing, unsupported, too long or too many blocks the rules,
        // which could not read it; kube-apiserver then says that it ran none of them.
        const BLOCKING: &[&str] = &[
            messages::NOT_SUPPORTED,
            messages::REQUIRED,
            messages::TOO_LONG,
            messages::TOO_MANY,
            messages::TYPE_INVALID,
        ];
        if !causes.iter().any(|c| BLOCKING.contains(&c.reason.as_str())) {
            cel::evaluate::validate_rules(&self.root, object, old, &mut causes);
        } else if self.cel_rules > 0 {
            // Go's field.Invalid with no path and a nil value.
            causes.push(messages::invalid_printed(
                "<nil>",
                "\"null\"",
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        }
        causes
    }
}

fn count_cel_rules(schema: &Value) -> usize {
    match schema {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| match (key.as_str(), value) {
                ("x-kubernetes-validations", Value::Array(rules)) => rules.len(),
                _ => count_cel_rules(value),
            })
            .sum(),
        Value::Array(items) => items.iter().map(count_cel_rules).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
