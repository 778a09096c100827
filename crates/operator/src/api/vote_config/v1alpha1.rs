//! VoteConfig `voting.schoolofdevops.com/v1alpha1`: the first version, still served. Every option
//! names its color. The status is the same in both versions.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::postgres_writer::Condition;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "voting.schoolofdevops.com",
    version = "v1alpha1",
    kind = "VoteConfig",
    namespaced,
    status = "VoteConfigStatus",
    shortname = "vc",
    printcolumn = r#"{"name":"Options","type":"integer","jsonPath":".status.optionCount"}"#,
    printcolumn = r#"{"name":"ConfigMap","type":"string","jsonPath":".status.configMapName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct VoteConfigSpec {
    /// 2 to 10 options with distinct ids and labels, in the order voters see them.
    #[schemars(
        length(min = 2, max = 10),
        extend(
            "x-kubernetes-list-type" = "map",
            "x-kubernetes-list-map-keys" = ["id"],
            "x-kubernetes-validations" = [
                {"rule": super::v1::DISTINCT_LABELS_RULE, "message": super::v1::DISTINCT_LABELS_MESSAGE}
            ]
        )
    )]
    pub options: Vec<VoteOption>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct VoteOption {
    #[schemars(regex(pattern = r"^[a-z]$"))]
    pub id: String,
    /// What voters see. No colon or line break: each option is one `id:label:color` line of the
    /// ConfigMap's options.txt, and either would split it.
    #[schemars(length(min = 1, max = 50), regex(pattern = r"^[^:\r\n]+$"))]
    pub label: String,
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub color: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteConfigStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
    /// When the ConfigMap last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
