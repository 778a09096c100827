//! VoteConfig `voting.schoolofdevops.com/v1alpha1`: the first version, still served. Every option
//! names its color. The status is the same in both versions.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::postgres_writer::Condition;

/// The vote's options.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "voting.schoolofdevops.com",
    version = "v1alpha1",
    kind = "VoteConfig",
    doc = "A VoteConfig is the options of a vote, published in the ConfigMap <name>-config (one id:label:color line per option, key options.txt). This is the first version, still served: v1 adds a question and lets the operator pick colors. A v1 question is kept, seen from this version, in the annotation voting.schoolofdevops.com/question.",
    namespaced,
    status = "VoteConfigStatus",
    shortname = "vc",
    printcolumn = r#"{"name":"Options","type":"integer","jsonPath":".status.optionCount"}"#,
    printcolumn = r#"{"name":"ConfigMap","type":"string","jsonPath":".status.configMapName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct VoteConfigSpec {
    /// The options, in the order voters see them: 2 to 10, with distinct ids and distinct labels.
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

/// One option of the vote.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct VoteOption {
    /// The option's key: one lower-case letter, a to z, unique in the list. A vote records it.
    #[schemars(regex(pattern = r"^[a-z]$"))]
    pub id: String,
    /// What voters see: 1 to 50 characters, with no colon and no line break (each option is one
    /// id:label:color line of the ConfigMap's options.txt, which either would split).
    #[schemars(length(min = 1, max = 50), regex(pattern = r"^[^:\r\n]+$"))]
    pub label: String,
    /// The option's color, as # and six hex digits (#FF6B6B). Required in this version.
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub color: String,
}

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
