//! A message read from the wire, printed as Go's encoding/json prints the struct kube-apiserver would
//! have decoded it into: a field Go's protobuf decoder leaves at its zero value is printed or left out
//! by the field's Go tags, exactly as the real server stores and answers it.

use base64::Engine as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value};
use serde_json::{Map, Value as Json, json};

use super::{
    envelope,
    schema::{GoField, Schema},
    special::{self, Special},
};
use crate::{Error, Result, go_duration};

/// The JSON of `message`: an object for a struct, or what a type with its own JSON form prints.
pub fn message(schema: &Schema, message: &DynamicMessage) -> Result<Json> {
    let descriptor = message.descriptor();
    if let Some(special) = Special::of(descriptor.full_name()) {
        return special_json(schema, special, message);
    }
    if schema.is_named_slice(descriptor.full_name()) {
        return items(schema, message);
    }
    let mut object = Map::new();
    for field in descriptor.fields() {
        let facts = schema.field(descriptor.full_name(), &field);
        let Some(value) = field_json(schema, message, &field, &facts)? else {
            continue;
        };
        match value {
            Json::Object(inlined) if facts.inline => object.extend(inlined),
            value => {
                object.insert(facts.json.clone(), value);
            }
        }
    }
    Ok(Json::Object(object))
}

/// A named slice's `items` as a JSON array, `null` when nil (no items on the wire).
fn items(schema: &Schema, message: &DynamicMessage) -> Result<Json> {
    match message.get_field_by_name("items").as_deref() {
        Some(Value::List(values)) if !values.is_empty() => {
            let kind = message.descriptor().get_field_by_name("items").map(|f| f.kind());
            let kind = kind.ok_or_else(|| Error::BadRequest("a named slice without items".into()))?;
            values
                .iter()
                .map(|v| value(schema, &kind, v))
                .collect::<Result<_>>()
                .map(Json::Array)
        }
        _ => Ok(Json::Null),
    }
}

/// The JSON of one field, or `None` where Go leaves it out.
fn field_json(
    schema: &Schema,
    message: &DynamicMessage,
    field: &FieldDescriptor,
    facts: &GoField,
) -> Result<Option<Json>> {
    let present = message.has_field(field);
    let current = message.get_field(field);
    // Go has no nil-versus-empty for what protobuf carries as repeated or map entries: none on the
    // wire is a nil slice or map, printed `null` unless `omitempty`.
    let nil = || if facts.omitempty { None } else { Some(Json::Null) };
    if field.is_map() {
        let Value::Map(entries) = current.as_ref() else {
            return Ok(nil());
        };
        if entries.is_empty() {
            return Ok(nil());
        }
        let value_kind = match field.kind() {
            Kind::Message(entry) => entry.map_entry_value_field().kind(),
            _ => {
                return Err(Error::BadRequest(format!(
                    "map field {} has no entry type",
                    field.name()
                )));
            }
        };
        let mut object = Map::new();
        for (key, entry) in entries {
            object.insert(map_key(key), value(schema, &value_kind, entry)?);
        }
        return Ok(Some(Json::Object(object)));
    }
    if field.is_list() {
        let Value::List(values) = current.as_ref() else {
            return Ok(nil());
        };
        if values.is_empty() {
            return Ok(nil());
        }
        let kind = field.kind();
        return values
            .iter()
            .map(|v| value(schema, &kind, v))
            .collect::<Result<_>>()
            .map(|list| Some(Json::Array(list)));
    }
    if facts.pointer && !present {
        return Ok(nil());
    }
    match (field.kind(), current.as_ref()) {
        (Kind::Message(descriptor), Value::Message(inner)) => {
            // A struct is never "empty" to encoding/json; a named slice is, like any slice.
            if schema.is_named_slice(descriptor.full_name()) {
                let printed = items(schema, inner)?;
                return Ok(if printed.is_null() { nil() } else { Some(printed) });
            }
            self::message(schema, inner).map(Some)
        }
        (Kind::Bytes, Value::Bytes(bytes)) => Ok(if present {
            Some(json!(base64::engine::general_purpose::STANDARD.encode(bytes)))
        } else {
            nil()
        }),
        (kind, scalar) => {
            if facts.omitempty && !facts.pointer && scalar.is_default(&kind) {
                return Ok(None);
            }
            value(schema, &kind, scalar).map(Some)
        }
    }
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

/// A float as Go's encoding/json prints it: a whole number without a fraction (`10`, not `10.0`).
fn go_float(n: f64) -> Json {
    // Whole numbers this small are exact as i64; Go switches to exponents only from 1e21.
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

/// One value of a list, a map or a singular field.
fn value(schema: &Schema, kind: &Kind, value: &Value) -> Result<Json> {
    Ok(match value {
        Value::Bool(b) => json!(b),
        Value::I32(n) => json!(n),
        Value::I64(n) => json!(n),
        Value::U32(n) => json!(n),
        Value::U64(n) => json!(n),
        Value::F32(n) => go_float(f64::from(*n)),
        Value::F64(n) => go_float(*n),
        Value::String(s) => json!(s),
        Value::Bytes(bytes) => json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
        Value::EnumNumber(n) => json!(n),
        Value::Message(inner) => message(schema, inner)?,
        Value::List(_) | Value::Map(_) => {
            return Err(Error::BadRequest(format!(
                "a nested list or map where {kind:?} was expected"
            )));
        }
    })
}

fn special_json(schema: &Schema, special: Special, message: &DynamicMessage) -> Result<Json> {
    let int = |name: &str| {
        message
            .get_field_by_name(name)
            .and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from)))
            .unwrap_or(0)
    };
    let string = |name: &str| {
        message
            .get_field_by_name(name)
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let raw = |name: &str| {
        message
            .get_field_by_name(name)
            .and_then(|v| v.as_bytes().cloned())
            .unwrap_or_default()
    };
    Ok(match special {
        Special::Time | Special::MicroTime => {
            // An empty message is Go's zero time, printed `null`.
            if !message.has_field_by_name("seconds") && !message.has_field_by_name("nanos") {
                return Ok(Json::Null);
            }
            special::format_time(int("seconds"), int("nanos"), special == Special::MicroTime)
        }
        Special::Duration => json!(go_duration::format(int("duration"))),
        Special::Quantity => json!(string("string")),
        Special::IntOrString => match int("type") {
            1 => json!(string("strVal")),
            _ => json!(int("intVal")),
        },
        Special::RawJson { field } => {
            let bytes = raw(field);
            if bytes.is_empty() {
                Json::Null
            } else if bytes.starts_with(envelope::MAGIC) {
                enveloped_object(schema, &bytes, None)?
            } else {
                serde_json::from_slice(&bytes)
                    .map_err(|e| Error::BadRequest(format!("embedded JSON does not decode: {e}")))?
            }
        }
        Special::SchemaOrBool => match message.get_field_by_name("schema") {
            Some(schema_value) if message.has_field_by_name("schema") => match schema_value.as_ref() {
                Value::Message(inner) => self::message(schema, inner)?,
                _ => Json::Null,
            },
            _ => json!(
                message
                    .get_field_by_name("allows")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false)
            ),
        },
        Special::SchemaOrArray { list } | Special::SchemaOrStringArray { list } => {
            let listed = message.get_field_by_name(list);
            if let Some(Value::List(values)) = listed.as_deref()
                && !values.is_empty()
            {
                let kind = message
                    .descriptor()
                    .get_field_by_name(list)
                    .map(|f| f.kind())
                    .ok_or_else(|| Error::BadRequest(format!("no field {list}")))?;
                return values
                    .iter()
                    .map(|v| value(schema, &kind, v))
                    .collect::<Result<_>>()
                    .map(Json::Array);
            }
            match message.get_field_by_name("schema") {
                Some(inner) if message.has_field_by_name("schema") => match inner.as_ref() {
                    Value::Message(inner) => self::message(schema, inner)?,
                    _ => Json::Null,
                },
                _ => Json::Null,
            }
        }
    })
}

/// The JSON object of an enveloped body, with its apiVersion and kind; `default` names them when the
/// envelope does not (as the request's URL would).
pub fn enveloped_object(schema: &Schema, body: &[u8], default: Option<(&str, &str)>) -> Result<Json> {
    let unknown = envelope::open(schema, body)?;
    let (default_version, default_kind) = default.unwrap_or(("", ""));
    let api_version = if unknown.api_version.is_empty() {
        default_version
    } else {
        &unknown.api_version
    };
    let kind = if unknown.kind.is_empty() {
        default_kind
    } else {
        &unknown.kind
    };
    let descriptor = schema.message(api_version, kind).ok_or_else(|| {
        Error::BadRequest(format!(
            "no kind {kind:?} is registered for version {api_version:?}"
        ))
    })?;
    let decoded = DynamicMessage::decode(descriptor, unknown.raw.as_slice())
        .map_err(|e| Error::BadRequest(format!("the {kind} in the body does not decode: {e}")))?;
    let mut object = message(schema, &decoded)?;
    if let Json::Object(map) = &mut object {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(object)
}
