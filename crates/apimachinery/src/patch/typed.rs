//! The type of each node of an object as structured-merge-diff sees it, which decides how managedFields
//! record the node: a scalar or anything atomic is one field; a struct or a granular map is its fields;
//! a set list is its values, a map list its items by key. Built-in kinds take it from their Go types
//! (the descriptors and the `+listType`/`+structType` markers build.rs reads), custom resources from
//! their CRD's schema, and what neither describes is deduced from the value.

use std::{
    collections::HashMap,
    sync::{LazyLock, Mutex},
};

use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

use super::field_set::{item_key, value_key};
use crate::{
    protobuf::{self, ListType, MessageForm, Schema as GoTypes},
    schema::{
        StructuralSchema,
        node::{Additional, JsonType, ListType as SchemaListType, Node},
    },
};

/// How a node is owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    Scalar,
    /// An object with fields (a struct) or keys (a map); `atomic` ones are owned whole.
    Object {
        atomic: bool,
    },
    List(ListType),
}

/// The type of one node.
#[derive(Debug, Clone)]
pub(super) enum Type<'s> {
    /// Nothing describes it: objects are granular, lists atomic.
    Deduced,
    Scalar,
    /// A built-in struct.
    Message {
        message: MessageDescriptor,
        atomic: bool,
    },
    /// A built-in map field, of values of `value`.
    GoMap {
        value: Kind,
        atomic: bool,
    },
    /// A built-in list field, of items of `item`.
    GoList {
        item: Kind,
        list: ListType,
    },
    /// A node of a CRD's schema.
    Crd(&'s Node),
    /// A custom resource's root: its schema, with ObjectMeta for `metadata`.
    CustomResource(Option<&'s Node>),
}

/// Where the types of one object come from.
#[derive(Debug, Clone, Copy)]
pub enum ObjectSchema<'s> {
    /// A built-in kind, by the Go type of `api_version` and `kind`.
    BuiltIn {
        /// `apps/v1`, or `v1` for the core group.
        api_version: &'s str,
        /// `Deployment`.
        kind: &'s str,
    },
    /// A custom resource, by its version's schema (none: everything deduced).
    Custom(Option<&'s StructuralSchema>),
}

impl<'s> ObjectSchema<'s> {
    /// The type of the whole object.
    pub(super) fn root(&self) -> Type<'s> {
        match self {
            ObjectSchema::BuiltIn { api_version, kind } => protobuf::types()
                .ok()
                .and_then(|types| types.message(api_version, kind))
                .map_or(Type::Deduced, |message| Type::Message {
                    message,
                    atomic: false,
                }),
            ObjectSchema::Custom(schema) => Type::CustomResource(schema.map(StructuralSchema::root)),
        }
    }

    /// The object a create is compared with: what the kind's Go type prints when zero (a non-pointer
    /// struct is there as `{}`, a nil slice as `null`), or nothing for a custom resource.
    pub(super) fn zero(&self) -> Value {
        // Each kind's zero value is computed once: every create compares with it.
        static ZEROS: LazyLock<Mutex<HashMap<(String, String), Value>>> = LazyLock::new(Default::default);
        match self {
            ObjectSchema::BuiltIn { api_version, kind } => {
                let key = ((*api_version).to_owned(), (*kind).to_owned());
                let mut zeros = ZEROS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                zeros
                    .entry(key)
                    .or_insert_with(|| {
                        protobuf::go_shaped(&Value::Object(Default::default()), api_version, kind)
                            .unwrap_or_else(|| Value::Object(Default::default()))
                    })
                    .clone()
            }
            ObjectSchema::Custom(_) => Value::Object(Default::default()),
        }
    }
}

fn go_types() -> Option<&'static GoTypes> {
    protobuf::types().ok()
}

/// The type of a value of protobuf `kind`; `atomic` is a field's own `+structType`/`+mapType`.
fn of_kind<'s>(kind: &Kind, atomic: Option<bool>) -> Type<'s> {
    let Kind::Message(message) = kind else {
        return Type::Scalar;
    };
    let Some(types) = go_types() else {
        return Type::Deduced;
    };
    match protobuf::message_form(types, message.full_name()) {
        MessageForm::Scalar => Type::Scalar,
        MessageForm::Json => Type::Deduced,
        MessageForm::NamedSlice => match message.get_field_by_name("items") {
            Some(items) => Type::GoList {
                item: items.kind(),
                list: ListType::Atomic,
            },
            None => Type::Deduced,
        },
        MessageForm::Struct => Type::Message {
            atomic: atomic.unwrap_or_else(|| types.is_atomic_type(message.full_name())),
            message: message.clone(),
        },
    }
}

fn of_field<'s>(types: &GoTypes, message: &MessageDescriptor, field: &FieldDescriptor) -> Type<'s> {
    let facts = types.field(message.full_name(), field);
    if field.is_map() {
        return match field.kind() {
            Kind::Message(entry) => Type::GoMap {
                value: entry.map_entry_value_field().kind(),
                atomic: facts.atomic.unwrap_or(false),
            },
            _ => Type::Deduced,
        };
    }
    if field.is_list() {
        return Type::GoList {
            item: field.kind(),
            list: facts.list.clone(),
        };
    }
    of_kind(&field.kind(), facts.atomic)
}

/// The field of `message` printed under `key`, looking into inlined structs, with the message that
/// declares it.
fn go_field(
    types: &GoTypes,
    message: &MessageDescriptor,
    key: &str,
) -> Option<(MessageDescriptor, FieldDescriptor)> {
    for field in message.fields() {
        // Read in place: this runs for every key of every object a write records.
        let (json, inline) = match types.facts(message.full_name(), field.number()) {
            Some(facts) => (facts.json.as_str(), facts.inline),
            None => (field.name(), false),
        };
        if inline {
            if let Kind::Message(inner) = field.kind()
                && let Some(found) = go_field(types, &inner, key)
            {
                return Some(found);
            }
        } else if json == key {
            return Some((message.clone(), field));
        }
    }
    None
}

fn go_child<'s>(types: &GoTypes, message: &MessageDescriptor, key: &str) -> Option<Type<'s>> {
    go_field(types, message, key).map(|(declaring, field)| of_field(types, &declaring, &field))
}

fn crd_shape(node: &Node, value: Option<&Value>) -> Option<Shape> {
    if node.int_or_string {
        return Some(Shape::Scalar);
    }
    match node.ty {
        Some(JsonType::Object) => {
            let open = node.properties.is_empty()
                && matches!(node.additional, Additional::Unspecified)
                && (node.preserve_unknown || node.embedded_resource);
            (!open).then_some(Shape::Object {
                atomic: node.map_atomic,
            })
        }
        Some(JsonType::Array) => Some(Shape::List(match node.list_type {
            Some(SchemaListType::Set) => ListType::Set,
            Some(SchemaListType::Map) => ListType::Map(node.list_map_keys.clone()),
            Some(SchemaListType::Atomic) | None => ListType::Atomic,
        })),
        Some(_) => Some(Shape::Scalar),
        None => value.is_none().then_some(Shape::Scalar),
    }
}

fn deduced(value: Option<&Value>) -> Shape {
    match value {
        Some(Value::Object(_)) => Shape::Object { atomic: false },
        Some(Value::Array(_)) => Shape::List(ListType::Atomic),
        _ => Shape::Scalar,
    }
}

impl<'s> Type<'s> {
    /// How a node of this type holding `value` is owned.
    pub(super) fn shape(&self, value: Option<&Value>) -> Shape {
        match self {
            Type::Deduced => deduced(value),
            Type::Scalar => Shape::Scalar,
            Type::Message { atomic, .. } | Type::GoMap { atomic, .. } => Shape::Object { atomic: *atomic },
            Type::GoList { list, .. } => Shape::List(list.clone()),
            Type::Crd(node) => crd_shape(node, value).unwrap_or_else(|| deduced(value)),
            Type::CustomResource(_) => Shape::Object { atomic: false },
        }
    }

    /// The type of the value under `key` of an object of this type.
    pub(super) fn child(&self, key: &str) -> Type<'s> {
        match self {
            Type::Message { message, .. } => go_types()
                .and_then(|types| go_child(types, message, key))
                .unwrap_or(Type::Deduced),
            Type::GoMap { value, .. } => of_kind(value, None),
            Type::Crd(node) => match (node.properties.get(key), &node.additional) {
                (Some(child), _) => Type::Crd(child),
                (None, Additional::Schema(child)) => Type::Crd(child),
                _ => Type::Deduced,
            },
            Type::CustomResource(root) => match key {
                "metadata" => go_types()
                    .and_then(|types| {
                        types
                            .pool
                            .get_message_by_name(&format!("{}.ObjectMeta", protobuf::META_V1))
                    })
                    .map_or(Type::Deduced, |message| Type::Message {
                        message,
                        atomic: false,
                    }),
                "apiVersion" | "kind" => Type::Scalar,
                _ => root.map_or(Type::Deduced, |node| Type::Crd(node).child(key)),
            },
            Type::Deduced | Type::Scalar | Type::GoList { .. } => Type::Deduced,
        }
    }

    /// Whether `key` is a declared field of this struct type (not a key of a map).
    pub(super) fn declares(&self, key: &str) -> bool {
        match self {
            Type::Message { message, .. } => {
                go_types().is_some_and(|types| go_child(types, message, key).is_some())
            }
            Type::Crd(node) => node.properties.contains_key(key),
            Type::CustomResource(root) => {
                matches!(key, "apiVersion" | "kind" | "metadata")
                    || root.is_some_and(|node| node.properties.contains_key(key))
            }
            _ => false,
        }
    }

    /// Whether an object of this type may hold `key`: a declared field, a map's key, or any key where
    /// the type keeps unknown fields (type meta is declared everywhere a Go type is).
    pub(super) fn admits(&self, key: &str) -> bool {
        match self {
            Type::Message { .. } => matches!(key, "apiVersion" | "kind") || self.declares(key),
            Type::Crd(node) => {
                node.properties.contains_key(key)
                    || node.preserve_unknown
                    || matches!(node.additional, Additional::Schema(_) | Additional::Allowed(true))
                    || (node.embedded_resource && matches!(key, "apiVersion" | "kind" | "metadata"))
            }
            Type::CustomResource(root) => {
                matches!(key, "apiVersion" | "kind" | "metadata")
                    || root.is_none_or(|node| Type::Crd(node).admits(key))
            }
            Type::Deduced | Type::Scalar | Type::GoMap { .. } | Type::GoList { .. } => true,
        }
    }

    /// The default of field `key` of this struct type, which a list item's key takes when left out.
    pub(super) fn default_of(&self, key: &str) -> Option<Value> {
        match self {
            Type::Message { message, .. } => {
                let types = go_types()?;
                let (declaring, field) = go_field(types, message, key)?;
                types.field(declaring.full_name(), &field).default.clone()
            }
            Type::Crd(node) => node.properties.get(key).and_then(|child| child.default.clone()),
            _ => None,
        }
    }

    /// The FieldsV1 key of an item of a set or map list of this type (`list`): a set's item by its
    /// value, a map's by its key fields; `None` when it has none (or is not a scalar, in a set).
    pub(super) fn item_key(&self, list: &ListType, item: &Value) -> Option<String> {
        match list {
            ListType::Set => (!item.is_object() && !item.is_array()).then(|| value_key(item)),
            ListType::Map(keys) => {
                let item_type = self.item();
                item_key(item, keys, |key| item_type.default_of(key))
            }
            ListType::Atomic => None,
        }
    }

    /// The type of the items of a list of this type.
    pub(super) fn item(&self) -> Type<'s> {
        match self {
            Type::GoList { item, .. } => of_kind(item, None),
            Type::Crd(node) => node.items.as_deref().map_or(Type::Deduced, Type::Crd),
            _ => Type::Deduced,
        }
    }
}
