//! A kind's own rules, applied at the commit: the fields the server sets on a create or an update
//! and the checks that need the store's state (a Service's cluster IP, a CRD's names); when an
//! object being deleted may go, and whether it may be deleted at all.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use crate::{error::Error, store::State};

/// A write being prepared under the store's lock: what a kind's rules may read and change.
pub(crate) struct Preparing<'a> {
    /// The store's state, for rules that allocate (a Service's cluster IP) or look others up.
    pub(crate) state: &'a mut State,
    /// The resource written.
    pub(crate) rt: &'a ResourceType,
    /// The stored object an update replaces; `None` for a create.
    pub(crate) old: Option<&'a Value>,
    /// The object about to be stored.
    pub(crate) object: &'a mut Value,
    /// The subresource the update is made through (`status`, `finalize` ...), if any.
    pub(crate) subresource: Option<&'a str>,
}

/// What a kind does to its objects under the store's lock.
pub(crate) trait KindRules: Send + Sync + 'static {
    /// Prepares a create or an update: sets what the server sets, or refuses the object with the
    /// causes of a 422.
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>>;

    /// Whether an object being deleted whose finalizers are all gone may be removed by this update.
    fn may_go(&self, rt: &ResourceType, object: &Value) -> bool;

    /// Whether `name` may be deleted at all.
    fn check_deletable(&self, rt: &ResourceType, name: &str) -> Result<(), Error>;
}
