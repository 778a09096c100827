//! What an applier stops applying is removed, as structured-merge-diff prunes a merged object: a
//! field, list item, map entry or set member goes when the applier owned it at its last apply, does not
//! apply it now, and no manager (the applier's new configuration included) owns it.

use serde_json::{Map, Value};

use super::{
    compare::applied_set,
    field_set::{FieldSet, Path},
    typed::{Shape, Type},
};
use crate::protobuf::ListType;

/// `merged` without what the applier owned (`last`) and nobody owns any more (`managed`: every
/// manager's fields after this apply).
pub(super) fn prune(ty: &Type<'_>, merged: &Value, last: &FieldSet, managed: &FieldSet) -> Value {
    if last.is_empty() {
        return merged.clone();
    }
    let members = |set: &FieldSet| named_fields_as_members(ty, set);
    let last = members(last);
    let merged_set = members(&applied_set(ty, merged));
    // Everything the applier owned goes, then whatever someone owns comes back...
    let pruned = remove(ty, merged, &last);
    let kept = members(&applied_set(ty, &pruned)).union(&members(managed));
    let pruned = remove(ty, merged, &merged_set.difference(&kept));
    // ...and of what is still gone, only what the applier owned is removed.
    let gone = merged_set.difference(&members(&applied_set(ty, &pruned)));
    remove(ty, merged, &gone.intersection(&last))
}

/// `set` with every struct field that has fields of the set below it as a member too, so that
/// removing a field removes the struct around it when nothing else in it is kept (a map's keys are
/// not named fields and stay as they are).
fn named_fields_as_members(ty: &Type<'_>, set: &FieldSet) -> FieldSet {
    let mut out = set.clone();
    for path in set.paths() {
        let mut node = ty.clone();
        for (depth, element) in path.iter().enumerate() {
            node = match element.strip_prefix("f:") {
                Some(name) => {
                    if depth + 1 < path.len() && node.declares(name) {
                        out.insert(path[..=depth].to_vec());
                    }
                    node.child(name)
                }
                None if element.starts_with("k:") => node.item(),
                None => break,
            };
        }
    }
    out
}

/// `value` of type `ty` without the paths of `set`. A map or list left with nothing becomes `None`
/// (null), which its parent drops.
fn remove(ty: &Type<'_>, value: &Value, set: &FieldSet) -> Value {
    remove_below(ty, value, set, &mut Vec::new()).unwrap_or(Value::Null)
}

fn remove_below(ty: &Type<'_>, value: &Value, set: &FieldSet, path: &mut Path) -> Option<Value> {
    match (ty.shape(Some(value)), value) {
        (Shape::Object { atomic: false }, Value::Object(map)) => {
            let mut out = Map::new();
            for (key, child) in map {
                path.push(format!("f:{key}"));
                let kept = if set.contains(path) {
                    None
                } else if set.has_below(path) {
                    remove_below(&ty.child(key), child, set, path)
                } else {
                    Some(child.clone())
                };
                path.pop();
                if let Some(kept) = kept {
                    out.insert(key.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Shape::List(list @ (ListType::Set | ListType::Map(_))), Value::Array(items)) => {
            let item_type = ty.item();
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Some(key) = ty.item_key(&list, item) else {
                    out.push(item.clone());
                    continue;
                };
                path.push(key);
                let kept = if set.contains(path) {
                    None
                } else if set.has_below(path) {
                    remove_below(&item_type, item, set, path)
                } else {
                    Some(item.clone())
                };
                path.pop();
                out.extend(kept);
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        // A node owned whole is removed by its parent, never from inside.
        (Shape::Object { atomic: true } | Shape::List(_), Value::Object(_) | Value::Array(_)) => None,
        (Shape::Object { .. } | Shape::List(_), _) if value.is_null() => None,
        _ => Some(value.clone()),
    }
}
