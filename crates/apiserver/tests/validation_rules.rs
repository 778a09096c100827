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

    // Rules that do not compile: (rule, what follows the quoted rule in the message).
    let uncompilable = [
        (
            "self.minReplicas <",
            "compilation failed: ERROR: <input>:1:19: Syntax error: mismatched input '<EOF>' expecting \
             {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, \
             BYTES, IDENTIFIER}\n | self.minReplicas <\n | ..................^",
        ),
        (
            "self.nosuch == 1",
            "compilation failed: ERROR: <input>:1:5: undefined field 'nosuch'\n | self.nosuch == 1\n | ....^",
        ),
        ("self.minReplicas", "cel expression must evaluate to a bool"),
    ];
    for (rule, detail) in uncompilable {
        let refused = request(&client, "POST", CRDS, "application/json", with_spec_rule(rule)).await;
        let expected = format!("{}: {detail}", go_rule(rule));
        assert_invalid(&refused, subject, &[(field, "FieldValueInvalid", &expected)]);
    }

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

/// A spec whose one field `name` holds `field` (with the given rules).
fn spec_with(name: &str, field: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {name: field}}}})
}

const OVER_BUDGET_ADVICE: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where \
                                  arrays, maps, and strings are declared)";

async fn a_rule_too_expensive_for_its_bounds_refuses_the_crd_until_bounded(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let subject = "CustomResourceDefinition.apiextensions.k8s.io \"databases.cel.example.com\"";
    let names_rule =
        "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule";

    // A regular expression over every item of a list of strings, neither bounded: a list as long as
    // a request allows, of strings as long as a request allows.
    let names = |list_bound: Value, item_bound: Value| {
        let mut names = json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]});
        if !list_bound.is_null() {
            names["maxItems"] = list_bound;
        }
        if !item_bound.is_null() {
            names["items"]["maxLength"] = item_bound;
        }
        crd_with(spec_with("names", names))
    };
    let unbounded = request(
        &client,
        "POST",
        CRDS,
        "application/json",
        names(Value::Null, Value::Null),
    )
    .await;
    let rule_over = format!(
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x {OVER_BUDGET_ADVICE}"
    );
    let schema_over = format!(
        "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget \
         by factor of more than 100x {OVER_BUDGET_ADVICE}"
    );
    assert_invalid(
        &unbounded,
        subject,
        &[
            (names_rule, "FieldValueForbidden", &rule_over),
            (
                names_rule,
                "FieldValueForbidden",
                "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ),
            (
                "spec.validation.openAPIV3Schema",
                "FieldValueForbidden",
                &schema_over,
            ),
        ],
    );
    let strings_bounded = request(
        &client,
        "POST",
        CRDS,
        "application/json",
        names(Value::Null, json!(20)),
    )
    .await;
    assert_eq!(
        strings_bounded.status, 422,
        "a list without maxItems is still too long: {}",
        strings_bounded.body
    );

    // A rule on the items of an unbounded list runs once per item a request can hold.
    let groups = |list_bound: Value| {
        let mut groups = json!({"type": "array", "items": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}},
            "x-kubernetes-validations": [{"rule": "self.name.matches('^[a-z]+$')"}]}});
        if !list_bound.is_null() {
            groups["maxItems"] = list_bound;
        }
        crd_with(spec_with("groups", groups))
    };
    let per_item = request(&client, "POST", CRDS, "application/json", groups(Value::Null)).await;
    assert_invalid(
        &per_item,
        subject,
        &[(
            "spec.validation.openAPIV3Schema.properties[spec].properties[groups].items.x-kubernetes-validations[0].rule",
            "FieldValueForbidden",
            &format!(
                "Forbidden: estimated rule cost exceeds budget by factor of 1.258291x {OVER_BUDGET_ADVICE}"
            ),
        )],
    );

    common::install_crd(&client, groups(json!(100))).await;
    let created = post(&client, json!({"groups": [{"name": "ops"}]})).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = post(&client, json!({"groups": [{"name": "Ops"}]})).await;
    assert_eq!(
        refused.status, 422,
        "the bounded rule still runs: {}",
        refused.body
    );

    let bounded = request(
        &client,
        "PUT",
        &format!("{CRDS}/databases.cel.example.com"),
        "application/json",
        {
            let mut crd = names(json!(100), json!(20));
            let stored = request(
                &client,
                "GET",
                &format!("{CRDS}/databases.cel.example.com"),
                "application/json",
                Value::Null,
            )
            .await;
            crd["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
            crd
        },
    )
    .await;
    assert_eq!(
        bounded.status, 200,
        "bounded by maxItems and maxLength: {}",
        bounded.body
    );
}

async fn a_rule_over_the_runtime_limit_refuses_the_object(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    // Comparing every pair of 500 names is admitted (its estimate is under the limit for one rule
    // of a schema) but costs more than one evaluation may spend once the list is full.
    let rule = "self.all(x, self.all(y, x == y || x != y))";
    common::install_crd(
        &client,
        crd_with(spec_with(
            "names",
            json!({"type": "array", "maxItems": 500, "items": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [{"rule": rule}]}),
        )),
    )
    .await;

    let few: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
    let created = post(&client, json!({"names": few})).await;
    assert_eq!(created.status, 201, "{}", created.body);

    let many: Vec<String> = (0..500).map(|i| format!("n{i}")).collect();
    let mut full = database(json!({"names": many}));
    full["metadata"]["name"] = json!("full");
    let refused = request(&client, "POST", DATABASES, "application/json", full).await;
    assert_invalid(
        &refused,
        "Database.cel.example.com \"full\"",
        &[(
            "spec.names",
            "FieldValueInvalid",
            &format!(
                "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation \
                 rules will be run due to call cost exceeds limit for rule: {rule}"
            ),
        )],
    );
}

/// A gadget whose field, map entries and keyed list items are plain strings, then (the schema made
/// stricter) must be `notfoo`: by enum for the field, by rule for the others.
fn gadget_schema(strict: bool) -> Value {
    let constrained = |rule: bool| -> Value {
        match (strict, rule) {
            (false, _) => json!({"type": "string"}),
            (true, false) => json!({"type": "string", "enum": ["notfoo"]}),
            (true, true) => {
                json!({"type": "string", "x-kubernetes-validations": [{"rule": "self == 'notfoo'"}]})
            }
        }
    };
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "field": constrained(false),
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"field": constrained(true)}}},
        "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "required": ["key"],
                "properties": {"key": {"type": "string"}, "field": constrained(true)}}}
    }}}})
}

fn gadget_crd(strict: bool) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ratchet.example.com"},
        "spec": {"group": "ratchet.example.com", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": gadget_schema(strict)}}]}
    })
}

/// The (field, reason) of each cause of a 422.
fn causes_of(answer: &Answer) -> Vec<(String, String)> {
    answer.body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

async fn a_stricter_schema_lets_unchanged_values_through_and_holds_changed_ones_to_it(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    common::install_crd(&client, gadget_crd(false)).await;
    let gadgets = "/apis/ratchet.example.com/v1/namespaces/default/gadgets";
    let gadget = format!("{gadgets}/g");
    let spec = json!({"field": "foo", "map": {"a": {"field": "foo"}},
        "list": [{"key": "a", "field": "foo"}, {"key": "b", "field": "foo"}]});
    let body = json!({"apiVersion": "ratchet.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    let created = request(&client, "POST", gadgets, "application/json", body).await;
    assert_eq!(created.status, 201, "{}", created.body);

    let crd_path = format!("{CRDS}/gadgets.ratchet.example.com");
    let mut crd = request(&client, "GET", &crd_path, "", Value::Null).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = gadget_schema(true);
    let updated = request(&client, "PUT", &crd_path, "application/json", crd).await;
    assert_eq!(updated.status, 200, "{}", updated.body);

    // Every value changed (and still not `notfoo`) is refused, a map entry named by its key. The
    // real server takes the new schema a moment after the CRD's update: until it does, the patch is
    // tried as a dry run, which leaves the values unchanged for the next try (a patch let through
    // would make them the stored ones, which ratcheting then keeps letting through).
    let merge = "application/merge-patch+json";
    let changed = json!({"spec": {"map": {"a": {"field": "bar"}},
        "list": [{"key": "a", "field": "bar"}, {"key": "b", "field": "foo"}]}});
    let expected = vec![
        ("spec.list[0].field".to_owned(), "FieldValueInvalid".to_owned()),
        ("spec.map[a].field".to_owned(), "FieldValueInvalid".to_owned()),
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let dry_run = format!("{gadget}?dryRun=All");
    for path in [&dry_run, &gadget] {
        loop {
            let refused = request(&client, "PATCH", path, merge, changed.clone()).await;
            let mut causes = causes_of(&refused);
            causes.sort();
            if refused.status == 422 && causes == expected {
                break;
            }
            assert!(
                path == &dry_run && std::time::Instant::now() < deadline,
                "the stricter schema never refused the changed values ({path}): {}",
                refused.text
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    // A value the schema refuses outright (not in its enum) blocks the rules, and says so.
    let unsupported = request(
        &client,
        "PATCH",
        &gadget,
        merge,
        json!({"spec": {"field": "bar"}}),
    )
    .await;
    assert_invalid(
        &unsupported,
        "Gadget.ratchet.example.com \"g\"",
        &[
            (
                "spec.field",
                "FieldValueNotSupported",
                "Unsupported value: \"bar\": supported values: \"notfoo\"",
            ),
            (
                "<nil>",
                "FieldValueInvalid",
                "Invalid value: \"null\": some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation",
            ),
        ],
    );

    // Values left as they were pass, though the schema would refuse them now: a label changes.
    let labelled = request(
        &client,
        "PATCH",
        &gadget,
        merge,
        json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(labelled.status, 200, "{}", labelled.body);
    // As does a changed item of the keyed list that meets the schema, beside an unchanged invalid one.
    let fixed = json!({"spec": {"list": [{"key": "a", "field": "notfoo"}, {"key": "b", "field": "foo"}]}});
    let answer = request(&client, "PATCH", &gadget, merge, fixed).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

testenv::each_control_plane!(
    a_stricter_schema_lets_unchanged_values_through_and_holds_changed_ones_to_it,
    rules_refuse_a_create_with_their_messages_reasons_and_field_paths,
    transition_rules_compare_updates_and_patches_with_the_stored_object,
    a_crd_whose_rule_does_not_compile_is_refused,
    a_rule_too_expensive_for_its_bounds_refuses_the_crd_until_bounded,
    a_rule_over_the_runtime_limit_refuses_the_object,
);
