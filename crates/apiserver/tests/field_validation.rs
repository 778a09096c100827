//! Built-in objects are decoded against their types as kube-apiserver decodes them into Go structs:
//! a value of the wrong type is 400 on create, update and every patch, and fields the type lacks
//! follow `fieldValidation` (Strict: 400; Warn, the default: stored without them, with a Warning;
//! Ignore: stored without them, silently).

mod common;

use common::{request, start};
use serde_json::{Value, json};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const BOOL_IN_DATA: &str = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
     unmarshal bool into Go struct field ConfigMap.data of type string";

fn assert_bad_request(answer: &common::Answer, message: &str) {
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.body["reason"], "BadRequest", "{}", answer.body);
    assert_eq!(answer.body["message"], message);
}

#[tokio::test]
async fn a_boolean_in_config_map_data_is_refused_on_create_update_and_patch() {
    let (_server, client) = start().await;
    let bad =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": true}});
    let created = request(&client, "POST", CONFIG_MAPS, "application/json", bad.clone()).await;
    assert_bad_request(&created, BOOL_IN_DATA);

    let good =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "true"}});
    assert_eq!(
        request(&client, "POST", CONFIG_MAPS, "application/json", good)
            .await
            .status,
        201
    );
    let item = format!("{CONFIG_MAPS}/c");
    let replaced = request(&client, "PUT", &item, "application/json", bad).await;
    assert_bad_request(&replaced, BOOL_IN_DATA);
    let patch = json!({"data": {"x": false}});
    for content_type in [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let patched = request(&client, "PATCH", &item, content_type, patch.clone()).await;
        assert_bad_request(&patched, BOOL_IN_DATA);
    }
    let json_patch = json!([{"op": "replace", "path": "/data/x", "value": 1}]);
    let patched = request(&client, "PATCH", &item, "application/json-patch+json", json_patch).await;
    assert_eq!(patched.status, 400, "{}", patched.body);
    let stored = request(&client, "GET", &item, "application/json", Value::Null).await;
    assert_eq!(stored.body["data"]["x"], "true", "nothing refused was stored");
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"foo": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "a", "image": "nginx", "bar": true}]}}}})
}

#[tokio::test]
async fn unknown_fields_of_built_ins_follow_field_validation() {
    let (_server, client) = start().await;
    let strict = request(
        &client,
        "POST",
        &format!("{DEPLOYMENTS}?fieldValidation=Strict"),
        "application/json",
        deployment("strict"),
    )
    .await;
    assert_bad_request(
        &strict,
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"spec.foo\", unknown field \"spec.template.spec.containers[0].bar\"",
    );

    let warned = request(
        &client,
        "POST",
        DEPLOYMENTS,
        "application/json",
        deployment("warned"),
    )
    .await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            r#"299 - "unknown field \"spec.foo\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].bar\"""#
        ]
    );
    assert!(warned.body["spec"].get("foo").is_none(), "{}", warned.body);

    let ignored = request(
        &client,
        "POST",
        &format!("{DEPLOYMENTS}?fieldValidation=Ignore"),
        "application/json",
        deployment("ignored"),
    )
    .await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert!(ignored.warnings.is_empty(), "{:?}", ignored.warnings);
    let stored = request(
        &client,
        "GET",
        &format!("{DEPLOYMENTS}/ignored"),
        "application/json",
        Value::Null,
    )
    .await;
    assert!(stored.body["spec"].get("foo").is_none(), "{}", stored.body);
    assert!(
        stored.body["spec"]["template"]["spec"]["containers"][0]
            .get("bar")
            .is_none()
    );
}
