//! Built-in objects are decoded against their types as kube-apiserver decodes them into Go structs:
//! a value of the wrong type is 400 on create, update and every patch, and fields the type lacks
//! follow `fieldValidation` (Strict: 400; Warn, the default: stored without them, with a Warning;
//! Ignore: stored without them, silently); so do fields a body repeats. Each test runs on the embedded
//! server and on the real kube-apiserver, whose answers are the expected ones.

mod common;

use common::{request, request_bytes};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const APPLY: &str = "application/apply-patch+yaml";
const BOOL_IN_DATA: &str = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
     unmarshal bool into Go struct field ConfigMap.data of type string";

/// A patch whose result does not decode, as kube-apiserver answers it: 422, the `patch` invalid, its
/// message quoting the patched object and ending with what decoding said.
fn assert_invalid_patch(answer: &common::Answer, ends_with: &str) {
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert_eq!(answer.body["reason"], "Invalid", "{}", answer.body);
    let cause = &answer.body["details"]["causes"][0];
    assert_eq!(
        (&cause["field"], &cause["reason"]),
        (&json!("patch"), &json!("FieldValueInvalid"))
    );
    let message = cause["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Invalid value: \"{") && message.ends_with(ends_with),
        "{message}"
    );
}

fn assert_bad_request(answer: &common::Answer, message: &str) {
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.body["reason"], "BadRequest", "{}", answer.body);
    assert_eq!(answer.body["message"], message);
}

async fn a_boolean_in_config_map_data_is_refused_on_create_update_and_patch(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
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
    let merged = request(
        &client,
        "PATCH",
        &item,
        "application/merge-patch+json",
        json!({"data": {"x": false}}),
    )
    .await;
    assert_invalid_patch(
        &merged,
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string",
    );
    let json_patch = json!([{"op": "replace", "path": "/data/x", "value": 1}]);
    let patched = request(&client, "PATCH", &item, "application/json-patch+json", json_patch).await;
    assert_invalid_patch(
        &patched,
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
    );
    // A strategic merge patch is refused as well; kube-apiserver's words come from its patch
    // machinery rather than the decoder (a known difference, docs/control-planes.md).
    let strategic = json!({"data": {"x": false}});
    let patched = request(
        &client,
        "PATCH",
        &item,
        "application/strategic-merge-patch+json",
        strategic,
    )
    .await;
    assert_eq!(
        (patched.status, &patched.body["details"]["causes"][0]["field"]),
        (422, &json!("patch"))
    );
    let stored = request(&client, "GET", &item, "application/json", Value::Null).await;
    assert_eq!(stored.body["data"]["x"], "true", "nothing refused was stored");
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"foo": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "a", "image": "nginx", "bar": true}]}}}})
}

async fn unknown_fields_of_built_ins_follow_field_validation(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
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

/// A ConfigMap whose body repeats a label, a data key and the whole `data` object.
const REPEATED: &[u8] = br#"{"apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "NAME", "labels": {"a": "1", "a": "2"}},
    "data": {"x": "1", "x": "2"}, "data": {"y": "1"}}"#;

fn repeated(name: &str) -> Vec<u8> {
    String::from_utf8_lossy(REPEATED)
        .replace("NAME", name)
        .into_bytes()
}

async fn fields_a_body_repeats_follow_field_validation(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let strict = format!("{CONFIG_MAPS}?fieldValidation=Strict");
    let refused = request_bytes(&client, "POST", &strict, "application/json", repeated("strict")).await;
    assert_bad_request(
        &refused,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         duplicate field \"metadata.labels.a\", duplicate field \"data.x\", duplicate field \"data\"",
    );

    let warned = request_bytes(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        repeated("warned"),
    )
    .await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            r#"299 - "duplicate field \"metadata.labels.a\"""#,
            r#"299 - "duplicate field \"data.x\"""#,
            r#"299 - "duplicate field \"data\"""#
        ]
    );
    // What Go's decoder makes of it: the last scalar wins, a repeated object merges into the first.
    assert_eq!(warned.body["metadata"]["labels"], json!({"a": "2"}));
    assert_eq!(warned.body["data"], json!({"x": "2", "y": "1"}));

    let ignore = format!("{CONFIG_MAPS}?fieldValidation=Ignore");
    let ignored = request_bytes(&client, "POST", &ignore, "application/json", repeated("ignored")).await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert!(ignored.warnings.is_empty(), "{:?}", ignored.warnings);

    // A merge patch that repeats a key is held to the same rule.
    let item = format!("{CONFIG_MAPS}/warned?fieldValidation=Strict");
    let patch = br#"{"data": {"z": "1", "z": "2"}}"#.to_vec();
    let patched = request_bytes(&client, "PATCH", &item, "application/merge-patch+json", patch).await;
    assert_invalid_patch(&patched, "strict decoding error: duplicate field \"data.z\"");
}

async fn custom_resources_name_repeated_and_unknown_fields_as_kube_apiserver_does(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let crd = serde_json::from_str(include_str!("fixtures/crd.json")).expect("CRD parses");
    common::install_crd(&client, crd).await;
    let writers = "/apis/example.com/v1/namespaces/default/postgreswriters";
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion": "example.com/v1", "kind": "PostgresWriter", "metadata": {{"name": "{name}"}},
                "spec": {{"table": "t", "table": "u", "colour": "red"}}}}"#
        )
        .into_bytes()
    };
    let strict = format!("{writers}?fieldValidation=Strict");
    let refused = request_bytes(&client, "POST", &strict, "application/json", body("strict")).await;
    assert_bad_request(
        &refused,
        "PostgresWriter in version \"v1\" cannot be handled as a PostgresWriter: strict decoding error: \
         duplicate field \"spec.table\", unknown field \"spec.colour\"",
    );
    let warned = request_bytes(&client, "POST", writers, "application/json", body("warned")).await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            r#"299 - "duplicate field \"spec.table\"""#,
            r#"299 - "unknown field \"spec.colour\"""#
        ]
    );
    assert_eq!(
        warned.body["spec"],
        json!({"table": "u", "replicas": 1}),
        "pruned and defaulted"
    );
}

/// A body or a patch that is not JSON at all is refused with 400, quoting Go's JSON decoder: a body
/// while kube-apiserver looks for its kind (with the body's first 30 bytes), a patch as it decodes it.
async fn bodies_that_are_not_json_quote_gos_decoder(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let unrecognized = "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
                        version/kind; json parse error: ";
    for (body, message) in [
        (
            r#"{"apiVersion": "v1", "kind": "#,
            format!(r#"{unrecognized}unexpected end of JSON input ({{"apiVersion": "v1", "kind": )"#),
        ),
        (
            r#"{"apiVersion": "v1", "kind": "ConfigMap" "data": {}}"#,
            format!(
                r#"{unrecognized}invalid character '"' after object key:value pair ({{"apiVersion": "v1", "kind": " ...)"#
            ),
        ),
    ] {
        let refused = request_bytes(
            &client,
            "POST",
            CONFIG_MAPS,
            "application/json",
            body.as_bytes().to_vec(),
        )
        .await;
        assert_bad_request(&refused, &message);
    }
    let created = request(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-json"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = request_bytes(
        &client,
        "PATCH",
        &format!("{CONFIG_MAPS}/not-json"),
        "application/merge-patch+json",
        b"not json".to_vec(),
    )
    .await;
    assert_bad_request(
        &refused,
        "error decoding patch: invalid character 'o' in literal null (expecting 'u')",
    );
}

/// A JSON patch that cannot be applied (a `test` that fails, a path that is not there) is 422 Invalid
/// with kube-apiserver's generic message and empty details: it says nothing of which operation failed.
async fn json_patches_that_do_not_apply_are_invalid_without_details(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let created = request(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "patched"}, "data": {"w": "1"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let item = format!("{CONFIG_MAPS}/patched");
    for patch in [
        json!([{"op": "test", "path": "/data/w", "value": "2"}, {"op": "replace", "path": "/data/w", "value": "3"}]),
        json!([{"op": "remove", "path": "/data/nothing"}]),
        json!([{"op": "add", "path": "/spec/absent/deeper", "value": "x"}]),
    ] {
        let refused = request(
            &client,
            "PATCH",
            &item,
            "application/json-patch+json",
            patch.clone(),
        )
        .await;
        assert_eq!(
            refused.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "the server rejected our request due to an error in our request",
                "reason": "Invalid", "details": {}, "code": 422}),
            "{patch}"
        );
    }
    let kept = request(&client, "GET", &item, "", Value::Null).await;
    assert_eq!(kept.body["data"], json!({"w": "1"}));
}

/// The e2e suite's Deployment, which names an unknown field before it repeats one: a built-in kind's
/// decoder names each problem where the body has it, whatever its kind, and a field the type lacks
/// once however often it comes.
const UNKNOWN_THEN_REPEATED: &[u8] = br#"{"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "NAME", "labels": {"app": "nginx"}},
    "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3, "unknownField": "bar",
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx", "zz": 1, "aa": 2}]}}}}"#;

async fn problems_of_built_ins_come_in_the_order_the_body_has_them(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let body = |name: &str| {
        String::from_utf8_lossy(UNKNOWN_THEN_REPEATED)
            .replace("NAME", name)
            .into_bytes()
    };
    let strict = format!("{DEPLOYMENTS}?fieldValidation=Strict");
    let refused = request_bytes(&client, "POST", &strict, "application/json", body("strict")).await;
    assert_bad_request(
        &refused,
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"spec.unknownField\", duplicate field \"spec.replicas\", \
         unknown field \"spec.template.spec.containers[0].zz\", unknown field \"spec.template.spec.containers[0].aa\"",
    );
    let warned = request_bytes(&client, "POST", DEPLOYMENTS, "application/json", body("warned")).await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            r#"299 - "unknown field \"spec.unknownField\"""#,
            r#"299 - "duplicate field \"spec.replicas\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].zz\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].aa\"""#,
        ]
    );
}

/// Server-side apply converts its body to the object's type before anything else, and a field the
/// type does not declare fails that conversion: 500 without a reason, whatever `fieldValidation`
/// says, for custom resources and built-ins alike.
async fn apply_of_undeclared_fields_fails_its_typed_conversion(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let crd = serde_json::from_str(include_str!("fixtures/crd.json")).expect("CRD parses");
    common::install_crd(&client, crd).await;
    testenv::discovered(&client, "example.com", "v1", "postgreswriters").await;
    let writers = "/apis/example.com/v1/namespaces/default/postgreswriters";
    for validation in ["Strict", "Warn", "Ignore"] {
        let body = "apiVersion: example.com/v1\nkind: PostgresWriter\nmetadata:\n  name: w\n  namespace: default\n\
                    unknownField: unknown\nspec:\n  table: t\n";
        let path = format!("{writers}/w?fieldManager=m&fieldValidation={validation}");
        let refused = request_bytes(&client, "PATCH", &path, APPLY, body.as_bytes().to_vec()).await;
        assert_eq!(
            (refused.status, &refused.body),
            (
                500,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "failed to create typed patch object (default/w; example.com/v1, Kind=PostgresWriter): \
                                .unknownField: field not declared in schema",
                    "code": 500})
            ),
            "{validation}"
        );
    }
    let config_map = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "datum": {}}"#;
    let path = format!("{CONFIG_MAPS}/c?fieldManager=m");
    let refused = request_bytes(&client, "PATCH", &path, APPLY, config_map.to_vec()).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "failed to create typed patch object (/c; /v1, Kind=ConfigMap): .datum: field not declared in schema"
    );
}

/// An apply body is YAML, and a key it repeats is named as the YAML decoder names it, by the line
/// its value starts on: a 400 under Strict, a warning under Warn (the default), nothing under Ignore.
async fn keys_an_apply_body_repeats_follow_field_validation(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let body = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  foo: a\n  foo: b\n\
             metadata:\n  name: {name}\n  labels:\n    a: x1\n    a: x2\n"
        )
        .into_bytes()
    };
    let apply = |name: &str, validation: &str| {
        format!("{CONFIG_MAPS}/{name}?fieldManager=m&fieldValidation={validation}")
    };
    let refused = request_bytes(
        &client,
        "PATCH",
        &apply("strict", "Strict"),
        APPLY,
        body("strict"),
    )
    .await;
    assert_bad_request(
        &refused,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  \
         line 7: key \"foo\" already set in map\n  line 12: key \"a\" already set in map\n  \
         line 9: key \"metadata\" already set in map",
    );
    let warned = request_bytes(&client, "PATCH", &apply("warned", "Warn"), APPLY, body("warned")).await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            r#"299 - "line 7: key \"foo\" already set in map""#,
            r#"299 - "line 12: key \"a\" already set in map""#,
            r#"299 - "line 9: key \"metadata\" already set in map""#,
        ]
    );
    // The last value of each key is the one applied.
    assert_eq!(warned.body["data"], json!({"foo": "b"}));
    assert_eq!(warned.body["metadata"]["labels"], json!({"a": "x2"}));
    let ignored = request_bytes(
        &client,
        "PATCH",
        &apply("ignored", "Ignore"),
        APPLY,
        body("ignored"),
    )
    .await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert!(ignored.warnings.is_empty(), "{:?}", ignored.warnings);
}

testenv::each_control_plane!(
    problems_of_built_ins_come_in_the_order_the_body_has_them,
    apply_of_undeclared_fields_fails_its_typed_conversion,
    keys_an_apply_body_repeats_follow_field_validation,
    bodies_that_are_not_json_quote_gos_decoder,
    json_patches_that_do_not_apply_are_invalid_without_details,
    custom_resources_name_repeated_and_unknown_fields_as_kube_apiserver_does,
    a_boolean_in_config_map_data_is_refused_on_create_update_and_patch,
    unknown_fields_of_built_ins_follow_field_validation,
    fields_a_body_repeats_follow_field_validation,
);
