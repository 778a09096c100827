//! CRD validation rules (`x-kubernetes-validations`, V4): cross-field rules, transition rules that
//! compare with the stored object, `message`, `messageExpression`, `reason` and `fieldPath`, rules on
//! list items, and CRDs whose rules do not compile. Each test runs on the embedded server and on the
//! real kube-apiserver, whose answers are the expected ones.

mod common;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const DATABASES: &str = "/apis/cel.example.com/v1/namespaces/default/databases";
const DATABASE: &str = "/apis/cel.example.com/v1/namespaces/default/databases/d";

fn crd_with(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.cel.example.com"},
        "spec": {"group": "cel.example.com", "scope": "Namespaced",
            "names": {"kind": "Database", "plural": "databases", "singular": "database"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}
    })
}

/// A database whose replicas bounds must be ordered, whose engine never changes, whose storage only
/// grows, whose tags and users are checked one by one.
fn schema() -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
            {"rule": "!has(self.tier) || self.tier != 'gold' || self.maxReplicas >= 3"}
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "tier": {"type": "string", "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self.lowerAscii() == self", "reason": "FieldValueForbidden"}]},
            "engine": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "messageExpression": "'engine cannot change from ' + oldSelf + ' to ' + self"}]},
            "storageGB": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self >= oldSelf", "message": "storageGB may only grow"}]},
            "tags": {"type": "array", "maxItems": 10,
                "items": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
                    {"rule": "self.startsWith('env-')", "messageExpression": "'tag ' + self + ' must start with env-'"}]},
                "x-kubernetes-validations": [{"rule": "self.size() <= 3", "message": "at most three tags"}]},
            "users": {"type": "array", "maxItems": 10,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string", "maxLength": 20}, "role": {"type": "string", "maxLength": 20}},
                    "x-kubernetes-validations": [
                        {"rule": "self.role in ['admin', 'reader']", "message": "role must be admin or reader",
                         "fieldPath": ".role", "reason": "FieldValueForbidden"},
                        {"rule": "self.role == oldSelf.role", "message": "role is immutable", "fieldPath": ".role"}
                    ]}}
        }
    }}})
}

fn database(spec: Value) -> Value {
    json!({"apiVersion": "cel.example.com/v1", "kind": "Database", "metadata": {"name": "d"}, "spec": spec})
}

/// A 422 with exactly these causes (field, reason, message), and the Status message that lists them.
fn assert_invalid(answer: &Answer, subject: &str, causes: &[(&str, &str, &str)]) {
    assert_eq!(answer.status, 422, "{}", answer.body);
    let rendered: Vec<String> = causes
        .iter()
        .map(|(field, _, message)| format!("{field}: {message}"))
        .collect();
    let listed = if rendered.len() == 1 {
        rendered[0].clone()
    } else {
        format!("[{}]", rendered.join(", "))
    };
    assert_eq!(
        answer.body["message"],
        format!("{subject} is invalid: {listed}"),
        "{}",
        answer.body
    );
    let expected: Vec<Value> = causes
        .iter()
        .map(|(field, reason, message)| json!({"field": field, "reason": reason, "message": message}))
        .collect();
    assert_eq!(answer.body["details"]["causes"], json!(expected));
}

const SUBJECT: &str = "Database.cel.example.com \"d\"";

async fn post(client: &kube::Client, spec: Value) -> Answer {
    request(client, "POST", DATABASES, "application/json", database(spec)).await
}

async fn rules_refuse_a_create_with_their_messages_reasons_and_field_paths(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    common::install_crd(&client, crd_with(schema())).await;

    let crossed = post(&client, json!({"minReplicas": 3, "maxReplicas": 2})).await;
    assert_invalid(
        &crossed,
        SUBJECT,
        &[(
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": minReplicas must not exceed maxReplicas",
        )],
    );
    let gold = post(
        &client,
        json!({"minReplicas": 1, "maxReplicas": 2, "tier": "gold"}),
    )
    .await;
    assert_invalid(
        &gold,
        SUBJECT,
        &[(
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": failed rule: !has(self.tier) || self.tier != 'gold' || self.maxReplicas >= 3",
        )],
    );
    let shouting = post(
        &client,
        json!({"minReplicas": 1, "maxReplicas": 3, "tier": "Gold"}),
    )
    .await;
    assert_invalid(
        &shouting,
        SUBJECT,
        &[(
            "spec.tier",
            "FieldValueForbidden",
            "Forbidden: failed rule: self.lowerAscii() == self",
        )],
    );
    let tags = post(
        &client,
        json!({"minReplicas": 1, "maxReplicas": 3, "tags": ["env-a", "b", "env-c", "d"]}),
    )
    .await;
    assert_invalid(
        &tags,
        SUBJECT,
        &[
            (
                "spec.tags",
                "FieldValueInvalid",
                "Invalid value: \"array\": at most three tags",
            ),
            (
                "spec.tags[1]",
                "FieldValueInvalid",
                "Invalid value: \"string\": tag b must start with env-",
            ),
            (
                "spec.tags[3]",
                "FieldValueInvalid",
                "Invalid value: \"string\": tag d must start with env-",
            ),
        ],
    );
    let owner = post(
        &client,
        json!({"minReplicas": 1, "maxReplicas": 3, "users": [{"name": "a", "role": "owner"}]}),
    )
    .await;
    assert_invalid(
        &owner,
        SUBJECT,
        &[(
            "spec.users[0].role",
            "FieldValueForbidden",
            "Forbidden: role must be admin or reader",
        )],
    );
    let missing = post(&client, json!({"minReplicas": 1})).await;
    assert_invalid(
        &missing,
        SUBJECT,
        &[(
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": no such key: maxReplicas evaluating rule: minReplicas must not exceed maxReplicas",
        )],
    );
    let listed = request(&client, "GET", DATABASES, "application/json", Value::Null).await;
    assert_eq!(listed.body["items"], json!([]), "nothing refused was stored");
}

async fn transition_rules_compare_updates_and_patches_with_the_stored_object(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    common::install_crd(&client, crd_with(schema())).await;
    let spec = json!({"minReplicas": 1, "maxReplicas": 3, "engine": "pg", "storageGB": 10,
        "users": [{"name": "a", "role": "admin"}]});
    let created = post(&client, spec).await;
    assert_eq!(created.status, 201, "{}", created.body);

    let merge = "application/merge-patch+json";
    let shrunk = request(
        &client,
        "PATCH",
        DATABASE,
        merge,
        json!({"spec": {"storageGB": 4}}),
    )
    .await;
    assert_invalid(
        &shrunk,
        SUBJECT,
        &[(
            "spec.storageGB",
            "FieldValueInvalid",
            "Invalid value: \"integer\": storageGB may only grow",
        )],
    );
    let engine = json!([{"op": "replace", "path": "/spec/engine", "value": "mysql"}]);
    let switched = request(&client, "PATCH", DATABASE, "application/json-patch+json", engine).await;
    assert_invalid(
        &switched,
        SUBJECT,
        &[(
            "spec.engine",
            "FieldValueInvalid",
            "Invalid value: \"string\": engine cannot change from pg to mysql",
        )],
    );

    let mut replaced = created.body.clone();
    replaced["spec"]["users"] = json!([{"name": "a", "role": "reader"}, {"name": "b", "role": "reader"}]);
    let updated = request(&client, "PUT", DATABASE, "application/json", replaced).await;
    assert_invalid(
        &updated,
        SUBJECT,
        &[(
            "spec.users[0].role",
            "FieldValueInvalid",
            "Invalid value: \"object\": role is immutable",
        )],
    );

    let grown = request(
        &client,
        "PATCH",
        DATABASE,
        merge,
        json!({"spec": {"storageGB": 40}}),
    )
    .await;
    assert_eq!(grown.status, 200, "{}", grown.body);
    // A transition rule only runs where the old object has a value: a removed engine may come back
    // as anything, and a new user's role is checked by the other rules alone.
    let removed = request(
        &client,
        "PATCH",
        DATABASE,
        merge,
        json!({"spec": {"engine": null}}),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let added = json!({"spec": {"engine": "mysql", "users": [{"name": "a", "role": "admin"}, {"name": "b", "role": "reader"}]}});
    let readded = request(&client, "PATCH", DATABASE, merge, added).await;
    assert_eq!(readded.status, 200, "{}", readded.body);
    assert_eq!(
        (
            &readded.body["spec"]["engine"],
            &readded.body["spec"]["storageGB"]
        ),
        (&json!("mysql"), &json!(40))
    );
}

async fn a_crd_whose_rule_does_not_compile_is_refused(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let with_spec_rule = |rule: &str| {
        let mut schema = schema();
        schema["properties"]["spec"]["x-kubernetes-validations"][1]["rule"] = json!(rule);
        crd_with(schema)
    };
    let subject = "CustomResourceDefinition.apiextensions.k8s.io \"databases.cel.example.com\"";
    let field = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule";
    let go_rule = |rule: &str| {
        format!(
            "Invalid value: apiextensions.ValidationRule{{Rule:\"{rule}\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}"
        )
    };

    let syntax = request(
        &client,
        "POST",
        CRDS,
        "application/json",
        with_spec_rule("self.minReplicas <"),
    )
    .await;
    let expected = format!(
        "{}: compilation failed: ERROR: <input>:1:19: Syntax error: mismatched input '<EOF>' expecting \
         {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, \
         IDENTIFIER}}\n | self.minReplicas <\n | ..................^",
        go_rule("self.minReplicas <")
    );
    assert_invalid(&syntax, subject, &[(field, "FieldValueInvalid", &expected)]);

    let undefined = request(
        &client,
        "POST",
        CRDS,
        "application/json",
        with_spec_rule("self.nosuch == 1"),
    )
    .await;
    let expected = format!(
        "{}: compilation failed: ERROR: <input>:1:5: undefined field 'nosuch'\n | self.nosuch == 1\n | ....^",
        go_rule("self.nosuch == 1")
    );
    assert_invalid(&undefined, subject, &[(field, "FieldValueInvalid", &expected)]);

    let not_bool = request(
        &client,
        "POST",
        CRDS,
        "application/json",
        with_spec_rule("self.minReplicas"),
    )
    .await;
    let expected = format!(
        "{}: cel expression must evaluate to a bool",
        go_rule("self.minReplicas")
    );
    assert_invalid(&not_bool, subject, &[(field, "FieldValueInvalid", &expected)]);

    let mut uncorrelated = schema();
    uncorrelated["properties"]["spec"]["properties"]["tags"]["items"]["x-kubernetes-validations"] =
        json!([{"rule": "self == oldSelf"}]);
    let refused = request(&client, "POST", CRDS, "application/json", crd_with(uncorrelated)).await;
    assert_invalid(
        &refused,
        subject,
        &[(
            "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule",
            "FieldValueInvalid",
            "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the \
             schema within spec.validation.openAPIV3Schema.properties[spec].properties[tags]",
        )],
    );

    let mut bad_path = schema();
    bad_path["properties"]["spec"]["properties"]["users"]["items"]["x-kubernetes-validations"][0]["fieldPath"] =
        json!(".nosuch");
    let refused = request(&client, "POST", CRDS, "application/json", crd_with(bad_path)).await;
    assert_invalid(
        &refused,
        subject,
        &[(
            "spec.validation.openAPIV3Schema.properties[spec].properties[users].items.x-kubernetes-validations[0].fieldPath",
            "FieldValueInvalid",
            "Invalid value: \".nosuch\": fieldPath must be a valid path",
        )],
    );
    let missing = request(
        &client,
        "GET",
        &format!("{CRDS}/databases.cel.example.com"),
        "application/json",
        Value::Null,
    )
    .await;
    assert_eq!(missing.status, 404, "no refused CRD was stored");
}

testenv::each_control_plane!(
    rules_refuse_a_create_with_their_messages_reasons_and_field_paths,
    transition_rules_compare_updates_and_patches_with_the_stored_object,
    a_crd_whose_rule_does_not_compile_is_refused,
);
