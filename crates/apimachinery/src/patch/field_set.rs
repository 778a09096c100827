//! A set of field paths in the FieldsV1 form managedFields carry. A path is a list of FieldsV1 keys:
//! `f:<name>` for a struct field or map key, `k:{"name":"web"}` for a map-list item by its keys,
//! `v:"value"` for a set-list item, `i:<n>` for a list item by index. In FieldsV1 a path that is in the
//! set and has paths below it is marked with `".": {}`; one with none below is `{}`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

pub(super) type Path = Vec<String>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    pub(super) fn from_fields_v1(fields: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        set.read(fields, &mut Vec::new());
        set
    }

    fn read(&mut self, node: &Value, prefix: &mut Path) {
        let Some(map) = node.as_object() else { return };
        if map.is_empty() && !prefix.is_empty() {
            self.0.insert(prefix.clone());
        }
        for (key, child) in map {
            if key == "." {
                if !prefix.is_empty() {
                    self.0.insert(prefix.clone());
                }
                continue;
            }
            prefix.push(key.clone());
            self.read(child, prefix);
            prefix.pop();
        }
    }

    pub(super) fn to_fields_v1(&self) -> Value {
        let mut root = Map::new();
        for path in &self.0 {
            node_at(&mut root, path);
        }
        for path in &self.0 {
            let node = node_at(&mut root, path);
            if !node.is_empty() {
                node.insert(".".into(), Value::Object(Map::new()));
            }
        }
        Value::Object(root)
    }

    pub(super) fn insert(&mut self, path: Path) {
        if !path.is_empty() {
            self.0.insert(path);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn contains(&self, path: &[String]) -> bool {
        self.0.contains(path)
    }

    /// Whether a path strictly below `prefix` is in the set (paths sharing a prefix sort together).
    pub(super) fn has_below(&self, prefix: &[String]) -> bool {
        self.0
            .range::<[String], _>((std::ops::Bound::Excluded(prefix), std::ops::Bound::Unbounded))
            .next()
            .is_some_and(|path| path.starts_with(prefix))
    }

    pub(super) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    pub(super) fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    pub(super) fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    /// The paths of `self` that are not paths of `other` (paths below one of `other`'s stay).
    pub(super) fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// `self` without `prefix` and every path below it.
    pub(super) fn without_subtree(&self, prefix: &[String]) -> FieldSet {
        FieldSet(
            self.0
                .iter()
                .filter(|p| !p.starts_with(prefix))
                .cloned()
                .collect(),
        )
    }

    /// Only `prefix` and the paths below it.
    pub(super) fn only_subtree(&self, prefix: &[String]) -> FieldSet {
        FieldSet(self.0.iter().filter(|p| p.starts_with(prefix)).cloned().collect())
    }
}

impl FromIterator<Path> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> Self {
        FieldSet(iter.into_iter().filter(|p| !p.is_empty()).collect())
    }
}

fn node_at<'m>(root: &'m mut Map<String, Value>, path: &[String]) -> &'m mut Map<String, Value> {
    let mut node = root;
    for key in path {
        node = node
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("FieldsV1 nodes are objects");
    }
    node
}

/// The FieldsV1 key of a struct field or map key.
pub(super) fn field_key(name: &str) -> String {
    format!("f:{name}")
}

/// The FieldsV1 key of a set-list item.
pub(super) fn value_key(value: &Value) -> String {
    format!("v:{value}")
}

/// The FieldsV1 key of a map-list item: its key fields by name, as compact JSON, a key left out taking
/// its `default`; `None` when the item has none of them.
pub(super) fn item_key(
    item: &Value,
    keys: &[String],
    default: impl Fn(&str) -> Option<Value>,
) -> Option<String> {
    let mut fields: Vec<(&String, Value)> = keys
        .iter()
        .filter_map(|k| {
            item.get(k.as_str())
                .cloned()
                .or_else(|| default(k))
                .map(|v| (k, v))
        })
        .collect();
    if fields.is_empty() {
        return None;
    }
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let fields: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("{}:{value}", Value::String((*name).clone())))
        .collect();
    Some(format!("k:{{{}}}", fields.join(",")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_v1_round_trips_with_dots_where_a_member_has_members_below() {
        let fields = json!({
            "f:data": {".": {}, "f:a": {}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}},
            "f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}}}
        });
        let set = FieldSet::from_fields_v1(&fields);
        assert!(set.0.contains(&vec!["f:data".to_owned()]));
        assert!(!set.0.contains(&vec!["f:spec".to_owned()]));
        assert_eq!(set.to_fields_v1(), fields);
    }

    #[test]
    fn item_keys_are_sorted_compact_json() {
        let item = json!({"protocol": "TCP", "containerPort": 80, "name": "http"});
        assert_eq!(
            item_key(&item, &["containerPort".into(), "protocol".into()], |_| None).unwrap(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(value_key(&json!("a")), r#"v:"a""#);
    }
}
