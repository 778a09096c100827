//! What is kept beside the objects and must follow every write (the Service addresses in use).

use serde_json::Value;

use crate::store::State;

/// Indexes kept current under the store's lock.
pub(crate) trait Indexes: Send + Sync + 'static {
    /// The object under storage key `key` went from `before` to `after` (None: absent). Called for
    /// every stored and removed object.
    fn indexed(&self, state: &mut State, key: &str, before: Option<&Value>, after: Option<&Value>);
}
