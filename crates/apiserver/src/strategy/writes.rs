//! Writes that pass no admission webhook: the server's own (the emulated controllers', under the lock
//! they hold) and those of subresources that write another object (a binding, an eviction, a scale).
//! Each runs the strategy's stages once, with nothing between them, and commits.

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
    store::{Create, State, Store, StoredObject, Update, WriteOptions, Written, subject},
};

/// A create, prepared before the lock and committed under it.
pub fn create(
    store: &Store,
    rt: &Arc<ResourceType>,
    namespace: &str,
    object: Value,
    options: &WriteOptions,
) -> Result<Written> {
    store.admit_into_namespace(rt, namespace, crate::store::meta::name(&object))?;
    let prepared = prepared_create(rt, namespace, object, options)?;
    store.commit_create_now(rt, prepared, options)
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
    store.admit_into_namespace_locked(state, rt, namespace, crate::store::meta::name(&object))?;
    let prepared = prepared_create(rt, namespace, object, options)?;
    store.commit_create(state, rt, prepared, options)
}

fn prepared_create(
    rt: &ResourceType,
    namespace: &str,
    object: Value,
    options: &WriteOptions,
) -> Result<Create> {
    let mut prepared = create::prepare(rt, namespace, object, options)?;
    create::finish(rt, &mut prepared, false)?;
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
        let prepared = prepared_update(rt, namespace, name, old, object.clone(), options, status_only)?;
        if let Some(written) =
            store.commit_update_if_unchanged(rt, namespace, name, &read, prepared, options)?
        {
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
    let prepared = prepared_update(rt, namespace, name, old, new, options, status_only)?;
    store.commit_update(state, rt, namespace, name, prepared, options)
}

#[allow(clippy::too_many_arguments)]
fn prepared_update(
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    old: Value,
    new: Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<Update> {
    let (mut next, warnings) = update::prepare(rt, namespace, name, &old, new, options, status_only)?;
    update::finish(rt, name, &old, &mut next, false, status_only)?;
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
        let prepared = prepared_update(rt, namespace, name, old.clone(), patched, &options, status_only)
            .map_err(|e| e.for_patch(quote))?;
        let committed = store.commit_update_if_unchanged(rt, namespace, name, &read, prepared, &options);
        if let Some(written) = committed.map_err(|e| e.for_patch(quote))? {
            return Ok(written);
        }
    }
}
