//! Property tests : every pure function the API server feeds with request content
//! (patches, selectors, schemas, metadata validation, defaults, tables) returns a verdict for any input
//! and never panics. Bounded: a few hundred cases each, a few seconds in all, the same cases every run.
//!
//! Inputs mix arbitrary JSON with the words these functions look for (`$patch`, merge keys, schema
//! keywords, selector operators), so the generators reach the interesting branches, not only the
//! "not an object" ones.

use apimachinery::{
    defaults,
    patch::{self, ApplyRequest},
    resource,
    schema::{self, StructuralSchema},
    selector::{FieldSelector, LabelSelector},
    table,
    validation::{self, NameRule},
};
use proptest::{prelude::*, test_runner::RngSeed};
use serde_json::{Map, Value, json};

/// Keys the functions under test treat specially, mixed with plain ones.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "generateName",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "spec",
    "status",
    "template",
    "containers",
    "initContainers",
    "env",
    "ports",
    "port",
    "containerPort",
    "volumes",
    "conditions",
    "type",
    "value",
    "image",
    "replicas",
    "selector",
    "data",
    "stringData",
    "binaryData",
    "$patch",
    "$retainKeys",
    "$deleteFromPrimitiveList/finalizers",
    "$setElementOrder/containers",
    "f:spec",
    "k:{\"name\":\"a\"}",
    "v:x",
    ".",
    "",
    "a",
    "b",
];

const WORDS: &[&str] = &[
    "delete",
    "replace",
    "merge",
    "a",
    "b",
    "web",
    "v1",
    "apps/v1",
    "ConfigMap",
    "Deployment",
    "Service",
    "TCP",
    "True",
    "2026-11-22T00:00:00Z",
    "",
    "-",
    "~",
    "%",
    "\u{0}",
    "ü",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-zA-Z0-9$/.:{}\"_~-]{0,12}",
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(-1),
            Just(80),
            Just(i64::MAX),
            Just(i64::MIN)
        ]
        .prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        proptest::sample::select(WORDS).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

/// Any JSON value, at most four levels deep, rich in the keys above.
fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON object shaped like a Kubernetes object whose parts are arbitrary.
fn object() -> impl Strategy<Value = Value> {
    (
        proptest::sample::select(&["v1", "apps/v1", "example.com/v1", ""][..]),
        proptest::sample::select(&["ConfigMap", "Deployment", "Service", "Pod", "Widget", ""][..]),
        json_value(),
        json_value(),
        json_value(),
        json_value(),
    )
        .prop_map(|(api_version, kind, name, labels, spec, extra)| {
            let mut object = json!({
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
            });
            if let Value::Object(extra) = extra {
                for (key, value) in extra {
                    object[key.as_str()] = value;
                }
            }
            object
        })
}

fn object_or_any() -> impl Strategy<Value = Value> {
    prop_oneof![3 => object(), 1 => json_value()]
}

/// A JSON pointer, well-formed or not.
fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(
            prop_oneof![
                key(),
                Just("-".to_owned()),
                Just("0".to_owned()),
                Just("~0".to_owned()),
                Just("~1".to_owned()),
                Just("~2".to_owned()),
                Just("99999999999999999999".to_owned())
            ],
            0..5
        )
        .prop_map(|segments| segments.iter().map(|s| format!("/{s}")).collect()),
        "[a-z/~0-9-]{0,10}",
    ]
}

/// An RFC 6902 document: mostly operation arrays, sometimes anything at all.
fn json_patch_document() -> impl Strategy<Value = Value> {
    let operation = (
        proptest::sample::select(&["add", "remove", "replace", "move", "copy", "test", "frobnicate"][..]),
        pointer(),
        proptest::option::of(pointer()),
        proptest::option::of(json_value()),
    )
        .prop_map(|(op, path, from, value)| {
            let mut operation = json!({"op": op, "path": path});
            if let Some(from) = from {
                operation["from"] = Value::from(from);
            }
            if let Some(value) = value {
                operation["value"] = value;
            }
            operation
        });
    prop_oneof![
        4 => proptest::collection::vec(operation, 0..6).prop_map(Value::Array),
        1 => json_value(),
    ]
}

/// A label selector: built from the grammar's pieces, so most parse, some do not.
fn label_selector_text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        proptest::sample::select(
            &[
                "a",
                "app",
                "tier",
                "example.com/role",
                "x-y_z.w",
                "in",
                "notin",
                ""
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-zA-Z0-9./_-]{0,8}",
    ];
    let operator =
        proptest::sample::select(&["=", "==", "!=", " in ", " notin ", "!", "", "=!", " in", "(", ")"][..]);
    let requirement = (
        proptest::option::of(Just("!")),
        word.clone(),
        operator,
        proptest::collection::vec(word, 0..3),
    )
        .prop_map(|(bang, key, operator, values)| {
            let values = if operator.trim() == "in" || operator.trim() == "notin" {
                format!("({})", values.join(","))
            } else {
                values.join("")
            };
            format!("{}{key}{operator}{values}", bang.unwrap_or(""))
        });
    prop_oneof![
        4 => proptest::collection::vec(requirement, 0..4).prop_map(|parts| parts.join(",")),
        1 => any::<String>(),
        1 => "[a-z=!(), ]{0,30}",
    ]
}

fn field_selector_text() -> impl Strategy<Value = String> {
    let requirement = (
        proptest::sample::select(
            &[
                "metadata.name",
                "metadata.namespace",
                "spec.x",
                "reason",
                "",
                " metadata.name ",
            ][..],
        ),
        proptest::sample::select(&["=", "==", "!=", "", "=!", "!=="][..]),
        "[a-z0-9=!,.-]{0,8}",
    )
        .prop_map(|(field, operator, value)| format!("{field}{operator}{value}"));
    prop_oneof![
        4 => proptest::collection::vec(requirement, 0..4).prop_map(|parts| parts.join(",")),
        1 => any::<String>(),
    ]
}

/// An `openAPIV3Schema` built from schema keywords with arbitrary values, so compile sees both valid
/// structural schemas and nonsense.
fn openapi_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        proptest::sample::select(
            &[
                "string", "integer", "number", "boolean", "object", "array", "bogus"
            ][..]
        )
        .prop_map(|t| json!({"type": t})),
        (proptest::sample::select(&["string", "integer"][..]), json_value())
            .prop_map(|(t, d)| json!({"type": t, "default": d})),
        proptest::collection::vec(scalar(), 0..3).prop_map(|e| json!({"type": "string", "enum": e})),
        (any::<i64>(), any::<i64>())
            .prop_map(|(min, max)| json!({"type": "integer", "minimum": min, "maximum": max})),
        (0u64..5, "[a-z^$.*+?()\\[\\]{}|\\\\]{0,8}")
            .prop_map(|(max, pattern)| json!({"type": "string", "maxLength": max, "pattern": pattern})),
        proptest::sample::select(&["date-time", "int-or-string", "byte", "uuid", "hostname", "x"][..])
            .prop_map(|f| json!({"type": "string", "format": f})),
        Just(json!({"x-kubernetes-int-or-string": true})),
        Just(json!({"x-kubernetes-preserve-unknown-fields": true})),
        json_value(),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (proptest::collection::btree_map(key(), inner.clone(), 0..4), proptest::collection::vec(key(), 0..2), any::<bool>())
                .prop_map(|(properties, required, nullable)| {
                    json!({"type": "object", "properties": properties, "required": required, "nullable": nullable})
                }),
            (inner.clone(), 0u64..4).prop_map(|(items, max)| json!({"type": "array", "items": items, "maxItems": max})),
            (inner.clone(), proptest::sample::select(&["atomic", "set", "map", "granular", "x"][..]))
                .prop_map(|(items, list_type)| json!({"type": "array", "items": items, "x-kubernetes-list-type": list_type, "x-kubernetes-list-map-keys": ["name"]})),
            inner.clone().prop_map(|values| json!({"type": "object", "additionalProperties": values})),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"allOf": [a], "anyOf": [b], "not": {"type": "string"}})),
        ]
    })
}

fn crd(schema: Value, extra: Value) -> Value {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.a"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "N", "type": "integer", "jsonPath": ".spec.items[0]"},
                    {"name": "When", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]
            }]
        }
    });
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            crd["spec"][key.as_str()] = value;
        }
    }
    crd
}

/// The seed every run uses, CI's included, so that a run is the same every time.
const FIXED_SEED: u64 = 0x5eed_0000_0000_0001;

fn config() -> ProptestConfig {
    let defaults = ProptestConfig::default();
    // `PROPTEST_RNG_SEED=<u64>` picks another seed for a run, and proptest reads it into `defaults`.
    let rng_seed = if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
        defaults.rng_seed
    } else {
        RngSeed::Fixed(FIXED_SEED)
    };
    ProptestConfig {
        cases: 256,
        // A failure prints its shrunk input; no regression files are written into the source tree.
        failure_persistence: None,
        rng_seed,
        ..defaults
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn p1_merge_patch_never_panics_and_is_idempotent(live in object_or_any(), patch in json_value()) {
        if let Ok(once) = patch::merge_patch(&live, &patch) {
            // RFC 7386: applying the same merge patch twice changes nothing more.
            prop_assert_eq!(patch::merge_patch(&once, &patch).ok(), Some(once));
        }
    }

    #[test]
    fn p1_empty_merge_patch_leaves_an_object_as_it_was(live in object()) {
        prop_assert_eq!(patch::merge_patch(&live, &json!({})).ok(), Some(live));
    }

    #[test]
    fn p2_json_patch_never_panics_and_a_failure_changes_nothing(live in object_or_any(), document in json_patch_document()) {
        let before = live.clone();
        let _ = patch::json_patch(&live, &document);
        prop_assert_eq!(&live, &before);
        prop_assert_eq!(patch::json_patch(&before, &json!([])).ok(), Some(before.clone()));
    }

    #[test]
    fn p3_strategic_merge_patch_never_panics(
        live in object_or_any(),
        patch_body in prop_oneof![3 => object(), 1 => json_value()],
        kind in proptest::sample::select(&["Deployment", "Service", "Pod", "ConfigMap", "Widget", ""][..]),
    ) {
        let _ = patch::strategic_merge_patch(&live, &patch_body, kind);
    }

    #[test]
    fn p3_strategic_merge_of_containers_never_panics(
        live in proptest::collection::vec(json_value(), 0..4),
        patched in proptest::collection::vec(json_value(), 0..4),
        directive in proptest::option::of(proptest::sample::select(&["delete", "replace", "merge", "bogus"][..])),
    ) {
        let live = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": live}}}});
        let mut patched = json!({"spec": {"template": {"spec": {"containers": patched}}}});
        if let Some(directive) = directive {
            patched["spec"]["template"]["spec"]["$patch"] = Value::from(directive);
            patched["spec"]["template"]["spec"]["$setElementOrder/containers"] = json!([{"name": "a"}, 1]);
        }
        let _ = patch::strategic_merge_patch(&live, &patched, "Deployment");
    }

    #[test]
    fn p4_server_side_apply_never_panics(
        live in proptest::option::of(object()),
        applied in object_or_any(),
        managed_fields in json_value(),
        manager in prop_oneof![Just("kubectl".to_owned()), Just("".to_owned()), any::<String>()],
        force in any::<bool>(),
        subresource in proptest::option::of(proptest::sample::select(&["status", "scale", ""][..])),
        kind in proptest::option::of(proptest::sample::select(&["Deployment", "Service", "ConfigMap"][..])),
    ) {
        let live = live.map(|mut live| {
            if let Some(metadata) = live.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.insert("managedFields".into(), managed_fields);
            }
            live
        });
        let request = ApplyRequest {
            live: live.as_ref(),
            applied: &applied,
            manager: &manager,
            force,
            subresource,
            schema: match kind {
                Some("Deployment") => apimachinery::patch::ObjectSchema::BuiltIn { api_version: "apps/v1", kind: "Deployment" },
                Some(kind) => apimachinery::patch::ObjectSchema::BuiltIn { api_version: "v1", kind },
                None => apimachinery::patch::ObjectSchema::Custom(None),
            },
            status_subresource: false,
            now: "2026-11-22T00:00:00Z",
        };
        if let Ok(result) = patch::server_side_apply(&request) {
            prop_assert!(result.is_object(), "{}", result);
        }
    }

    #[test]
    fn w2_label_selectors_parse_or_fail_and_matching_never_panics(text in label_selector_text(), object in object_or_any()) {
        if let Ok(selector) = LabelSelector::parse(&text) {
            let _ = selector.matches(&object);
            // An empty selector selects everything.
            if selector.is_empty() {
                prop_assert!(selector.matches(&object));
            }
        }
    }

    #[test]
    fn w2_well_formed_equality_selectors_parse_and_match_their_own_labels(
        labels in proptest::collection::btree_map("[a-z]([a-z0-9-]{0,6}[a-z0-9])?", "[a-z0-9]{0,8}", 1..4),
    ) {
        let text = labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
        let selector = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert!(selector.matches(&json!({"metadata": {"labels": labels}})), "{}", text);
        prop_assert!(!selector.matches(&json!({"metadata": {"labels": {}}})), "{}", text);
    }

    #[test]
    fn w2_field_selectors_parse_or_fail_and_matching_never_panics(text in field_selector_text(), object in object_or_any()) {
        if let Ok(selector) = FieldSelector::parse(&text, &["reason", "involvedObject.name"]) {
            let _ = selector.matches(&object);
            let _ = selector.required_name();
        }
    }

    #[test]
    fn v2_v3_schemas_compile_or_fail_and_compiled_ones_handle_any_object(schema in openapi_schema(), objects in proptest::collection::vec(object_or_any(), 1..3)) {
        if let Ok(compiled) = StructuralSchema::compile(&schema) {
            let _ = compiled.cel_rule_count();
            for mut object in objects {
                compiled.apply_defaults(&mut object);
                let pruned = compiled.prune(&mut object);
                let _ = apimachinery::decoding::field_problems(&[], &pruned);
                let _ = compiled.validate(&object);
            }
        }
    }

    #[test]
    fn crds_validate_and_convert_or_fail_and_tables_render_any_object(
        schema in openapi_schema(),
        extra in json_value(),
        objects in proptest::collection::vec(object_or_any(), 0..3),
    ) {
        let crd = crd(schema, extra);
        let _ = schema::validate_crd(&crd);
        if let Ok(types) = resource::from_crd(&crd) {
            let objects: Vec<&Value> = objects.iter().collect();
            for resource_type in types {
                let rendered = table::render_table(&table::Printer::for_type(&resource_type), &objects, true, table::IncludeObject::Metadata, "1", None, jiff::Timestamp::UNIX_EPOCH);
                prop_assert_eq!(rendered["rows"].as_array().map(Vec::len), Some(objects.len()));
            }
        }
    }

    #[test]
    fn t1_built_in_printers_give_every_object_one_cell_per_column(object in object_or_any()) {
        for resource_type in resource::builtins() {
            let printer = table::Printer::for_type(&resource_type);
            let cells = printer.cells(&object, jiff::Timestamp::UNIX_EPOCH);
            // kube-apiserver's IPAddress rows carry an age its columns do not declare.
            let extra = usize::from(resource_type.kind == "IPAddress");
            prop_assert_eq!(cells.len(), printer.column_definitions().len() + extra, "{}", resource_type.kind);
        }
    }

    #[test]
    fn crd_validation_never_panics_on_any_document(document in json_value()) {
        let _ = schema::validate_crd(&document);
        let _ = resource::from_crd(&document);
    }

    #[test]
    fn v5_metadata_validation_never_panics(object in object_or_any(), metadata in json_value()) {
        for rule in [NameRule::Subdomain, NameRule::Label, NameRule::Dns1035Label] {
            let _ = validation::validate_metadata(&object, rule);
            let _ = validation::validate_metadata(&json!({"metadata": metadata}), rule);
        }
    }

    #[test]
    fn b5_builtin_defaults_and_immutability_never_panic(
        kind in proptest::sample::select(&["Deployment", "Service", "Secret", "ConfigMap", "Pod", "Lease", "Event", "Namespace", "Job",
            "DaemonSet", "ReplicationController", "PodTemplate", "CronJob", "PersistentVolume", "PersistentVolumeClaim",
            "StorageClass", "CSIDriver", "PriorityClass", "HorizontalPodAutoscaler", "FlowSchema", "NetworkPolicy"][..]),
        old in object_or_any(),
        new in object_or_any(),
    ) {
        let mut defaulted = new.clone();
        let _ = defaults::apply_builtin_defaults(kind, &mut defaulted);
        let _ = defaults::check_immutable(kind, &old, &new);
    }
}
