//! Defaults and normalisation the real API server applies to built-in kinds (B4, B5), so that
//! controllers that diff against what they read back converge.

use serde_json::Value;

use crate::Result;

/// Applies the defaults of built-in `kind` to `object` in place (Service: type, sessionAffinity,
/// port protocol and targetPort, ipFamilies; Deployment: strategy, revisionHistoryLimit,
/// progressDeadlineSeconds, pod template defaults; Secret: `stringData` merged into `data` and
/// dropped, `type: Opaque`). Bad Secret base64 is 400. Cluster IP allocation is the server's job.
pub fn apply_builtin_defaults(kind: &str, object: &mut Value) -> Result<()> {
    let _ = (kind, object);
    Ok(())
}
