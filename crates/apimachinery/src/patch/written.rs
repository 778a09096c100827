//! The patched object as kube-apiserver writes it when it quotes the object in an error.
//!
//! kube-apiserver applies a JSON merge patch or a JSON patch to the text of the stored object (written
//! in Go's field order) with evanphx/json-patch, which parses only the objects the patch reaches and
//! keeps every other value as the text it was. Written out again, the objects it parsed have their
//! keys sorted (they became Go maps), and everything else keeps Go's order. When the result does not
//! decode into the kind's type (a number where a string belongs), the 422 quotes that text, so the
//! order is what a user sees.

use serde_json::Value;

use super::PatchType;
use crate::go_json::Ordered;
use crate::protobuf::GoType;

/// The text of `patched`, the result of `patch` (a merge or JSON patch) over `live`, an object of
/// type `go_type`. Values the patch itself brought are written sorted (the client's order is not kept).
pub fn patched_text(
    live: &Value,
    patch: &Value,
    patched: &Value,
    patch_type: PatchType,
    go_type: &GoType,
) -> String {
    let ordered = match patch_type {
        PatchType::Json => {
            let reached = json_patch_reach(patch);
            json_patched(patched, Some(live), "", &reached, go_type)
        }
        _ => merged(patched, Some(live), Some(patch), go_type),
    };
    ordered.to_json()
}

/// A merge patch reaches an object where the live object and the patch both hold one: it merges
/// the two and sorts the keys. A value the patch leaves alone keeps Go's order; one it replaces is
/// the patch's.
fn merged<'a>(
    patched: &'a Value,
    live: Option<&Value>,
    patch: Option<&Value>,
    go_type: &GoType,
) -> Ordered<'a> {
    match (patched, live, patch) {
        (Value::Object(fields), Some(Value::Object(live)), Some(Value::Object(patch))) => {
            Ordered::sorted_object(fields, |key, value| {
                merged(value, live.get(key), patch.get(key), &go_type.child(key))
            })
        }
        (_, _, None) => as_go_writes(patched, go_type),
        _ => Ordered::Sorted(patched),
    }
}

/// The JSON pointers of the containers a JSON patch walks through: the parents of each operation's
/// `path` and `from`.
fn json_patch_reach(patch: &Value) -> Vec<String> {
    let mut reached = vec![String::new()];
    let pointers = patch
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|operation| ["path", "from"].map(|key| operation.get(key).and_then(Value::as_str)))
        .flatten();
    for pointer in pointers {
        let mut parent = pointer;
        while let Some((up, _)) = parent.rsplit_once('/') {
            reached.push(up.to_owned());
            parent = up;
        }
    }
    reached
}

/// A JSON patch sorts the keys of the objects it walks through; a value it did not walk through or
/// write is the live text, in Go's order.
fn json_patched<'a>(
    patched: &'a Value,
    live: Option<&Value>,
    pointer: &str,
    reached: &[String],
    go_type: &GoType,
) -> Ordered<'a> {
    let walked = reached.iter().any(|r| r == pointer);
    match patched {
        Value::Object(fields) if walked => Ordered::sorted_object(fields, |key, value| {
            let below = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
            let live = live.and_then(|l| l.get(key));
            json_patched(value, live, &below, reached, &go_type.child(key))
        }),
        Value::Array(items) if walked => Ordered::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    // Items keep their text wherever they moved to; one equal to a live item is it.
                    let live = live
                        .and_then(Value::as_array)
                        .and_then(|all| all.iter().find(|l| *l == item));
                    json_patched(item, live, &format!("{pointer}/{i}"), reached, go_type)
                })
                .collect(),
        ),
        _ if live == Some(patched) => as_go_writes(patched, go_type),
        _ => Ordered::Sorted(patched),
    }
}

/// `value` as Go writes its type: struct fields in declaration order, maps sorted.
fn as_go_writes<'a>(value: &'a Value, go_type: &GoType) -> Ordered<'a> {
    match value {
        Value::Object(fields) => {
            let keys = go_type.order(fields.keys().map(String::as_str).collect());
            Ordered::Object(
                keys.into_iter()
                    .map(|key| (key, as_go_writes(&fields[key], &go_type.child(key))))
                    .collect(),
            )
        }
        Value::Array(items) => Ordered::Array(items.iter().map(|item| as_go_writes(item, go_type)).collect()),
        other => Ordered::Sorted(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"s": "5"},
               "metadata": {"uid": "u", "name": "c", "namespace": "n", "labels": {"b": "2", "a": "1"},
                            "managedFields": [{"time": "t", "manager": "m", "apiVersion": "v1", "operation": "Update"}]}})
    }

    #[test]
    fn a_merge_patch_sorts_what_it_reaches_and_keeps_go_order_elsewhere() {
        let live = config_map();
        let patch = json!({"data": {"n": 5}});
        let mut patched = live.clone();
        json_patch::merge(&mut patched, &patch);
        assert_eq!(
            patched_text(
                &live,
                &patch,
                &patched,
                PatchType::Merge,
                &GoType::of("v1", "ConfigMap")
            ),
            r#"{"apiVersion":"v1","data":{"n":5,"s":"5"},"kind":"ConfigMap","metadata":{"name":"c","namespace":"n","uid":"u","labels":{"a":"1","b":"2"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"t"}]}}"#
        );
    }

    #[test]
    fn a_merge_patch_reaching_metadata_sorts_it() {
        let live = config_map();
        let patch = json!({"metadata": {"labels": {"c": "3"}}});
        let mut patched = live.clone();
        json_patch::merge(&mut patched, &patch);
        let text = patched_text(
            &live,
            &patch,
            &patched,
            PatchType::Merge,
            &GoType::of("v1", "ConfigMap"),
        );
        assert!(
            text.contains(r#""metadata":{"labels":{"a":"1","b":"2","c":"3"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"t"}],"name":"c""#),
            "{text}"
        );
    }

    #[test]
    fn a_json_patch_sorts_the_objects_on_its_paths() {
        let live = config_map();
        let patch = json!([{"op": "add", "path": "/data/n", "value": 5}]);
        let mut patched = live.clone();
        json_patch::patch(
            &mut patched,
            &serde_json::from_value::<json_patch::Patch>(patch.clone()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            patched_text(
                &live,
                &patch,
                &patched,
                PatchType::Json,
                &GoType::of("v1", "ConfigMap")
            ),
            r#"{"apiVersion":"v1","data":{"n":5,"s":"5"},"kind":"ConfigMap","metadata":{"name":"c","namespace":"n","uid":"u","labels":{"a":"1","b":"2"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"t"}]}}"#
        );
    }
}
