//! VoteConfig (`voting.schoolofdevops.com`): voting options, published as a ConfigMap. Two versions are
//! served: [`v1alpha1`], the first, and [`v1`], the storage version, which the controller reads. The
//! operator's conversion webhook ([`crate::webhook::conversion`]) turns one into the other.
//!
//! What v1 adds: a `question` shown above the options, and options whose `color` may be left out (the
//! defaulting webhook picks one from [`palette`] that no other option uses). v1alpha1 cannot hold a
//! question: converted to v1alpha1 it travels in the [`QUESTION_ANNOTATION`] annotation.

pub mod palette;
mod rules;
mod status;
pub mod v1;
pub mod v1alpha1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use status::VoteConfigStatus;
pub use v1::{VoteConfig, VoteConfigSpec, VoteOption};

pub const GROUP: &str = "voting.schoolofdevops.com";
/// The version objects are stored in, and the one the controller reads.
pub const STORAGE_VERSION: &str = "v1";

/// Where a v1 `spec.question` lives while the object is seen as v1alpha1, so that a v1alpha1 client's
/// update does not lose it.
pub const QUESTION_ANNOTATION: &str = "voting.schoolofdevops.com/question";

/// The CRD with both versions, v1 stored. The conversion stanza is added by
/// [`crate::webhook::configurations::crds`], which knows where the webhook is.
pub fn crd() -> CustomResourceDefinition {
    // kube's merge_crds does this too, but returns an error that cannot happen for two versions of one
    // derive: the versions are simply put side by side, v1 stored.
    let mut crd = v1alpha1::VoteConfig::crd();
    crd.spec.versions.extend(v1::VoteConfig::crd().spec.versions);
    for version in &mut crd.spec.versions {
        version.storage = version.name == STORAGE_VERSION;
    }
    crd
}
