//! The ConfigMapMirror resource: which ConfigMap to copy, and how the copy stands.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Keeps ConfigMap `<mirror name>` (in the mirror's namespace) a copy of the data of ConfigMap
/// `spec.source` (same namespace), owned by the mirror: deleting the mirror deletes the copy.
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "mirror.example.com",
    version = "v1",
    kind = "ConfigMapMirror",
    namespaced,
    status = "ConfigMapMirrorStatus",
    shortname = "cmm",
    printcolumn = r#"{"name": "Source", "type": "string", "jsonPath": ".spec.source"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapMirrorSpec {
    /// The name of the ConfigMap to copy, in the mirror's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub source: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapMirrorStatus {
    /// The generation of the spec this status describes.
    pub observed_generation: Option<i64>,
    pub phase: Phase,
    /// What the phase means for this mirror, for `kubectl describe`.
    pub message: String,
    /// How many keys (`data` and `binaryData`) the copy holds.
    pub keys: usize,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Phase {
    /// Not reconciled yet.
    #[default]
    Pending,
    /// The copy holds the source's data.
    Synced,
    /// The source does not exist; the last copy (if any) stays as it was.
    SourceMissing,
    /// A ConfigMap of the mirror's name exists and is not the mirror's: it is never taken over.
    CopyNotOwned,
}
