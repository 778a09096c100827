//! The validation rules both versions carry (CEL, `x-kubernetes-validations`).

/// Two options with one label would look the same to voters: a cross-field rule (it compares the
/// options with each other, which no schema keyword can), in both versions.
pub(super) const DISTINCT_LABELS_RULE: &str = "self.all(o, self.exists_one(p, p.label == o.label))";
pub(super) const DISTINCT_LABELS_MESSAGE: &str =
    "two options have the same label: voters could not tell them apart";
