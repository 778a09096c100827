//! Object metadata rules (V5): names, labels, annotations, owner references.

use serde_json::Value;

use crate::FieldCause;

/// How a kind's names are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most kinds).
    Subdomain,
    /// DNS-1123 label (Namespace).
    Label,
    /// DNS-1035 label (Service).
    Dns1035Label,
}

/// Validates `metadata` of an object about to be stored. Empty when valid.
pub fn validate_metadata(object: &Value, name_rule: NameRule) -> Vec<FieldCause> {
    let _ = (object, name_rule);
    Vec::new()
}
