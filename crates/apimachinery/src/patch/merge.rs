//! The merge of an applied configuration into the live object, as structured-merge-diff merges typed
//! values: structs and granular maps merge key by key, set and map lists merge item by item (by value,
//! or by their keys), and everything else (scalars, atomic lists, atomic maps) is replaced by the
//! applied value. A list's merged order keeps the applied items in the applied order and every live
//! item the configuration does not name where it stood among them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::typed::{Shape, Type};
use crate::protobuf::ListType;

/// `rhs` merged into `lhs`, both of type `ty`; `None` only when both are.
pub(super) fn merge(ty: &Type<'_>, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
    let (lhs, rhs) = match (lhs, rhs) {
        (None, None) => return None,
        (Some(only), None) | (None, Some(only)) => return Some(only.clone()),
        (Some(lhs), Some(rhs)) => (lhs, rhs),
    };
    let merged = match ty.shape(Some(rhs)) {
        Shape::Object { atomic: false } => merge_objects(ty, lhs, rhs),
        Shape::List(list @ (ListType::Set | ListType::Map(_))) => merge_lists(ty, &list, lhs, rhs),
        Shape::Scalar | Shape::Object { atomic: true } | Shape::List(ListType::Atomic) => None,
    };
    // What cannot merge (a leaf, or values of another shape than the type's) is the applied value.
    Some(merged.unwrap_or_else(|| rhs.clone()))
}

fn merge_objects(ty: &Type<'_>, lhs: &Value, rhs: &Value) -> Option<Value> {
    let empty = Map::new();
    let (lhs, rhs) = (as_map(lhs)?, as_map(rhs)?);
    // Empty or null on both sides is one leaf, so that `{}` and `null` stay apart.
    if lhs.is_none_or(Map::is_empty) && rhs.is_none_or(Map::is_empty) {
        return None;
    }
    let (lhs, rhs) = (lhs.unwrap_or(&empty), rhs.unwrap_or(&empty));
    let mut out = lhs.clone();
    for (key, value) in rhs {
        if let Some(merged) = merge(&ty.child(key), lhs.get(key), Some(value)) {
            out.insert(key.clone(), merged);
        }
    }
    Some(Value::Object(out))
}

/// The items of a set or map list merged by their keys, in structured-merge-diff's order. `None` (the
/// applied list replaces the live one) when an applied item has no key or two share one.
fn merge_lists(ty: &Type<'_>, list: &ListType, lhs: &Value, rhs: &Value) -> Option<Value> {
    let (lhs, rhs) = (as_items(lhs)?, as_items(rhs)?);
    if lhs.is_empty() && rhs.is_empty() {
        return None;
    }
    let key_of = |item: &Value| ty.item_key(list, item);
    let mut rhs_keys = Vec::with_capacity(rhs.len());
    let mut rhs_items = BTreeMap::new();
    for item in rhs {
        let key = key_of(item)?;
        if rhs_items.insert(key.clone(), item).is_some() {
            return None;
        }
        rhs_keys.push(key);
    }
    // Live items may repeat a key (an object written before its list was keyed); such an item
    // merges with nothing, as a null.
    let mut lhs_keys = Vec::with_capacity(lhs.len());
    let mut lhs_items: BTreeMap<String, &Value> = BTreeMap::new();
    for item in lhs {
        let key = key_of(item)?;
        lhs_items
            .entry(key.clone())
            .and_modify(|seen| *seen = &Value::Null)
            .or_insert(item);
        lhs_keys.push(key);
    }

    let item_type = ty.item();
    let merge_item = |key: &str, live: Option<&Value>| merge(&item_type, live, rhs_items.get(key).copied());
    // The items both sides hold, in the applied order: each live one is placed when its turn comes.
    let mut shared = rhs_keys
        .iter()
        .filter(|key| lhs_items.contains_key(*key))
        .collect::<std::collections::VecDeque<_>>();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut l, mut r) = (0, 0);
    while l < lhs_keys.len() || r < rhs_keys.len() {
        if l < lhs_keys.len() && r < rhs_keys.len() {
            let key = &lhs_keys[l];
            if *key == rhs_keys[r] {
                merged_rhs.insert(key.clone());
                out.extend(merge_item(key, lhs_items.get(key).copied()));
                l += 1;
                r += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if rhs_items.contains_key(key) && next_shared.is_some_and(|next| next != key) {
                // A shared item whose turn has not come.
                l += 1;
                continue;
            }
        }
        if l < lhs_keys.len() {
            let key = &lhs_keys[l];
            if !rhs_items.contains_key(key) {
                out.extend(merge(&item_type, Some(&lhs[l]), None));
                l += 1;
                continue;
            } else if merged_rhs.contains(key) {
                l += 1;
            }
        }
        if r < rhs_keys.len() {
            let key = &rhs_keys[r];
            merged_rhs.insert(key.clone());
            out.extend(merge_item(key, lhs_items.get(key).copied()));
            r += 1;
            if next_shared == Some(key) {
                next_shared = shared.pop_front();
            }
        }
    }
    Some(Value::Array(out))
}

/// An object's entries: `Some(None)` for null, `None` for a value that is not an object.
fn as_map(value: &Value) -> Option<Option<&Map<String, Value>>> {
    match value {
        Value::Null => Some(None),
        Value::Object(map) => Some(Some(map)),
        _ => None,
    }
}

/// A list's items, none for null; `None` for a value that is not a list.
fn as_items(value: &Value) -> Option<&[Value]> {
    match value {
        Value::Null => Some(&[]),
        Value::Array(items) => Some(items),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::patch::ObjectSchema;

    fn pod() -> ObjectSchema<'static> {
        ObjectSchema::BuiltIn {
            api_version: "v1",
            kind: "Pod",
        }
    }

    #[test]
    fn map_list_items_merge_by_key_in_the_applied_order() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c", "image": "3"}]}});
        let applied = json!({"spec": {"containers": [{"name": "c", "image": "9"}, {"name": "a"}]}});
        let merged = merge(&pod().root(), Some(&live), Some(&applied)).unwrap();
        assert_eq!(
            merged["spec"]["containers"],
            json!([{"name": "b", "image": "2"}, {"name": "c", "image": "9"}, {"name": "a", "image": "1"}])
        );
    }

    #[test]
    fn set_lists_keep_live_members_and_atomic_values_are_replaced() {
        let live = json!({"metadata": {"finalizers": ["x", "y"]},
            "spec": {"containers": [{"name": "a", "args": ["1", "2"]}]}});
        let applied = json!({"metadata": {"finalizers": ["z", "x"]},
            "spec": {"containers": [{"name": "a", "args": ["3"]}]}});
        let merged = merge(&pod().root(), Some(&live), Some(&applied)).unwrap();
        assert_eq!(merged["metadata"]["finalizers"], json!(["z", "x", "y"]));
        assert_eq!(merged["spec"]["containers"][0]["args"], json!(["3"]));
    }
}
