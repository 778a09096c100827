//! Server-side apply (P4), as structured-merge-diff applies a configuration: the configuration is
//! merged into the live object by type (`merge.rs`), what the applier applied last time and applies no
//! longer is pruned unless another manager owns it (`prune.rs`), and the merged object is compared
//! with the live one: a field another manager owns that the apply adds or changes is a conflict (409,
//! unless `force` takes it), and every manager loses what the apply removed. Applying the value a
//! field already has is no conflict: both managers then own it.

use serde_json::{Value, json};

use super::{
    ObjectSchema,
    compare::{applied_set, compare},
    conflicts::conflict_error,
    declared::{undeclared_fields, undeclared_message},
    field_set::FieldSet,
    fields::ownable_content,
    merge::merge,
    prune::prune,
    reset,
    update::{in_scope, sort_entries, unowned},
};
use crate::{Error, Result};

/// One server-side apply request (P4).
pub struct ApplyRequest<'a> {
    /// The stored object, or `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration (already parsed from YAML or JSON).
    pub applied: &'a Value,
    /// `fieldManager` query parameter (required: the caller rejects its absence).
    pub manager: &'a str,
    /// `force=true`: take ownership of conflicting fields instead of failing with 409.
    pub force: bool,
    /// `Some("status")` on the status subresource: only `status` is applied.
    pub subresource: Option<&'a str>,
    /// The object's type, which decides how the applied fields are recorded.
    pub schema: ObjectSchema<'a>,
    /// The kind has a status subresource, so an apply to the main resource owns nothing of `status`.
    pub status_subresource: bool,
    /// RFC 3339 time for `managedFields[].time`.
    pub now: &'a str,
}

/// Server-side apply: returns the merged object with `metadata.managedFields` updated.
pub fn server_side_apply(request: &ApplyRequest<'_>) -> Result<Value> {
    let mut applied = request.applied.clone();
    if !applied.is_object() {
        return Err(Error::BadRequest("an apply patch must be an object".into()));
    }
    if applied.get("metadata").is_some_and(|m| !m.is_object()) {
        return Err(Error::BadRequest(
            "an apply patch's metadata must be an object".into(),
        ));
    }
    let ty = request.schema.root();
    let undeclared = undeclared_fields(&ty, &applied);
    if !undeclared.is_empty() {
        return Err(Error::Untyped(undeclared_message(&applied, &undeclared)));
    }
    if request.subresource == Some("status") {
        let status = applied.get("status").cloned();
        applied = json!({"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": applied.get("metadata").cloned().unwrap_or(json!({}))});
        if let Some(status) = status {
            applied["status"] = status;
        }
    }
    let mut live = request.live.cloned().unwrap_or_else(|| json!({}));
    // Entries that are not objects are garbage a client sent; skipping them keeps the indexing below
    // from panicking (found by tests/properties.rs).
    let managed: Vec<Value> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter(|e| e.is_object()).cloned().collect())
        .unwrap_or_default();
    if let Some(metadata) = live.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    let is_applier = |entry: &Value| {
        entry.get("manager").and_then(Value::as_str) == Some(request.manager)
            && entry.get("operation") == Some(&json!("Apply"))
            && entry.get("subresource").and_then(Value::as_str) == request.subresource
    };
    let fields_of = |entry: &Value| FieldSet::from_fields_v1(entry.get("fieldsV1").unwrap_or(&Value::Null));
    let previous = managed.iter().find(|e| is_applier(e));
    let others: Vec<(&Value, FieldSet)> = managed
        .iter()
        .filter(|e| !is_applier(e))
        .map(|e| (e, fields_of(e)))
        .collect();

    let applied_content = ownable_content(&applied);
    let owned = applied_fields(request, &applied_content);
    let mut merged = merge(&ty, Some(&live), Some(&applied_content)).unwrap_or_else(|| json!({}));
    let everyone = others
        .iter()
        .fold(owned.clone(), |all, (_, fields)| all.union(fields));
    let last = previous.map(fields_of).unwrap_or_default();
    merged = prune(&ty, &merged, &last, &everyone);
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

    // What the apply adds or changes is taken from the others, a conflict unless forced; what it
    // removes leaves everyone. Fields the endpoint resets are no one's.
    let change = compare(&ty, &live, &merged);
    let scope = |set: FieldSet| {
        let set = in_scope(set, request.subresource, request.status_subresource);
        reset::without_reset_fields(set, &request.schema, request.subresource)
    };
    let taken = scope(change.added.union(&change.modified));
    let removed = scope(change.removed);
    let conflicts: Vec<(&Value, FieldSet)> = others
        .iter()
        .map(|(entry, fields)| (*entry, fields.intersection(&taken)))
        .filter(|(_, fields)| !fields.is_empty())
        .collect();
    if !conflicts.is_empty() && !request.force {
        return Err(conflict_error(&conflicts));
    }
    let mut entries: Vec<Value> = others
        .into_iter()
        .filter_map(|(entry, before)| {
            let after = before.difference(&taken).difference(&removed);
            let mut entry = entry.clone();
            if after != before {
                entry["fieldsV1"] = after.to_fields_v1();
            }
            // A manager left with nothing is no longer listed.
            (!after.is_empty()).then_some(entry)
        })
        .collect();
    let mut entry = json!({
        "manager": request.manager,
        "operation": "Apply",
        "apiVersion": applied.get("apiVersion").cloned().unwrap_or(Value::Null),
        "fieldsType": "FieldsV1",
        "fieldsV1": owned.to_fields_v1(),
    });
    // The time says when the applier last changed the object: an apply that changes nothing keeps
    // the time it had (none, for a manager new to the object).
    let time = match merged == live {
        true => previous.and_then(|p| p.get("time")).cloned(),
        false => Some(json!(request.now)),
    };
    if let Some(time) = time {
        entry["time"] = time;
    }
    if let Some(sub) = request.subresource {
        entry["subresource"] = json!(sub);
    }
    entries.push(entry);
    sort_entries(&mut entries);
    merged["metadata"]["managedFields"] = Value::Array(entries);
    Ok(merged)
}

/// The fields an applier owns: the field set of what it applied, but what no manager owns and what
/// the endpoint resets.
fn applied_fields(request: &ApplyRequest<'_>, applied_content: &Value) -> FieldSet {
    let applied = applied_set(&request.schema.root(), applied_content);
    let applied = in_scope(applied, request.subresource, request.status_subresource).difference(unowned());
    reset::without_reset_fields(applied, &request.schema, request.subresource)
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
