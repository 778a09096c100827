//! Reading and writing the objects the workload controllers work on, under the store lock, as the
//! controllers' clients would: creates and updates go through admission like any request's, under
//! the field manager of the component that makes them.

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

use crate::store::{DeletePropagation, State, Store, WriteOptions};

/// The kinds the controllers read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    Deployment,
    ReplicaSet,
    ReplicationController,
    Pod,
    Node,
    Event,
}

impl Kind {
    fn group_version_plural(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::Deployment => ("apps", "v1", "deployments"),
            Kind::ReplicaSet => ("apps", "v1", "replicasets"),
            Kind::ReplicationController => ("", "v1", "replicationcontrollers"),
            Kind::Pod => ("", "v1", "pods"),
            Kind::Node => ("", "v1", "nodes"),
            Kind::Event => ("", "v1", "events"),
        }
    }

    pub(crate) fn resource_type(self, state: &State) -> Option<Arc<ResourceType>> {
        let (group, version, plural) = self.group_version_plural();
        state.registry.resolve(group, version, plural)
    }

    /// The kind whose objects are stored as `rt`'s, if the controllers work on it.
    pub(crate) fn of(rt: &ResourceType) -> Option<Kind> {
        [
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::ReplicationController,
            Kind::Pod,
        ]
        .into_iter()
        .find(|kind| {
            let (group, _, plural) = kind.group_version_plural();
            rt.group == group && rt.plural == plural
        })
    }

    fn storage_key(self) -> String {
        let (group, _, plural) = self.group_version_plural();
        format!("{group}/{plural}")
    }
}

/// Who makes a write: each component's field manager, as its user agent names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Component {
    ControllerManager,
    Scheduler,
    Kubelet,
}

impl Component {
    fn manager(self) -> &'static str {
        match self {
            Component::ControllerManager => "kube-controller-manager",
            Component::Scheduler => "kube-scheduler",
            Component::Kubelet => "kubelet",
        }
    }
}

pub(crate) fn get(store: &Store, state: &State, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
    let rt = kind.resource_type(state)?;
    store.stored(state, &rt, namespace, name)
}

/// The objects of `kind` whose controller (the owner reference with `controller: true`) has `uid`,
/// oldest first.
pub(crate) fn controlled_by(state: &State, kind: Kind, uid: &str) -> Vec<Value> {
    let key = kind.storage_key();
    let mut objects: Vec<Value> = state
        .owners
        .dependents(uid)
        .into_iter()
        .filter(|(stored_key, _, _)| *stored_key == key)
        .filter_map(|(_, namespace, name)| Some(state.objects.get(&key)?.get(&(namespace, name))?.decode()))
        .filter(|object| controller_uid(object).as_deref() == Some(uid))
        .collect();
    objects.sort_by(|a, b| {
        created(a)
            .cmp(created(b))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    objects
}

/// The uid of the object's controller, if it has one.
pub(crate) fn controller_uid(object: &Value) -> Option<String> {
    meta::owner_references(object)
        .into_iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))
        .and_then(|r| r.get("uid")?.as_str().map(str::to_owned))
}

/// The object's controller of `kind`, if it has one and it is stored.
pub(crate) fn controller(store: &Store, state: &State, kind: Kind, object: &Value) -> Option<Value> {
    let (_, _, plural) = kind.group_version_plural();
    let reference = meta::owner_references(object)
        .into_iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?;
    let expected_kind = match plural {
        "deployments" => "Deployment",
        "replicasets" => "ReplicaSet",
        "replicationcontrollers" => "ReplicationController",
        _ => return None,
    };
    if reference.get("kind").and_then(Value::as_str) != Some(expected_kind) {
        return None;
    }
    let name = reference.get("name")?.as_str()?;
    let owner = get(store, state, kind, meta::namespace(object), name)?;
    (reference.get("uid") == owner.pointer("/metadata/uid")).then_some(owner)
}

fn created(object: &Value) -> &str {
    meta::str_at(object, "/metadata/creationTimestamp").unwrap_or_default()
}

fn options(component: Component) -> WriteOptions {
    WriteOptions {
        field_manager: Some(component.manager().to_owned()),
        ..WriteOptions::default()
    }
}

/// Creates `object`; the store's refusal as its message otherwise.
pub(crate) fn create(
    store: &Store,
    state: &mut State,
    kind: Kind,
    namespace: &str,
    object: Value,
    component: Component,
) -> Result<Value, String> {
    let rt = kind
        .resource_type(state)
        .ok_or_else(|| format!("{kind:?} is not served"))?;
    match crate::strategy::writes::create_locked(store, state, &rt, namespace, object, &options(component)) {
        Ok(written) => Ok(written.object),
        Err(error) => {
            tracing::debug!(%error, kind = ?kind, namespace, "an emulated controller's create was refused");
            Err(error.to_string())
        }
    }
}

/// Replaces `old` (as stored) by `new`: the whole object, or only its status.
pub(crate) fn update(
    store: &Store,
    state: &mut State,
    kind: Kind,
    old: &Value,
    new: Value,
    component: Component,
    status_only: bool,
) -> Option<Value> {
    let rt = kind.resource_type(state)?;
    let (namespace, name) = (meta::namespace(old).to_owned(), meta::name(old).to_owned());
    let result = crate::strategy::writes::update_locked(
        store,
        state,
        &rt,
        &namespace,
        &name,
        old.clone(),
        new,
        &options(component),
        status_only,
    );
    match result {
        Ok(written) => Some(written.object),
        Err(error) => {
            tracing::debug!(%error, kind = ?kind, namespace, name, "an emulated controller's update was refused");
            None
        }
    }
}

/// Deletes the object, its dependents in the background (the default for these kinds).
pub(crate) fn delete(store: &Store, state: &mut State, kind: Kind, object: &Value) {
    let Some(rt) = kind.resource_type(state) else {
        return;
    };
    let (namespace, name) = (meta::namespace(object), meta::name(object));
    if let Err(error) = store.delete_locked(state, &rt, namespace, name, DeletePropagation::Background) {
        tracing::debug!(%error, kind = ?kind, namespace, name, "an emulated controller's delete was refused");
    }
}

/// An integer at `pointer`, `default` when absent.
pub(crate) fn int_at(object: &Value, pointer: &str, default: i64) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(default)
}
