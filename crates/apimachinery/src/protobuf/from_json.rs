//! JSON written into a message, for answers in protobuf: each field found under its Go JSON name (or,
//! inlined, in the object itself); `null` and absent fields stay off the wire, which a Go client reads
//! back as the zero value or nil it stands for.

use std::collections::HashMap;

use base64::Engine as _;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::Value as Json;

use super::{
    schema::Schema,
    special::{self, Special},
};
use crate::{Error, Result, go_duration};

pub fn message(schema: &Schema, descriptor: &MessageDescriptor, json: &Json) -> Result<DynamicMessage> {
    let mut message = DynamicMessage::new(descriptor.clone());
    if let Some(special) = Special::of(descriptor.full_name()) {
        fill_special(schema, &mut message, special, json)?;
        return Ok(message);
    }
    if schema.is_named_slice(descriptor.full_name()) {
        if let Some(field) = descriptor.get_field_by_name("items") {
            set(&mut message, &field, list(schema, &field.kind(), json)?)?;
        }
        return Ok(message);
    }
    let Json::Object(object) = json else {
        return Err(mismatch(descriptor.full_name(), json));
    };
    for field in descriptor.fields() {
        let facts = schema.field(descriptor.full_name(), &field);
        let source = if facts.inline {
            json
        } else {
            match object.get(&facts.json) {
                None | Some(Json::Null) => continue,
                Some(value) => value,
            }
        };
        let value = if field.is_map() {
            map(schema, &field, source)?
        } else if field.is_list() {
            list(schema, &field.kind(), source)?
        } else {
            value(schema, &field.kind(), source)?
        };
        set(&mut message, &field, value)?;
    }
    Ok(message)
}

fn set(message: &mut DynamicMessage, field: &FieldDescriptor, value: Value) -> Result<()> {
    message
        .try_set_field(field, value)
        .map_err(|e| Error::BadRequest(format!("field {}: {e}", field.name())))
}

fn mismatch(expected: &str, found: &Json) -> Error {
    Error::BadRequest(format!("{found} does not fit {expected}"))
}

fn list(schema: &Schema, kind: &Kind, json: &Json) -> Result<Value> {
    match json {
        Json::Null => Ok(Value::List(Vec::new())),
        Json::Array(items) => items
            .iter()
            .map(|item| value(schema, kind, item))
            .collect::<Result<_>>()
            .map(Value::List),
        other => Err(mismatch("a list", other)),
    }
}

fn map(schema: &Schema, field: &FieldDescriptor, json: &Json) -> Result<Value> {
    let Kind::Message(entry) = field.kind() else {
        return Err(mismatch("a map", json));
    };
    let value_kind = entry.map_entry_value_field().kind();
    let Json::Object(object) = json else {
        return Err(mismatch("a map", json));
    };
    let mut entries = HashMap::with_capacity(object.len());
    for (key, item) in object {
        entries.insert(MapKey::String(key.clone()), value(schema, &value_kind, item)?);
    }
    Ok(Value::Map(entries))
}

fn value(schema: &Schema, kind: &Kind, json: &Json) -> Result<Value> {
    let number = || json.as_f64().ok_or_else(|| mismatch("a number", json));
    Ok(match kind {
        Kind::Message(descriptor) => Value::Message(message(schema, descriptor, json)?),
        Kind::String => Value::String(
            json.as_str()
                .ok_or_else(|| mismatch("a string", json))?
                .to_owned(),
        ),
        Kind::Bytes => {
            let text = json.as_str().ok_or_else(|| mismatch("base64 bytes", json))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| Error::BadRequest(format!("bytes are not base64: {e}")))?;
            Value::Bytes(bytes.into())
        }
        Kind::Bool => Value::Bool(json.as_bool().ok_or_else(|| mismatch("a boolean", json))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(
            json.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| mismatch("a 32-bit integer", json))?,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(json.as_i64().ok_or_else(|| mismatch("an integer", json))?)
        }
        Kind::Uint32 | Kind::Fixed32 => Value::U32(
            json.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| mismatch("an unsigned 32-bit integer", json))?,
        ),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(
            json.as_u64()
                .ok_or_else(|| mismatch("an unsigned integer", json))?,
        ),
        Kind::Double => Value::F64(number()?),
        Kind::Float => Value::F32(number()? as f32),
        Kind::Enum(_) => Value::EnumNumber(
            json.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| mismatch("an enum number", json))?,
        ),
    })
}

fn fill_special(schema: &Schema, message: &mut DynamicMessage, special: Special, json: &Json) -> Result<()> {
    let descriptor = message.descriptor();
    let field = |name: &str| {
        descriptor
            .get_field_by_name(name)
            .ok_or_else(|| Error::BadRequest(format!("{} has no field {name}", descriptor.full_name())))
    };
    let text = || {
        json.as_str()
            .ok_or_else(|| mismatch(descriptor.full_name(), json))
    };
    match special {
        Special::Time | Special::MicroTime => {
            if json.is_null() {
                return Ok(());
            }
            let (seconds, nanos) = special::parse_time(text()?, special == Special::MicroTime)?;
            set(message, &field("seconds")?, Value::I64(seconds))?;
            if nanos != 0 {
                set(message, &field("nanos")?, Value::I32(nanos))?;
            }
        }
        Special::Duration => set(
            message,
            &field("duration")?,
            Value::I64(go_duration::parse(text()?)?),
        )?,
        Special::Quantity => {
            let quantity = match json {
                Json::Number(n) => n.to_string(),
                _ => text()?.to_owned(),
            };
            set(message, &field("string")?, Value::String(quantity))?;
        }
        Special::IntOrString => match json {
            Json::String(s) => {
                set(message, &field("type")?, Value::I64(1))?;
                set(message, &field("strVal")?, Value::String(s.clone()))?;
            }
            other => {
                let n = other
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| mismatch("an integer or a string", other))?;
                set(message, &field("type")?, Value::I64(0))?;
                set(message, &field("intVal")?, Value::I32(n))?;
            }
        },
        Special::RawJson { field: name } => {
            if !json.is_null() {
                let bytes = serde_json::to_vec(json).map_err(|e| Error::BadRequest(e.to_string()))?;
                set(message, &field(name)?, Value::Bytes(bytes.into()))?;
            }
        }
        Special::SchemaOrBool => match json {
            Json::Bool(allows) => set(message, &field("allows")?, Value::Bool(*allows))?,
            other => {
                let schema_field = field("schema")?;
                set(message, &field("allows")?, Value::Bool(true))?;
                set(
                    message,
                    &schema_field,
                    value(schema, &schema_field.kind(), other)?,
                )?;
            }
        },
        Special::SchemaOrArray { list: name } | Special::SchemaOrStringArray { list: name } => match json {
            Json::Null => {}
            Json::Array(_) => {
                let list_field = field(name)?;
                set(message, &list_field, list(schema, &list_field.kind(), json)?)?;
            }
            other => {
                let schema_field = field("schema")?;
                set(
                    message,
                    &schema_field,
                    value(schema, &schema_field.kind(), other)?,
                )?;
            }
        },
    }
    Ok(())
}
