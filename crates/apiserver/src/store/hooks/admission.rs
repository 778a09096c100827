//! The built-in admission plugins that see every write, whatever its kind: whether a namespace
//! takes an object, whether a quota allows it.

use apimachinery::resource::ResourceType;
use serde_json::Value;

use crate::{error::Error, store::State};

/// Admission under the store's lock, after the kind's strategy.
pub(crate) trait AdmissionPlugins: Send + Sync + 'static {
    /// Whether `name` of `rt` may be created in `namespace` now (it exists and is not terminating).
    fn admit_into_namespace(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<(), Error>;

    /// Whether a create (`old` = None) or an update, made through `subresource`, is allowed: `Err`
    /// with the message of a 403 when a policy (a quota) forbids it.
    fn admit(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: Option<&Value>,
        object: &Value,
        subresource: Option<&str>,
    ) -> Result<(), String>;
}
