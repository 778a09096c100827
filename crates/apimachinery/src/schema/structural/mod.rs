//! The compiled form of an `openAPIV3Schema`, and the structural-schema rules (V1) checked while
//! compiling it.
//!
//! Rules follow the Kubernetes "Specifying a structural schema" document: every node outside logical
//! junctors has a `type` (unless `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`),
//! junctors (`allOf`, `anyOf`, `oneOf`, `not`) carry value validations only and name no field that
//! is not also specified outside them, `metadata` restricts only `name` and `generateName`, and the
//! JSON-Schema features CRDs forbid (`$ref`, `uniqueItems`, `patternProperties`, ...) are rejected.
//! Cause paths are relative to the schema root (`properties[spec].type`); the caller prefixes them.

use regex::Regex;
use serde_json::{Map, Value};

use super::messages::{self, child, index, key};
use super::node::{Additional, JsonType, ListType, Node, Pattern};
use crate::FieldCause;

/// Where a node sits; the structural rules differ by place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
    /// Inside `allOf`/`anyOf`/`oneOf`/`not`: value validations only.
    Junctor {
        /// The int-or-string idiom `anyOf: [{type: integer}, {type: string}]` may name types.
        int_or_string: bool,
    },
}

/// Keys CRD schemas may not use at all.
const UNSUPPORTED_KEYS: [&str; 6] = [
    "$ref",
    "additionalItems",
    "patternProperties",
    "dependencies",
    "definitions",
    "id",
];

/// Keys that are not value validations, hence forbidden inside junctors.
const NOT_IN_JUNCTORS: [&str; 9] = [
    "type",
    "default",
    "additionalProperties",
    "nullable",
    "description",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

/// Compiles the root schema, collecting every structural violation.
pub(crate) fn compile_root(schema: &Value) -> Result<Node, Vec<FieldCause>> {
    let mut causes = Vec::new();
    let node = compile_node(schema, "", Level::Root, &mut causes);
    if let Some(metadata) = schema.get("properties").and_then(|p| p.get("metadata")) {
        check_root_metadata(metadata, &key("properties", "metadata"), &mut causes);
    }
    for name in ["apiVersion", "kind"] {
        if let Some(ty) = schema
            .pointer(&format!("/properties/{name}/type"))
            .and_then(Value::as_str)
            && ty != "string"
        {
            let path = child(&key("properties", name), "type");
            causes.push(messages::invalid(
                path,
                &Value::String(ty.to_owned()),
                "must be string",
            ));
        }
    }
    if causes.is_empty() {
        check_defaults(&node, "", &mut causes);
    }
    super::cel::compile::check_correlation(&node, "", None, &mut causes);
    super::cel::cost::limits::check_costs(&node, &mut causes);
    if causes.is_empty() { Ok(node) } else { Err(causes) }
}

fn compile_node(schema: &Value, path: &str, level: Level, causes: &mut Vec<FieldCause>) -> Node {
    let Some(map) = schema.as_object() else {
        causes.push(messages::invalid(path, schema, "must be an object"));
        return Node::default();
    };
    let mut node = Node::default();
    for name in UNSUPPORTED_KEYS {
        if map.contains_key(name) {
            causes.push(messages::forbidden(
                child(path, name),
                &format!("{name} is not supported"),
            ));
        }
    }
    if map.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        causes.push(messages::forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Level::Junctor { int_or_string } = level {
        for name in NOT_IN_JUNCTORS {
            let allowed_type = name == "type" && int_or_string;
            if map.contains_key(name) && !allowed_type {
                causes.push(messages::forbidden(
                    child(path, name),
                    "must be empty to be structural",
                ));
            }
        }
    }

    compile_extensions(map, &mut node, path, causes);
    compile_type(map, &mut node, path, level, causes);
    compile_scalars(map, &mut node, path, causes);
    compile_children(map, &mut node, path, level, causes);
    compile_list_type(map, &mut node, path, causes);
    compile_junctors(map, &mut node, path, causes);
    node.rules = super::cel::compile::compile_rules(map, &node, path, causes);
    node.default = map.get("default").cloned();
    node
}

fn compile_extensions(map: &Map<String, Value>, node: &mut Node, path: &str, causes: &mut Vec<FieldCause>) {
    let flag = |name: &str| map.get(name).and_then(Value::as_bool);
    node.nullable = flag("nullable").unwrap_or(false);
    node.int_or_string = flag("x-kubernetes-int-or-string").unwrap_or(false);
    node.embedded_resource = flag("x-kubernetes-embedded-resource").unwrap_or(false);
    match flag("x-kubernetes-preserve-unknown-fields") {
        Some(false) => causes.push(messages::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        )),
        Some(true) => node.preserve_unknown = true,
        None => {}
    }
}

fn compile_type(
    map: &Map<String, Value>,
    node: &mut Node,
    path: &str,
    level: Level,
    causes: &mut Vec<FieldCause>,
) {
    let type_path = child(path, "type");
    match map.get("type") {
        Some(Value::String(name)) if name.is_empty() => {}
        Some(Value::String(name)) => match JsonType::parse(name) {
            Some(ty) => node.ty = Some(ty),
            None => {
                let supported: Vec<String> = JsonType::NAMES.iter().map(|s| (*s).to_owned()).collect();
                causes.push(messages::not_supported(
                    &type_path,
                    &Value::String(name.clone()),
                    &supported,
                ));
            }
        },
        Some(other) => causes.push(messages::invalid(&type_path, other, "must be a string")),
        None => {}
    }
    let exempt = node.int_or_string || node.embedded_resource;
    if node.ty.is_none() && !exempt && !map.contains_key("type") {
        match level {
            Level::Root => causes.push(messages::required(&type_path, "must not be empty at the root")),
            Level::Item => causes.push(messages::required(
                &type_path,
                "must not be empty for specified array items",
            )),
            Level::Field if !node.preserve_unknown => causes.push(messages::required(
                &type_path,
                "must not be empty for specified object fields",
            )),
            _ => {}
        }
    }
    if let Some(ty) = node.ty {
        let value = Value::String(ty.name().to_owned());
        if level == Level::Root && ty != JsonType::Object {
            causes.push(messages::invalid(
                &type_path,
                &value,
                "must be object at the root",
            ));
        }
        if node.int_or_string && !matches!(level, Level::Junctor { .. }) {
            causes.push(messages::invalid(
                &type_path,
                &value,
                "must be empty if x-kubernetes-int-or-string is true",
            ));
        }
        if node.embedded_resource && ty != JsonType::Object {
            causes.push(messages::invalid(
                &type_path,
                &value,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    }
}

fn compile_scalars(map: &Map<String, Value>, node: &mut Node, path: &str, causes: &mut Vec<FieldCause>) {
    let number = |name: &str| map.get(name).and_then(Value::as_f64);
    let count = |name: &str| map.get(name).and_then(Value::as_u64);
    let flag = |name: &str| map.get(name).and_then(Value::as_bool).unwrap_or(false);
    node.minimum = number("minimum");
    node.maximum = number("maximum");
    node.exclusive_minimum = flag("exclusiveMinimum");
    node.exclusive_maximum = flag("exclusiveMaximum");
    node.multiple_of = number("multipleOf");
    if node.multiple_of.is_some_and(|m| m <= 0.0) {
        causes.push(messages::invalid(
            child(path, "multipleOf"),
            &map["multipleOf"],
            "must be greater than zero",
        ));
    }
    node.min_length = count("minLength");
    node.max_length = count("maxLength");
    node.min_items = count("minItems");
    node.max_items = count("maxItems");
    node.min_properties = count("minProperties");
    node.max_properties = count("maxProperties");
    node.format = map
        .get("format")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
        .map(str::to_owned);
    if let Some(pattern) = map.get("pattern") {
        let source = pattern.as_str().unwrap_or_default();
        match Regex::new(source) {
            Ok(regex) => {
                node.pattern = Some(Pattern {
                    source: source.to_owned(),
                    regex,
                })
            }
            Err(err) => causes.push(messages::invalid(
                child(path, "pattern"),
                pattern,
                &format!("must be a valid regular expression, but isn't: {err}"),
            )),
        }
    }
    node.enum_values = map.get("enum").and_then(Value::as_array).cloned();
    node.required = map
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
}

fn compile_children(
    map: &Map<String, Value>,
    node: &mut Node,
    path: &str,
    level: Level,
    causes: &mut Vec<FieldCause>,
) {
    let junctor = matches!(level, Level::Junctor { .. });
    let field_level = if junctor { level } else { Level::Field };
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, schema) in properties {
            let prop_path = key(&child(path, "properties"), name);
            node.properties.insert(
                name.clone(),
                compile_node(schema, &prop_path, field_level, causes),
            );
        }
    }
    let additional_path = child(path, "additionalProperties");
    match map.get("additionalProperties") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(allowed)) => node.additional = Additional::Allowed(*allowed),
        Some(schema) => {
            node.additional = Additional::Schema(Box::new(compile_node(
                schema,
                &additional_path,
                field_level,
                causes,
            )))
        }
    }
    if !node.properties.is_empty()
        && !matches!(
            node.additional,
            Additional::Unspecified | Additional::Allowed(true)
        )
    {
        causes.push(messages::forbidden(
            &additional_path,
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    let items_path = child(path, "items");
    match map.get("items") {
        Some(Value::Array(_)) => causes.push(messages::forbidden(
            &items_path,
            "items must be a schema object and not an array",
        )),
        Some(schema) => {
            let item_level = if junctor { level } else { Level::Item };
            node.items = Some(Box::new(compile_node(schema, &items_path, item_level, causes)));
        }
        None if node.ty == Some(JsonType::Array) => {
            causes.push(messages::required(&items_path, "must be specified"))
        }
        None => {}
    }
}

fn compile_list_type(map: &Map<String, Value>, node: &mut Node, path: &str, causes: &mut Vec<FieldCause>) {
    let type_path = child(path, "x-kubernetes-list-type");
    let keys_path = child(path, "x-kubernetes-list-map-keys");
    node.list_map_keys = map
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(raw) = map.get("x-kubernetes-list-type") {
        node.list_type = match raw.as_str() {
            Some("atomic") => Some(ListType::Atomic),
            Some("set") => Some(ListType::Set),
            Some("map") => Some(ListType::Map),
            _ => {
                let supported = ["atomic".to_owned(), "map".to_owned(), "set".to_owned()];
                causes.push(messages::not_supported(&type_path, raw, &supported));
                None
            }
        };
        if node.list_type.is_some() && node.ty != Some(JsonType::Array) {
            causes.push(messages::invalid(
                &type_path,
                raw,
                "must only be used if type is array",
            ));
        }
    }
    let item_type = node.items.as_ref().and_then(|items| items.ty);
    match node.list_type {
        Some(ListType::Map) => {
            if node.list_map_keys.is_empty() {
                causes.push(messages::required(
                    &keys_path,
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            if item_type.is_some_and(|t| t != JsonType::Object) {
                let value = Value::String(item_type.map(JsonType::name).unwrap_or_default().to_owned());
                causes.push(messages::invalid(
                    child(&child(path, "items"), "type"),
                    &value,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
            if let Some(items) = &node.items {
                for (i, name) in node.list_map_keys.iter().enumerate() {
                    match items.properties.get(name) {
                        None => causes.push(messages::invalid(
                            index(&keys_path, i),
                            &Value::String(name.clone()),
                            "entries must all be names of item properties",
                        )),
                        Some(prop) if matches!(prop.ty, Some(JsonType::Object | JsonType::Array)) => causes
                            .push(messages::invalid(
                                index(&keys_path, i),
                                &Value::String(name.clone()),
                                "must be a scalar property",
                            )),
                        Some(_) => {}
                    }
                }
            }
        }
        Some(ListType::Set) if item_type.is_some_and(|t| matches!(t, JsonType::Object | JsonType::Array)) => {
            let value = Value::String(item_type.map(JsonType::name).unwrap_or_default().to_owned());
            causes.push(messages::invalid(
                child(&child(path, "items"), "type"),
                &value,
                "must be a scalar type if parent array's x-kubernetes-list-type is set",
            ));
        }
        _ => {}
    }
    if node.list_type != Some(ListType::Map) && !node.list_map_keys.is_empty() {
        causes.push(messages::forbidden(
            &keys_path,
            "must not be set if x-kubernetes-list-type is not map",
        ));
    }
    node.map_atomic = map.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    if let Some(map_type) = map.get("x-kubernetes-map-type")
        && !matches!(map_type.as_str(), Some("granular" | "atomic"))
    {
        let supported = ["atomic".to_owned(), "granular".to_owned()];
        causes.push(messages::not_supported(
            child(path, "x-kubernetes-map-type"),
            map_type,
            &supported,
        ));
    }
}

fn compile_junctors(map: &Map<String, Value>, node: &mut Node, path: &str, causes: &mut Vec<FieldCause>) {
    let inner = Level::Junctor {
        int_or_string: node.int_or_string,
    };
    for (name, target) in [
        ("allOf", &mut node.all_of),
        ("anyOf", &mut node.any_of),
        ("oneOf", &mut node.one_of),
    ] {
        if let Some(list) = map.get(name).and_then(Value::as_array) {
            for (i, schema) in list.iter().enumerate() {
                let sub_path = index(&child(path, name), i);
                let sub = compile_node(schema, &sub_path, inner, causes);
                target.push(sub);
            }
        }
    }
    if let Some(schema) = map.get("not") {
        node.not = Some(Box::new(compile_node(schema, &child(path, "not"), inner, causes)));
    }
    let mut subs: Vec<(String, &Node)> = Vec::new();
    for (name, list) in [
        ("allOf", &node.all_of),
        ("anyOf", &node.any_of),
        ("oneOf", &node.one_of),
    ] {
        subs.extend(
            list.iter()
                .enumerate()
                .map(|(i, sub)| (index(&child(path, name), i), sub)),
        );
    }
    if let Some(not) = &node.not {
        subs.push((child(path, "not"), not));
    }
    for (sub_path, sub) in subs {
        check_junctor_fields(node, sub, &sub_path, causes);
    }
}

/// Structural rule 2: a junctor may only name fields and items the node itself specifies.
fn check_junctor_fields(outer: &Node, inner: &Node, path: &str, causes: &mut Vec<FieldCause>) {
    for (name, prop) in &inner.properties {
        let prop_path = key(&child(path, "properties"), name);
        match outer.properties.get(name) {
            Some(outer_prop) => check_junctor_fields(outer_prop, prop, &prop_path, causes),
            None if outer.preserve_unknown || matches!(outer.additional, Additional::Schema(_)) => {}
            None => causes.push(messages::required(
                &prop_path,
                "must be specified outside of logical junctors",
            )),
        }
    }
    if let Some(items) = &inner.items {
        match &outer.items {
            Some(outer_items) => check_junctor_fields(outer_items, items, &child(path, "items"), causes),
            None => causes.push(messages::required(
                child(path, "items"),
                "must be specified outside of logical junctors",
            )),
        }
    }
}

/// Structural rule 4: at the root, `metadata` may only restrict `name` and `generateName`.
fn check_root_metadata(metadata: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let Some(map) = metadata.as_object() else { return };
    let allowed_top = ["type", "properties", "description"];
    let mut ok = map.keys().all(|k| allowed_top.contains(&k.as_str()));
    if let Some(ty) = map.get("type").and_then(Value::as_str)
        && ty != "object"
    {
        causes.push(messages::invalid(
            child(path, "type"),
            &map["type"],
            "must be object",
        ));
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, prop) in properties {
            let restricts_name = matches!(name.as_str(), "name" | "generateName");
            let string_only = prop
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "string");
            let no_default = prop.get("default").is_none();
            ok &= restricts_name && string_only && no_default;
        }
    }
    if !ok {
        causes.push(messages::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// Every `default` must validate against its own node (V3), so that defaulting never produces an
/// object the schema rejects.
fn check_defaults(node: &Node, path: &str, causes: &mut Vec<FieldCause>) {
    for (name, prop) in &node.properties {
        let prop_path = key(&child(path, "properties"), name);
        if path.is_empty() && name == "metadata" {
            continue;
        }
        check_default_of(prop, &prop_path, causes);
        check_defaults(prop, &prop_path, causes);
    }
    if let Additional::Schema(additional) = &node.additional {
        let sub_path = child(path, "additionalProperties");
        check_default_of(additional, &sub_path, causes);
        check_defaults(additional, &sub_path, causes);
    }
    if let Some(items) = &node.items {
        let sub_path = child(path, "items");
        check_default_of(items, &sub_path, causes);
        check_defaults(items, &sub_path, causes);
    }
}

fn check_default_of(node: &Node, path: &str, causes: &mut Vec<FieldCause>) {
    let Some(default) = &node.default else { return };
    let default_path = child(path, "default");
    let mut pruned = default.clone();
    if !super::prune::prune_value(node, &mut pruned, "", false).is_empty() {
        causes.push(messages::invalid(
            &default_path,
            default,
            "must not have unknown fields",
        ));
        return;
    }
    let mut defaulted = default.clone();
    super::defaults::default_value(node, &mut defaulted);
    for mut cause in super::validate::validate_value(node, &defaulted, "") {
        cause.field = if cause.field.is_empty() {
            default_path.clone()
        } else {
            child(&default_path, &cause.field)
        };
        causes.push(cause);
    }
}

#[cfg(test)]
mod tests;
