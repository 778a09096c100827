//! Structural-schema rules (V1), one test per rule.

use serde_json::json;

use super::*;

fn fields(schema: Value) -> Vec<String> {
    match compile_root(&schema) {
        Ok(_) => Vec::new(),
        Err(causes) => causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect(),
    }
}

#[test]
fn v1_field_without_type_is_not_structural() {
    let errs = fields(json!({"type": "object", "properties": {"spec": {"properties": {}}}}));
    assert_eq!(
        errs,
        ["properties[spec].type: Required value: must not be empty for specified object fields"]
    );
}

#[test]
fn v1_root_must_be_an_object() {
    assert_eq!(
        fields(json!({})),
        ["type: Required value: must not be empty at the root"]
    );
    assert_eq!(
        fields(json!({"type": "string"})),
        [r#"type: Invalid value: "string": must be object at the root"#]
    );
}

#[test]
fn v1_array_items_need_type_and_arrays_need_items() {
    let errs = fields(json!({"type": "object", "properties": {
        "a": {"type": "array", "items": {}},
        "b": {"type": "array"}
    }}));
    assert_eq!(
        errs,
        [
            "properties[a].items.type: Required value: must not be empty for specified array items",
            "properties[b].items: Required value: must be specified"
        ]
    );
}

#[test]
fn v1_int_or_string_and_preserve_unknown_fields_exempt_from_type() {
    let schema = json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "raw": {"x-kubernetes-preserve-unknown-fields": true}
    }});
    assert_eq!(fields(schema), Vec::<String>::new());
}

#[test]
fn v1_int_or_string_with_type_is_rejected() {
    let errs = fields(json!({"type": "object", "properties": {
        "port": {"type": "string", "x-kubernetes-int-or-string": true}
    }}));
    assert_eq!(
        errs,
        [
            r#"properties[port].type: Invalid value: "string": must be empty if x-kubernetes-int-or-string is true"#
        ]
    );
}

#[test]
fn v1_properties_and_additional_properties_are_exclusive() {
    let errs = fields(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"}
    }}}));
    assert_eq!(
        errs,
        [
            "properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        ]
    );
}

#[test]
fn v1_junctors_hold_value_validations_only() {
    let errs = fields(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"type": "object", "required": ["a"]}, {"properties": {"b": {"minLength": 1}}}]
    }}}));
    assert_eq!(
        errs,
        [
            "properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
            "properties[spec].anyOf[1].properties[b]: Required value: must be specified outside of logical junctors"
        ]
    );
}

#[test]
fn v1_metadata_may_only_restrict_name() {
    assert!(fields(json!({"type": "object", "properties": {"metadata": {"type": "object"}}})).is_empty());
    let errs = fields(json!({"type": "object", "properties": {"metadata": {
        "type": "object", "properties": {"labels": {"type": "object"}}
    }}}));
    assert_eq!(
        errs,
        [
            "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
}

#[test]
fn v1_forbidden_json_schema_features() {
    let errs = fields(json!({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "b": {"$ref": "#/definitions/x", "type": "string"},
        "c": {"type": "string", "x-kubernetes-preserve-unknown-fields": false}
    }}));
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(errs[0].starts_with("properties[a].uniqueItems: Forbidden"));
    assert_eq!(errs[1], "properties[b].$ref: Forbidden: $ref is not supported");
    assert!(errs[2].starts_with("properties[c].x-kubernetes-preserve-unknown-fields: Invalid value: false"));
}

#[test]
fn v1_unknown_type_and_bad_pattern_are_reported() {
    let errs = fields(json!({"type": "object", "properties": {
        "a": {"type": "int"},
        "b": {"type": "string", "pattern": "("}
    }}));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(
        errs[0],
        r#"properties[a].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", "object", "string""#
    );
    assert!(
        errs[1]
            .starts_with(r#"properties[b].pattern: Invalid value: "(": must be a valid regular expression"#)
    );
}

#[test]
fn v1_list_map_needs_keys_that_are_item_properties() {
    let errs = fields(json!({"type": "object", "properties": {
        "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
        "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
              "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "c": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}
    }}));
    assert_eq!(
        errs,
        [
            "properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            r#"properties[b].x-kubernetes-list-map-keys[0]: Invalid value: "id": entries must all be names of item properties"#,
            r#"properties[c].items.type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is set"#
        ]
    );
}

#[test]
fn v3_defaults_must_validate_against_their_schema() {
    let errs = fields(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "mode": {"type": "string", "default": "fast"}
        }}}}),
    );
    assert_eq!(
        errs,
        [
            "properties[spec].properties[replicas].default: Invalid value: 0: in body should be greater than or equal to 1"
        ]
    );
}
