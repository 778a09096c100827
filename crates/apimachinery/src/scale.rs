//! The `/scale` subresource: an `autoscaling/v1` Scale is a view of an object's replicas (where
//! [`ScalePaths`] say they are) and its selector, and writing one writes the replicas back.

use serde_json::{Map, Value, json};

use crate::resource::ScalePaths;

/// The Scale of `object`.
pub fn scale_of(paths: &ScalePaths, object: &Value) -> Value {
    let metadata = object.get("metadata").and_then(Value::as_object);
    let mut scale_metadata = Map::new();
    for key in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = metadata.and_then(|m| m.get(key)) {
            scale_metadata.insert(key.to_owned(), value.clone());
        }
    }
    let replicas = |path: &str| at_path(object, path).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    let selector = match &paths.label_selector {
        Some(path) => at_path(object, path).and_then(Value::as_str).map(str::to_owned),
        None if paths.selector_is_label_map => object.pointer("/spec/selector").map(label_map_string),
        None => object.pointer("/spec/selector").map(selector_string),
    };
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)}, "status": status,
    })
}

/// The merge patch that sets `replicas` where `paths` keep the desired replicas.
pub fn replicas_patch(paths: &ScalePaths, replicas: i64) -> Value {
    segments(&paths.spec_replicas)
        .rev()
        .fold(json!(replicas), |inner, key| json!({ key: inner }))
}

/// The field causes of a Scale that cannot be written, as kube-apiserver's validation words them.
pub fn validate(scale: &Value) -> Result<i64, crate::FieldCause> {
    match scale.pointer("/spec/replicas") {
        Some(Value::Number(n)) if n.as_i64().is_some_and(|r| r >= 0) => Ok(n.as_i64().unwrap_or(0)),
        Some(other) => Err(crate::FieldCause::new(
            "FieldValueInvalid",
            "spec.replicas",
            format!("Invalid value: {other}: must be greater than or equal to 0"),
        )),
        None => Ok(0),
    }
}

fn segments(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split('.').filter(|s| !s.is_empty())
}

fn at_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path).try_fold(object, |value, key| value.get(key))
}

/// A map of labels as the selector that requires each: `app=web,tier=front`, sorted by key.
fn label_map_string(labels: &Value) -> String {
    let mut pairs: Vec<String> = labels
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A LabelSelector (`matchLabels`, `matchExpressions`) as its string form, requirements sorted by key
/// as Kubernetes prints them: `app=web,tier in (a,b)`.
pub fn selector_string(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((
                key.clone(),
                format!("{key}={}", value.as_str().unwrap_or_default()),
            ));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expression["operator"].as_str() {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key.to_owned(),
            Some("DoesNotExist") => format!("!{key}"),
            _ => continue,
        };
        requirements.push((key.to_owned(), text));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd_paths() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.readyReplicas".into(),
            label_selector: Some(".status.selector".into()),
            selector_is_label_map: false,
        }
    }

    #[test]
    fn a_deployment_scale_shows_its_replicas_and_its_selector_as_a_string() {
        let deployment = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "front", "app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}},
            "status": {"replicas": 2}});
        let paths = ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
            selector_is_label_map: false,
        };
        assert_eq!(
            scale_of(&paths, &deployment),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web,env in (dev,prod),tier=front"}})
        );
    }

    #[test]
    fn a_custom_resource_scale_follows_its_crd_paths() {
        let web_app = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2},
            "status": {"readyReplicas": 1, "selector": "app=web"}});
        let scale = scale_of(&crd_paths(), &web_app);
        assert_eq!(scale["spec"], json!({"replicas": 2}));
        assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=web"}));
        assert_eq!(replicas_patch(&crd_paths(), 5), json!({"spec": {"replicas": 5}}));
    }

    #[test]
    fn a_replication_controller_scale_reads_its_selector_as_a_label_map() {
        let controller = json!({"metadata": {"name": "rc"},
            "spec": {"replicas": 2, "selector": {"tier": "front", "app": "web"}}, "status": {"replicas": 1}});
        let paths = ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
            selector_is_label_map: true,
        };
        let scale = scale_of(&paths, &controller);
        assert_eq!(
            scale["status"],
            json!({"replicas": 1, "selector": "app=web,tier=front"})
        );
    }

    #[test]
    fn negative_replicas_are_invalid() {
        assert_eq!(validate(&json!({"spec": {"replicas": 4}})), Ok(4));
        let cause = validate(&json!({"spec": {"replicas": -1}})).unwrap_err();
        assert_eq!(cause.field, "spec.replicas");
    }
}
