//! The status, the same in both versions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::postgres_writer::Condition;

/// What the operator last published. The same in both versions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteConfigStatus {
    /// The ConfigMap the options are published in: <name>-config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
    /// When the operator last changed the ConfigMap (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// How many options the ConfigMap holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_count: Option<i64>,
    /// The metadata.generation this status describes. Lower than the resource's generation: the
    /// latest change to the spec is not published yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// One condition, Ready. True (reason Synced) when the ConfigMap holds the options. False with
    /// reason ConfigMapNotOwned when a ConfigMap of that name belongs to someone else: delete it, or
    /// create the VoteConfig under another name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
