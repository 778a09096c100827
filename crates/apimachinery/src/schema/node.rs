//! The compiled form of one `openAPIV3Schema` node: what validation, defaulting and pruning read.

use std::collections::BTreeMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

/// A JSON type a schema node can demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    pub(crate) const NAMES: [&'static str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map,
}

/// `additionalProperties`.
#[derive(Debug, Clone, Default)]
pub(crate) enum Additional {
    /// Not specified: unknown fields are pruned, not rejected.
    #[default]
    Unspecified,
    /// `true` or `false`.
    Allowed(bool),
    Schema(Box<Node>),
}

/// A `pattern`, kept with its source text for messages.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub source: String,
    pub regex: Regex,
}

/// One compiled schema node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub ty: Option<JsonType>,
    pub nullable: bool,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded_resource: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enum_values: Option<Vec<Value>>,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<Pattern>,
    pub format: Option<String>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub list_type: Option<ListType>,
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type: atomic`: the object is owned as one field (managedFields).
    pub map_atomic: bool,
    pub default: Option<Value>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<Arc<super::cel::rule::Rule>>,
}
