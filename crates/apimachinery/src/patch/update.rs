//! managedFields for writes that are not server-side apply (create, update, merge/JSON/strategic
//! patch): kube-apiserver records them as `operation: Update` entries, one per manager and
//! subresource. The fields a write changes become that manager's and leave every other manager's set,
//! which is how ownership moves from an applier to, say, `kubectl edit`, so the applier's next apply
//! conflicts instead of silently reverting the edit (P4).

use serde_json::{Value, json};

use super::fields::{fields_v1, get_path, leaves, overlaps, ownable_content, paths_of_fields};

/// Records an `Update` by `manager` in `new`'s managedFields: the fields that differ from `old` (every
/// field on create) join the manager's entry for `subresource` and leave everyone else's. A write that
/// changes no field leaves managedFields as they were, so a no-op stays a no-op.
pub(super) fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let (set, removed) = changed_fields(old, new, subresource);
    if set.is_empty() && removed.is_empty() {
        return;
    }
    // Every field the write touched leaves its owners; only the fields it set become the manager's.
    let changed: Vec<Vec<String>> = set.iter().chain(&removed).cloned().collect();
    let entries: Vec<Value> = new
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter(|e| e.is_object()).cloned().collect())
        .unwrap_or_default();
    let is_own = |entry: &Value| {
        entry.get("manager").and_then(Value::as_str) == Some(manager)
            && entry.get("operation") == Some(&json!("Update"))
            && entry.get("subresource").and_then(Value::as_str) == subresource
    };
    let mut own_fields = set;
    let mut kept = Vec::with_capacity(entries.len() + 1);
    for mut entry in entries {
        let mut fields = Vec::new();
        paths_of_fields(
            entry.get("fieldsV1").unwrap_or(&Value::Null),
            &mut Vec::new(),
            &mut fields,
        );
        if is_own(&entry) {
            own_fields.extend(
                fields
                    .into_iter()
                    .filter(|f| !changed.iter().any(|c| overlaps(c, f))),
            );
            continue;
        }
        fields.retain(|f| !changed.iter().any(|c| overlaps(c, f)));
        // kube-apiserver drops an entry whose manager no longer owns anything.
        if fields.is_empty() {
            continue;
        }
        entry["fieldsV1"] = fields_v1(&fields);
        kept.push(entry);
    }
    if own_fields.is_empty() {
        set_managed_fields(new, kept);
        return;
    }
    let mut entry = json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": new.get("apiVersion").cloned().unwrap_or(Value::Null),
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(&own_fields),
    });
    if let Some(subresource) = subresource {
        entry["subresource"] = json!(subresource);
    }
    kept.push(entry);
    set_managed_fields(new, kept);
}

fn set_managed_fields(object: &mut Value, entries: Vec<Value>) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("managedFields".into(), Value::Array(entries));
    }
}

/// The leaf paths a write set (in `new` with a value that differs from `old`) and removed (in `old`,
/// gone from `new`), limited to `status` on the status subresource and to the rest on the main resource.
fn changed_fields(
    old: Option<&Value>,
    new: &Value,
    subresource: Option<&str>,
) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let in_scope = |path: &[String]| {
        let under_status = path.first().is_some_and(|first| first == "status");
        under_status == (subresource == Some("status"))
    };
    let new_content = ownable_content(new);
    let old_content = old.map(ownable_content).unwrap_or_else(|| json!({}));
    let mut new_leaves = Vec::new();
    leaves(&new_content, &mut Vec::new(), &mut new_leaves);
    let set = new_leaves
        .into_iter()
        .filter(|(path, value)| !path.is_empty() && get_path(&old_content, path) != Some(value))
        .map(|(path, _)| path)
        .filter(|path| in_scope(path))
        .collect();
    let mut old_leaves = Vec::new();
    leaves(&old_content, &mut Vec::new(), &mut old_leaves);
    let removed = old_leaves
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| !path.is_empty() && in_scope(path) && get_path(&new_content, path).is_none())
        .collect();
    (set, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::{ApplyRequest, server_side_apply};

    const NOW: &str = "2026-11-23T00:00:00Z";

    fn owners(object: &Value) -> Vec<(String, String, Value)> {
        object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap().to_owned(),
                    e["operation"].as_str().unwrap().to_owned(),
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn create_records_every_field_for_the_manager() {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u", "labels": {"a": "1"}}, "data": {"k": "v"}});
        record_update(None, &mut object, "kubectl-create", None, NOW);
        assert_eq!(
            owners(&object),
            vec![(
                "kubectl-create".into(),
                "Update".into(),
                json!({"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
            )]
        );
    }

    #[test]
    fn an_update_takes_the_fields_it_changes_from_an_applier() {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"k": "v", "other": "x"}});
        let live = server_side_apply(&ApplyRequest {
            live: None,
            applied: &applied,
            manager: "kubectl",
            force: false,
            subresource: None,
            builtin_kind: Some("ConfigMap"),
            now: NOW,
        })
        .unwrap();
        let mut edited = live.clone();
        edited["data"]["k"] = json!("edited");
        record_update(Some(&live), &mut edited, "kubectl-edit", None, NOW);
        let owners = owners(&edited);
        assert_eq!(
            owners[0],
            (
                "kubectl".into(),
                "Apply".into(),
                json!({"f:data": {"f:other": {}}})
            )
        );
        assert_eq!(
            owners[1],
            (
                "kubectl-edit".into(),
                "Update".into(),
                json!({"f:data": {"f:k": {}}})
            )
        );

        // The applier re-applying its old value now conflicts with the editor, as on a real cluster.
        let err = server_side_apply(&ApplyRequest {
            live: Some(&edited),
            applied: &applied,
            manager: "kubectl",
            force: false,
            subresource: None,
            builtin_kind: Some("ConfigMap"),
            now: NOW,
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("conflict with \"kubectl-edit\": .data.k"),
            "{err}"
        );
    }

    #[test]
    fn a_write_that_changes_nothing_leaves_managed_fields_alone() {
        let mut object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        record_update(None, &mut object, "m", None, "earlier");
        let before = object.clone();
        record_update(Some(&before), &mut object, "m", None, NOW);
        assert_eq!(object, before);
    }

    #[test]
    fn status_writes_are_recorded_under_the_status_subresource_only() {
        let old = json!({"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter", "metadata": {"name": "w"},
            "spec": {"table": "a"}, "status": {"table": "a"}});
        let mut new = old.clone();
        new["status"]["table"] = json!("b");
        record_update(Some(&old), &mut new, "operator", Some("status"), NOW);
        let entry = &new["metadata"]["managedFields"][0];
        assert_eq!(entry["subresource"], "status");
        assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:table": {}}}));
    }

    #[test]
    fn a_removed_field_leaves_its_former_owner() {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"a": "1", "b": "2"}});
        record_update(None, &mut object, "first", None, NOW);
        let old = object.clone();
        object["data"].as_object_mut().unwrap().remove("b");
        record_update(Some(&old), &mut object, "second", None, NOW);
        // Nobody owns a field that is gone, and a manager that only removed owns nothing.
        assert_eq!(
            owners(&object),
            vec![("first".into(), "Update".into(), json!({"f:data": {"f:a": {}}}))]
        );
    }
}
