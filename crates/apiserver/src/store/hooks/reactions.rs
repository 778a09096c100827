//! The controllers' reactions to writes: follow-up writes in the same step, the deletes they take
//! over (a namespace's teardown, an orphaning), and the changes they watch go out.

use apimachinery::resource::ResourceType;
use serde_json::Value;

use crate::store::{DeletePropagation, State, Store, StoredEvent};

/// What controllers do when objects change.
pub(crate) trait WriteReactions: Send + Sync + 'static {
    /// A change was published (every write's last step, in resourceVersion order).
    fn published(&self, event: &StoredEvent);

    /// Follow-up writes after `name` was stored as `stored`, over an object whose owner references
    /// were `previous_references` (none for a create).
    #[allow(clippy::too_many_arguments)]
    fn after_write(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        previous_references: &[Value],
        stored: &Value,
    );

    /// A delete that is more than marking or removing one object: `Some` with its result when a
    /// controller took it over (a teardown, an orphaning or foreground deletion).
    fn on_delete(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
        propagation: DeletePropagation,
    ) -> Option<Value>;

    /// After an object is gone for good.
    fn after_remove(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
    );
}
