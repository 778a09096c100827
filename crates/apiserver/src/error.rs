//! The one error type of the API server. Every variant becomes a `Status` response (C6) with the
//! reason, code and message wording of kube-apiserver, because clients match on them.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::{Value, json};

/// Names the object an error is about, as `Status.details` does.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    /// `postgreswriters.demo.yash.com`, or `configmaps` for the core group.
    pub qualified_plural: String,
    /// The API group, empty for the core group.
    pub group: String,
    /// The resource, lower-case plural (`configmaps`); `Status.details.kind` carries it.
    pub plural: String,
    /// The object's name, empty when the error is about no one object.
    pub name: String,
}

impl Subject {
    /// `name` of `rt`.
    pub fn of(rt: &ResourceType, name: &str) -> Subject {
        Subject {
            qualified_plural: rt.qualified_plural(),
            group: rt.group.clone(),
            plural: rt.plural.clone(),
            name: name.to_owned(),
        }
    }
}

/// How validation names a kind: `<Kind>.<group>`, the kind alone in the core group.
pub fn kind_group(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

/// What went wrong with a request, by the Status kube-apiserver answers it with: the variant decides
/// the HTTP code and `reason` ([`Error::code`], [`Error::reason`]), its text the `message`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404 NotFound: the object does not exist.
    #[error("{} \"{}\" not found", .0.qualified_plural, .0.name)]
    NotFound(Subject),
    /// 409 AlreadyExists: a create of a name that is taken.
    #[error("{} \"{}\" already exists", .0.qualified_plural, .0.name)]
    AlreadyExists(Subject),
    /// 409 Conflict: a write that lost a race, most often to a stale `resourceVersion`.
    #[error(
        "Operation cannot be fulfilled on {} \"{}\": {}",
        .subject.qualified_plural, .subject.name, .reason
    )]
    Conflict {
        /// The object written.
        subject: Subject,
        /// Why, in kube-apiserver's words (`the object has been modified; ...`).
        reason: String,
    },
    /// 422: `<Kind>.<group> "name" is invalid: <causes>`.
    #[error("{kind_group} \"{}\" is invalid: {}", .subject.name, apimachinery::error::render_causes(.causes))]
    Invalid {
        /// The kind as validation names it (see [`kind_group`]).
        kind_group: String,
        /// The object refused.
        subject: Subject,
        /// One per invalid field, with its path.
        causes: Vec<FieldCause>,
    },
    /// 400 BadRequest, with this message.
    #[error("{0}")]
    BadRequest(String),
    /// 400: a body that does not decode as its kind (a value of the wrong type; with
    /// `fieldValidation=Strict`, a duplicate or unknown field). `object` is what was decoded, as JSON:
    /// a patch whose result does not decode is answered with it (see [`Error::for_patch`]).
    #[error("{kind} in version \"{version}\" cannot be handled as a {kind}: {detail}")]
    Undecodable {
        /// The kind the body was read as.
        kind: String,
        /// Its API version.
        version: String,
        /// What the decoder found wrong.
        detail: String,
        /// What was decoded, as JSON.
        object: String,
    },
    /// 422 Invalid with empty details: a JSON patch that does not apply. kube-apiserver answers it with
    /// this generic message alone, whatever failed.
    #[error("the server rejected our request due to an error in our request")]
    PatchNotApplicable,
    /// 415: a `Content-Type` the endpoint does not read, with this message.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 406: the Accept header names nothing the endpoint produces. `routed` when kube-apiserver's
    /// router refuses it (built-in kinds), whose Status carries empty details; the CRD handler's
    /// Status has none.
    #[error("{message}")]
    NotAcceptable {
        /// kube-apiserver's message, which lists what the endpoint produces.
        message: String,
        /// Refused by the router rather than by the CRD handler.
        routed: bool,
    },
    /// 410 Expired: a `resourceVersion` or `continue` token older than the watch history remembers.
    #[error("{0}")]
    Expired(String),
    /// 403 Forbidden without details, with this message.
    #[error("{0}")]
    Forbidden(String),
    /// 403: an admission plugin of kube-apiserver's own refused the write (ResourceQuota), with
    /// `message` saying why.
    #[error("{} \"{}\" is forbidden: {message}", .subject.qualified_plural, .subject.name)]
    AdmissionForbidden {
        /// The object written.
        subject: Subject,
        /// The plugin's reason.
        message: String,
    },
    /// 403: a create in a namespace being deleted, refused by NamespaceLifecycle with a cause that
    /// says why.
    #[error(
        "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
        .subject.qualified_plural, .subject.name
    )]
    NamespaceTerminating {
        /// The object created.
        subject: Subject,
        /// The namespace being deleted.
        namespace: String,
    },
    /// 403: the authorizers refused the request; `message` is kube-apiserver's whole message, which
    /// names the resource (or none, for a non-resource URL), the user and what it may not do.
    #[error("{message}")]
    RequestForbidden {
        /// The object asked for (empty for a non-resource URL).
        subject: Subject,
        /// kube-apiserver's whole message.
        message: String,
    },
    /// 405: a verb the resource does not serve, with this message.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 404 with empty details: a resource or subresource the server does not serve.
    #[error("the server could not find the requested resource")]
    UnknownResource,
    /// A path under a group and version nothing serves: the real server's mux answers it in plain
    /// text, not with a Status.
    #[error("404 page not found")]
    PageNotFound,
    /// 413: a request body larger than the limit, in bytes (`Config::max_body_bytes`).
    #[error("request entity too large: limit is {0} bytes")]
    TooLarge(usize),
    /// 401: no credentials, or ones the server does not know.
    #[error("Unauthorized")]
    Unauthorized,
    /// Server-side apply found fields owned by another manager.
    #[error("{message}")]
    ApplyConflict {
        /// The object applied.
        subject: Subject,
        /// kube-apiserver's message, naming the conflicting managers.
        message: String,
        /// One per conflicting field.
        causes: Vec<FieldCause>,
    },
    /// 500 without a reason: an error kube-apiserver has no Status for (a node's kubelet it cannot
    /// reach, a conversion webhook that failed, a resourceVersion it cannot parse), answered with its
    /// text alone.
    #[error("{0}")]
    Unclassified(String),
    /// 500 InternalError: a webhook that could not be called or answered wrongly.
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// A ValidatingAdmissionPolicy's binding with the `Deny` action refused the request: `reason` is
    /// the failed validation's (Invalid unless it names another), `message` names policy and binding.
    #[error("{} \"{}\" is forbidden: {message}", subject.qualified_plural, subject.name)]
    DeniedByPolicy {
        /// The object written.
        subject: Subject,
        /// The Status reason the validation chose.
        reason: String,
        /// Names the policy, the binding and the failed validation.
        message: String,
    },
    /// The Status an admission webhook refused a request with, as it gave it.
    #[error("{message}")]
    Refused {
        /// The HTTP code the webhook chose.
        code: u16,
        /// Its Status reason, possibly empty.
        reason: String,
        /// Its message.
        message: String,
    },
    /// 500 InternalError: reading or writing the data dir, or the listener, failed.
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
}

/// The result of the server's operations, failing with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Status's `details` as the real server writes them: empty fields left out.
pub fn status_details(name: &str, group: &str, kind: &str) -> Value {
    let mut details = serde_json::Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", kind)] {
        if !value.is_empty() {
            details.insert(key.into(), json!(value));
        }
    }
    Value::Object(details)
}

impl Error {
    /// The HTTP status code of the response, the Status's `code`.
    pub fn code(&self) -> u16 {
        match self {
            Error::NotFound(_) | Error::UnknownResource | Error::PageNotFound => 404,
            Error::AlreadyExists(_) | Error::Conflict { .. } | Error::ApplyConflict { .. } => 409,
            Error::Invalid { .. } | Error::PatchNotApplicable => 422,
            Error::BadRequest(_) | Error::Undecodable { .. } => 400,
            Error::UnsupportedMediaType(_) => 415,
            Error::NotAcceptable { .. } => 406,
            Error::Expired(_) => 410,
            Error::Forbidden(_)
            | Error::RequestForbidden { .. }
            | Error::NamespaceTerminating { .. }
            | Error::AdmissionForbidden { .. } => 403,
            Error::MethodNotAllowed(_) => 405,
            Error::TooLarge(_) => 413,
            Error::Unauthorized => 401,
            Error::Io(_) | Error::Unclassified(_) | Error::Internal(_) => 500,
            Error::Refused { code, .. } => *code,
            Error::DeniedByPolicy { reason, .. } => match reason.as_str() {
                "Forbidden" => 403,
                "Unauthorized" => 401,
                "RequestEntityTooLarge" => 413,
                _ => 422,
            },
        }
    }

    /// The Status's `reason` (`NotFound`, `Conflict` ...), empty where kube-apiserver leaves it out.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::NotFound(_) | Error::UnknownResource | Error::PageNotFound => "NotFound",
            Error::AlreadyExists(_) => "AlreadyExists",
            Error::Conflict { .. } | Error::ApplyConflict { .. } => "Conflict",
            Error::Invalid { .. } | Error::PatchNotApplicable => "Invalid",
            Error::BadRequest(_) | Error::Undecodable { .. } => "BadRequest",
            Error::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Error::NotAcceptable { .. } => "NotAcceptable",
            Error::Expired(_) => "Expired",
            Error::Forbidden(_)
            | Error::RequestForbidden { .. }
            | Error::NamespaceTerminating { .. }
            | Error::AdmissionForbidden { .. } => "Forbidden",
            Error::MethodNotAllowed(_) => "MethodNotAllowed",
            Error::TooLarge(_) => "RequestEntityTooLarge",
            Error::Unauthorized => "Unauthorized",
            Error::Io(_) | Error::Internal(_) => "InternalError",
            Error::Refused { .. } | Error::DeniedByPolicy { .. } => "",
            Error::Unclassified(_) => "",
        }
    }

    /// The `Status` object clients parse (kube-rs `ErrorResponse`, Python `ApiException.body`).
    pub fn to_status(&self) -> Value {
        let causes = |causes: &[FieldCause]| -> Value {
            causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect::<Vec<_>>()
                .into()
        };
        let details = match self {
            Error::NotFound(s)
            | Error::AlreadyExists(s)
            | Error::Conflict { subject: s, .. }
            | Error::AdmissionForbidden { subject: s, .. }
            | Error::RequestForbidden { subject: s, .. } => {
                Some(status_details(&s.name, &s.group, &s.plural))
            }
            // Invalid objects are named by kind, not by resource, as the real server does.
            Error::Invalid {
                kind_group,
                subject: s,
                causes: c,
            } => {
                let kind = kind_group.split('.').next().unwrap_or_default();
                let mut details = status_details(&s.name, &s.group, kind);
                details["causes"] = causes(c);
                Some(details)
            }
            Error::ApplyConflict { causes: c, .. } => Some(json!({"causes": causes(c)})),
            Error::NamespaceTerminating {
                subject: s,
                namespace,
            } => {
                let mut details = status_details(&s.name, &s.group, &s.plural);
                details["causes"] = json!([{"reason": "NamespaceTerminating",
                    "message": format!("namespace {namespace} is being terminated"),
                    "field": "metadata.namespace"}]);
                Some(details)
            }
            Error::UnknownResource
            | Error::MethodNotAllowed(_)
            | Error::PatchNotApplicable
            | Error::NotAcceptable { routed: true, .. } => Some(json!({})),
            Error::Internal(message) => Some(json!({"causes": [{"message": message}]})),
            Error::DeniedByPolicy {
                subject: s, message, ..
            } => {
                let mut details = status_details(&s.name, &s.group, &s.plural);
                details["causes"] = json!([{"message": message}]);
                Some(details)
            }
            _ => None,
        };
        let reason = match self {
            Error::Refused { reason, .. } | Error::DeniedByPolicy { reason, .. } => reason.as_str(),
            _ => self.reason(),
        };
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": reason,
            "code": self.code(),
        });
        if let Some(details) = details {
            status["details"] = details;
        }
        if reason.is_empty()
            && let Some(status) = status.as_object_mut()
        {
            status.remove("reason");
        }
        status
    }

    /// The error of a patch: kube-apiserver applies the patch first and decodes the result, so a result
    /// that does not decode is an invalid `patch` (422) quoting the patched object, not a bad body.
    /// `written` gives the object's text as kube-apiserver's patch wrote it, from its JSON.
    pub fn for_patch(self, written: impl FnOnce(&str) -> String) -> Error {
        match self {
            Error::Undecodable { detail, object, .. } => Error::Invalid {
                kind_group: String::new(),
                subject: Subject::default(),
                causes: vec![FieldCause::new(
                    "FieldValueInvalid",
                    "patch",
                    format!("Invalid value: {}: {detail}", Value::String(written(&object))),
                )],
            },
            other => other,
        }
    }

    /// 422 about `name` of `rt`, with these causes.
    pub fn invalid(rt: &ResourceType, name: &str, causes: Vec<FieldCause>) -> Error {
        Error::Invalid {
            kind_group: kind_group(rt),
            subject: Subject::of(rt, name),
            causes,
        }
    }

    /// [`Error::from_machinery`] about `name` of `rt`.
    pub fn from_machinery_about(error: apimachinery::Error, rt: &ResourceType, name: &str) -> Error {
        Error::from_machinery(error, &kind_group(rt), &Subject::of(rt, name))
    }

    /// Lifts an `apimachinery` verdict about `subject` into a response error.
    pub fn from_machinery(error: apimachinery::Error, kind_group: &str, subject: &Subject) -> Error {
        match error {
            apimachinery::Error::Invalid { causes } => Error::Invalid {
                kind_group: kind_group.to_owned(),
                subject: subject.clone(),
                causes,
            },
            apimachinery::Error::BadRequest(message) => Error::BadRequest(message),
            apimachinery::Error::Conflict { message, causes } => Error::ApplyConflict {
                subject: subject.clone(),
                message,
                causes,
            },
            apimachinery::Error::UnsupportedMediaType(message) => Error::UnsupportedMediaType(message),
            apimachinery::Error::Untyped(message) => Error::Unclassified(message),
            apimachinery::Error::PatchNotApplicable(detail) => {
                tracing::debug!(%detail, "a JSON patch does not apply");
                Error::PatchNotApplicable
            }
        }
    }
}
