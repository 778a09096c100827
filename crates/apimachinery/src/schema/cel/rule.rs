//! One `x-kubernetes-validations` entry, compiled when the CRD is admitted.

use cel::Program;

/// The `reason` of a rule: which cause type its failure is reported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

impl Reason {
    /// The values kube-apiserver accepts, in the order its message lists them.
    pub(crate) const NAMES: [&'static str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];

    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "FieldValueInvalid" => Self::Invalid,
            "FieldValueForbidden" => Self::Forbidden,
            "FieldValueRequired" => Self::Required,
            "FieldValueDuplicate" => Self::Duplicate,
            _ => return None,
        })
    }
}

/// A compiled validation rule.
#[derive(Debug)]
pub(crate) struct Rule {
    /// Its index in the node's `x-kubernetes-validations`.
    pub index: usize,
    /// The expression as written, for `failed rule: ...`.
    pub source: String,
    pub program: Program,
    pub message: Option<String>,
    pub message_expression: Option<Program>,
    pub reason: Reason,
    /// `fieldPath` rendered as a suffix of the cause's field (`.role`, `[key]`), empty when unset.
    pub field_suffix: String,
    /// The rule reads `oldSelf`: a transition rule, evaluated only on update where an old value exists.
    pub transition: bool,
    /// `optionalOldSelf: true`: evaluated on create too, `oldSelf` then being `optional.none()`.
    pub optional_old_self: bool,
    /// The rule sits at the root of a resource, where `apiVersion`, `kind` and `metadata` are read.
    pub is_root: bool,
    /// The worst-case cost of one evaluation with the schema's bounds (before multiplying by how
    /// often the rule runs in one object).
    pub estimated_cost: u64,
    /// The same for `messageExpression`.
    pub message_estimated_cost: Option<u64>,
}

impl Rule {
    /// What a failure says when no message applies: the trimmed `message`, else the rule.
    pub(crate) fn error_string(&self) -> String {
        match &self.message {
            Some(message) => message.trim().to_owned(),
            None => self.source.trim().to_owned(),
        }
    }

    /// The message of a failed rule without `messageExpression`: `message`, else `failed rule: <rule>`.
    pub(crate) fn message_or_default(&self) -> String {
        match &self.message {
            Some(message) => message.trim().to_owned(),
            None => format!("failed rule: {}", self.source.trim()),
        }
    }
}
