//! Webhook configurations, which have no schema to say their rules: validated here.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use super::Kind;

/// Mutating and validating webhook configurations.
pub(super) struct WebhookConfigurations;

impl Kind for WebhookConfigurations {
    fn validate(&self, rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
        apimachinery::webhook_configurations::validate(&rt.kind, object)
    }
}
