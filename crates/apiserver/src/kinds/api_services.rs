//! APIServices: kube-aggregator's validation beyond their metadata. Their availability is a
//! controller's (`emulated::api_services`).

use apimachinery::{FieldCause, meta, schema::messages, validation::NameRule};
use serde_json::{Value, json};

use super::Kind;
use crate::store::Preparing;

/// APIServices: validated beyond their metadata.
pub(super) struct ApiServices;

impl Kind for ApiServices {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        match validate(write.object) {
            causes if causes.is_empty() => Ok(()),
            causes => Err(causes),
        }
    }

    /// The name is `version.group`, the group maybe empty.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
}

/// kube-aggregator's validation of an APIService beyond its metadata: the name is `version.group`,
/// only the core group's v1 has no group, and the priorities are in range.
fn validate(object: &Value) -> Vec<FieldCause> {
    let text = |pointer: &str| meta::str_at(object, pointer).unwrap_or_default();
    let (group, version) = (text("/spec/group"), text("/spec/version"));
    let required_name = format!("{version}.{group}");
    let name = meta::name(object);
    let mut causes = Vec::new();
    if !name.is_empty() && name != required_name {
        causes.push(messages::invalid(
            "metadata.name",
            &json!(name),
            &format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        causes.push(messages::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    let number = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_i64)
            .unwrap_or_default()
    };
    let minimum = number("/spec/groupPriorityMinimum");
    if !(1..=20000).contains(&minimum) {
        causes.push(messages::invalid(
            "spec.groupPriorityMinimum",
            &json!(minimum),
            "must be positive and less than 20000",
        ));
    }
    let priority = number("/spec/versionPriority");
    if !(1..=1000).contains(&priority) {
        causes.push(messages::invalid(
            "spec.versionPriority",
            &json!(priority),
            "must be positive and less than 1000",
        ));
    }
    causes
}
