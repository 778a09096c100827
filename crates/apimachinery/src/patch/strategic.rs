//! Strategic merge patch (P3). Hand-written: no Rust crate implements Kubernetes' strategic merge,
//! whose list semantics come from Go struct tags (`patchMergeKey`) we restate in [`merge_key`].

use serde_json::{Map, Value};

use crate::{Error, Result};

/// The merge key of the list at `field` whose parent path is `path` (dotted field names), for the
/// built-in kinds clients patch. `None`: the list is replaced whole.
pub fn merge_key(kind: &str, path: &[String], field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumeMounts"
        | "volumes"
        | "imagePullSecrets"
        | "volumeDevices" => Some("name"),
        "ports" if kind == "Service" && path.last().map(String::as_str) == Some("spec") => Some("port"),
        "ports" => Some("containerPort"),
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        _ => None,
    }
}

/// Applies `patch` to `live` for the built-in `kind`.
pub fn apply(live: &Value, patch: &Value, kind: &str) -> Result<Value> {
    if !patch.is_object() {
        return Err(Error::BadRequest(
            "a strategic merge patch must be a JSON object".into(),
        ));
    }
    let mut path = Vec::new();
    Ok(merge_value(live, patch, kind, &mut path))
}

fn merge_value(live: &Value, patch: &Value, kind: &str, path: &mut Vec<String>) -> Value {
    match (live, patch) {
        (Value::Object(live_map), Value::Object(patch_map)) => merge_map(live_map, patch_map, kind, path),
        (_, Value::Object(patch_map)) => merge_map(&Map::new(), patch_map, kind, path),
        _ => strip_directives(patch),
    }
}

fn merge_map(
    live: &Map<String, Value>,
    patch: &Map<String, Value>,
    kind: &str,
    path: &mut Vec<String>,
) -> Value {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => return strip_directives(&Value::Object(patch.clone())),
        Some("delete") => return Value::Null,
        _ => {}
    }
    let mut out = live.clone();
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        out.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        if let Some(field) = key.strip_prefix("$setElementOrder/") {
            let _ = field;
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (out.get_mut(field), value) {
                list.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if value.is_null() {
            out.remove(key);
            continue;
        }
        path.push(key.clone());
        let merged = match (live.get(key), value) {
            (Some(Value::Array(live_list)), Value::Array(patch_list)) => {
                let parent = path[..path.len() - 1].to_vec();
                merge_list(live_list, patch_list, kind, &parent, key, path)
            }
            (Some(existing), _) => merge_value(existing, value, kind, path),
            (None, _) => merge_value(&Value::Null, value, kind, path),
        };
        path.pop();
        if merged.is_null() {
            out.remove(key);
        } else {
            out.insert(key.clone(), merged);
        }
    }
    // `$setElementOrder/<field>` lists the elements to keep, in order.
    for (key, value) in patch {
        let Some(field) = key.strip_prefix("$setElementOrder/") else {
            continue;
        };
        let (Some(Value::Array(list)), Value::Array(order)) = (out.get(field).cloned(), value) else {
            continue;
        };
        let Some(merge_key) = merge_key(kind, path, field) else {
            continue;
        };
        let server_order = match live.get(field) {
            Some(Value::Array(live_list)) => live_list.as_slice(),
            _ => &[],
        };
        let ordered = in_merged_order(list, order, server_order, merge_key);
        out.insert(field.to_owned(), Value::Array(ordered));
    }
    Value::Object(out)
}

fn merge_list(
    live: &[Value],
    patch: &[Value],
    kind: &str,
    parent: &[String],
    field: &str,
    path: &mut Vec<String>,
) -> Value {
    if field == "finalizers" {
        let mut out = live.to_vec();
        for item in patch {
            if !out.contains(item) {
                out.push(item.clone());
            }
        }
        return Value::Array(out);
    }
    let Some(key) = merge_key(kind, parent, field) else {
        return Value::Array(patch.iter().map(strip_directives).collect());
    };
    if patch
        .iter()
        .any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return Value::Array(
            patch
                .iter()
                .filter(|item| item.get("$patch").is_none())
                .map(strip_directives)
                .collect(),
        );
    }
    let mut out: Vec<Value> = live.to_vec();
    for item in patch {
        let id = item.get(key);
        let position = out
            .iter()
            .position(|existing| id.is_some() && existing.get(key) == id);
        let deleting = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, deleting) {
            (Some(index), true) => {
                out.remove(index);
            }
            (None, true) => {}
            (Some(index), false) => out[index] = merge_value(&out[index], item, kind, path),
            (None, false) => out.push(strip_directives(item)),
        }
    }
    let patch_order: Vec<Value> = patch
        .iter()
        .filter(|item| item.get("$patch").is_none())
        .cloned()
        .collect();
    Value::Array(in_merged_order(out, &patch_order, live, key))
}

/// The order kube-apiserver gives a merged list: the items the patch names (or its
/// `$setElementOrder` lists), in the patch's order, with the items only the live list has woven in by
/// their live order, each placed before the first patch item it preceded in the live list. A new
/// item therefore comes before the live items the patch does not name.
fn in_merged_order(merged: Vec<Value>, order: &[Value], live: &[Value], key: &str) -> Vec<Value> {
    let position = |list: &[Value], item: &Value| {
        let id = item.get(key)?;
        list.iter().position(|other| other.get(key) == Some(id))
    };
    let (mut named, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position(order, item).is_some());
    named.sort_by_key(|item| position(order, item));
    let mut out = Vec::with_capacity(named.len() + server_only.len());
    let (mut named, mut server_only) = (named.into_iter().peekable(), server_only.into_iter().peekable());
    loop {
        let take_server_item = match (server_only.peek(), named.peek()) {
            (Some(server), Some(patched)) => matches!(
                (position(live, server), position(live, patched)),
                (Some(s), Some(p)) if s < p
            ),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_server_item {
            server_only.next()
        } else {
            named.next()
        };
        out.extend(next);
    }
    out
}

fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn p3_kubectl_reapply_removing_a_container_keeps_the_other_intact() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "redis"}
        ]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "b", "$patch": "delete"}]
        }}}});
        let out = apply(&live, &patch, "Deployment").unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]}])
        );
    }

    #[test]
    fn p3_env_merges_by_name_and_null_deletes_keys() {
        let live = json!({"data": {"a": "1", "b": "2"}, "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]});
        let patch = json!({"data": {"b": null, "c": "3"}, "env": [{"name": "Y", "value": "3"}]});
        let out = apply(&live, &patch, "Pod").unwrap();
        assert_eq!(out["data"], json!({"a": "1", "c": "3"}));
        assert_eq!(
            out["env"],
            json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}])
        );
    }

    #[test]
    fn p3_a_new_item_comes_before_the_live_items_the_patch_does_not_name() {
        let live = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let added = apply(&live, &json!({"spec": {"ports": [{"port": 8080}]}}), "Service").unwrap();
        let ports: Vec<&Value> = added["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["port"])
            .collect();
        assert_eq!(ports, [8080, 80, 443]);
        let changed = apply(
            &live,
            &json!({"spec": {"ports": [{"port": 443, "name": "tls"}, {"port": 9000}]}}),
            "Service",
        )
        .unwrap();
        let names: Vec<&Value> = changed["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["port"])
            .collect();
        assert_eq!(names, [80, 443, 9000]);
    }

    #[test]
    fn p3_service_ports_merge_by_port_and_finalizers_union() {
        let live =
            json!({"metadata": {"finalizers": ["a"]}, "spec": {"ports": [{"port": 80, "name": "http"}]}});
        let patch =
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
        let out = apply(&live, &patch, "Service").unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http", "targetPort": 8080}])
        );
    }
}
