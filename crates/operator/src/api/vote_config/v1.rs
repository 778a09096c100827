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

/// The vote: an optional question and its options.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "voting.schoolofdevops.com",
    version = "v1",
    kind = "VoteConfig",
    doc = "A VoteConfig is the options of a vote. The operator publishes them in the ConfigMap <name>-config, which the VoteConfig owns: key options.txt holds one id:label:color line per option, key question.txt the question when there is one. Edits to what the operator wrote there are repaired; a ConfigMap of that name made by someone else is never taken over.",
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
    /// What voters are asked, shown above the options: 1 to 200 characters on one line. Optional; once
    /// set it can be neither changed nor removed, since the votes cast so far answered it (create
    /// another VoteConfig to ask another question).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200), regex(pattern = r"^[^\r\n]+$"))]
    pub question: Option<String>,
    /// The options, in the order voters see them: 2 to 10, with distinct ids, distinct labels and
    /// distinct colors (whatever their case).
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
    /// The option's color, as # and six hex digits (#FF6B6B). Left out, the operator picks the first
    /// color of its ten-color palette that no other option uses, and writes it into the resource, so
    /// that it does not change when other options do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // The length repeats what the pattern says, for the API server's CEL cost estimate of the
    // distinct-colors rule above: the estimate reads maxLength, not patterns.
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
