//! The rules a kind may have of its own, each a method with a default that does nothing special.

use apimachinery::{FieldCause, meta, resource::ResourceType, validation::NameRule};
use serde_json::Value;

use crate::{error::Error, store::Preparing};

/// A kind's own rules; each has a default that does nothing special.
pub(crate) trait Kind: Sync {
    /// Prepares a create or an update: sets what the server sets, or refuses the object with the
    /// causes of a 422.
    fn prepare(&self, _write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        Ok(())
    }

    /// Whether an object being deleted whose metadata finalizers are all gone may be removed now.
    fn may_go(&self, _object: &Value) -> bool {
        true
    }

    /// Whether the object `name` may be deleted at all.
    fn check_deletable(&self, _name: &str) -> Result<(), Error> {
        Ok(())
    }

    /// What its objects' names must look like.
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// The kind's rules of validation beyond the metadata every kind shares, for the kinds whose
    /// rules no schema says: the causes of a 422, none when valid.
    fn validate(&self, _rt: &ResourceType, _object: &Value) -> Vec<FieldCause> {
        Vec::new()
    }

    /// Whether a `/status` write also takes the object's annotations.
    fn status_takes_annotations(&self) -> bool {
        false
    }

    /// Whether a `/status` write skips the check that its sender may set the owner references it
    /// sends, as kube-apiserver's plugin skips a pod's: old kubelets send them corrupted, and the
    /// status strategy keeps the stored ones.
    fn status_skips_owner_reference_check(&self) -> bool {
        false
    }

    /// Whether a create sets `metadata.generation` to 1, as kube-apiserver's registry does for the
    /// workload kinds, CRDs and the policies, classes and configurations whose status or users say
    /// which generation they observed (custom resources always do).
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether an update from `old` to `new` counts one more generation. By default, for a kind
    /// that tracks them, a change of anything but the metadata and the status: the spec, which most
    /// registries compare; a kind whose registry compares something else says so.
    fn counts_generation(&self, old: &Value, new: &Value) -> bool {
        self.tracks_generation() && meta::spec_part(old) != meta::spec_part(new)
    }

    /// Subresources besides `status` whose writes change the status alone (a CSR's `approval`).
    fn status_subresources(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a DELETE answers with the deleted object rather than a `Success` Status, as the
    /// kind's kube-apiserver registry does when it returns deleted objects.
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// Whether a DELETE that names no propagation orphans the dependents (every other kind deletes
    /// them in the background).
    fn orphans_dependents_by_default(&self) -> bool {
        false
    }

    /// The warning kube-apiserver sends with every answer about the kind at `version`, when that
    /// version is deprecated.
    fn deprecation(&self, _version: &str) -> Option<&'static str> {
        None
    }

    /// Its objects, when they are computed from what the server knows of itself rather than stored
    /// (read only).
    fn computed_objects(&self) -> Option<Vec<Value>> {
        None
    }

    /// Whether a create of it binds the pod it names to a node, as the pods' `binding` subresource
    /// does.
    fn binds_pods(&self) -> bool {
        false
    }

    /// Whether a request for one of its objects is, to authorization and audit, in the namespace the
    /// object's name names (a Namespace is in itself), so that a Role in a namespace may grant access
    /// to the Namespace.
    fn is_its_own_namespace(&self) -> bool {
        false
    }

    /// Whether a body of its kind is taken whatever API version it names, for a kind two APIs serve
    /// over one storage (an Event, core and `events.k8s.io`).
    fn takes_either_api_version(&self) -> bool {
        false
    }
}
