//! The protobuf form of the built-in kinds (`application/vnd.kubernetes.protobuf`), which client-go
//! based tools send and ask for first (D9). A body is the magic `k8s\0` and a `runtime.Unknown`
//! holding the apiVersion, the kind and the object's message; watch events are length-prefixed
//! `WatchEvent` messages.
//!
//! Messages are read and written through descriptors compiled at build time from the upstream
//! `generated.proto` files (build.rs says why), and turned into and out of the JSON the Go types
//! would print, so that everything downstream sees the object the real server would have decoded.

mod envelope;
mod from_json;
mod go_order;
mod schema;
mod special;
mod to_json;

use prost::Message as _;
use prost_reflect::{DynamicMessage, ReflectMessage, Value as Field};
use serde_json::{Value, json};

use crate::{Error, Result};

/// The media type of the protobuf form, in Content-Type and Accept (a watch adds `;stream=watch`).
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The Content-Type of a watch answered in protobuf.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
pub use envelope::MAGIC;
pub use go_order::GoType;
pub use schema::{GoField, ListType, META_V1, Schema};

/// Whether a Content-Type or Accept entry names the protobuf form.
pub fn is_protobuf(media_type: &str) -> bool {
    media_type.split(';').next().unwrap_or_default().trim() == MEDIA_TYPE
}

fn loaded() -> Result<&'static schema::Schema> {
    schema::schema().map_err(Error::BadRequest)
}

/// The descriptors and Go facts of the built-in kinds.
pub fn types() -> Result<&'static Schema> {
    loaded()
}

/// How a message's Go type prints in JSON, for walks over an object by its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageForm {
    /// An object of the message's fields.
    Struct,
    /// A single JSON value of its own form: a time, a duration, a quantity, an int-or-string.
    Scalar,
    /// Embedded JSON of any shape (RawExtension, apiextensions JSON and schema unions).
    Json,
    /// A Go named slice (`type ExtraValue []string`): a JSON array of its `items`.
    NamedSlice,
}

/// How the message named `message` (its full proto name, `k8s.io.api.core.v1.Pod`) prints in JSON.
pub fn message_form(schema: &Schema, message: &str) -> MessageForm {
    match special::Special::of(message) {
        Some(special::Special::Time | special::Special::MicroTime | special::Special::Duration)
        | Some(special::Special::Quantity | special::Special::IntOrString) => MessageForm::Scalar,
        Some(_) => MessageForm::Json,
        None if schema.is_named_slice(message) => MessageForm::NamedSlice,
        None => MessageForm::Struct,
    }
}

/// Whether `kind` at `api_version` has a protobuf message: the built-in kinds and the meta types.
pub fn knows(api_version: &str, kind: &str) -> bool {
    loaded().is_ok_and(|schema| schema.message(api_version, kind).is_some())
}

/// The Go struct that declares the field at `path` (JSON keys from the object's root, without list
/// indices) of `kind` at `api_version`: `DeploymentSpec` for `spec.replicas` of a Deployment, as Go's
/// decoder names it in its errors. `None` where the path leaves the kind's types.
pub fn declaring_struct(api_version: &str, kind: &str, path: &[&str]) -> Option<String> {
    let schema = loaded().ok()?;
    let mut message = schema.message(api_version, kind)?;
    let (last, parents) = path.split_last()?;
    for key in parents {
        let field = message
            .fields()
            .find(|field| schema.field(message.full_name(), field).json == *key)?;
        let prost_reflect::Kind::Message(inner) = field.kind() else {
            return None;
        };
        if field.is_map() {
            return None;
        }
        message = inner;
    }
    message
        .fields()
        .any(|field| schema.field(message.full_name(), &field).json == *last)
        .then(|| message.name().to_owned())
}

/// The JSON object of a protobuf body, as kube-apiserver would decode it; `api_version` and `kind`
/// stand for what the body's envelope leaves empty.
pub fn decode(body: &[u8], api_version: &str, kind: &str) -> Result<Value> {
    to_json::enveloped_object(loaded()?, body, Some((api_version, kind)))
}

/// `object` as kube-apiserver stores it after decoding it into its Go type: what Go's encoding/json
/// prints of the struct (a non-pointer struct always present, `{}` or with its zero time as `null`;
/// empty omitempty slices and maps, zero scalars and unknown fields left out), by a round trip through
/// the protobuf message of the same Go type. `None` when the kind has no message or the object does
/// not fit it.
pub fn go_shaped(object: &Value, api_version: &str, kind: &str) -> Option<Value> {
    if !knows(api_version, kind) {
        return None;
    }
    let bytes = encode_as(object, api_version, kind).ok()?;
    let mut shaped = decode(&bytes, api_version, kind).ok()?;
    keep_empty_collections(object, &mut shaped);
    Some(shaped)
}

/// Go's JSON decoder makes an empty list or map of `[]` or `{}`, which prints as such where the field
/// has no `omitempty`; protobuf carries no difference between empty and nil, so the round trip turned
/// them into `null`, put back here.
fn keep_empty_collections(original: &Value, shaped: &mut Value) {
    match (original, shaped) {
        (Value::Object(original), Value::Object(shaped)) => {
            for (key, value) in shaped.iter_mut() {
                let Some(before) = original.get(key) else {
                    continue;
                };
                let empty = before.as_array().is_some_and(Vec::is_empty)
                    || before.as_object().is_some_and(serde_json::Map::is_empty);
                if value.is_null() && empty {
                    *value = before.clone();
                } else {
                    keep_empty_collections(before, value);
                }
            }
        }
        (Value::Array(original), Value::Array(shaped)) if original.len() == shaped.len() => {
            for (before, value) in original.iter().zip(shaped) {
                keep_empty_collections(before, value);
            }
        }
        _ => {}
    }
}

/// The protobuf body of `object`, named by its own apiVersion and kind.
pub fn encode(object: &Value) -> Result<Vec<u8>> {
    let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default();
    encode_as(object, field("apiVersion"), field("kind"))
}

/// The protobuf body of `object` as `kind` at `api_version` (a list's items carry neither).
pub fn encode_as(object: &Value, api_version: &str, kind: &str) -> Result<Vec<u8>> {
    envelope::encode_object(loaded()?, object, api_version, kind)
}

/// One frame of a protobuf watch: the length (4 bytes, big-endian) of a `WatchEvent` message whose
/// object is the enveloped `object`.
pub fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>> {
    let schema = loaded()?;
    let raw = encode(object)?;
    let descriptor = schema
        .pool
        .get_message_by_name(&format!("{}.WatchEvent", schema::META_V1))
        .ok_or_else(|| Error::BadRequest("no WatchEvent among the descriptors".into()))?;
    let mut event = DynamicMessage::new(descriptor);
    let set = |event: &mut DynamicMessage, name: &str, value: Field| {
        event
            .try_set_field_by_name(name, value)
            .map_err(|e| Error::BadRequest(e.to_string()))
    };
    set(&mut event, "type", Field::String(event_type.to_owned()))?;
    let object_field = event
        .descriptor()
        .get_field_by_name("object")
        .ok_or_else(|| Error::BadRequest("WatchEvent without object".into()))?;
    let mut extension = DynamicMessage::new(
        object_field
            .kind()
            .as_message()
            .cloned()
            .ok_or_else(|| Error::BadRequest("WatchEvent.object is not a message".into()))?,
    );
    set(&mut extension, "raw", Field::Bytes(raw.into()))?;
    set(&mut event, "object", Field::Message(extension))?;
    let message = event.encode_to_vec();
    let length =
        u32::try_from(message.len()).map_err(|_| Error::BadRequest("a watch event over 4 GiB".into()))?;
    let mut frame = length.to_be_bytes().to_vec();
    frame.extend(message);
    Ok(frame)
}

/// The first event of a protobuf watch stream, `{"type", "object"}`, and the bytes it took; `None`
/// until a whole frame is there.
pub fn read_watch_frame(stream: &[u8]) -> Result<Option<(Value, usize)>> {
    let Some(length) = stream.get(..4) else {
        return Ok(None);
    };
    let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
    let Some(message) = stream.get(4..4 + length) else {
        return Ok(None);
    };
    let schema = loaded()?;
    let descriptor = schema
        .pool
        .get_message_by_name(&format!("{}.WatchEvent", schema::META_V1))
        .ok_or_else(|| Error::BadRequest("no WatchEvent among the descriptors".into()))?;
    let event = DynamicMessage::decode(descriptor, message)
        .map_err(|e| Error::BadRequest(format!("a watch event does not decode: {e}")))?;
    let event_type = event
        .get_field_by_name("type")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let raw = match event.get_field_by_name("object").as_deref() {
        Some(Field::Message(object)) => object
            .get_field_by_name("raw")
            .and_then(|v| v.as_bytes().map(|b| b.to_vec()))
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let object = to_json::enveloped_object(schema, &raw, None)?;
    Ok(Some((json!({"type": event_type, "object": object}), 4 + length)))
}

#[cfg(test)]
mod tests;
