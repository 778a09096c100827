//! The APIServices of the served group versions (B9), stored as kube-apiserver's autoregister
//! controller stores them: one per group version but the aggregator's own, the built-in ones from
//! start-up on (labelled `onstart`), a CRD's while it is served (labelled `true`). Kept in step after
//! every change of what is served; APIServices a client created (without the label) are left alone.

use std::collections::BTreeMap;

use apimachinery::{
    meta,
    resource::{Origin, ResourceType},
};
use serde_json::{Value, json};

use crate::store::{DeletePropagation, State, Store, WriteOptions};

const GROUP: &str = "apiregistration.k8s.io";
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// kube-apiserver's priorities of the built-in group versions, so clients order groups as they do
/// there.
fn priorities(group: &str, version: &str) -> (i64, i64) {
    match (group, version) {
        ("flowcontrol.apiserver.k8s.io", _) => return (16100, 21),
        ("autoscaling", "v2") => return (17500, 30),
        _ => {}
    }
    let minimum = match group {
        "" => return (18000, 1),
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" | "admissionregistration.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        _ => 16000,
    };
    (minimum, 15)
}

/// The APIService a served group version has, by name (`v1.apps`, `v1.` for the core group).
fn desired(served: &[ResourceType]) -> BTreeMap<String, Value> {
    let mut wanted = BTreeMap::new();
    for rt in served.iter().filter(|rt| rt.group != GROUP) {
        let name = format!("{}.{}", rt.version, rt.group);
        wanted.entry(name.clone()).or_insert_with(|| {
            let (minimum, priority, managed) = match rt.origin {
                Origin::BuiltIn => {
                    let (minimum, priority) = priorities(&rt.group, &rt.version);
                    (minimum, priority, "onstart")
                }
                Origin::Crd { .. } => (1000, 100, "true"),
            };
            let mut spec =
                json!({"version": rt.version, "groupPriorityMinimum": minimum, "versionPriority": priority});
            if !rt.group.is_empty() {
                spec["group"] = json!(rt.group);
            }
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name, "labels": {AUTOMANAGED: managed}},
                "spec": spec})
        });
    }
    wanted
}

/// Creates the APIServices of the group versions served now and removes those of group versions no
/// longer served. Local APIServices are always available, which their status says at once.
pub(super) fn reconcile(store: &Store, state: &mut State) {
    let Some(rt) = state.registry.resolve(GROUP, "v1", "apiservices") else {
        return;
    };
    let wanted = desired(&state.registry.all());
    let automanaged: Vec<String> = state
        .objects
        .get(&crate::store::storage_key(&rt))
        .map(|objects| {
            objects
                .iter()
                .filter(|(_, stored)| {
                    stored
                        .decode()
                        .pointer("/metadata/labels")
                        .and_then(|l| l.get(AUTOMANAGED))
                        .is_some()
                })
                .map(|((_, name), _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    for name in automanaged.iter().filter(|name| !wanted.contains_key(*name)) {
        if let Err(error) = store.delete_locked(state, &rt, "", name, DeletePropagation::Background) {
            tracing::warn!(%error, name, "could not remove an APIService no longer served");
        }
    }
    let options = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    };
    for (name, service) in wanted {
        if store.stored(state, &rt, "", &name).is_some() {
            continue;
        }
        let created = match crate::strategy::writes::create_locked(store, state, &rt, "", service, &options) {
            Ok(created) => created.object,
            Err(error) => {
                tracing::warn!(%error, name, "could not register an APIService");
                continue;
            }
        };
        let mut available = created.clone();
        let since = meta::str_at(&created, "/metadata/creationTimestamp")
            .unwrap_or_default()
            .to_owned();
        available["status"] = json!({"conditions": [{"type": "Available", "status": "True",
            "reason": "Local", "message": "Local APIServices are always available",
            "lastTransitionTime": since}]});
        if let Err(error) = crate::strategy::writes::update_locked(
            store,
            state,
            &rt,
            "",
            &name,
            created,
            available,
            &WriteOptions::default(),
            true,
        ) {
            tracing::warn!(%error, name, "could not mark an APIService available");
        }
    }
}
