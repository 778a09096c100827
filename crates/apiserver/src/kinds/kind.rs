//! The rules a kind may have of its own, each a method with a default that does nothing special.

use apimachinery::{FieldCause, resource::ResourceType, validation::NameRule};
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
}
