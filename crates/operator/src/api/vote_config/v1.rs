//! VoteConfig `voting.schoolofdevops.com/v1`, the storage version: a question above the options, and
//! options whose color may be left to the operator (see [`super::palette`]).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::v1alpha1::VoteConfigStatus;

/// Two options with one label would look the same to voters: a cross-field rule (it compares the
/// options with each other, which no schema keyword can), in both versions.
pub(super) const DISTINCT_LABELS_RULE: &str = "self.all(o, self.exists_one(p, p.label == o.label))";
pub(super) const DISTINCT_LABELS_MESSAGE: &str =
    "two options have the same label: voters could not tell them apart";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "voting.schoolofdevops.com",
    version = "v1",
    kind = "VoteConfig",
    namespaced,
    status = "VoteConfigStatus",
    shortname = "vc",
    printcolumn = r#"{"name":"Question","type":"string","jsonPath":".spec.question"}"#,
    printcolumn = r#"{"name":"Options","type":"integer","jsonPath":".status.optionCount"}"#,
    printcolumn = r#"{"name":"ConfigMap","type":"string","jsonPath":".status.configMapName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [{
    // A transition rule: only checked on update, against the object before it.
    "rule": "!has(oldSelf.question) || (has(self.question) && self.question == oldSelf.question)",
    "message": "spec.question cannot change once set: the votes cast so far answered it; create another VoteConfig to ask another question"
}]))]
pub struct VoteConfigSpec {
    /// What voters are asked, shown above the options. Fixed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200), regex(pattern = r"^[^\r\n]+$"))]
    pub question: Option<String>,
    /// 2 to 10 options with distinct ids, labels and colors, in the order voters see them.
    #[schemars(
        length(min = 2, max = 10),
        extend(
            "x-kubernetes-list-type" = "map",
            "x-kubernetes-list-map-keys" = ["id"],
            "x-kubernetes-validations" = [
                {"rule": DISTINCT_LABELS_RULE, "message": DISTINCT_LABELS_MESSAGE},
                {
                    "rule": "self.all(o, !has(o.color) || self.exists_one(p, has(p.color) && p.color.lowerAscii() == o.color.lowerAscii()))",
                    "message": "two options have the same color: voters could not tell them apart"
                }
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
    /// Left out, the defaulting webhook picks a palette color no other option uses. (The length
    /// repeats the pattern for the API server's CEL cost estimate, which cannot read patterns.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"), length(min = 7, max = 7))]
    pub color: Option<String>,
}

impl VoteConfigSpec {
    /// Each option's color, a palette pick for those left out.
    pub fn colors(&self) -> Vec<String> {
        let written: Vec<Option<&str>> = self.options.iter().map(|o| o.color.as_deref()).collect();
        super::palette::fill(&written)
    }
}
