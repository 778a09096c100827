//! A request's write, stage by stage in kube-apiserver's order, each stage once: the strategy's
//! decoding (`strategy::{create,update}::prepare`), the mutating webhooks (A1-A9), the strategy's
//! validation (`strategy::{create,update}::finish`), the admission policies and validating webhooks,
//! the conversion to the storage version through a CRD's conversion webhook (X1-X4), and the store's
//! commit. The stages that call out run only when a webhook or policy is configured (or the CRD
//! converts); the others always do.
//!
//! An update is prepared against the object read first and committed only if no other write changed
//! it meanwhile; otherwise every stage runs again against the new current object, as the real
//! server's `GuaranteedUpdate` does. Deletes pass the webhooks too.
//!
//! Subresources write through here as well: `status`, `approval`, `ephemeralcontainers`, `resize` and
//! `finalize` as updates of their object ([`Target::write`]), `scale` through a view of it
//! ([`Target::write_view`]), `eviction`, `binding` and a service account's `token` as objects only
//! ever created ([`Target::admit_create`]).
//!
//! [`write`](mod@write) holds that orchestration, [`stages`] the stages that call out (mutating
//! webhooks, then admission policies and validating webhooks), [`call`] one call of a webhook, and
//! [`matching`] which webhooks a request's attributes select.

mod attributes;
pub mod call;
pub mod matching;
mod policies;
mod review_options;
mod stages;
mod subresources;
mod write;

pub use attributes::{Attributes, Kind};
pub use subresources::View;
pub use write::{Change, Target};

/// Stored objects presented as `rt`, for reads (re-exported for the HTTP layer).
pub use crate::webhooks::conversion::read;
