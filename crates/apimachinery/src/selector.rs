//! Label and field selectors (W2).

use serde_json::Value;

use crate::Result;

/// A parsed `labelSelector` query parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {}

impl LabelSelector {
    /// Parses `=`, `==`, `!=`, `in`, `notin`, `key`, `!key`; a syntax error is 400 BadRequest.
    pub fn parse(text: &str) -> Result<Self> {
        let _ = text;
        Ok(Self {})
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let _ = object;
        true
    }
}

/// A parsed `fieldSelector` query parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {}

impl FieldSelector {
    /// Parses `field=value`, `field==value`, `field!=value`, comma-separated. `supported_fields` lists
    /// the field labels the kind allows besides `metadata.name` and `metadata.namespace`; any other
    /// field is 400 `field label not supported: <field>`.
    pub fn parse(text: &str, supported_fields: &[&str]) -> Result<Self> {
        let _ = (text, supported_fields);
        Ok(Self {})
    }

    /// Whether the object satisfies every requirement (values read by dotted path).
    pub fn matches(&self, object: &Value) -> bool {
        let _ = object;
        true
    }
}
