//! ResourceQuotas (Q1): kube-apiserver's ResourceQuota admission, which refuses a write that would
//! take a quota of its namespace past a hard limit, and kube-controller-manager's resourcequota
//! controller, which writes each quota's `status.hard` (its spec's) and `status.used` (measured over
//! the namespace's objects). The rules are `apimachinery::quota`'s; this is when they run.
//!
//! As upstream: a quota is measured when it is made and when its spec changes, and again when an
//! object it counts is written or removed; a write of its status alone (a client's) stands until the
//! next full resync. Unlike upstream, the measuring happens under the store lock as a consequence of
//! the write, so a client reads an up-to-date usage as soon as its write returns; and the full resync
//! comes every [`RESYNC_SECONDS`] rather than kube-controller-manager's five minutes.

use std::collections::BTreeSet;

use apimachinery::quota::{self, Evaluator, Operation};
use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

use crate::store::{State, Store, WriteOptions};

/// How often every quota is measured again, whatever changed.
const RESYNC_SECONDS: i64 = 30;
const FIELD_MANAGER: &str = "kube-controller-manager";

/// The quotas to measure after the write in progress, and when the next full resync is due.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// (namespace, name) of quotas made or whose spec changed.
    changed: BTreeSet<(String, String)>,
    next_resync: i64,
}

fn is_quota(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "resourcequotas"
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The admission of a create (`old` = None) or an update of `object`: the refusal's text, after
/// `<resource> "<name>" is forbidden: `, when a quota of its namespace does not let it through.
pub(super) fn admit(
    state: &mut State,
    rt: &ResourceType,
    old: Option<&Value>,
    object: &Value,
    subresource: Option<&str>,
) -> Result<(), String> {
    if is_quota(rt) && old.is_none_or(|old| old.get("spec") != object.get("spec")) {
        let key = (meta::namespace(object).to_owned(), meta::name(object).to_owned());
        state.extensions.get::<Pending>().changed.insert(key);
    }
    let namespace = meta::namespace(object);
    let Some(evaluator) = Evaluator::of(&rt.group, &rt.plural).filter(|_| rt.namespaced) else {
        return Ok(());
    };
    let quotas = quotas_in(state, namespace);
    let write = quota::Write {
        evaluator: &evaluator,
        operation: if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        },
        subresource,
        object,
        old,
        now: now(),
    };
    quota::admit(&quotas, &write)
}

/// After `stored` of `rt` was written in `namespace`: measures the quotas it concerns.
pub(super) fn after_write(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    stored: &Value,
) {
    if is_quota(rt) {
        let key = (namespace.to_owned(), meta::name(stored).to_owned());
        // A new quota changes the count of quotas the others may limit: all are measured.
        if state.extensions.get::<Pending>().changed.remove(&key) {
            sync_namespace(store, state, namespace, None);
        }
        return;
    }
    if let Some(evaluator) = Evaluator::of(&rt.group, &rt.plural).filter(|_| rt.namespaced) {
        sync_namespace(store, state, namespace, Some(&evaluator));
    }
}

/// After an object of `rt` in `namespace` is gone for good.
pub(super) fn after_remove(store: &Store, state: &mut State, rt: &ResourceType, namespace: &str) {
    if let Some(evaluator) = Evaluator::of(&rt.group, &rt.plural).filter(|_| rt.namespaced) {
        sync_namespace(store, state, namespace, Some(&evaluator));
    }
}

/// Measures every quota again when the resync is due: what a client wrote into a quota's status
/// goes then.
pub(super) fn resync_if_due(store: &Store, state: &mut State) {
    let now = now();
    if now < state.extensions.get::<Pending>().next_resync {
        return;
    }
    state.extensions.get::<Pending>().next_resync = now + RESYNC_SECONDS;
    let namespaces: BTreeSet<String> = state
        .objects
        .get("/resourcequotas")
        .into_iter()
        .flat_map(|quotas| quotas.keys().map(|(namespace, _)| namespace.clone()))
        .collect();
    for namespace in namespaces {
        sync_namespace(store, state, &namespace, None);
    }
}

/// The objects of `storage_key` in `namespace`.
fn objects_in(state: &State, storage_key: &str, namespace: &str) -> Vec<Value> {
    let Some(objects) = state.objects.get(storage_key) else {
        return Vec::new();
    };
    objects
        .range((namespace.to_owned(), String::new())..)
        .take_while(|((ns, _), _)| ns == namespace)
        .map(|(_, object)| object.decode())
        .collect()
}

fn quotas_in(state: &State, namespace: &str) -> Vec<Value> {
    objects_in(state, "/resourcequotas", namespace)
}

/// Measures the quotas of `namespace` that limit something `changed` measures (all when `None`),
/// writing the status of each whose measure differs.
fn sync_namespace(store: &Store, state: &mut State, namespace: &str, changed: Option<&Evaluator>) {
    let Some(rt) = state.registry.resolve("", "v1", "resourcequotas") else {
        return;
    };
    for quota in quotas_in(state, namespace) {
        let limits = quota::read_list(quota.pointer("/spec/hard"));
        if let Some(evaluator) = changed
            && evaluator
                .matching_resources(limits.keys().map(String::as_str))
                .is_empty()
        {
            continue;
        }
        let status = quota::status(
            &quota,
            |group, plural| objects_in(state, &format!("{group}/{plural}"), namespace),
            now(),
        );
        if quota.get("status") == Some(&status) {
            continue;
        }
        let mut next = quota.clone();
        next["status"] = status;
        let options = WriteOptions {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..WriteOptions::default()
        };
        let name = meta::name(&quota).to_owned();
        if let Err(error) = crate::strategy::writes::update_locked(
            store, state, &rt, namespace, &name, quota, next, &options, true,
        ) {
            tracing::debug!(%error, namespace, name, "the quota controller's status update was refused");
        }
    }
}
