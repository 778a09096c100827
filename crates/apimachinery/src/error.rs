//! The one error type of this crate. Each variant maps onto one Kubernetes `Status` reason, so the
//! API server can turn it into a response without guessing.

/// One entry of `Status.details.causes`: what is wrong with which field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldCause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueDuplicate`,
    /// `FieldValueTooLong`, `FieldValueTypeInvalid`, `FieldValueForbidden`, `FieldManagerConflict`.
    pub reason: String,
    /// Kubernetes-style message, e.g. `Invalid value: 0: spec.age in body should be greater than or equal to 1`.
    pub message: String,
    /// Dotted field path as the real API server prints it: `spec.options[1].id`.
    pub field: String,
}

impl FieldCause {
    /// A cause with `reason` (one of those listed on [`FieldCause::reason`]) at the dotted `field`.
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_owned(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// What went wrong, by the `Status` kube-apiserver would answer with; the text is its `message`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 422 Invalid: the object breaks a rule; `causes` name the fields.
    #[error("{}", render_causes(causes))]
    Invalid {
        /// Every field that breaks a rule.
        causes: Vec<FieldCause>,
    },
    /// 400 BadRequest: the request itself cannot be understood (undecodable patch, bad selector).
    #[error("{0}")]
    BadRequest(String),
    /// 409 Conflict: server-side apply found fields owned by another manager.
    #[error("{message}")]
    Conflict {
        /// `Apply failed with 2 conflicts: ...`, naming each manager and its fields, as
        /// kube-apiserver words it.
        message: String,
        /// One `FieldManagerConflict` cause per conflicting field.
        causes: Vec<FieldCause>,
    },
    /// 422 Invalid without causes: a JSON patch that does not apply (a failed `test`, a path that is not
    /// there). kube-apiserver answers it with a generic message; the text says what failed, for logs.
    #[error("{0}")]
    PatchNotApplicable(String),
    /// 500 without a reason: an applied configuration its type does not describe, which
    /// structured-merge-diff fails to convert (kube-apiserver has no Status for it).
    #[error("{0}")]
    Untyped(String),
    /// 415 UnsupportedMediaType: e.g. a strategic merge patch on a custom resource.
    #[error("{0}")]
    UnsupportedMediaType(String),
}

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `field: message` pairs joined the way kube-apiserver joins them inside `[...]`.
pub fn render_causes(causes: &[FieldCause]) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(causes.len());
    for cause in causes {
        let part = if cause.field.is_empty() {
            cause.message.clone()
        } else {
            format!("{}: {}", cause.field, cause.message)
        };
        // Go's error aggregate prints a message it has seen once, however often it is listed.
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    }
}
