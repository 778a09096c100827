//! How an object looks on the way in (admission: defaults, validation, server-set fields) and on the
//! way out (the version asked for, defaults on read, the events.k8s.io view of core Events).

use apimachinery::{
    FieldCause,
    resource::ResourceType,
    validation::{NameRule, validate_metadata},
};
use serde_json::{Map, Value, json};

use super::meta;

/// The stored object as a client of `rt` sees it.
pub fn present(rt: &ResourceType, stored: &Value) -> Value {
    present_owned(rt, stored.clone())
}

/// [`present`] for an object the caller no longer needs: no copy.
pub fn present_owned(rt: &ResourceType, mut object: Value) -> Value {
    if rt.group == "events.k8s.io" && rt.plural == "events" {
        object = core_event_to_events_v1(&object);
    }
    if is_autoscaling_v1(rt) {
        object = apimachinery::conversion::horizontal_pod_autoscaler_to_v1(object);
    }
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(rt.api_version()));
        map.insert("kind".into(), json!(rt.kind));
    }
    if let Some(schema) = &rt.schema {
        schema.apply_defaults(&mut object);
    }
    object
}

/// Whether `rt` is events.k8s.io's Events, which are stored as core Events.
pub fn is_events_v1(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.plural == "events"
}

/// Whether `rt` is autoscaling/v1's HorizontalPodAutoscalers, which are stored as autoscaling/v2's.
/// Whether a `/status` write of `rt` also takes the object's annotations: kube-apiserver's status
/// strategies for Deployments and ReplicaSets reset only the spec (and a Deployment's labels), so the
/// Deployment controller writes its revision annotation with the status.
pub fn status_takes_annotations(rt: &ResourceType) -> bool {
    rt.group == "apps" && matches!(rt.plural.as_str(), "deployments" | "replicasets")
}

pub fn is_autoscaling_v1(rt: &ResourceType) -> bool {
    rt.is_builtin()
        && rt.group == "autoscaling"
        && rt.version == "v1"
        && rt.plural == "horizontalpodautoscalers"
}

/// The apiVersion and kind of the Go type `rt`'s objects are stored as.
pub fn storage_type(rt: &ResourceType) -> (String, &str) {
    if is_events_v1(rt) {
        return ("v1".into(), "Event");
    }
    if is_autoscaling_v1(rt) {
        return ("autoscaling/v2".into(), &rt.kind);
    }
    (rt.api_version(), &rt.kind)
}

/// The object as it is stored, from what a client of `rt` sent.
pub fn to_storage(rt: &ResourceType, mut object: Value) -> Value {
    if is_events_v1(rt) {
        return events_v1_to_core_event(&object);
    }
    if is_autoscaling_v1(rt) {
        return apimachinery::conversion::horizontal_pod_autoscaler_to_v2(object);
    }
    // A client may leave out apiVersion and kind (the Python client's models do): the request's path
    // says them, and the managedFields entry of the write names that version.
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(rt.api_version()));
        map.insert("kind".into(), json!(rt.kind));
    }
    object
}

pub fn name_rule(rt: &ResourceType) -> NameRule {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035Label,
        ("apiregistration.k8s.io", "apiservices") => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// Whether `metadata.generation` counts changes to the spec of `rt`'s objects. The real server keeps it
/// for custom resources, CRDs, the workload kinds and the policies whose status says which generation
/// it observed, and leaves it unset on the others (ConfigMaps, Secrets, Services, Namespaces, Leases,
/// Events, RBAC objects, volumes, quotas, controller revisions).
pub fn tracks_generation(rt: &ResourceType) -> bool {
    if !rt.is_builtin() {
        return true;
    }
    match rt.group.as_str() {
        "apps" => rt.plural != "controllerrevisions",
        "apiextensions.k8s.io" | "flowcontrol.apiserver.k8s.io" => true,
        "" => matches!(
            rt.plural.as_str(),
            "pods" | "podtemplates" | "replicationcontrollers"
        ),
        "batch" => rt.plural == "cronjobs",
        "networking.k8s.io" => matches!(
            rt.plural.as_str(),
            "ingresses" | "ingressclasses" | "networkpolicies"
        ),
        "policy" | "scheduling.k8s.io" => true,
        "admissionregistration.k8s.io" => matches!(
            rt.plural.as_str(),
            "validatingadmissionpolicies" | "validatingadmissionpolicybindings"
        ),
        _ => false,
    }
}

/// Sets `metadata.generation` to `generation` where `rt` keeps one.
pub fn set_generation(rt: &ResourceType, object: &mut Value, generation: i64) {
    if tracks_generation(rt) {
        meta::metadata_mut(object).insert("generation".into(), json!(generation));
    }
}

/// Metadata rules every kind shares (V5).
/// Webhook configurations are checked here too, having no schema to say their rules.
pub fn validate_common(rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
    let mut causes = validate_metadata(object, name_rule(rt));
    if rt.is_builtin() && rt.group == "apps" {
        causes.extend(apimachinery::validation::workloads::validate(&rt.kind, object));
    }
    if rt.group == "admissionregistration.k8s.io"
        && apimachinery::webhook_configurations::is_webhook_configuration(&rt.kind)
    {
        causes.extend(apimachinery::webhook_configurations::validate(&rt.kind, object));
    }
    causes
}

/// Field pairs between the two Event APIs, per the official conversion (B2).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedCount", "count"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("reportingController", "reportingComponent"),
];

fn rename_fields(object: &Value, from_index: usize) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = EVENT_FIELDS.iter().find_map(|pair| {
            let (events_v1, core) = *pair;
            let (from, to) = if from_index == 0 {
                (events_v1, core)
            } else {
                (core, events_v1)
            };
            (from == key).then_some(to)
        });
        out.insert(renamed.unwrap_or(key).to_owned(), value.clone());
    }
    Value::Object(out)
}

fn events_v1_to_core_event(object: &Value) -> Value {
    // Field for field, as kube-apiserver stores it: nothing is made up (no count, first or last
    // time, or source; a series stays the series), and clients read such Events by their eventTime,
    // series and reportingComponent.
    rename_fields(object, 0)
}

fn core_event_to_events_v1(object: &Value) -> Value {
    rename_fields(object, 1)
}

/// Fields of `metadata` only the server sets; a client's values are replaced by the stored ones.
pub fn keep_server_fields(new: &mut Value, old: &Value) {
    let metadata = meta::metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => {
                metadata.insert(field.to_owned(), value.clone());
            }
            None => {
                metadata.remove(field);
            }
        }
    }
}
