//! Writes that pass no admission: the server's own. Each runs the strategy's stages once, with nothing
//! between them, and commits; each stage is counted as the server's (`Origin::Server`).
//!
//! Which writes are the server's, and why they pass no admission:
//! - the emulated controllers' (namespaces, workloads, service accounts, quotas, CRDs, APIServices)
//!   and flow control's status, made under the store's lock as part of the write
//!   that set them in motion, so that a client sees the outcome when its request returns. Upstream,
//!   kube-controller-manager's controllers are clients whose writes pass admission; here they cannot
//!   (a webhook is not called under the lock), a known difference (docs/apiserver-requirements.md A9);
//! - the garbage collector's (owner references dropped or unblocked, the `orphan` or
//!   `foregroundDeletion` finalizer taken away): updates by the field manager
//!   `kube-controller-manager` under the lock, as kube-controller-manager's collector patches
//!   metadata through kube-apiserver's update path, admission aside (as the other controllers');
//! - what a pod's `binding` and `eviction` write to the pod once the Binding or Eviction passed
//!   admission: kube-apiserver's pod storage writes that straight to storage, with no admission;
//! - what the server sets up at start-up.
//!
//! A request's own writes, its subresources' included, go through `admission::Target` instead. The
//! steps of a delete are storage's own, as kube-apiserver's registry makes them: marking an object
//! deleting and removing it once its finalizers are gone (`Store::mark_deleting`,
//! `Store::remove_finished`).

use std::sync::Arc;

use apimachinery::{patch::PatchType, resource::ResourceType};
use serde_json::Value;

use super::{
    create,
    patch::{PatchRequest, Resolved},
    update,
};
use crate::{
    error::{Error, Result},
    store::{Create, Origin, Stage, State, Store, StoredObject, Update, WriteOptions, Written, subject},
};

/// Counts one run of `stage` of a write of the server's.
fn ran(store: &Store, stage: Stage) {
    store.write_stages().ran(Origin::Server, stage);
}

/// `committed`, counted as a commit.
fn counted(store: &Store, committed: Result<Written>) -> Result<Written> {
    ran(store, Stage::Commit);
    committed
}

/// A create, prepared before the lock and committed under it.
pub fn create(
    store: &Store,
    rt: &Arc<ResourceType>,
    namespace: &str,
    object: Value,
    options: &WriteOptions,
) -> Result<Written> {
    store.admit_into_namespace(rt, namespace, apimachinery::meta::name(&object))?;
    let prepared = prepared_create(store, rt, namespace, object, options)?;
    counted(store, store.commit_create_now(rt, prepared, options))
}

/// A create under the lock the caller holds.
pub fn create_locked(
    store: &Store,
    state: &mut State,
    rt: &Arc<ResourceType>,
    namespace: &str,
    object: Value,
    options: &WriteOptions,
) -> Result<Written> {
    // Before the name is generated, so that a refusal reads the same however often it is met (a
    // ReplicaSet's FailedCreate condition in a terminating namespace stays as it was).
    store.admit_into_namespace_locked(state, rt, namespace, apimachinery::meta::name(&object))?;
    let prepared = prepared_create(store, rt, namespace, object, options)?;
    counted(store, store.commit_create(state, rt, prepared, options))
}

fn prepared_create(
    store: &Store,
    rt: &ResourceType,
    namespace: &str,
    object: Value,
    options: &WriteOptions,
) -> Result<Create> {
    let mut prepared = create::prepare(rt, namespace, object, options)?;
    ran(store, Stage::Decode);
    create::finish(rt, &mut prepared, false)?;
    ran(store, Stage::Validate);
    Ok(prepared)
}

/// An update of the stored object, prepared against it before the lock and committed under it if no
/// other write came between; prepared again against the newer object otherwise.
pub fn update(
    store: &Store,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    object: Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<Written> {
    loop {
        let read = store
            .read(rt, namespace, name)
            .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
        update::check_request(rt, namespace, name, &object)?;
        let old = read.decode();
        let prepared = prepared_update(
            store,
            rt,
            namespace,
            name,
            old,
            object.clone(),
            options,
            status_only,
        )?;
        let committed = store.commit_update_if_unchanged(rt, namespace, name, &read, prepared, options);
        ran(store, Stage::Commit);
        if let Some(written) = committed? {
            return Ok(written);
        }
    }
}

/// An update of `old`, the stored object, under the lock the caller holds.
#[allow(clippy::too_many_arguments)]
pub fn update_locked(
    store: &Store,
    state: &mut State,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    old: Value,
    new: Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<Written> {
    let prepared = prepared_update(store, rt, namespace, name, old, new, options, status_only)?;
    counted(
        store,
        store.commit_update(state, rt, namespace, name, prepared, options),
    )
}

#[allow(clippy::too_many_arguments)]
fn prepared_update(
    store: &Store,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    old: Value,
    new: Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<Update> {
    let (mut next, warnings) = update::prepare(rt, namespace, name, &old, new, options, status_only)?;
    ran(store, Stage::Decode);
    update::finish(rt, name, &old, &mut next, false, status_only)?;
    ran(store, Stage::Validate);
    Ok(Update { old, next, warnings })
}

/// A patch of the stored object (or apply's create of a missing one), as an update is made.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    store: &Store,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    patch_type: PatchType,
    body: &Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<Written> {
    let request = PatchRequest {
        rt,
        namespace,
        name,
        patch_type,
        body,
        options,
        status_only,
    };
    loop {
        let read = store.read(rt, namespace, name);
        let old = read.as_ref().map(StoredObject::decode);
        let (read, old, patched, options) = match (request.resolve(old.as_ref())?, read, old) {
            (Resolved::Update(patched, options), Some(read), Some(old)) => (read, old, patched, options),
            (Resolved::Create(object, options), ..) => match create(store, rt, namespace, object, &options) {
                // Created meanwhile by another writer: applied to that object instead.
                Err(Error::AlreadyExists(_)) => continue,
                other => return other,
            },
            // A patch resolves to an update only over an object.
            (Resolved::Update(..), ..) => return Err(Error::NotFound(subject(rt, name))),
        };
        let quote = |object: &str| request.written(&old, object);
        let prepared = prepared_update(
            store,
            rt,
            namespace,
            name,
            old.clone(),
            patched,
            &options,
            status_only,
        )
        .map_err(|e| e.for_patch(quote))?;
        let committed = store.commit_update_if_unchanged(rt, namespace, name, &read, prepared, &options);
        ran(store, Stage::Commit);
        if let Some(written) = committed.map_err(|e| e.for_patch(quote))? {
            return Ok(written);
        }
    }
}
