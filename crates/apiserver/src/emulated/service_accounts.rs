//! kube-controller-manager's ServiceAccount controller (K4): every active namespace has a
//! ServiceAccount `default`, made as the namespace is and again whenever it is deleted. Pods run as
//! it unless they name another, and clients (upstream's e2e framework among them) wait for it before
//! they use a new namespace.

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

use crate::store::{State, Store, WriteOptions};

const NAME: &str = "default";

/// After a write of `stored` (of `rt`): a new or changed active namespace gets its account.
pub(super) fn after_write(store: &Store, state: &mut State, rt: &ResourceType, stored: &Value) {
    if rt.group.is_empty() && rt.plural == "namespaces" && !meta::is_deleting(stored) {
        ensure(store, state, meta::name(stored));
    }
}

/// After `object` of `rt` in `namespace` is gone: a deleted `default` account comes back.
pub(super) fn after_remove(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    object: &Value,
) {
    if rt.group.is_empty() && rt.plural == "serviceaccounts" && meta::name(object) == NAME {
        ensure(store, state, namespace);
    }
}

fn ensure(store: &Store, state: &mut State, namespace: &str) {
    let Some(rt) = state.registry.resolve("", "v1", "serviceaccounts") else {
        return;
    };
    if Store::stored_object(state, &rt, namespace, NAME).is_some() {
        return;
    }
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME}});
    let options = WriteOptions {
        field_manager: Some("kube-controller-manager".to_owned()),
        ..WriteOptions::default()
    };
    // A namespace being deleted refuses it, as it refuses the controller's create upstream.
    if let Err(error) =
        crate::strategy::writes::create_locked(store, state, &rt, namespace, account, &options)
    {
        tracing::debug!(%error, namespace, "the ServiceAccount controller's create was refused");
    }
}
