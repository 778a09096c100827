//! The descriptors of the built-in kinds and the Go facts beside them, both made by build.rs from the
//! Kubernetes Go modules the test control plane pins, decoded once on first use.

use std::{borrow::Cow, sync::OnceLock};

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use prost_reflect::{DescriptorPool, FieldDescriptor, MessageDescriptor};

const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"));
const GO_FIELDS: &str = include_str!(concat!(env!("OUT_DIR"), "/go_fields.tsv"));

/// The package of the types every group shares: Status, DeleteOptions, WatchEvent, ListMeta ...
pub const META_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// How Go's encoding/json prints one field of a Go struct, from its tags and type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoField {
    /// The JSON key (empty when inlined).
    pub json: String,
    /// `*T`: nil when absent from the wire, present (even zero) when on it.
    pub pointer: bool,
    /// `omitempty`: a zero scalar, an empty slice or map, or a nil pointer is left out.
    pub omitempty: bool,
    /// `json:",inline"`: the struct's fields sit in the parent's object.
    pub inline: bool,
    /// How structured-merge-diff treats the list this field holds, if it holds one.
    pub list: ListType,
    /// `+structType`/`+mapType` on the field: `Some(true)` atomic, `Some(false)` granular, `None` as
    /// the field's type says.
    pub atomic: Option<bool>,
    /// `+default`: the value the field takes when left out (the key of a list item is read with it).
    pub default: Option<serde_json::Value>,
}

/// How structured-merge-diff (server-side apply, managedFields) treats a list: from the field's
/// `+listType`/`+listMapKey` markers or else its `patchStrategy`/`patchMergeKey` tags, as
/// kube-openapi's schema conversion reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole; owned as one field.
    #[default]
    Atomic,
    /// Scalars, each owned by its value.
    Set,
    /// Objects, each owned by the values of these keys.
    Map(Vec<String>),
}

impl ListType {
    fn from_facts(list_type: &str, keys: &str, merge: bool) -> ListType {
        let keys: Vec<String> = keys
            .split(',')
            .filter(|k| !k.is_empty() && *k != "-")
            .map(str::to_owned)
            .collect();
        match list_type {
            "atomic" => ListType::Atomic,
            "set" => ListType::Set,
            "map" => ListType::Map(keys),
            _ if merge && keys.is_empty() => ListType::Set,
            _ if merge => ListType::Map(keys),
            _ => ListType::Atomic,
        }
    }
}

/// The built-in kinds' message descriptors, and the Go facts about their fields that protobuf does
/// not carry (JSON names, `omitempty`, list and map types), for turning messages into JSON and back.
pub struct Schema {
    /// The descriptors of every message of the built-in kinds, by full proto name.
    pub pool: DescriptorPool,
    /// Message → field number → Go facts.
    fields: HashMap<String, HashMap<u32, GoField>>,
    /// Message → the message whose Go struct it is declared as.
    aliases: HashMap<String, String>,
    /// API group → proto packages serving it (`apps` → `k8s.io.api.apps.v1`, ...).
    groups: HashMap<String, Vec<String>>,
    named_slices: HashSet<String>,
    /// Structs and maps marked `+structType=atomic` or `+mapType=atomic`.
    atomic_types: HashSet<String>,
}

/// The schema, or why it could not be read (which would be a broken build, reported, not a panic).
pub fn schema() -> Result<&'static Schema, String> {
    static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();
    SCHEMA.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Schema, String> {
    let pool = DescriptorPool::decode(DESCRIPTORS)
        .map_err(|e| format!("the built-in kinds' protobuf descriptors do not decode: {e}"))?;
    let mut schema = Schema {
        pool,
        fields: HashMap::new(),
        groups: HashMap::new(),
        aliases: HashMap::new(),
        named_slices: HashSet::new(),
        atomic_types: HashSet::new(),
    };
    for line in GO_FIELDS.lines() {
        let columns: Vec<&str> = line.split('\t').collect();
        match columns.as_slice() {
            ["F", message, number, json, flags, list_type, keys, default] => {
                let Ok(number) = number.parse::<u32>() else {
                    continue;
                };
                let facts = GoField {
                    json: (*json).to_owned(),
                    pointer: flags.contains('p'),
                    omitempty: flags.contains('o'),
                    inline: flags.contains('i'),
                    list: ListType::from_facts(list_type, keys, flags.contains('m')),
                    atomic: if flags.contains('a') {
                        Some(true)
                    } else if flags.contains('g') {
                        Some(false)
                    } else {
                        None
                    },
                    default: serde_json::from_str(default).ok(),
                };
                schema
                    .fields
                    .entry((*message).to_owned())
                    .or_default()
                    .insert(number, facts);
            }
            ["G", package, group] => schema
                .groups
                .entry((*group).to_owned())
                .or_default()
                .push((*package).to_owned()),
            ["A", message, target] => {
                schema.aliases.insert((*message).to_owned(), (*target).to_owned());
            }
            ["T", message] => {
                schema.atomic_types.insert((*message).to_owned());
            }
            ["S", message] => {
                schema.named_slices.insert((*message).to_owned());
            }
            _ => {}
        }
    }
    Ok(schema)
}

impl Schema {
    /// The message of `kind` at `api_version` (`apps/v1`, `v1`), among the built-in kinds and the
    /// meta types every group version serves (Status, DeleteOptions ...).
    pub fn message(&self, api_version: &str, kind: &str) -> Option<MessageDescriptor> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let packages = self.groups.get(group)?;
        packages
            .iter()
            .filter(|package| package.rsplit('.').next() == Some(version))
            .find_map(|package| self.pool.get_message_by_name(&format!("{package}.{kind}")))
            .or_else(|| self.pool.get_message_by_name(&format!("{META_V1}.{kind}")))
    }

    /// The Go facts of `field` of `message`; a field no Go struct describes prints like a plain
    /// `json:"name,omitempty"` one. Borrowed where a Go struct describes it: every field of every
    /// object written is looked up here, in both directions of the protobuf round trip.
    pub fn field(&self, message: &str, field: &FieldDescriptor) -> Cow<'_, GoField> {
        match self.facts(message, field.number()) {
            Some(facts) => Cow::Borrowed(facts),
            None => Cow::Owned(GoField {
                json: field.name().to_owned(),
                omitempty: true,
                ..GoField::default()
            }),
        }
    }

    /// The Go facts of field `number` of `message`, if a Go struct describes it (no copy).
    pub fn facts(&self, message: &str, number: u32) -> Option<&GoField> {
        let declared = self.aliases.get(message).map_or(message, String::as_str);
        self.fields.get(declared).and_then(|fields| fields.get(&number))
    }

    /// Whether a Go struct describes field `number` of `message`.
    #[cfg(test)]
    pub fn has_facts(&self, message: &str, number: u32) -> bool {
        self.facts(message, number).is_some()
    }

    /// Whether the Go type of `message` is marked atomic (`+structType=atomic`): owned as one field.
    pub fn is_atomic_type(&self, message: &str) -> bool {
        let declared = self.aliases.get(message).map_or(message, String::as_str);
        self.atomic_types.contains(declared) || self.atomic_types.contains(message)
    }

    /// Whether `message` carries a Go named slice (`type ExtraValue []string`) as its `items`.
    pub fn is_named_slice(&self, message: &str) -> bool {
        self.named_slices.contains(message)
    }
}
