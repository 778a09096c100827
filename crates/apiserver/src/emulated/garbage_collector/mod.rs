//! The garbage collector (L5): what kube-controller-manager's collector does with
//! `metadata.ownerReferences`, done under the store lock as a consequence of the write that set it in
//! motion, so a client sees the outcome the moment its request returns.
//!
//! The rules are those of the real collector, applied until nothing is left to do:
//! - An object is looked at when it is written with new owner references, when one of its owners is
//!   removed, and when an owner starts waiting for its dependents. Then, by its references:
//!   - none, or one naming a type that is not served: it is left alone (the real collector retries
//!     an unresolvable reference forever);
//!   - at least one live owner that is not waiting in foreground deletion: it stays, and its
//!     references to owners that are gone or waiting are dropped;
//!   - only owners that are gone or waiting, a waiting one among them, and dependents of its own: it
//!     is deleted in the foreground too. If one of its dependents already waits, its own references
//!     first stop blocking (`blockOwnerDeletion: false`): a cycle of owners waiting for each other
//!     would otherwise never end;
//!   - otherwise it is deleted, orphaning or in the foreground if its finalizers ask for that, else in
//!     the background.
//! - An owner deleted in the foreground gets a deletionTimestamp and the `foregroundDeletion`
//!   finalizer, and its dependents are looked at. Once no dependent with `blockOwnerDeletion: true`
//!   is left it loses the finalizer, and goes if that was its last. Deleted with Orphan, its
//!   dependents lose their reference to it and stay.
//! - An object is never its own dependent. A self-reference counts as a live owner (the object is
//!   not collected while it exists) but never holds up its own deletion: the real collector would
//!   leave a self-owned object deleted in the foreground waiting for itself forever.
//!
//! So a foreground deletion of a cycle ends with every member deleted, and a background deletion
//! collects every object whose owners are all gone, cycles included.
//!
//! The collector's writes that change an object's metadata (owner references dropped or unblocked, a
//! finalizer taken away) are updates through the server's writer (`strategy::writes`), under the
//! field manager `kube-controller-manager`, as kube-controller-manager's collector patches them
//! through kube-apiserver's update path: the strategy's stages run, managedFields record them, the
//! generation stays (no spec changes) and the resourceVersion moves. Marking an owner deleting and
//! removing it once its finalizers are gone are storage's own steps of a delete
//! ([`Store::mark_deleting`], [`Store::remove_finished`]), as kube-apiserver's registry makes them.
//! kube-controller-manager's collector is a client whose writes pass admission; these, made under the
//! lock, pass none.
//!
//! The walk is iterative ([`WorkList`]): each step that may set more in motion queues the objects
//! concerned, and one loop takes them in turn, so the stack is as deep for a 10,000-link chain or a
//! cycle as for a single object. A drain ends because no step adds a reference, a blocking flag or a
//! live object: each drops references, unblocks them, or deletes.

mod graph;

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

use self::graph::{
    Located, Owner, blocking_dependents, dependents_of, find_owner, has_finalizer, is_blocking, locate,
    reference_uid, waits_for_dependents,
};
use super::work_list::WorkList;
use crate::{
    store::{DeletePropagation, State, Store, WriteOptions, storage_key},
    strategy::writes,
};

/// What the collector has yet to look at: where each object is stored (storage key, namespace, ""
/// when cluster-scoped, and name).
pub(super) type Pending = WorkList<(String, String, String)>;

/// The field manager of the collector's writes, as kube-controller-manager's user agent names it.
const MANAGER: &str = "kube-controller-manager";

/// The finalizer that keeps an owner in foreground deletion until its blocking dependents are gone.
const FOREGROUND_DELETION: &str = "foregroundDeletion";
/// The finalizer of an owner deleted with Orphan propagation.
const ORPHAN_DEPENDENTS: &str = "orphan";

/// After `stored` was written over an object whose owner references were `previous_references` (none
/// for a create). Returns whether the object is still there: a dependent written when none of its
/// owners exists any more (say by a controller acting on a stale cache right after its owner was
/// deleted) is collected, as the real collector collects an object whose owners it cannot find.
pub(super) fn after_write(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    previous_references: &[Value],
    stored: &Value,
) -> bool {
    let references = meta::owner_references(stored);
    if references == previous_references {
        return true;
    }
    if !references.is_empty() {
        state
            .extensions
            .get::<Pending>()
            .push((storage_key(rt), namespace.to_owned(), name.to_owned()));
    }
    // A blocking reference dropped or unblocked may be what a waiting owner was waiting for.
    for before in previous_references.iter().filter(|r| is_blocking(r)) {
        let still_blocking = references
            .iter()
            .any(|after| reference_uid(after) == reference_uid(before) && is_blocking(after));
        if !still_blocking {
            queue_owner(state, before, namespace);
        }
    }
    drain(store, state);
    Store::stored_object(state, rt, namespace, name).is_some()
}

/// After `removed` is gone for good: its dependents may have lost their last owner, and its owners
/// waiting in the foreground their last blocking dependent.
pub(super) fn after_remove(store: &Store, state: &mut State, removed: &Value) {
    for key in state.owners.dependents(meta::uid(removed)) {
        state.extensions.get::<Pending>().push(key);
    }
    let namespace = meta::namespace(removed);
    for reference in meta::owner_references(removed) {
        if let Owner::Live((rt, namespace, name, owner)) = find_owner(state, &reference, namespace)
            && waits_for_dependents(&owner)
        {
            state
                .extensions
                .get::<Pending>()
                .push((storage_key(&rt), namespace, name));
        }
    }
    drain(store, state);
}

/// Orphan propagation: dependents survive without their reference to `owner`. Whether every one
/// was released.
fn orphan_dependents(store: &Store, state: &mut State, owner: &Value) -> bool {
    let owner_uid = meta::uid(owner).to_owned();
    let mut released = true;
    for (rt, namespace, name, _) in dependents_of(state, &owner_uid) {
        // Read again: writing an earlier dependent may have set a controller writing this one.
        let Some(dependent) = locate(state, &storage_key(&rt), &namespace, &name) else {
            continue;
        };
        released &= drop_references(store, state, dependent, &[owner_uid.as_str()]);
    }
    released
}

/// A DELETE that orphans: `owner` is marked deleting behind the `orphan` finalizer, its dependents
/// lose their reference to it, and the finalizer goes again, the owner with it when no other
/// finalizer holds it. Returns the owner as marked, which is what kube-apiserver answers such a
/// DELETE with, its garbage collector doing the rest after the answer.
pub(super) fn delete_orphaning(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    owner: &Value,
) -> Value {
    let marked = if meta::is_deleting(owner) {
        owner.clone()
    } else {
        let mut marked = owner.clone();
        let mut finalizers = meta::finalizers(owner);
        if !finalizers.iter().any(|f| f == ORPHAN_DEPENDENTS) {
            finalizers.push(ORPHAN_DEPENDENTS.to_owned());
        }
        meta::set_finalizers(&mut marked, &finalizers);
        let metadata = meta::metadata_mut(&mut marked);
        metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
        meta::bump_generation(&mut marked);
        store.mark_deleting(state, rt, namespace, owner, marked)
    };
    if !orphan_dependents(store, state, &marked) {
        // A dependent still names it: the finalizer stays, as the real collector keeps it until every
        // dependent is released.
        return marked;
    }
    // Read again: releasing the dependents may have set other writes of it in motion.
    let Some(current) = store.stored(state, rt, namespace, meta::name(&marked)) else {
        return marked;
    };
    let mut finalizers = meta::finalizers(&current);
    finalizers.retain(|f| f != ORPHAN_DEPENDENTS);
    if finalizers.is_empty() {
        store.remove_finished(state, rt, namespace, current);
    } else if finalizers != meta::finalizers(&current) {
        let mut released = current.clone();
        meta::set_finalizers(&mut released, &finalizers);
        write_metadata(store, state, rt, namespace, &current, released);
    }
    marked
}

/// Foreground propagation: `owner` waits, marked deleting with the `foregroundDeletion` finalizer,
/// while its dependents are deleted; returns it so marked. `None` when it has no dependents: then it
/// may go at once, as the real collector would let it a moment later.
pub(super) fn delete_in_foreground(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    owner: &Value,
) -> Option<Value> {
    let dependents = dependents_of(state, meta::uid(owner));
    if dependents.is_empty() {
        return None;
    }
    let name = meta::name(owner).to_owned();
    let waiting = if waits_for_dependents(owner) {
        owner.clone()
    } else {
        let mut waiting = owner.clone();
        let mut finalizers = meta::finalizers(owner);
        if !finalizers.iter().any(|f| f == FOREGROUND_DELETION) {
            finalizers.push(FOREGROUND_DELETION.to_owned());
        }
        meta::set_finalizers(&mut waiting, &finalizers);
        if !meta::is_deleting(owner) {
            let metadata = meta::metadata_mut(&mut waiting);
            metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
            metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
            meta::bump_generation(&mut waiting);
        }
        store.mark_deleting(state, rt, namespace, owner, waiting)
    };
    // Dependents first, then the owner: by its turn, those that could go have gone.
    for (rt, namespace, name, _) in dependents {
        state
            .extensions
            .get::<Pending>()
            .push((storage_key(&rt), namespace, name));
    }
    state
        .extensions
        .get::<Pending>()
        .push((storage_key(rt), namespace.to_owned(), name));
    drain(store, state);
    Some(waiting)
}

/// Takes queued objects in turn until none is left. Inside a drain (a deletion the collector made),
/// returns at once: the running drain takes what was queued.
fn drain(store: &Store, state: &mut State) {
    if !state.extensions.get::<Pending>().start_draining() {
        return;
    }
    while let Some((key, namespace, name)) = state.extensions.get::<Pending>().pop() {
        if let Some(object) = locate(state, &key, &namespace, &name) {
            attempt_to_delete(store, state, object);
        }
    }
    state.extensions.get::<Pending>().stop_draining();
}

/// One look at one object, by the rules at the top of this file.
fn attempt_to_delete(store: &Store, state: &mut State, located: Located) {
    if waits_for_dependents(&located.3) {
        finish_foreground(store, state, located);
        return;
    }
    let (rt, namespace, name, object) = &located;
    let references = meta::owner_references(object);
    if references.is_empty() {
        return;
    }
    let mut solid = false;
    let mut waiting = false;
    let mut droppable = Vec::new();
    for reference in &references {
        match find_owner(state, reference, namespace) {
            Owner::Unknown => return,
            Owner::Gone => droppable.extend(reference_uid(reference)),
            Owner::Live((.., owner)) if waits_for_dependents(&owner) => {
                waiting = true;
                droppable.extend(reference_uid(reference));
            }
            Owner::Live(_) => solid = true,
        }
    }
    if solid {
        if !droppable.is_empty() {
            drop_references(store, state, located.clone(), &droppable);
        }
        return;
    }
    let dependents = dependents_of(state, meta::uid(object));
    let propagation = if waiting && !dependents.is_empty() {
        if dependents
            .iter()
            .any(|(.., dependent)| waits_for_dependents(dependent))
        {
            unblock_references(store, state, located.clone());
        }
        DeletePropagation::Foreground
    } else if has_finalizer(object, ORPHAN_DEPENDENTS) {
        DeletePropagation::Orphan
    } else if has_finalizer(object, FOREGROUND_DELETION) {
        DeletePropagation::Foreground
    } else {
        DeletePropagation::Background
    };
    // Refused only for the namespaces that can never be deleted: then the object stays, as it would.
    let _ = store.delete_locked(state, rt, namespace, name, propagation);
}

/// An owner waiting in the foreground: it goes once no blocking dependent is left; until then, each
/// blocking dependent not itself waiting is looked at again.
fn finish_foreground(store: &Store, state: &mut State, (rt, namespace, _, owner): Located) {
    let blocking = blocking_dependents(state, meta::uid(&owner));
    if blocking.is_empty() {
        let mut finalizers = meta::finalizers(&owner);
        finalizers.retain(|f| f != FOREGROUND_DELETION);
        if finalizers.is_empty() {
            store.remove_finished(state, &rt, &namespace, owner);
        } else {
            let mut next = owner.clone();
            meta::set_finalizers(&mut next, &finalizers);
            write_metadata(store, state, &rt, &namespace, &owner, next);
        }
        return;
    }
    for (rt, namespace, name, dependent) in blocking {
        if !waits_for_dependents(&dependent) {
            state
                .extensions
                .get::<Pending>()
                .push((storage_key(&rt), namespace, name));
        }
    }
}

/// Removes the references to `owner_uids`. Whether the object was written (or had none of them).
/// The owners a removed reference was blocking are looked at again ([`after_write`]).
fn drop_references(
    store: &Store,
    state: &mut State,
    (rt, namespace, _, object): Located,
    owner_uids: &[&str],
) -> bool {
    let mut next = object.clone();
    let metadata = meta::metadata_mut(&mut next);
    if let Some(references) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
        references.retain(|reference| !reference_uid(reference).is_some_and(|uid| owner_uids.contains(&uid)));
        if references.is_empty() {
            metadata.remove("ownerReferences");
        }
    }
    if next == object {
        return true;
    }
    write_metadata(store, state, &rt, &namespace, &object, next)
}

/// Sets `blockOwnerDeletion: false` on every blocking reference; their owners are looked at again
/// ([`after_write`]).
fn unblock_references(store: &Store, state: &mut State, (rt, namespace, _, object): Located) {
    let mut next = object.clone();
    let metadata = meta::metadata_mut(&mut next);
    if let Some(references) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
        for reference in references.iter_mut().filter(|r| is_blocking(r)) {
            reference["blockOwnerDeletion"] = json!(false);
        }
    }
    if next != object {
        write_metadata(store, state, &rt, &namespace, &object, next);
    }
}

/// Stores `next`, `object` (as stored) with its metadata alone changed by the collector: an update
/// by `kube-controller-manager` through the server's writer. Whether it was written: a refusal
/// leaves the object as it was (the real collector would retry it), with a warning in the log.
fn write_metadata(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    object: &Value,
    next: Value,
) -> bool {
    // The version the object is stored at, which the update must name; `rt` may be another view.
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rt = state
        .registry
        .by_kind(api_version, &rt.kind)
        .unwrap_or_else(|| Arc::new(rt.clone()));
    let options = WriteOptions {
        field_manager: Some(MANAGER.to_owned()),
        ..WriteOptions::default()
    };
    let name = meta::name(object).to_owned();
    let written = writes::update_locked(
        store,
        state,
        &rt,
        namespace,
        &name,
        object.clone(),
        next,
        &options,
        false,
    );
    if let Err(error) = &written {
        tracing::warn!(%error, resource = rt.plural, namespace, name, "the garbage collector's update was refused");
    }
    written.is_ok()
}

/// Queues the live owner `reference` of a dependent in `namespace` points at, if there is one.
fn queue_owner(state: &mut State, reference: &Value, namespace: &str) {
    if let Owner::Live((rt, namespace, name, _)) = find_owner(state, reference, namespace) {
        state
            .extensions
            .get::<Pending>()
            .push((storage_key(&rt), namespace, name));
    }
}
