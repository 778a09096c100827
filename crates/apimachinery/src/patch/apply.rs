//! Server-side apply (P4), approximated: the applied configuration is deep-merged
//! into the live object (maps merge, list-maps merge by key, other lists are atomic), and each
//! manager's applied fields are recorded in `metadata.managedFields` in the FieldsV1 format. Conflicts:
//! a field another manager set (by Apply or Update) whose value would change is 409 unless `force`.

use serde_json::{Value, json};

use super::{
    ApplyRequest,
    compare::{applied_set, compare},
    field_set::FieldSet,
    fields::{get_path, leaves, overlaps, ownable_content, paths_of_fields},
    strategic::merge_key,
    update::{in_scope, sort_entries, unowned},
};
use crate::{Error, FieldCause, Result};

/// Merges `applied` into `live`. A list-map merges by key only where another manager owns part of it
/// (`others`); a list only this manager sets holds exactly what it applies.
fn deep_merge(
    live: &Value,
    applied: &Value,
    kind: &str,
    parent: &mut Vec<String>,
    others: &[Vec<String>],
) -> Value {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            let mut out = l.clone();
            for (key, value) in a {
                parent.push(key.clone());
                let merged = match (l.get(key), value) {
                    (Some(Value::Array(existing)), Value::Array(items)) => {
                        match merge_key(kind, &parent[..parent.len() - 1], key) {
                            Some(mk) => {
                                let shared = others.iter().any(|o| overlaps(o, parent));
                                let mut list = if shared {
                                    existing.clone()
                                } else {
                                    existing
                                        .iter()
                                        .filter(|e| items.iter().any(|i| i.get(mk) == e.get(mk)))
                                        .cloned()
                                        .collect()
                                };
                                for item in items {
                                    match list.iter().position(|e| e.get(mk) == item.get(mk)) {
                                        Some(i) => list[i] = deep_merge(&list[i], item, kind, parent, others),
                                        None => list.push(item.clone()),
                                    }
                                }
                                Value::Array(list)
                            }
                            None => value.clone(),
                        }
                    }
                    (Some(existing), _) => deep_merge(existing, value, kind, parent, others),
                    (None, _) => value.clone(),
                };
                parent.pop();
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        _ => applied.clone(),
    }
}

fn remove_path(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = value;
    for key in parents {
        match node.get_mut(key) {
            Some(child) => node = child,
            None => return,
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.remove(last);
    }
}

pub fn server_side_apply(request: &ApplyRequest<'_>) -> Result<Value> {
    let kind = request.builtin_kind.unwrap_or("");
    let mut applied = request.applied.clone();
    if !applied.is_object() {
        return Err(Error::BadRequest("an apply patch must be an object".into()));
    }
    if applied.get("metadata").is_some_and(|m| !m.is_object()) {
        return Err(Error::BadRequest(
            "an apply patch's metadata must be an object".into(),
        ));
    }
    if request.subresource == Some("status") {
        let status = applied.get("status").cloned();
        applied = json!({"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": applied.get("metadata").cloned().unwrap_or(json!({}))});
        if let Some(status) = status {
            applied["status"] = status;
        }
    }
    let live = request.live.cloned().unwrap_or_else(|| json!({}));
    let mut owned_leaves = Vec::new();
    let applied_content = ownable_content(&applied);
    leaves(&applied_content, &mut Vec::new(), &mut owned_leaves);
    // Entries that are not objects are garbage a client sent; skipping them keeps `e["fieldsV1"]` below
    // from panicking (found by tests/properties.rs).
    let managed: Vec<Value> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter(|e| e.is_object()).cloned().collect())
        .unwrap_or_default();

    // Conflicts: another manager's field whose value this apply changes.
    let mut conflicts = Vec::new();
    for entry in &managed {
        let manager = entry.get("manager").and_then(Value::as_str).unwrap_or_default();
        if manager == request.manager {
            continue;
        }
        let mut theirs = Vec::new();
        paths_of_fields(
            entry.get("fieldsV1").unwrap_or(&Value::Null),
            &mut Vec::new(),
            &mut theirs,
        );
        for (path, value) in &owned_leaves {
            let overlapping = theirs.iter().any(|t| overlaps(t, path));
            // A field that no longer exists is owned by nobody (kube-apiserver prunes such entries).
            let current = get_path(&live, path);
            // An empty map applied over a map keeps the keys others own (maps merge key by key): it
            // claims the map, not their keys' values.
            let merges =
                value.as_object().is_some_and(|m| m.is_empty()) && current.is_some_and(Value::is_object);
            if overlapping && current.is_some() && current != Some(value) && !merges {
                conflicts.push((manager.to_owned(), format!(".{}", path.join("."))));
            }
        }
    }
    if !conflicts.is_empty() && !request.force {
        let details: Vec<String> = conflicts
            .iter()
            .map(|(m, f)| format!("conflict with \"{m}\": {f}"))
            .collect();
        return Err(Error::Conflict {
            message: format!(
                "Apply failed with {} conflict{}: {}",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                details.join(", ")
            ),
            causes: conflicts
                .iter()
                .map(|(m, f)| {
                    FieldCause::new(
                        "FieldManagerConflict",
                        f.clone(),
                        format!("conflict with \"{m}\""),
                    )
                })
                .collect(),
        });
    }

    let mut others = Vec::new();
    for entry in managed
        .iter()
        .filter(|e| e.get("manager").and_then(Value::as_str) != Some(request.manager))
    {
        paths_of_fields(
            entry.get("fieldsV1").unwrap_or(&Value::Null),
            &mut Vec::new(),
            &mut others,
        );
    }
    let mut merged = deep_merge(&live, &applied_content, kind, &mut Vec::new(), &others);
    // Fields this manager applied before and applies no longer are removed, unless someone else owns them.
    let previous = managed.iter().find(|e| {
        e.get("manager").and_then(Value::as_str) == Some(request.manager)
            && e.get("operation") == Some(&json!("Apply"))
    });
    if let Some(previous) = previous {
        let mut before = Vec::new();
        paths_of_fields(
            previous.get("fieldsV1").unwrap_or(&Value::Null),
            &mut Vec::new(),
            &mut before,
        );
        for path in before {
            // An empty map applied keeps the map, not the keys this manager set in it before.
            let still_applied = owned_leaves.iter().any(|(p, value)| {
                overlaps(p, &path)
                    && !(p.len() < path.len() && value.as_object().is_some_and(|m| m.is_empty()))
            });
            if !still_applied {
                remove_path(&mut merged, &path);
            }
        }
    }
    for key in ["apiVersion", "kind"] {
        if let Some(value) = applied.get(key) {
            merged[key] = value.clone();
        }
    }
    // A live object without object metadata (never stored, but this is a pure function) gets one
    // rather than panicking on the indexing below.
    if !merged.get("metadata").is_some_and(Value::is_object) {
        merged["metadata"] = json!({});
    }
    if let Some(name) = applied.pointer("/metadata/name") {
        merged["metadata"]["name"] = name.clone();
    }
    // What the apply changes leaves the other managers: the fields it took from them (with force, as
    // a conflict would have stopped it otherwise) and those it removed, as structured-merge-diff
    // compares the live object with the merged one.
    let change = compare(&request.schema.root(), &live, &merged);
    let changed = in_scope(
        change.added.union(&change.modified).union(&change.removed),
        request.subresource,
        request.status_subresource,
    );
    let mut entries: Vec<Value> = managed
        .into_iter()
        .filter(|e| {
            !(e.get("manager").and_then(Value::as_str) == Some(request.manager)
                && e.get("operation") == Some(&json!("Apply")))
        })
        .filter_map(|mut e| {
            let before = FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null));
            let after = before.difference(&changed);
            if after != before {
                e["fieldsV1"] = after.to_fields_v1();
            }
            // A manager left with nothing is no longer listed.
            (!after.is_empty()).then_some(e)
        })
        .collect();
    let mut entry = json!({
        "manager": request.manager,
        "operation": "Apply",
        "apiVersion": applied.get("apiVersion").cloned().unwrap_or(Value::Null),
        "time": request.now,
        "fieldsType": "FieldsV1",
        "fieldsV1": applied_fields(request, &applied_content).to_fields_v1(),
    });
    if let Some(sub) = request.subresource {
        entry["subresource"] = json!(sub);
    }
    entries.push(entry);
    sort_entries(&mut entries);
    merged["metadata"]["managedFields"] = Value::Array(entries);
    Ok(merged)
}

/// The fields an applier owns: the field set of what it applied, but what no manager owns.
fn applied_fields(request: &ApplyRequest<'_>, applied_content: &Value) -> FieldSet {
    let applied = applied_set(&request.schema.root(), applied_content);
    in_scope(applied, request.subresource, request.status_subresource).difference(unowned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::ObjectSchema;

    fn apply(live: Option<&Value>, applied: &Value, manager: &str, force: bool) -> Result<Value> {
        server_side_apply(&ApplyRequest {
            live,
            applied,
            manager,
            force,
            subresource: None,
            builtin_kind: None,
            schema: crate::patch::ObjectSchema::Custom(None),
            status_subresource: false,
            now: "2026-11-22T00:00:00Z",
        })
    }

    #[test]
    fn p4_apply_creates_merges_and_records_the_manager() {
        let body = json!({"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter", "metadata": {"name": "w"}, "spec": {"table": "a"}});
        let created = apply(None, &body, "m1", false).unwrap();
        assert_eq!(created["spec"]["table"], "a");
        assert_eq!(
            created["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {".": {}, "f:table": {}}})
        );
        let again = apply(Some(&created), &body, "m1", false).unwrap();
        assert_eq!(again["spec"], created["spec"]);
    }

    #[test]
    fn p4_another_manager_conflicts_without_force_and_takes_over_with_it() {
        let body =
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"}, "spec": {"table": "a"}});
        let live = apply(None, &body, "kubectl", false).unwrap();
        let other =
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"}, "spec": {"table": "b"}});
        let err = apply(Some(&live), &other, "ci", false).unwrap_err();
        assert!(
            err.to_string().contains("conflict with \"kubectl\": .spec.table"),
            "{err}"
        );
        let forced = apply(Some(&live), &other, "ci", true).unwrap();
        assert_eq!(forced["spec"]["table"], "b");
        let owners = forced["metadata"]["managedFields"].as_array().unwrap();
        // kubectl keeps the map it created, not the field ci took (structured-merge-diff does the same).
        assert_eq!(
            owners.iter().find(|e| e["manager"] == "kubectl").unwrap()["fieldsV1"],
            json!({"f:spec": {}})
        );
    }

    #[test]
    fn p4_fields_no_longer_applied_are_removed() {
        let body =
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"}, "spec": {"a": 1, "b": 2}});
        let live = apply(None, &body, "m", false).unwrap();
        let smaller = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"}, "spec": {"a": 1}});
        let out = apply(Some(&live), &smaller, "m", false).unwrap();
        assert_eq!(out["spec"], json!({"a": 1}));
    }

    #[test]
    fn an_applier_owns_map_keys_and_list_items_but_not_the_struct_fields_around_them() {
        let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d",
            "labels": {"app": "d"}}, "spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx",
                "ports": [{"containerPort": 80}]}]}}}});
        let created = server_side_apply(&ApplyRequest {
            live: None,
            applied: &body,
            manager: "m",
            force: false,
            subresource: None,
            builtin_kind: Some("Deployment"),
            schema: ObjectSchema::BuiltIn {
                api_version: "apps/v1",
                kind: "Deployment",
            },
            status_subresource: true,
            now: "2026-11-22T00:00:00Z",
        })
        .unwrap();
        let fields = &created["metadata"]["managedFields"][0]["fieldsV1"];
        // Struct fields (labels, spec) carry no "."; the selector is atomic; a list item is owned by
        // its key, with the key's default (protocol TCP) when the item leaves it out.
        assert_eq!(fields["f:metadata"], json!({"f:labels": {"f:app": {}}}));
        assert_eq!(fields["f:spec"]["f:selector"], json!({}));
        let web = &fields["f:spec"]["f:template"]["f:spec"]["f:containers"][r#"k:{"name":"web"}"#];
        assert_eq!(web["."], json!({}));
        assert_eq!(
            web["f:ports"],
            json!({r#"k:{"containerPort":80,"protocol":"TCP"}"#: {".": {}, "f:containerPort": {}}})
        );
    }
}
