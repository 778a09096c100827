//! The types whose JSON is not their message's fields: times, durations, quantities, int-or-string,
//! embedded JSON and the CRD schema unions, each with the form its Go type's MarshalJSON gives it.

use serde_json::{Value as Json, json};

use crate::{Error, Result};

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
const EXTENSIONS_V1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
const EXTENSIONS_V1BETA1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// RFC 3339 to the second; Go's zero time is `null` (an empty message on the wire).
    Time,
    /// RFC 3339 to the microsecond.
    MicroTime,
    /// Go's duration string (`1h0m0s`), nanoseconds on the wire.
    Duration,
    /// The quantity's string.
    Quantity,
    IntOrString,
    /// JSON carried as bytes in `field` (RawExtension, FieldsV1, apiextensions JSON).
    RawJson {
        field: &'static str,
    },
    /// A schema, or `true`/`false`.
    SchemaOrBool,
    /// A schema, or the array in `list`.
    SchemaOrArray {
        list: &'static str,
    },
    SchemaOrStringArray {
        list: &'static str,
    },
}

impl Special {
    pub fn of(message: &str) -> Option<Special> {
        if let Some(name) = message.strip_prefix(META) {
            return match name {
                "Time" => Some(Special::Time),
                "MicroTime" => Some(Special::MicroTime),
                "Duration" => Some(Special::Duration),
                "FieldsV1" => Some(Special::RawJson { field: "Raw" }),
                _ => None,
            };
        }
        if let Some(name) = message
            .strip_prefix(EXTENSIONS_V1)
            .or_else(|| message.strip_prefix(EXTENSIONS_V1BETA1))
        {
            return match name {
                "JSON" => Some(Special::RawJson { field: "raw" }),
                "JSONSchemaPropsOrBool" => Some(Special::SchemaOrBool),
                "JSONSchemaPropsOrArray" => Some(Special::SchemaOrArray { list: "jSONSchemas" }),
                "JSONSchemaPropsOrStringArray" => Some(Special::SchemaOrStringArray { list: "property" }),
                _ => None,
            };
        }
        match message {
            "k8s.io.apimachinery.pkg.api.resource.Quantity" => Some(Special::Quantity),
            "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Some(Special::IntOrString),
            "k8s.io.apimachinery.pkg.runtime.RawExtension" => Some(Special::RawJson { field: "raw" }),
            _ => None,
        }
    }
}

/// `2024-05-01T10:00:00Z`, or with six digits of microseconds.
pub fn format_time(seconds: i64, nanos: i64, micro: bool) -> Json {
    // Go's zero time, as a Go client writes it when it writes one at all.
    const GO_ZERO: i64 = -62_135_596_800;
    if seconds == GO_ZERO && nanos == 0 {
        return Json::Null;
    }
    let Ok(timestamp) = jiff::Timestamp::from_second(seconds) else {
        return Json::Null;
    };
    let base = timestamp.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    if micro {
        json!(format!("{base}.{:06}Z", nanos.clamp(0, 999_999_999) / 1000))
    } else {
        json!(format!("{base}Z"))
    }
}

/// Seconds and nanoseconds of an RFC 3339 time (`Time` keeps the seconds alone, as Go's does).
pub fn parse_time(text: &str, micro: bool) -> Result<(i64, i32)> {
    let timestamp: jiff::Timestamp = text
        .parse()
        .map_err(|e| Error::BadRequest(format!("parsing time {text:?}: {e}")))?;
    let nanos = if micro {
        timestamp.subsec_nanosecond() / 1000 * 1000
    } else {
        0
    };
    Ok((timestamp.as_second(), nanos))
}
