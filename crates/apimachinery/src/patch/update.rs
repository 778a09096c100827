//! managedFields for writes that are not server-side apply (create, update, merge/JSON/strategic
//! patch): kube-apiserver records them as `operation: Update` entries, one per manager and
//! subresource. The write is compared with the object before it (on create, with the kind's zero value)
//! as structured-merge-diff compares them: every node the write added, containers included, and every
//! scalar or atomic node it changed becomes the manager's and leaves every other manager's set, which
//! is how ownership moves from an applier to, say, `kubectl edit`, so the applier's next apply
//! conflicts instead of silently reverting the edit.

use serde_json::{Value, json};

use super::{
    ObjectSchema,
    compare::compare,
    field_set::{FieldSet, field_key},
    reset,
};

/// The fields no manager owns: type meta and the metadata the server sets (structured-merge-diff's
/// list, removed as exact paths, so `metadata.labels` below `metadata` stays owned).
const UNOWNED: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// The part of `set` a write to `subresource` owns: `status` alone on the status subresource, all
/// but `status` on the main resource of a kind with a status subresource (its reset fields).
pub(super) fn in_scope(set: FieldSet, subresource: Option<&str>, status_subresource: bool) -> FieldSet {
    let status = [field_key("status")];
    if subresource == Some("status") {
        set.only_subtree(&status)
    } else if status_subresource {
        set.without_subtree(&status)
    } else {
        set
    }
}

/// [`UNOWNED`] as a field set, built once: every write takes it out of what it records.
pub(super) fn unowned() -> &'static FieldSet {
    static SET: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        UNOWNED
            .iter()
            .map(|path| path.iter().map(|key| field_key(key)).collect())
            .collect()
    });
    &SET
}

/// A write that is not server-side apply (create, update, patch), as managedFields record it.
#[derive(Debug, Clone, Copy)]
pub struct UpdateWrite<'a> {
    /// The field manager the write is recorded under (`fieldManager`, or the one derived from the
    /// user agent).
    pub manager: &'a str,
    /// `Some("status")` for a write to the status subresource.
    pub subresource: Option<&'a str>,
    /// The object's type, which decides how its fields are owned.
    pub schema: ObjectSchema<'a>,
    /// The kind has a status subresource, so a write to the main resource owns nothing of `status`.
    pub status_subresource: bool,
    /// RFC 3339 time for `managedFields[].time`.
    pub now: &'a str,
}

/// Records an `Update` operation in `new`'s managedFields (fields that changed from `old`, or from the
/// kind's zero value on create, become the manager's and leave other managers' sets), as
/// kube-apiserver does for POST, PUT and PATCH.
/// A write that changes no field leaves managedFields as they were, so a no-op stays a no-op.
pub fn record_update(old: Option<&Value>, new: &mut Value, write: &UpdateWrite<'_>) {
    let entries = current_entries(old, new, write.subresource);
    // Fields are tracked from an object's create on: an update of an object that has no managedFields
    // (its create owned nothing, as a CSR's owns nothing its registry resets) records none either.
    if old.is_some() && entries.is_empty() {
        return;
    }
    // A create is compared with the kind's zero value.
    let zero;
    let before = match old {
        Some(old) => old,
        None => {
            zero = write.schema.zero();
            &zero
        }
    };
    let comparison = compare(&write.schema.root(), before, new);
    let in_scope = |set: FieldSet| {
        let set = in_scope(set, write.subresource, write.status_subresource);
        reset::without_reset_fields(set, &write.schema, write.subresource)
    };
    let changed = in_scope(comparison.added.union(&comparison.modified));
    let removed = in_scope(comparison.removed);
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let taken = changed.difference(unowned());

    let is_own = |entry: &Value| {
        entry.get("manager").and_then(Value::as_str) == Some(write.manager)
            && entry.get("operation") == Some(&json!("Update"))
            && entry.get("subresource").and_then(Value::as_str) == write.subresource
    };
    let mut kept = Vec::with_capacity(entries.len() + 1);
    let mut own: Option<(Value, FieldSet)> = None;
    for mut entry in entries {
        let before = FieldSet::from_fields_v1(entry.get("fieldsV1").unwrap_or(&Value::Null));
        // What the write set or removed leaves everyone who owned it, the writer's earlier self too.
        let after = before.difference(&changed).difference(&removed);
        if is_own(&entry) {
            own = Some((entry, after));
            continue;
        }
        // kube-apiserver drops an entry whose manager no longer owns anything.
        if after.is_empty() {
            continue;
        }
        if after != before {
            entry["fieldsV1"] = after.to_fields_v1();
        }
        kept.push(entry);
    }
    let (own_entry, own_fields, touched) = match own {
        Some((entry, earlier)) => (Some(entry), earlier.union(&taken), !taken.is_empty()),
        None => (None, taken.clone(), !taken.is_empty()),
    };
    if !own_fields.is_empty() {
        let mut entry = own_entry.unwrap_or_else(|| {
            json!({
                "manager": write.manager,
                "operation": "Update",
                "fieldsType": "FieldsV1",
            })
        });
        entry["apiVersion"] = new.get("apiVersion").cloned().unwrap_or(Value::Null);
        entry["fieldsV1"] = own_fields.to_fields_v1();
        // kube-apiserver maps a Scale's managedFields back onto the object keeping only times the
        // object's entries already had: a write through `scale` stamps no time.
        if touched && write.subresource != Some("scale") {
            entry["time"] = json!(write.now);
        }
        if let Some(subresource) = write.subresource {
            entry["subresource"] = json!(subresource);
        }
        kept.push(entry);
    }
    sort_entries(&mut kept);
    if let Some(metadata) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        // An object nobody manages any field of carries no managedFields at all.
        if kept.is_empty() {
            metadata.remove("managedFields");
        } else {
            metadata.insert("managedFields".into(), Value::Array(kept));
        }
    }
}

/// The entries a write starts from: those the client sent, unless it sent none (a client that does not
/// know managedFields must not wipe them) or wrote a subresource; then the stored object's.
fn current_entries(old: Option<&Value>, new: &Value, subresource: Option<&str>) -> Vec<Value> {
    let entries = |object: &Value| -> Vec<Value> {
        object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|entries| entries.iter().filter(|e| e.is_object()).cloned().collect())
            .unwrap_or_default()
    };
    let sent = entries(new);
    match old {
        Some(old) if sent.is_empty() || subresource.is_some() => entries(old),
        _ => sent,
    }
}

/// kube-apiserver's order: Apply before Update, then oldest first (none before any), then by manager,
/// apiVersion and subresource.
pub(super) fn sort_entries(entries: &mut [Value]) {
    let text = |entry: &Value, field: &str| {
        entry
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    entries.sort_by_cached_key(|entry| {
        (
            text(entry, "operation"),
            text(entry, "time"),
            text(entry, "manager"),
            text(entry, "apiVersion"),
            text(entry, "subresource"),
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::{ApplyRequest, ObjectSchema, server_side_apply};

    const NOW: &str = "2026-11-23T00:00:00Z";

    fn config_map(manager: &str) -> UpdateWrite<'_> {
        UpdateWrite {
            manager,
            subresource: None,
            schema: ObjectSchema::BuiltIn {
                api_version: "v1",
                kind: "ConfigMap",
            },
            status_subresource: false,
            now: NOW,
        }
    }

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
        record_update(None, &mut object, &config_map("kubectl-create"));
        // Maps the write created are owned too (".").
        assert_eq!(
            owners(&object),
            vec![(
                "kubectl-create".into(),
                "Update".into(),
                json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
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
            schema: config_map("kubectl").schema,
            status_subresource: false,
            now: NOW,
        })
        .unwrap();
        let mut edited = live.clone();
        edited["data"]["k"] = json!("edited");
        record_update(Some(&live), &mut edited, &config_map("kubectl-edit"));
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
            schema: config_map("kubectl").schema,
            status_subresource: false,
            now: NOW,
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("conflict with \"kubectl-edit\" using v1: .data.k"),
            "{err}"
        );
    }

    #[test]
    fn a_write_that_changes_nothing_leaves_managed_fields_alone() {
        let mut object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        record_update(
            None,
            &mut object,
            &UpdateWrite {
                now: "earlier",
                ..config_map("m")
            },
        );
        let before = object.clone();
        record_update(Some(&before), &mut object, &config_map("m"));
        assert_eq!(object, before);
    }

    #[test]
    fn status_writes_are_recorded_under_the_status_subresource_only() {
        let old = json!({"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter", "metadata": {"name": "w",
            "managedFields": [{"manager": "creator", "operation": "Update", "apiVersion": "demo.yash.com/v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:table": {}}}}]},
            "spec": {"table": "a"}, "status": {"table": "a"}});
        let mut new = old.clone();
        new["status"]["table"] = json!("b");
        let write = UpdateWrite {
            subresource: Some("status"),
            schema: ObjectSchema::Custom(None),
            status_subresource: true,
            ..config_map("operator")
        };
        record_update(Some(&old), &mut new, &write);
        let entry = &new["metadata"]["managedFields"][1];
        assert_eq!(entry["subresource"], "status");
        assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:table": {}}}));
    }

    #[test]
    fn a_removed_field_leaves_its_former_owner() {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"a": "1", "b": "2"}});
        record_update(None, &mut object, &config_map("first"));
        let old = object.clone();
        object["data"].as_object_mut().unwrap().remove("b");
        record_update(Some(&old), &mut object, &config_map("second"));
        // Nobody owns a field that is gone, and a manager that only removed owns nothing.
        assert_eq!(
            owners(&object),
            vec![(
                "first".into(),
                "Update".into(),
                json!({"f:data": {".": {}, "f:a": {}}})
            )]
        );
    }

    #[test]
    fn a_created_deployment_is_owned_as_structured_merge_diff_records_it() {
        let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
        crate::defaults::apply_builtin_defaults("Deployment", &mut object).unwrap();
        let mut object = crate::protobuf::go_shaped(&object, "apps/v1", "Deployment").unwrap();
        let write = UpdateWrite {
            schema: ObjectSchema::BuiltIn {
                api_version: "apps/v1",
                kind: "Deployment",
            },
            status_subresource: true,
            ..config_map("kubectl-create")
        };
        record_update(None, &mut object, &write);
        let fields = &object["metadata"]["managedFields"][0]["fieldsV1"];
        let spec = &fields["f:spec"];
        // The label selector is atomic; a struct of the zero value (strategy) is no new node, the
        // pointer inside it (rollingUpdate) is.
        assert_eq!(spec["f:selector"], json!({}));
        assert_eq!(spec.get("."), None);
        assert_eq!(spec["f:strategy"].get("."), None);
        assert_eq!(spec["f:strategy"]["f:rollingUpdate"]["."], json!({}));
        // Containers are a list keyed by name; the zero PodSpec's null list is no new node.
        let containers = &spec["f:template"]["f:spec"]["f:containers"];
        assert_eq!(containers.get("."), None);
        let nginx = &containers[r#"k:{"name":"nginx"}"#];
        assert_eq!(nginx["."], json!({}));
        assert_eq!(nginx["f:image"], json!({}));
        assert_eq!(nginx["f:terminationMessagePath"], json!({}));
        assert_eq!(fields["f:metadata"], json!({"f:labels": {".": {}, "f:app": {}}}));
        assert_eq!(fields.get("f:status"), None);
    }

    #[test]
    fn conditions_written_where_go_had_a_null_list_are_owned_by_their_items_alone() {
        let old = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "managedFields": [{"manager": "kubectl-create",
                "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1", "time": NOW,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:group": {}}}}]},
            "status": {"acceptedNames": {"kind": "", "plural": ""}, "conditions": null, "storedVersions": ["v1"]}});
        let mut new = old.clone();
        new["status"]["conditions"] = json!([{"type": "Established", "status": "True",
            "reason": "InitialNamesAccepted", "message": "the initial names have been accepted",
            "lastTransitionTime": NOW}]);
        let write = UpdateWrite {
            subresource: Some("status"),
            schema: ObjectSchema::BuiltIn {
                api_version: "apiextensions.k8s.io/v1",
                kind: "CustomResourceDefinition",
            },
            status_subresource: true,
            ..config_map("kube-apiserver")
        };
        record_update(Some(&old), &mut new, &write);
        let entries = new["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let status_entry = entries.iter().find(|e| e["manager"] == "kube-apiserver").unwrap();
        let conditions = &status_entry["fieldsV1"]["f:status"]["f:conditions"];
        assert_eq!(conditions.get("."), None, "{}", new["metadata"]);
        assert_eq!(
            conditions[r#"k:{"type":"Established"}"#]["."],
            json!({}),
            "{}",
            new["metadata"]
        );
    }

    #[test]
    fn a_write_that_sends_no_managed_fields_keeps_the_stored_ones() {
        let mut created = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"a": "1"}});
        record_update(None, &mut created, &config_map("m"));
        // A PUT from a client that knows nothing of managedFields.
        let mut put = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"a": "1", "b": "2"}});
        record_update(Some(&created), &mut put, &config_map("m"));
        assert_eq!(
            owners(&put),
            vec![(
                "m".into(),
                "Update".into(),
                json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
            )]
        );
    }

    #[test]
    fn a_write_through_scale_is_recorded_under_it_without_a_time() {
        let old = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d",
            "managedFields": [{"manager": "creator", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2026-11-22T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 1}});
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(3);
        let write = UpdateWrite {
            subresource: Some("scale"),
            schema: ObjectSchema::BuiltIn {
                api_version: "apps/v1",
                kind: "Deployment",
            },
            status_subresource: true,
            ..config_map("kubectl")
        };
        record_update(Some(&old), &mut new, &write);
        let entry = &new["metadata"]["managedFields"][0];
        assert_eq!(entry["subresource"], "scale");
        assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(entry.get("time"), None);
    }
}
