//! Field sets of objects as structured-merge-diff computes them. What a write changed: the paths it
//! added (each node new in the object, containers included, which FieldsV1 marks with "."), modified (a
//! scalar or an atomic node whose value changed) and removed. And the fields an applied configuration
//! sets, which an applier owns.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{
    field_set::{FieldSet, Path, field_key},
    typed::{Shape, Type},
};
use crate::protobuf::ListType;

#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

/// Compares `old` with `new`, both whole objects of type `ty`.
pub(super) fn compare(ty: &Type<'_>, old: &Value, new: &Value) -> Comparison {
    let mut out = Comparison::default();
    walk(ty, Some(old), Some(new), &mut Vec::new(), &mut out);
    out
}

fn walk<'v>(
    ty: &Type<'_>,
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let granular = match ty.shape(new.or(old)) {
        Shape::Object { atomic: false } => {
            let (Some(old_map), Some(new_map)) = (object_or_null(old), object_or_null(new)) else {
                return leaf(old, new, path, out);
            };
            // Empty (or null) on both sides stays one field, so `{}` and `null` still differ.
            if old_map.is_none_or(Map::is_empty) && new_map.is_none_or(Map::is_empty) {
                return leaf(old, new, path, out);
            }
            let keys: BTreeSet<&String> = old_map.into_iter().chain(new_map).flat_map(Map::keys).collect();
            for key in keys {
                path.push(field_key(key));
                let get = |map: Option<&'v Map<String, Value>>| map.and_then(|m| m.get(key));
                walk(&ty.child(key), get(old_map), get(new_map), path, out);
                path.pop();
            }
            true
        }
        Shape::List(list @ (ListType::Set | ListType::Map(_))) => {
            keyed_items(ty, old, new, path, out, |item| ty.item_key(&list, item))
        }
        Shape::Scalar | Shape::Object { atomic: true } | Shape::List(ListType::Atomic) => false,
    };
    if !granular {
        return leaf(old, new, path, out);
    }
    if old.is_none() {
        out.added.insert(path.clone());
    } else if new.is_none() {
        out.removed.insert(path.clone());
    }
}

/// The field set of an applied configuration: every scalar and atomic node, every list item, and a
/// map or struct where it is a map's key (not a declared field of a struct) or empty.
pub(super) fn applied_set(ty: &Type<'_>, value: &Value) -> FieldSet {
    let mut set = FieldSet::default();
    applied_nodes(ty, value, &mut Vec::new(), &mut set);
    set
}

fn applied_nodes(ty: &Type<'_>, value: &Value, path: &mut Path, set: &mut FieldSet) {
    match (ty.shape(Some(value)), value) {
        (Shape::Object { atomic: false }, Value::Object(map)) => {
            for (key, child) in map {
                path.push(field_key(key));
                let child_type = ty.child(key);
                applied_nodes(&child_type, child, path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !ty.declares(key) {
                    set.insert(path.clone());
                }
                path.pop();
            }
        }
        (Shape::List(list @ (ListType::Set | ListType::Map(_))), Value::Array(items)) => {
            applied_items(ty, items, path, set, |item| ty.item_key(&list, item));
        }
        (Shape::Object { .. } | Shape::List(_), Value::Null) => {}
        _ => set.insert(path.clone()),
    }
}

fn applied_items(
    ty: &Type<'_>,
    items: &[Value],
    path: &mut Path,
    set: &mut FieldSet,
    key_of: impl Fn(&Value) -> Option<String>,
) {
    let item_type = ty.item();
    for item in items {
        let Some(key) = key_of(item) else {
            // An item without its keys cannot be tracked: the list is owned whole.
            set.insert(path.clone());
            return;
        };
        path.push(key);
        applied_nodes(&item_type, item, path, set);
        set.insert(path.clone());
        path.pop();
    }
}

/// A node owned whole.
fn leaf(old: Option<&Value>, new: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path.clone()),
        (Some(_), None) => out.removed.insert(path.clone()),
        (Some(old), Some(new)) if old != new => out.modified.insert(path.clone()),
        _ => {}
    }
}

/// The items of a set or map list, walked pairwise by key. `false` (the list is then owned whole)
/// when an item has no key or two share one, which structured-merge-diff refuses to track.
fn keyed_items<'v>(
    ty: &Type<'_>,
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    path: &mut Path,
    out: &mut Comparison,
    key_of: impl Fn(&Value) -> Option<String>,
) -> bool {
    let (Some(old_items), Some(new_items)) = (array_or_null(old), array_or_null(new)) else {
        return false;
    };
    if old_items.is_empty() && new_items.is_empty() {
        return false;
    }
    let by_key = |items: &'v [Value]| -> Option<BTreeMap<String, &'v Value>> {
        let mut keyed = BTreeMap::new();
        for item in items {
            if keyed.insert(key_of(item)?, item).is_some() {
                return None;
            }
        }
        Some(keyed)
    };
    let (Some(old_keyed), Some(new_keyed)) = (by_key(old_items), by_key(new_items)) else {
        return false;
    };
    let item_type = ty.item();
    let keys: BTreeSet<&String> = old_keyed.keys().chain(new_keyed.keys()).collect();
    for key in keys {
        path.push(key.clone());
        walk(
            &item_type,
            old_keyed.get(key).copied(),
            new_keyed.get(key).copied(),
            path,
            out,
        );
        path.pop();
    }
    true
}

/// An object node's entries: `Some(None)` for absent or `null`, `None` for a value that is not an
/// object.
fn object_or_null(value: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match value {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(map)) => Some(Some(map)),
        Some(_) => None,
    }
}

fn array_or_null(value: Option<&Value>) -> Option<&[Value]> {
    match value {
        None | Some(Value::Null) => Some(&[]),
        Some(Value::Array(items)) => Some(items),
        Some(_) => None,
    }
}
