//! Conversion between the versions of a built-in kind served in more than one: HorizontalPodAutoscalers
//! are stored as `autoscaling/v2` and read and written as `autoscaling/v1` too.
//!
//! `autoscaling/v1` knows one metric, the CPU utilization; kube-apiserver keeps what v1 cannot say
//! (the other metrics, their statuses, the conditions and the scaling behavior) in annotations of the
//! v1 object and reads them back from there, so that a v1 client's read-modify-write loses nothing.
//! The annotations' metrics are in v1's own metric format, which is converted field by field here.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The CPU utilization v1 defaults to where no metric is given.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

fn set(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value.filter(|v| !v.is_null()) {
        map.insert(key.to_owned(), value);
    }
}

fn object(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let mut map = Map::new();
    for (key, value) in pairs {
        set(&mut map, key, value);
    }
    Value::Object(map)
}

fn get(value: &Value, key: &str) -> Option<Value> {
    value.get(key).cloned()
}

/// The round-trip annotations of `hpa`, removed from it, as (key, value) pairs.
fn take_annotations(hpa: &mut Value) -> Map<String, Value> {
    let mut taken = Map::new();
    if let Some(annotations) = hpa
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
            if let Some(value) = annotations.remove(key) {
                taken.insert(key.to_owned(), value);
            }
        }
        if annotations.is_empty()
            && let Some(metadata) = hpa.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.remove("annotations");
        }
    }
    taken
}

/// The JSON an annotation holds, when it parses.
fn parsed(annotations: &Map<String, Value>, key: &str) -> Option<Value> {
    serde_json::from_str(annotations.get(key)?.as_str()?).ok()
}

fn cpu_utilization_metric(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// An `autoscaling/v1` HorizontalPodAutoscaler as `autoscaling/v2`, its annotations read back.
pub fn horizontal_pod_autoscaler_to_v2(mut hpa: Value) -> Value {
    let annotations = take_annotations(&mut hpa);
    let Some(map) = hpa.as_object_mut() else {
        return hpa;
    };
    map.insert("apiVersion".into(), json!("autoscaling/v2"));
    if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
        let cpu = spec
            .remove("targetCPUUtilizationPercentage")
            .filter(|v| !v.is_null());
        let mut metrics: Vec<Value> = parsed(&annotations, METRICS)
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(metric_spec_to_v2)
            .collect();
        metrics.extend(cpu.map(cpu_utilization_metric));
        if metrics.is_empty() {
            metrics.push(cpu_utilization_metric(json!(DEFAULT_CPU_UTILIZATION)));
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        let behavior = parsed(&annotations, BEHAVIOR).map(|b| behavior_from_go(&b));
        if let Some(behavior) = behavior.filter(|b| b.as_object().is_some_and(|b| !b.is_empty())) {
            spec.insert("behavior".into(), behavior);
        }
    }
    let status = map.entry("status").or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        let cpu = status
            .remove("currentCPUUtilizationPercentage")
            .filter(|v| !v.is_null());
        let current = match parsed(&annotations, CURRENT_METRICS).and_then(|m| m.as_array().cloned()) {
            Some(statuses) => Some(statuses.iter().map(metric_status_to_v2).collect()),
            None => cpu.map(|cpu| {
                vec![json!({"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}})]
            }),
        };
        if let Some(current) = current {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = parsed(&annotations, CONDITIONS) {
            status.insert("conditions".into(), conditions);
        }
    }
    hpa
}

/// An `autoscaling/v2` HorizontalPodAutoscaler as `autoscaling/v1`: what v1 cannot say goes into
/// its annotations.
pub fn horizontal_pod_autoscaler_to_v1(mut hpa: Value) -> Value {
    take_annotations(&mut hpa);
    let mut annotations = Map::new();
    let Some(map) = hpa.as_object_mut() else {
        return hpa;
    };
    map.insert("apiVersion".into(), json!("autoscaling/v1"));
    if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = match spec.remove("metrics") {
            Some(Value::Array(metrics)) => metrics,
            _ => Vec::new(),
        };
        let is_cpu_utilization = |m: &Value| {
            m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
                && m.pointer("/resource/target/averageUtilization")
                    .is_some_and(|u| !u.is_null())
        };
        if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
            set(
                spec,
                "targetCPUUtilizationPercentage",
                cpu.pointer("/resource/target/averageUtilization").cloned(),
            );
        }
        let others: Vec<Value> = metrics
            .iter()
            .filter(|m| !is_cpu_utilization(m))
            .map(metric_spec_to_v1)
            .collect();
        if !others.is_empty() {
            annotations.insert(METRICS.into(), json!(go_json(&Value::Array(others))));
        }
        if let Some(behavior) = spec.remove("behavior").filter(|b| !b.is_null()) {
            annotations.insert(BEHAVIOR.into(), json!(go_json(&behavior_as_go(&behavior))));
        }
    }
    // v1's status is a value whose replica counts are always printed.
    let status = map.entry("status").or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        set_default_zero(status, "currentReplicas");
        set_default_zero(status, "desiredReplicas");
        let current = match status.remove("currentMetrics") {
            Some(Value::Array(current)) => current,
            _ => Vec::new(),
        };
        let cpu = current.iter().find_map(|m| {
            (m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu"))
            .then(|| m.pointer("/resource/current/averageUtilization").cloned())
            .flatten()
        });
        set(status, "currentCPUUtilizationPercentage", cpu);
        if !current.is_empty() {
            let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
            annotations.insert(CURRENT_METRICS.into(), json!(go_json(&Value::Array(v1))));
        }
        match status.remove("conditions") {
            Some(Value::Array(conditions)) if !conditions.is_empty() => {
                annotations.insert(CONDITIONS.into(), json!(go_json(&Value::Array(conditions))));
            }
            _ => {}
        }
    }
    if !annotations.is_empty()
        && let Some(metadata) = map.entry("metadata").or_insert_with(|| json!({})).as_object_mut()
        && let Some(existing) = metadata
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        existing.extend(annotations);
    }
    hpa
}

fn set_default_zero(map: &mut Map<String, Value>, key: &str) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), json!(0));
    }
}

/// The behavior as kube-apiserver writes it into the annotation: its internal Go type, which has no
/// JSON names, so the fields are Go's (`ScaleUp`, `StabilizationWindowSeconds`) and unset ones null.
fn behavior_as_go(behavior: &Value) -> Value {
    let rules = |rules: Option<&Value>| match rules.filter(|r| r.is_object()) {
        None => Value::Null,
        Some(r) => {
            let policies = r.get("policies").and_then(Value::as_array).map(|policies| {
                policies
                    .iter()
                    .map(|p| {
                        json!({"Type": p.get("type").cloned().unwrap_or(json!("")),
                            "Value": p.get("value").cloned().unwrap_or(json!(0)),
                            "PeriodSeconds": p.get("periodSeconds").cloned().unwrap_or(json!(0))})
                    })
                    .collect::<Vec<_>>()
            });
            json!({"StabilizationWindowSeconds": r.get("stabilizationWindowSeconds").cloned().unwrap_or(Value::Null),
                "SelectPolicy": r.get("selectPolicy").cloned().unwrap_or(Value::Null),
                "Policies": policies.map_or(Value::Null, Value::Array),
                "Tolerance": r.get("tolerance").cloned().unwrap_or(Value::Null)})
        }
    };
    json!({"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))})
}

/// The annotation's behavior back in v2's names (Go reads JSON names without regard to case), its
/// nulls left out.
fn behavior_from_go(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let mut chars = k.chars();
                    let key = chars
                        .next()
                        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
                        .unwrap_or_default();
                    (key, behavior_from_go(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(behavior_from_go).collect()),
        other => other.clone(),
    }
}

/// The order Go's encoder writes the annotations' fields in: each struct's declaration order (the
/// v1 metric types, object references, selectors, conditions, the behavior's Go fields). Other keys
/// follow, by name.
const GO_FIELD_ORDER: &[&str] = &[
    "type",
    "status",
    "lastTransitionTime",
    "reason",
    "message",
    "object",
    "pods",
    "resource",
    "containerResource",
    "external",
    "target",
    "kind",
    "name",
    "apiVersion",
    "metricName",
    "metricSelector",
    "targetValue",
    "currentValue",
    "targetAverageUtilization",
    "currentAverageUtilization",
    "targetAverageValue",
    "currentAverageValue",
    "selector",
    "averageValue",
    "container",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "ScaleUp",
    "ScaleDown",
    "StabilizationWindowSeconds",
    "SelectPolicy",
    "Policies",
    "Tolerance",
    "Type",
    "Value",
    "PeriodSeconds",
];

/// `value` as compact JSON with the fields of each object in Go's order.
fn go_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            let rank = |k: &str| GO_FIELD_ORDER.iter().position(|f| *f == k).unwrap_or(usize::MAX);
            keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), go_json(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(go_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// A metric's name and selector in v2 (`metric: {name, selector}`).
fn identifier(name: Option<Value>, selector: Option<Value>) -> Value {
    object(vec![("name", name), ("selector", selector)])
}

fn metric_spec_to_v2(v1: &Value) -> Value {
    let kind = v1.get("type").cloned();
    let source = |key: &str| v1.get(key).filter(|s| s.is_object());
    let mut out = object(vec![("type", kind)]);
    if let Some(o) = source("object") {
        let averaged = o.get("averageValue").is_some_and(|v| !v.is_null());
        out["object"] = object(vec![
            ("describedObject", get(o, "target")),
            (
                "metric",
                Some(identifier(get(o, "metricName"), get(o, "selector"))),
            ),
            (
                "target",
                Some(object(vec![
                    (
                        "type",
                        Some(json!(if averaged { "AverageValue" } else { "Value" })),
                    ),
                    ("value", get(o, "targetValue")),
                    ("averageValue", get(o, "averageValue")),
                ])),
            ),
        ]);
    }
    if let Some(p) = source("pods") {
        out["pods"] = object(vec![
            (
                "metric",
                Some(identifier(get(p, "metricName"), get(p, "selector"))),
            ),
            (
                "target",
                Some(object(vec![
                    ("type", Some(json!("AverageValue"))),
                    ("averageValue", get(p, "targetAverageValue")),
                ])),
            ),
        ]);
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = source(key) {
            let by_value = r.get("targetAverageValue").is_some_and(|v| !v.is_null());
            out[key] = object(vec![
                ("name", get(r, "name")),
                ("container", container.then(|| get(r, "container")).flatten()),
                (
                    "target",
                    Some(object(vec![
                        (
                            "type",
                            Some(json!(if by_value { "AverageValue" } else { "Utilization" })),
                        ),
                        ("averageUtilization", get(r, "targetAverageUtilization")),
                        ("averageValue", get(r, "targetAverageValue")),
                    ])),
                ),
            ]);
        }
    }
    if let Some(e) = source("external") {
        let by_value = e.get("targetValue").is_some_and(|v| !v.is_null());
        out["external"] = object(vec![
            (
                "metric",
                Some(identifier(get(e, "metricName"), get(e, "metricSelector"))),
            ),
            (
                "target",
                Some(object(vec![
                    (
                        "type",
                        Some(json!(if by_value { "Value" } else { "AverageValue" })),
                    ),
                    ("value", get(e, "targetValue")),
                    ("averageValue", get(e, "targetAverageValue")),
                ])),
            ),
        ]);
    }
    out
}

fn metric_spec_to_v1(v2: &Value) -> Value {
    let kind = v2.get("type").cloned();
    let source = |key: &str| v2.get(key).filter(|s| s.is_object());
    let target = |s: &Value, key: &str| s.get("target").and_then(|t| t.get(key)).cloned();
    let metric = |s: &Value, key: &str| s.get("metric").and_then(|m| m.get(key)).cloned();
    let mut out = object(vec![("type", kind)]);
    if let Some(o) = source("object") {
        out["object"] = object(vec![
            ("target", get(o, "describedObject")),
            ("metricName", metric(o, "name")),
            ("targetValue", target(o, "value").or(Some(json!("0")))),
            ("selector", metric(o, "selector")),
            ("averageValue", target(o, "averageValue")),
        ]);
    }
    if let Some(p) = source("pods") {
        out["pods"] = object(vec![
            ("metricName", metric(p, "name")),
            (
                "targetAverageValue",
                target(p, "averageValue").or(Some(json!("0"))),
            ),
            ("selector", metric(p, "selector")),
        ]);
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = source(key) {
            out[key] = object(vec![
                ("name", get(r, "name")),
                ("container", container.then(|| get(r, "container")).flatten()),
                ("targetAverageUtilization", target(r, "averageUtilization")),
                ("targetAverageValue", target(r, "averageValue")),
            ]);
        }
    }
    if let Some(e) = source("external") {
        out["external"] = object(vec![
            ("metricName", metric(e, "name")),
            ("metricSelector", metric(e, "selector")),
            ("targetValue", target(e, "value")),
            ("targetAverageValue", target(e, "averageValue")),
        ]);
    }
    out
}

fn metric_status_to_v2(v1: &Value) -> Value {
    let kind = v1.get("type").cloned();
    let source = |key: &str| v1.get(key).filter(|s| s.is_object());
    let mut out = object(vec![("type", kind)]);
    if let Some(o) = source("object") {
        out["object"] = object(vec![
            ("describedObject", get(o, "target")),
            (
                "metric",
                Some(identifier(get(o, "metricName"), get(o, "selector"))),
            ),
            (
                "current",
                Some(object(vec![
                    ("value", get(o, "currentValue")),
                    ("averageValue", get(o, "averageValue")),
                ])),
            ),
        ]);
    }
    if let Some(p) = source("pods") {
        out["pods"] = object(vec![
            (
                "metric",
                Some(identifier(get(p, "metricName"), get(p, "selector"))),
            ),
            (
                "current",
                Some(object(vec![("averageValue", get(p, "currentAverageValue"))])),
            ),
        ]);
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = source(key) {
            out[key] = object(vec![
                ("name", get(r, "name")),
                ("container", container.then(|| get(r, "container")).flatten()),
                (
                    "current",
                    Some(object(vec![
                        ("averageUtilization", get(r, "currentAverageUtilization")),
                        ("averageValue", get(r, "currentAverageValue")),
                    ])),
                ),
            ]);
        }
    }
    if let Some(e) = source("external") {
        out["external"] = object(vec![
            (
                "metric",
                Some(identifier(get(e, "metricName"), get(e, "metricSelector"))),
            ),
            (
                "current",
                Some(object(vec![
                    ("value", get(e, "currentValue")),
                    ("averageValue", get(e, "currentAverageValue")),
                ])),
            ),
        ]);
    }
    out
}

fn metric_status_to_v1(v2: &Value) -> Value {
    let kind = v2.get("type").cloned();
    let source = |key: &str| v2.get(key).filter(|s| s.is_object());
    let current = |s: &Value, key: &str| s.get("current").and_then(|c| c.get(key)).cloned();
    let metric = |s: &Value, key: &str| s.get("metric").and_then(|m| m.get(key)).cloned();
    let mut out = object(vec![("type", kind)]);
    if let Some(o) = source("object") {
        out["object"] = object(vec![
            ("target", get(o, "describedObject")),
            ("metricName", metric(o, "name")),
            ("currentValue", current(o, "value").or(Some(json!("0")))),
            ("selector", metric(o, "selector")),
            ("averageValue", current(o, "averageValue")),
        ]);
    }
    if let Some(p) = source("pods") {
        out["pods"] = object(vec![
            ("metricName", metric(p, "name")),
            (
                "currentAverageValue",
                current(p, "averageValue").or(Some(json!("0"))),
            ),
            ("selector", metric(p, "selector")),
        ]);
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = source(key) {
            out[key] = object(vec![
                ("name", get(r, "name")),
                ("container", container.then(|| get(r, "container")).flatten()),
                ("currentAverageUtilization", current(r, "averageUtilization")),
                (
                    "currentAverageValue",
                    current(r, "averageValue").or(Some(json!("0"))),
                ),
            ]);
        }
    }
    if let Some(e) = source("external") {
        out["external"] = object(vec![
            ("metricName", metric(e, "name")),
            ("metricSelector", metric(e, "selector")),
            ("currentValue", current(e, "value").or(Some(json!("0")))),
            ("currentAverageValue", current(e, "averageValue")),
        ]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> Value {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"team": "a"}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 30}})
    }

    #[test]
    fn a_v1_autoscaler_reads_as_v2_with_its_cpu_target_as_a_metric() {
        let v2 = horizontal_pod_autoscaler_to_v2(v1());
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60}}}])
        );
        assert_eq!(v2["spec"].get("targetCPUUtilizationPercentage"), None);
        assert_eq!(
            v2["status"]["currentMetrics"][0]["resource"]["current"],
            json!({"averageUtilization": 30})
        );
        assert_eq!(v2["metadata"]["annotations"], json!({"team": "a"}));
    }

    #[test]
    fn a_v1_autoscaler_without_a_target_gets_the_default_cpu_utilization() {
        let mut bare = v1();
        bare["spec"]
            .as_object_mut()
            .unwrap()
            .remove("targetCPUUtilizationPercentage");
        let v2 = horizontal_pod_autoscaler_to_v2(bare);
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
    }

    #[test]
    fn v2_metrics_v1_cannot_say_survive_a_round_trip_through_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 70}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentMetrics": [{"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": 10, "averageValue": "100m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = horizontal_pod_autoscaler_to_v1(v2.clone());
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 10);
        let annotations = v1["metadata"]["annotations"].as_object().unwrap();
        // Written as Go writes them: fields in declaration order, the behavior by its Go names.
        assert_eq!(
            annotations[METRICS],
            r#"[{"type":"Pods","pods":{"metricName":"rps","targetAverageValue":"1k"}}]"#
        );
        assert_eq!(
            annotations[CURRENT_METRICS],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":10,"currentAverageValue":"100m"}}]"#
        );
        assert_eq!(
            annotations[BEHAVIOR],
            r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":null,"Policies":null,"Tolerance":null}}"#
        );
        let back = horizontal_pod_autoscaler_to_v2(v1);
        assert_eq!(back["spec"]["metrics"], v2["spec"]["metrics"]);
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        let mut status = v2["status"].clone();
        status["currentReplicas"] = json!(0);
        status["desiredReplicas"] = json!(0);
        assert_eq!(back["status"], status);
        assert_eq!(back["metadata"].get("annotations"), None);
    }
}
