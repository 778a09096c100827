//! ServiceAccounts: whether one a token was issued for still exists.

use apimachinery::meta;

use crate::store::Store;

/// The uid of the ServiceAccount `namespace/name`, when it exists: a token issued for an account
/// deleted, or deleted and created again, no longer authenticates.
pub(crate) fn stored_uid(store: &Store, namespace: &str, name: &str) -> Option<String> {
    store
        .find("", "v1", "serviceaccounts", namespace, name)
        .map(|object| meta::uid(&object).to_owned())
}
