//! A kind's own rules, applied at the commit: the fields the server sets on a create or an update
//! and the checks that need the store's state (a Service's cluster IP, a CRD's names); when an
//! object being deleted may go, and whether it may be deleted at all.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use crate::{error::Error, store::State};

/// What a kind does to its objects under the store's lock.
pub(crate) trait KindRules: Send + Sync + 'static {
    /// Prepares a create (`old` = None) or an update, made through `subresource`: sets what the
    /// server sets, or refuses the object with the causes of a 422.
    fn prepare(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: Option<&Value>,
        object: &mut Value,
        subresource: Option<&str>,
    ) -> Result<(), Vec<FieldCause>>;

    /// Whether an object being deleted whose finalizers are all gone may be removed by this update.
    fn may_go(&self, rt: &ResourceType, object: &Value) -> bool;

    /// Whether `name` may be deleted at all.
    fn check_deletable(&self, rt: &ResourceType, name: &str) -> Result<(), Error>;
}
