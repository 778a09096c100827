//! The order Go's encoding/json writes a built-in object's keys in: a struct's fields as the Go
//! struct declares them (the order of the `generated.proto` fields, which go-to-protobuf writes from
//! the struct), a map's keys sorted. kube-apiserver quotes such text in some messages.

use prost_reflect::{Kind, MessageDescriptor};

use super::{schema::Schema, special::Special};

/// The Go type of a JSON value within a built-in kind.
#[derive(Debug, Clone)]
pub enum GoType {
    /// A struct, by its message.
    Struct(MessageDescriptor),
    /// A map, with its values' type.
    Map(Box<GoType>),
    /// Anything else: scalars, and values of their own form (times, quantities, embedded JSON),
    /// whose objects are written sorted.
    Other,
}

impl GoType {
    /// The type of `kind` at `api_version`, or [`GoType::Other`] for a kind without a message.
    pub fn of(api_version: &str, kind: &str) -> GoType {
        super::loaded()
            .ok()
            .and_then(|schema| schema.message(api_version, kind))
            .map_or(GoType::Other, |message| Self::message(&message))
    }

    fn message(message: &MessageDescriptor) -> GoType {
        match Special::of(message.full_name()) {
            Some(_) => GoType::Other,
            None => GoType::Struct(message.clone()),
        }
    }

    /// The type of the value under `key` of an object of this type; for a list, of its items.
    pub fn child(&self, key: &str) -> GoType {
        match self {
            GoType::Map(values) => (**values).clone(),
            GoType::Struct(message) => super::loaded()
                .ok()
                .and_then(|schema| field_type(schema, message, key))
                .unwrap_or(GoType::Other),
            GoType::Other => GoType::Other,
        }
    }

    /// `keys` in the order Go writes them: a struct's declared fields first, in declaration order
    /// (behind TypeMeta's `kind` and `apiVersion` where the struct does not declare them), then any other
    /// key sorted; a map's or anything else's sorted.
    pub fn order<'a>(&self, mut keys: Vec<&'a str>) -> Vec<&'a str> {
        keys.sort_unstable();
        let GoType::Struct(message) = self else {
            return keys;
        };
        let Ok(schema) = super::loaded() else {
            return keys;
        };
        let mut declared = Vec::new();
        declared_keys(schema, message, &mut declared);
        // The kinds embed TypeMeta first, which their messages leave out.
        if !declared.iter().any(|key| key == "apiVersion") {
            declared.splice(0..0, ["kind".to_owned(), "apiVersion".to_owned()]);
        }
        let rank = |key: &str| declared.iter().position(|d| d == key).unwrap_or(usize::MAX);
        keys.sort_by_key(|key| rank(key));
        keys
    }
}

/// The JSON keys of `message`'s fields in declaration order, inlined structs spliced in place.
fn declared_keys(schema: &Schema, message: &MessageDescriptor, out: &mut Vec<String>) {
    for field in message.fields() {
        let facts = schema.field(message.full_name(), &field);
        match field.kind() {
            Kind::Message(inner) if facts.inline => declared_keys(schema, &inner, out),
            _ => out.push(facts.json.clone()),
        }
    }
}

/// The type of the field `key` of `message`, looking through inlined structs.
fn field_type(schema: &Schema, message: &MessageDescriptor, key: &str) -> Option<GoType> {
    message.fields().find_map(|field| {
        let facts = schema.field(message.full_name(), &field);
        let Kind::Message(inner) = field.kind() else {
            return (facts.json == key).then_some(GoType::Other);
        };
        if facts.inline {
            return field_type(schema, &inner, key);
        }
        if facts.json != key {
            return None;
        }
        Some(match field.is_map() {
            true => match inner.map_entry_value_field().kind() {
                Kind::Message(value) => GoType::Map(Box::new(GoType::message(&value))),
                _ => GoType::Map(Box::new(GoType::Other)),
            },
            false => GoType::message(&inner),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta_keys_follow_the_go_struct() {
        let config_map = GoType::of("v1", "ConfigMap");
        let metadata = config_map.child("metadata");
        assert_eq!(
            metadata.order(vec![
                "uid",
                "labels",
                "name",
                "managedFields",
                "creationTimestamp",
                "namespace"
            ]),
            [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "labels",
                "managedFields"
            ]
        );
        assert_eq!(
            metadata.child("managedFields").order(vec![
                "time",
                "apiVersion",
                "manager",
                "fieldsV1",
                "operation"
            ]),
            ["manager", "operation", "apiVersion", "time", "fieldsV1"]
        );
        assert_eq!(config_map.child("data").order(vec!["z", "a"]), ["a", "z"]);
        assert_eq!(
            config_map.order(vec!["metadata", "data", "apiVersion", "kind"]),
            ["kind", "apiVersion", "metadata", "data"]
        );
    }

    #[test]
    fn inlined_structs_are_spliced_in_place() {
        let volume = GoType::of("v1", "Pod").child("spec").child("volumes");
        assert_eq!(volume.order(vec!["configMap", "name"]), ["name", "configMap"]);
        assert!(matches!(volume.child("configMap"), GoType::Struct(_)));
    }
}
