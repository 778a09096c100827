//! kube-apiserver's semantic validation of the workload kinds that select their pods (Deployments,
//! ReplicaSets, StatefulSets, DaemonSets): what their schema cannot say. Counts are not negative, a
//! selector is given and not empty, and the pod template's labels match it.

use serde_json::Value;

use crate::{
    FieldCause,
    schema::messages::{self, go_quote},
    selector::LabelSelector,
};

/// The causes of an invalid `object` of `kind` (apps/v1); empty for other kinds.
pub fn validate(kind: &str, object: &Value) -> Vec<FieldCause> {
    if !matches!(kind, "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") {
        return Vec::new();
    }
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let mut causes = Vec::new();
    if kind != "DaemonSet" {
        non_negative(spec, "replicas", &mut causes);
    }
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => causes.push(messages::required("spec.selector", "")),
        Some(selector) if selects_everything(selector) => causes.push(messages::invalid(
            "spec.selector",
            selector,
            &format!("empty selector is invalid for {}", kind.to_lowercase()),
        )),
        Some(selector) => {
            let template = spec.get("template").unwrap_or(&Value::Null);
            let matches = LabelSelector::from_object(selector).is_ok_and(|s| s.matches(template));
            if !matches {
                let labels = template.pointer("/metadata/labels").unwrap_or(&Value::Null);
                causes.push(FieldCause::new(
                    "FieldValueInvalid",
                    "spec.template.metadata.labels",
                    format!(
                        "Invalid value: {}: `selector` does not match template `labels`",
                        go_string_map(labels)
                    ),
                ));
            }
        }
    }
    non_negative(spec, "minReadySeconds", &mut causes);
    non_negative(spec, "revisionHistoryLimit", &mut causes);
    if kind == "Deployment"
        && let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64)
    {
        if deadline < 0 {
            non_negative(spec, "progressDeadlineSeconds", &mut causes);
        } else {
            let min_ready = spec.get("minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
            if deadline <= min_ready {
                causes.push(messages::invalid(
                    "spec.progressDeadlineSeconds",
                    &Value::from(deadline),
                    "must be greater than minReadySeconds",
                ));
            }
        }
    }
    causes
}

fn non_negative(spec: &Value, field: &str, causes: &mut Vec<FieldCause>) {
    if let Some(value) = spec.get(field).and_then(Value::as_i64)
        && value < 0
    {
        causes.push(messages::invalid(
            format!("spec.{field}"),
            &Value::from(value),
            "must be greater than or equal to 0",
        ));
    }
}

fn selects_everything(selector: &Value) -> bool {
    let empty = |key: &str| {
        selector.get(key).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(serde_json::Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty)
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// A label map as Go's `%#v` prints a `map[string]string`: keys sorted.
fn go_string_map(labels: &Value) -> String {
    let Some(map) = labels.as_object() else {
        return "map[string]string(nil)".to_owned();
    };
    let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
    pairs.sort_by_key(|(key, _)| *key);
    let shown: Vec<String> = pairs
        .into_iter()
        .map(|(key, value)| {
            format!(
                "{}:{}",
                go_quote(key),
                go_quote(value.as_str().unwrap_or_default())
            )
        })
        .collect();
    format!("map[string]string{{{}}}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn negative_replicas_and_a_template_the_selector_misses_are_refused_as_kube_apiserver_words_them() {
        let deployment = json!({"spec": {"replicas": -1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "other", "z": "1"}}}}});
        let causes = validate("Deployment", &deployment);
        let messages: Vec<(&str, &str)> = causes
            .iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            [
                (
                    "spec.replicas",
                    "Invalid value: -1: must be greater than or equal to 0"
                ),
                (
                    "spec.template.metadata.labels",
                    r#"Invalid value: map[string]string{"a":"other", "z":"1"}: `selector` does not match template `labels`"#
                ),
            ]
        );
    }

    #[test]
    fn a_matching_template_passes_and_a_missing_or_empty_selector_does_not() {
        let valid = json!({"spec": {"replicas": 2, "selector": {"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["web"]}]},
            "template": {"metadata": {"labels": {"app": "web"}}}}});
        assert!(validate("Deployment", &valid).is_empty());
        assert!(validate("ConfigMap", &json!({"spec": {"replicas": -1}})).is_empty());
        let missing = validate("ReplicaSet", &json!({"spec": {}}));
        assert_eq!(missing[0].field, "spec.selector");
        assert_eq!(missing[0].message, "Required value");
        let empty = validate("StatefulSet", &json!({"spec": {"selector": {}}}));
        assert_eq!(
            empty[0].message,
            "Invalid value: {}: empty selector is invalid for statefulset"
        );
    }
}
