//! The form a resource's objects are stored in, and how a stored object is presented to a client of a
//! resource type: the version asked for, defaults applied on read, the events.k8s.io view of core
//! Events. kube-apiserver's storage keeps one form per group and resource and converts on the way in
//! and out; these are the conversions and the places, by resource type.

use serde_json::{Map, Value, json};

use crate::resource::ResourceType;

/// Where `rt`'s objects are kept: every version of a group/plural shares one set, and both Event APIs
/// share the core one (B2), as kube-apiserver's storage lets them cohabit.
pub fn storage_key(rt: &ResourceType) -> String {
    if is_events_v1(rt) {
        return "/events".to_owned();
    }
    format!("{}/{}", rt.group, rt.plural)
}

/// The stored object as a client of `rt` sees it.
pub fn present(rt: &ResourceType, stored: &Value) -> Value {
    present_owned(rt, stored.clone())
}

/// [`present`] for an object the caller no longer needs: no copy.
pub fn present_owned(rt: &ResourceType, mut object: Value) -> Value {
    if is_events_v1(rt) {
        object = rename_event_fields(&object, Direction::CoreToEventsV1);
    }
    if is_autoscaling_v1(rt) {
        object = crate::conversion::horizontal_pod_autoscaler_to_v1(object);
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

/// The object as it is stored, from what a client of `rt` sent.
pub fn to_storage(rt: &ResourceType, mut object: Value) -> Value {
    if is_events_v1(rt) {
        // Field for field, as kube-apiserver stores it: nothing is made up (no count, first or last
        // time, or source; a series stays the series), and clients read such Events by their
        // eventTime, series and reportingComponent.
        return rename_event_fields(&object, Direction::EventsV1ToCore);
    }
    if is_autoscaling_v1(rt) {
        return crate::conversion::horizontal_pod_autoscaler_to_v2(object);
    }
    // A client may leave out apiVersion and kind (the Python client's models do): the request's path
    // says them, and the managedFields entry of the write names that version.
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(rt.api_version()));
        map.insert("kind".into(), json!(rt.kind));
    }
    object
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

/// Whether `rt` is events.k8s.io's Events, which are stored as core Events.
pub fn is_events_v1(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.plural == "events"
}

/// Whether `rt` is autoscaling/v1's HorizontalPodAutoscalers, which are stored as autoscaling/v2's.
pub fn is_autoscaling_v1(rt: &ResourceType) -> bool {
    rt.is_builtin()
        && rt.group == "autoscaling"
        && rt.version == "v1"
        && rt.plural == "horizontalpodautoscalers"
}

/// Field pairs between the two Event APIs, per the official conversion (B2): (events.k8s.io, core).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedCount", "count"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("reportingController", "reportingComponent"),
];

enum Direction {
    EventsV1ToCore,
    CoreToEventsV1,
}

fn rename_event_fields(object: &Value, direction: Direction) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = EVENT_FIELDS.iter().find_map(|&(events_v1, core)| {
            let (from, to) = match direction {
                Direction::EventsV1ToCore => (events_v1, core),
                Direction::CoreToEventsV1 => (core, events_v1),
            };
            (from == key).then_some(to)
        });
        out.insert(renamed.unwrap_or(key).to_owned(), value.clone());
    }
    Value::Object(out)
}
