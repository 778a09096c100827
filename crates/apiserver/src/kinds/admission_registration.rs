//! Webhook configurations, which have no schema to say their rules: validated here; and their
//! `metadata.generation`, 1 on a create and one more on each change of their `webhooks`, as
//! kube-apiserver's registry counts it.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use super::Kind;

/// Mutating and validating webhook configurations.
pub(super) struct WebhookConfigurations;

impl Kind for WebhookConfigurations {
    fn validate(&self, rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
        apimachinery::webhook_configurations::validate(&rt.kind, object)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn counts_generation(&self, old: &Value, new: &Value) -> bool {
        old.get("webhooks") != new.get("webhooks")
    }
}
