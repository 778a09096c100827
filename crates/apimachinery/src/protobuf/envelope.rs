//! The envelope of a protobuf body: the 4 bytes `k8s\0`, then a `runtime.Unknown` naming the object's
//! apiVersion and kind beside the object's own message bytes.

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value};
use serde_json::{Value as Json, json};

use super::{from_json, schema::Schema};
use crate::{Error, Result};

/// The 4 bytes every protobuf body starts with, before its `runtime.Unknown`.
pub const MAGIC: &[u8] = b"k8s\0";
const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";

/// What an envelope holds.
pub struct Unknown {
    pub api_version: String,
    pub kind: String,
    pub raw: Vec<u8>,
}

fn unknown_descriptor(schema: &Schema) -> Result<MessageDescriptor> {
    schema
        .pool
        .get_message_by_name(UNKNOWN)
        .ok_or_else(|| Error::BadRequest(format!("no {UNKNOWN} among the descriptors")))
}

pub fn open(schema: &Schema, body: &[u8]) -> Result<Unknown> {
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        Error::BadRequest(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]".into(),
        )
    })?;
    let unknown = DynamicMessage::decode(unknown_descriptor(schema)?, rest)
        .map_err(|e| Error::BadRequest(format!("the protobuf envelope does not decode: {e}")))?;
    let type_meta = |name: &str| {
        unknown
            .get_field_by_name("typeMeta")
            .and_then(|meta| match meta.as_ref() {
                Value::Message(meta) => meta
                    .get_field_by_name(name)
                    .and_then(|v| v.as_str().map(str::to_owned)),
                _ => None,
            })
            .unwrap_or_default()
    };
    let encoding = unknown
        .get_field_by_name("contentEncoding")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    if !encoding.is_empty() {
        return Err(Error::BadRequest(format!(
            "unsupported content encoding {encoding:?}"
        )));
    }
    Ok(Unknown {
        api_version: type_meta("apiVersion"),
        kind: type_meta("kind"),
        raw: unknown
            .get_field_by_name("raw")
            .and_then(|v| v.as_bytes().map(|b| b.to_vec()))
            .unwrap_or_default(),
    })
}

pub fn seal(schema: &Schema, api_version: &str, kind: &str, raw: Vec<u8>) -> Result<Vec<u8>> {
    let descriptor = unknown_descriptor(schema)?;
    let type_meta_field = descriptor
        .get_field_by_name("typeMeta")
        .ok_or_else(|| Error::BadRequest("runtime.Unknown without typeMeta".into()))?;
    let type_meta = from_json::message(
        schema,
        type_meta_field
            .kind()
            .as_message()
            .ok_or_else(|| Error::BadRequest("typeMeta is not a message".into()))?,
        &json!({"apiVersion": api_version, "kind": kind}),
    )?;
    let mut unknown = DynamicMessage::new(descriptor);
    unknown.set_field(&type_meta_field, Value::Message(type_meta));
    unknown
        .try_set_field_by_name("raw", Value::Bytes(raw.into()))
        .map_err(|e| Error::BadRequest(e.to_string()))?;
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    Ok(body)
}

/// The enveloped message of `object`, of `kind` at `api_version`.
pub fn encode_object(schema: &Schema, object: &Json, api_version: &str, kind: &str) -> Result<Vec<u8>> {
    let descriptor = schema
        .message(api_version, kind)
        .ok_or_else(|| Error::BadRequest(format!("no protobuf message for {kind} in {api_version}")))?;
    let message = from_json::message(schema, &descriptor, object)?;
    seal(schema, api_version, kind, message.encode_to_vec())
}
