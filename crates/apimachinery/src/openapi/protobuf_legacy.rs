//! The hand-written messages and translation the generated ones replace, kept for one check: both
//! write the very same bytes for the served documents, and the generated types decode them alike.

use prost::Message;
use serde_json::Value;

#[derive(Clone, PartialEq, Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PathItem {
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Operation {
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ParametersItem {
    #[prost(message, optional, tag = "1")]
    pub parameter: Option<Parameter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Parameter {
    #[prost(oneof = "ParameterKind", tags = "1, 2")]
    pub kind: Option<ParameterKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterKind {
    #[prost(message, boxed, tag = "1")]
    Body(Box<BodyParameter>),
    #[prost(message, tag = "2")]
    NonBody(NonBodyParameter),
}

#[derive(Clone, PartialEq, Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "NonBodyKind", tags = "3, 4")]
    pub kind: Option<NonBodyKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum NonBodyKind {
    #[prost(message, tag = "3")]
    Query(QueryParameter),
    #[prost(message, tag = "4")]
    Path(PathParameter),
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct PathParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResponseValue {
    #[prost(message, optional, tag = "1")]
    pub response: Option<Response>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, tag = "21")]
    pub additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "AdditionalProperties", tags = "1, 2")]
    pub value: Option<AdditionalProperties>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AdditionalProperties {
    #[prost(message, boxed, tag = "1")]
    Schema(Box<Schema>),
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

#[derive(Clone, PartialEq, Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn strings(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn entries(value: &Value, key: &str) -> Vec<(String, Value)> {
    value
        .get(key)
        .and_then(Value::as_object)
        .map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn yaml(value: &Value) -> Any {
    Any {
        yaml: value.to_string(),
    }
}

fn extensions(value: &Value) -> Vec<NamedAny> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with("x-"))
        .map(|(key, v)| NamedAny {
            name: key.clone(),
            value: Some(yaml(v)),
        })
        .collect()
}

/// The protobuf encoding of the Swagger 2.0 document `document` (as [`super::v2::document`] makes it).
pub fn encode(document: &Value) -> Vec<u8> {
    Document {
        swagger: text(document, "swagger"),
        info: document.get("info").map(|info| Info {
            title: text(info, "title"),
            version: text(info, "version"),
        }),
        paths: Some(Paths {
            path: entries(document, "paths")
                .into_iter()
                .map(|(name, item)| NamedPathItem {
                    name,
                    value: Some(path_item(&item)),
                })
                .collect(),
        }),
        definitions: Some(Definitions {
            additional_properties: named_schemas(document, "definitions"),
        }),
    }
    .encode_to_vec()
}

fn named_schemas(value: &Value, key: &str) -> Vec<NamedSchema> {
    entries(value, key)
        .into_iter()
        .map(|(name, s)| NamedSchema {
            name,
            value: Some(schema(&s)),
        })
        .collect()
}

fn path_item(item: &Value) -> PathItem {
    let op = |method: &str| item.get(method).map(operation);
    PathItem {
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        patch: op("patch"),
        parameters: parameters(item),
    }
}

fn parameters(value: &Value) -> Vec<ParametersItem> {
    let kind = |p: &Value| match text(p, "in").as_str() {
        "body" => Some(ParameterKind::Body(Box::new(BodyParameter {
            description: text(p, "description"),
            name: text(p, "name"),
            r#in: "body".into(),
            required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
            schema: p.get("schema").map(schema),
        }))),
        "query" => Some(ParameterKind::NonBody(NonBodyParameter {
            kind: Some(NonBodyKind::Query(QueryParameter {
                required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
                r#in: "query".into(),
                description: text(p, "description"),
                name: text(p, "name"),
                r#type: text(p, "type"),
                unique_items: p.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false),
            })),
        })),
        "path" => Some(ParameterKind::NonBody(NonBodyParameter {
            kind: Some(NonBodyKind::Path(PathParameter {
                required: true,
                r#in: "path".into(),
                description: text(p, "description"),
                name: text(p, "name"),
                r#type: text(p, "type"),
                unique_items: p.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false),
            })),
        })),
        _ => None,
    };
    value
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            kind(p).map(|kind| ParametersItem {
                parameter: Some(Parameter { kind: Some(kind) }),
            })
        })
        .collect()
}

fn operation(op: &Value) -> Operation {
    Operation {
        description: text(op, "description"),
        operation_id: text(op, "operationId"),
        produces: strings(op, "produces"),
        consumes: strings(op, "consumes"),
        parameters: parameters(op),
        responses: Some(Responses {
            response_code: entries(op, "responses")
                .into_iter()
                .map(|(code, response)| NamedResponseValue {
                    name: code,
                    value: Some(ResponseValue {
                        response: Some(Response {
                            description: text(&response, "description"),
                            schema: response.get("schema").map(|s| SchemaItem {
                                schema: Some(schema(s)),
                            }),
                        }),
                    }),
                })
                .collect(),
        }),
        schemes: strings(op, "schemes"),
        vendor_extension: extensions(op),
    }
}

fn schema(s: &Value) -> Schema {
    let float = |key: &str| s.get(key).and_then(Value::as_f64).unwrap_or_default();
    let int = |key: &str| s.get(key).and_then(Value::as_i64).unwrap_or_default();
    let flag = |key: &str| s.get(key).and_then(Value::as_bool).unwrap_or_default();
    let types = match s.get("type") {
        Some(Value::String(one)) => Some(TypeItem {
            value: vec![one.clone()],
        }),
        Some(Value::Array(many)) => Some(TypeItem {
            value: many.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        }),
        _ => None,
    };
    let items = match s.get("items") {
        Some(Value::Array(many)) => Some(ItemsItem {
            schema: many.iter().map(schema).collect(),
        }),
        Some(one @ Value::Object(_)) => Some(ItemsItem {
            schema: vec![schema(one)],
        }),
        _ => None,
    };
    let additional_properties = match s.get("additionalProperties") {
        Some(Value::Bool(allowed)) => Some(AdditionalProperties::Boolean(*allowed)),
        Some(other @ Value::Object(_)) => Some(AdditionalProperties::Schema(Box::new(schema(other)))),
        _ => None,
    };
    Schema {
        r#ref: text(s, "$ref"),
        format: text(s, "format"),
        title: text(s, "title"),
        description: text(s, "description"),
        default: s.get("default").map(yaml),
        multiple_of: float("multipleOf"),
        maximum: float("maximum"),
        exclusive_maximum: flag("exclusiveMaximum"),
        minimum: float("minimum"),
        exclusive_minimum: flag("exclusiveMinimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: text(s, "pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: flag("uniqueItems"),
        max_properties: int("maxProperties"),
        min_properties: int("minProperties"),
        required: strings(s, "required"),
        r#enum: s
            .get("enum")
            .and_then(Value::as_array)
            .map(|values| values.iter().map(yaml).collect())
            .unwrap_or_default(),
        additional_properties: additional_properties
            .map(|value| AdditionalPropertiesItem { value: Some(value) }),
        r#type: types,
        items,
        all_of: s
            .get("allOf")
            .and_then(Value::as_array)
            .map(|all| all.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: s.get("properties").map(|_| Properties {
            additional_properties: named_schemas(s, "properties"),
        }),
        read_only: flag("readOnly"),
        example: s.get("example").map(yaml),
        vendor_extension: extensions(s),
    }
}

mod check {
    use prost::Message as _;
    use serde_json::json;

    use crate::{openapi::protobuf::openapi_v2, openapi::v2, resource};

    fn documents() -> Vec<serde_json::Value> {
        let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com",
            "scope": "Namespaced", "names": {"kind": "W", "plural": "ws"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
                        "table": {"type": "string", "enum": ["a", "b"], "pattern": "^[a-z]+$"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "additionalProperties": true},
                        "items": {"type": "array", "maxItems": 3, "items": {"type": "number",
                            "multipleOf": 0.5, "exclusiveMinimum": true, "minimum": 0}}}}}}}}]}});
        let mut with_crd = resource::builtins();
        with_crd.extend(resource::from_crd(&crd).unwrap());
        vec![v2::document(&resource::builtins()), v2::document(&with_crd)]
    }

    #[test]
    fn the_generated_messages_write_the_bytes_the_hand_written_ones_did() {
        for document in documents() {
            let old = super::encode(&document);
            let new = crate::openapi::protobuf::encode(&document);
            let decoded_old = openapi_v2::Document::decode(old.as_slice()).unwrap();
            let decoded_new = openapi_v2::Document::decode(new.as_slice()).unwrap();
            assert_eq!(decoded_old, decoded_new);
            assert_eq!(old, new);
            assert!(decoded_new.paths.unwrap().path.len() > 100);
        }
    }
}
