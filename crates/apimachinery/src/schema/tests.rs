//! Behaviour of [`StructuralSchema`] on whole custom resources, with the operators' own schemas.

use serde_json::{Value, json};

use super::StructuralSchema;

fn compile(schema: Value) -> StructuralSchema {
    match StructuralSchema::compile(&schema) {
        Ok(compiled) => compiled,
        Err(causes) => panic!("schema should compile: {causes:?}"),
    }
}

/// `field: message` lines, as kube-apiserver prints them inside `is invalid: [...]`.
fn errors(schema: &StructuralSchema, object: Value) -> Vec<String> {
    schema
        .validate(&object)
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn reasons(schema: &StructuralSchema, object: Value) -> Vec<String> {
    schema.validate(&object).into_iter().map(|c| c.reason).collect()
}

fn postgres_writer() -> StructuralSchema {
    compile(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["table", "name", "age"],
                "properties": {
                    "table": {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$", "maxLength": 63},
                    "name": {"type": "string", "minLength": 1},
                    "age": {"type": "integer", "minimum": 0, "maximum": 2147483647}
                }
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    }))
}

fn writer(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "PostgresWriter", "metadata": {"name": "w1"}, "spec": spec})
}

fn vote_config() -> StructuralSchema {
    compile(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["options"],
                "properties": {
                    "options": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 10,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {
                            "type": "object",
                            "required": ["id", "label"],
                            "properties": {
                                "id": {"type": "string"},
                                "label": {"type": "string"},
                                "color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}
                            }
                        }
                    }
                }
            }
        }
    }))
}

fn option(id: &str) -> Value {
    json!({"id": id, "label": id.to_uppercase(), "color": "#00ff00"})
}

#[test]
fn v2_valid_postgres_writer_passes() {
    let object = writer(json!({"table": "people", "name": "Ada", "age": 36}));
    assert_eq!(errors(&postgres_writer(), object), Vec::<String>::new());
}

#[test]
fn v2_missing_required_fields_are_each_reported() {
    let schema = postgres_writer();
    assert_eq!(
        errors(&schema, writer(json!({"name": "Ada"}))),
        ["spec.table: Required value", "spec.age: Required value"]
    );
    assert_eq!(
        reasons(&schema, writer(json!({"name": "Ada"}))),
        ["FieldValueRequired", "FieldValueRequired"]
    );
}

#[test]
fn v2_table_pattern_and_length() {
    let schema = postgres_writer();
    assert_eq!(
        errors(
            &schema,
            writer(json!({"table": "People", "name": "Ada", "age": 1}))
        ),
        [r#"spec.table: Invalid value: "People": spec.table in body should match '^[a-z_][a-z0-9_]*$'"#]
    );
    let long = "a".repeat(64);
    assert_eq!(
        errors(&schema, writer(json!({"table": long, "name": "Ada", "age": 1}))),
        ["spec.table: Too long: may not be longer than 63"]
    );
    assert_eq!(
        reasons(&schema, writer(json!({"table": long, "name": "Ada", "age": 1}))),
        ["FieldValueTooLong"]
    );
    let exactly_63 = "a".repeat(63);
    assert!(
        errors(
            &schema,
            writer(json!({"table": exactly_63, "name": "Ada", "age": 1}))
        )
        .is_empty()
    );
}

#[test]
fn v2_max_length_counts_characters_not_bytes() {
    let schema = compile(json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 2}}}));
    assert!(errors(&schema, json!({"s": "éé"})).is_empty());
}

#[test]
fn v2_min_length_message() {
    let schema = postgres_writer();
    assert_eq!(
        errors(&schema, writer(json!({"table": "t", "name": "", "age": 1}))),
        [r#"spec.name: Invalid value: "": spec.name in body should be at least 1 chars long"#]
    );
}

#[test]
fn v2_age_bounds_print_as_integers() {
    let schema = postgres_writer();
    assert_eq!(
        errors(&schema, writer(json!({"table": "t", "name": "n", "age": -1}))),
        ["spec.age: Invalid value: -1: spec.age in body should be greater than or equal to 0"]
    );
    assert_eq!(
        errors(
            &schema,
            writer(json!({"table": "t", "name": "n", "age": 2147483648_i64}))
        ),
        ["spec.age: Invalid value: 2147483648: spec.age in body should be less than or equal to 2147483647"]
    );
    assert!(
        errors(
            &schema,
            writer(json!({"table": "t", "name": "n", "age": 2147483647}))
        )
        .is_empty()
    );
}

#[test]
fn v2_exclusive_bounds_and_float_values() {
    let schema = compile(json!({"type": "object", "properties": {
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true}
    }}));
    assert!(errors(&schema, json!({"ratio": 0.5})).is_empty());
    assert_eq!(
        errors(&schema, json!({"ratio": 1})),
        ["ratio: Invalid value: 1: ratio in body should be less than 1"]
    );
    assert_eq!(
        errors(&schema, json!({"ratio": 0.0})),
        ["ratio: Invalid value: 0: ratio in body should be greater than 0"]
    );
}

#[test]
fn v2_type_errors_name_the_actual_type() {
    let schema = postgres_writer();
    let out = schema.validate(&writer(json!({"table": "t", "name": "n", "age": "string"})));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].reason, "FieldValueTypeInvalid");
    assert_eq!(out[0].field, "spec.age");
    assert_eq!(
        out[0].message,
        r#"Invalid value: "string": spec.age in body must be of type integer: "string""#
    );
    assert_eq!(
        errors(&schema, writer(json!({"table": 5, "name": "n", "age": 1}))),
        [r#"spec.table: Invalid value: "integer": spec.table in body must be of type string: "integer""#]
    );
    assert_eq!(
        errors(&schema, writer(json!({"table": "t", "name": "n", "age": 1.5}))),
        [r#"spec.age: Invalid value: "number": spec.age in body must be of type integer: "number""#]
    );
}

#[test]
fn v2_integral_floats_are_integers_and_integers_are_numbers() {
    let schema = compile(json!({"type": "object", "properties": {
        "count": {"type": "integer"}, "weight": {"type": "number"}
    }}));
    assert!(errors(&schema, json!({"count": 3.0, "weight": 2})).is_empty());
}

#[test]
fn v2_enum_lists_supported_values() {
    let schema = compile(json!({"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["a", "b"]},
        "level": {"type": "integer", "enum": [1, 2]}
    }}));
    let out = schema.validate(&json!({"mode": "x", "level": 3}));
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|c| c.reason == "FieldValueNotSupported"));
    let message = |field: &str| out.iter().find(|c| c.field == field).map(|c| c.message.clone());
    assert_eq!(
        message("mode").as_deref(),
        Some(r#"Unsupported value: "x": supported values: "a", "b""#)
    );
    assert_eq!(
        message("level").as_deref(),
        Some(r#"Unsupported value: 3: supported values: "1", "2""#)
    );
    assert!(errors(&schema, json!({"mode": "a", "level": 2.0})).is_empty());
}

#[test]
fn v2_null_is_rejected_unless_nullable() {
    let schema = compile(json!({"type": "object", "properties": {
        "a": {"type": "string", "nullable": true},
        "b": {"type": "string"}
    }}));
    assert_eq!(
        errors(&schema, json!({"a": null, "b": null})),
        [r#"b: Invalid value: "null": b in body must be of type string: "null""#]
    );
}

#[test]
fn v2_int_or_string_accepts_both_and_nothing_else() {
    let schema = compile(json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    }}));
    assert!(errors(&schema, json!({"port": 8080})).is_empty());
    assert!(errors(&schema, json!({"port": "http"})).is_empty());
    assert_eq!(
        errors(&schema, json!({"port": true})),
        [r#"port: Invalid value: "boolean": port in body must be of type integer,string: "boolean""#]
    );
}

#[test]
fn v2_additional_properties_schema_validates_map_values() {
    let schema = compile(json!({"type": "object", "properties": {
        "limits": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
    }}));
    assert!(errors(&schema, json!({"limits": {"cpu": 2}})).is_empty());
    assert_eq!(
        errors(&schema, json!({"limits": {"cpu": -1}})),
        ["limits.cpu: Invalid value: -1: limits.cpu in body should be greater than or equal to 0"]
    );
}

#[test]
fn v2_additional_properties_false_forbids_unknown_keys() {
    let schema = compile(json!({"type": "object", "properties": {
        "empty": {"type": "object", "additionalProperties": false}
    }}));
    assert_eq!(
        errors(&schema, json!({"empty": {"x": 1}})),
        [r#"empty: Invalid value: "x": empty.x in body is a forbidden property"#]
    );
}

#[test]
fn v2_vote_config_valid_options_pass() {
    let object = json!({"spec": {"options": [option("a"), option("b")]}});
    assert_eq!(errors(&vote_config(), object), Vec::<String>::new());
}

#[test]
fn v2_vote_config_item_counts() {
    let schema = vote_config();
    assert_eq!(
        errors(&schema, json!({"spec": {"options": [option("a")]}})),
        [
            r##"spec.options: Invalid value: [{"color":"#00ff00","id":"a","label":"A"}]: spec.options in body should have at least 2 items"##
        ]
    );
    let eleven: Vec<Value> = (0..11).map(|i| option(&format!("o{i}"))).collect();
    let out = schema.validate(&json!({"spec": {"options": eleven}}));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].reason, "FieldValueTooMany");
    assert_eq!(out[0].message, "Too many: 11: must have at most 10 items");
}

#[test]
fn v2_vote_config_duplicate_keys_and_item_paths() {
    let schema = vote_config();
    let out = schema.validate(&json!({"spec": {"options": [option("a"), option("a")]}}));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].reason, "FieldValueDuplicate");
    assert_eq!(out[0].field, "spec.options[1]");
    assert_eq!(out[0].message, r#"Duplicate value: {"id":"a"}"#);

    let bad_color = json!({"id": "b", "label": "B", "color": "green"});
    assert_eq!(
        errors(
            &schema,
            json!({"spec": {"options": [option("a"), bad_color, {"label": "C"}]}})
        ),
        [
            r##"spec.options[1].color: Invalid value: "green": spec.options[1].color in body should match '^#[0-9a-fA-F]{6}$'"##,
            "spec.options[2].id: Required value"
        ]
    );
}

#[test]
fn v2_list_type_set_rejects_duplicate_items() {
    let schema = compile(json!({"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    }}));
    let out = schema.validate(&json!({"tags": ["a", "b", "a"]}));
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].field.as_str(), out[0].message.as_str()),
        ("tags[2]", r#"Duplicate value: "a""#)
    );
}

#[test]
fn v2_formats_are_checked() {
    let schema = compile(json!({"type": "object", "properties": {
        "at": {"type": "string", "format": "date-time"},
        "id": {"type": "string", "format": "uuid"},
        "small": {"type": "integer", "format": "int32"}
    }}));
    assert!(
        errors(
            &schema,
            json!({"at": "2026-11-22T10:00:00Z", "id": "123e4567-e89b-12d3-a456-426614174000"})
        )
        .is_empty()
    );
    let out = schema.validate(&json!({"at": "soon", "small": 4294967296_i64}));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].reason, "FieldValueTypeInvalid");
    assert_eq!(
        out[0].message,
        r#"Invalid value: "soon": at in body must be of type date-time: "soon""#
    );
    assert_eq!(out[1].field, "small");
}

#[test]
fn v2_junctors_are_enforced() {
    let schema = compile(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
    }}}));
    assert!(errors(&schema, json!({"spec": {"a": "x"}})).is_empty());
    assert_eq!(
        errors(&schema, json!({"spec": {"a": "x", "b": "y"}})),
        [r#"spec: Invalid value: "": spec must validate one and only one schema (oneOf)"#]
    );
}

#[test]
fn v3_defaults_fill_missing_fields_only() {
    let schema = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"}
        }}}}),
    );
    let mut object = json!({"spec": {"mode": "slow"}});
    schema.apply_defaults(&mut object);
    assert_eq!(object, json!({"spec": {"mode": "slow", "replicas": 1}}));
}

#[test]
fn v3_defaults_apply_inside_defaulted_parents_and_array_items() {
    let schema = compile(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "default": {},
        "properties": {
            "retry": {"type": "object", "default": {}, "properties": {"limit": {"type": "integer", "default": 3}}},
            "options": {"type": "array", "items": {"type": "object", "properties": {
                "weight": {"type": "integer", "default": 1}, "id": {"type": "string"}
            }}}
        }
    }}}));
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "X", "metadata": {"name": "x"}});
    schema.apply_defaults(&mut object);
    assert_eq!(object["spec"], json!({"retry": {"limit": 3}}));

    let mut object = json!({"spec": {"options": [{"id": "a"}, {"id": "b", "weight": 5}]}});
    schema.apply_defaults(&mut object);
    assert_eq!(
        object["spec"]["options"],
        json!([{"id": "a", "weight": 1}, {"id": "b", "weight": 5}])
    );
}

#[test]
fn v3_non_nullable_nulls_are_defaulted_or_dropped() {
    let schema = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "table": {"type": "string"},
            "note": {"type": "string", "nullable": true, "default": "n"}
        }}}}),
    );
    let mut object = json!({"spec": {"replicas": null, "table": null, "note": null}});
    schema.apply_defaults(&mut object);
    assert_eq!(object, json!({"spec": {"replicas": 1, "note": null}}));
}

#[test]
fn v3_metadata_is_never_defaulted() {
    let schema = compile(json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    }}));
    let mut object = json!({"metadata": {"name": "n", "labels": null}, "spec": {}});
    schema.apply_defaults(&mut object);
    assert_eq!(
        object,
        json!({"metadata": {"name": "n", "labels": null}, "spec": {"a": "x"}})
    );
}

#[test]
fn v3_prune_removes_unknown_fields_in_document_order() {
    let schema = postgres_writer();
    let mut object = json!({
        "apiVersion": "example.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": "w1", "anything": {"kept": true}},
        "spec": {"table": "t", "x": 1, "name": "n", "age": 1, "nested": {"y": 2}},
        "extra": true,
        "status": {"free": "form"}
    });
    let removed = schema.prune(&mut object);
    let mut sorted = removed.clone();
    sorted.sort();
    assert_eq!(sorted, ["extra", "spec.nested", "spec.x"]);
    assert_eq!(
        object,
        json!({
            "apiVersion": "example.com/v1", "kind": "PostgresWriter",
            "metadata": {"name": "w1", "anything": {"kept": true}},
            "spec": {"table": "t", "name": "n", "age": 1},
            "status": {"free": "form"}
        })
    );
}

#[test]
fn v3_prune_reports_paths_inside_arrays_and_keeps_preserved_subtrees() {
    let schema = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "options": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"known": {"type": "object", "properties": {}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }}}}),
    );
    let mut object = json!({"spec": {
        "options": [{"id": "a"}, {"id": "b", "junk": 1}],
        "raw": {"anything": [1, 2], "known": {"dropped": 1}},
        "labels": {"free": "x"}
    }});
    let removed = schema.prune(&mut object);
    let mut sorted = removed.clone();
    sorted.sort();
    assert_eq!(sorted, ["spec.options[1].junk", "spec.raw.known.dropped"]);
    assert_eq!(object["spec"]["raw"], json!({"anything": [1, 2], "known": {}}));
    assert_eq!(object["spec"]["labels"], json!({"free": "x"}));
}

#[test]
fn v3_embedded_resources_keep_their_type_meta() {
    let schema = compile(json!({"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}
    }}}));
    let mut object =
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}, "junk": 1}});
    assert_eq!(schema.prune(&mut object), ["template.junk"]);
    assert_eq!(object["template"]["kind"], json!("Pod"));
}

#[test]
fn v1_compile_returns_relative_cause_paths() {
    let causes =
        StructuralSchema::compile(&json!({"type": "object", "properties": {"spec": {}}})).unwrap_err();
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "properties[spec].type");
    assert_eq!(causes[0].reason, "FieldValueRequired");
}

#[test]
fn v2_embedded_resources_need_api_version_and_kind() {
    let schema = compile(json!({"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true
    }}}));
    assert!(errors(&schema, json!({"template": {"apiVersion": "v1", "kind": "Pod"}})).is_empty());
    assert_eq!(
        errors(&schema, json!({"template": {"kind": ""}})),
        [
            "template.apiVersion: Required value: must not be empty",
            r#"template.kind: Invalid value: "": must not be empty"#
        ]
    );
}

#[test]
fn v4_cel_rules_are_counted_and_enforced() {
    let schema = compile(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.a > 0"}],
        "properties": {"a": {"type": "integer"}}
    }}}));
    assert_eq!(schema.cel_rule_count(), 1);
    assert_eq!(
        errors(&schema, json!({"spec": {"a": -1}})),
        [r#"spec: Invalid value: "object": failed rule: self.a > 0"#]
    );
}
