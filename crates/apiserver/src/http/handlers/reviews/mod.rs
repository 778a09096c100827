//! The reviews, answered and never stored: those a client sends about itself ([`self_subject`]:
//! `kubectl auth can-i` and `whoami`) and those about someone else ([`access`]: TokenReview,
//! SubjectAccessReview, LocalSubjectAccessReview).

pub(super) mod access;
pub(crate) mod self_subject;
