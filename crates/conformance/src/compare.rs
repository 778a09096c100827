//! Two normalized answers compared field by field. A difference deep in a document is reported at
//! most [`DEPTH`] levels down (the subtree there), so that one divergent schema or object is one
//! divergence, not hundreds of leaves.

use serde::Serialize;
use serde_json::Value;

/// How deep below the body a divergence is located; deeper differences are reported at this depth.
pub const DEPTH: usize = 4;

/// One place where the two servers answered differently.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Divergence {
    /// `<scenario>/<step> <where>`: what the baseline lists.
    pub key: String,
    pub area: String,
    /// The embedded server's value there (absent: `None`).
    pub embedded: Option<Value>,
    /// The real server's.
    pub real: Option<Value>,
}

/// Every difference between `embedded` and `real` (both from [`crate::normalize::normalize`]).
pub fn compare(step_key: &str, area: &str, embedded: &Value, real: &Value) -> Vec<Divergence> {
    let mut places = Vec::new();
    walk(&mut Vec::new(), Some(embedded), Some(real), &mut places);
    places
        .into_iter()
        .map(|(path, embedded, real)| Divergence {
            key: format!("{step_key} {}", location(&path)),
            area: area.to_owned(),
            embedded,
            real,
        })
        .collect()
}

type Place = (Vec<String>, Option<Value>, Option<Value>);

fn walk(path: &mut Vec<String>, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<Place>) {
    if a == b {
        return;
    }
    // "body" (or "headers") plus DEPTH levels below it are descended into; below, the whole subtree
    // is the divergence.
    let depth_limit = 1 + DEPTH;
    match (a, b) {
        // Objects of different kinds (a Status where an object was expected) differ as a whole.
        (Some(Value::Object(x)), Some(Value::Object(y)))
            if path.len() < depth_limit && x.get("kind") == y.get("kind") =>
        {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(key.clone());
                walk(path, x.get(key), y.get(key), out);
                path.pop();
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if path.len() < depth_limit => {
            if let (Some(x), Some(y)) = (by_name(x), by_name(y)) {
                let mut names: Vec<&String> = x.keys().chain(y.keys()).collect();
                names.sort();
                names.dedup();
                for name in names {
                    path.push(name.clone());
                    walk(path, x.get(name).copied(), y.get(name).copied(), out);
                    path.pop();
                }
                return;
            }
            for index in 0..x.len().max(y.len()) {
                path.push(index.to_string());
                walk(path, x.get(index), y.get(index), out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), a.cloned(), b.cloned())),
    }
}

/// A list of named things (resources, columns, containers, conditions, objects) by name, so that one
/// missing element is one divergence rather than a shift of every later index; `None` when an element
/// has no name or names repeat.
fn by_name(items: &[Value]) -> Option<std::collections::BTreeMap<String, &Value>> {
    if items.is_empty() {
        return None;
    }
    let mut named = std::collections::BTreeMap::new();
    for item in items {
        let name = ["/name", "/type", "/metadata/name", "/object/metadata/name"]
            .iter()
            .find_map(|pointer| item.pointer(pointer).and_then(Value::as_str))?;
        if named.insert(name.to_owned(), item).is_some() {
            return None;
        }
    }
    Some(named)
}

/// `status`, `headers/warning`, `body/metadata/labels`: a JSON pointer without the leading slash,
/// with `/` and `~` escaped inside keys as JSON pointers escape them.
fn location(path: &[String]) -> String {
    path.iter()
        .map(|p| p.replace('~', "~0").replace('/', "~1"))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_answers_do_not_diverge() {
        let a = json!({"status": 200, "body": {"a": [1, 2]}});
        assert!(compare("s/1", "x", &a, &a.clone()).is_empty());
    }

    #[test]
    fn a_missing_field_and_a_different_value_are_located() {
        let e = json!({"status": 200, "body": {"kind": "Status", "reason": "Invalid"}});
        let r = json!({"status": 422, "body": {"kind": "Status", "reason": "Invalid", "code": 422}});
        let found: Vec<String> = compare("s/1", "x", &e, &r).into_iter().map(|d| d.key).collect();
        assert_eq!(found, ["s/1 body/code", "s/1 status"]);
    }

    #[test]
    fn an_answer_of_another_kind_is_one_divergence() {
        let e = json!({"body": {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}});
        let r = json!({"body": {"kind": "Status", "status": "Success", "details": {}}});
        let found: Vec<String> = compare("s/1", "x", &e, &r).into_iter().map(|d| d.key).collect();
        assert_eq!(found, ["s/1 body"]);
    }

    #[test]
    fn named_lists_compare_by_name() {
        let e = json!({"body": {"resources": [{"name": "a", "v": 1}, {"name": "c", "v": 1}]}});
        let r = json!({"body": {"resources": [{"name": "a", "v": 1}, {"name": "b", "v": 1}, {"name": "c", "v": 2}]}});
        let found: Vec<String> = compare("s/1", "x", &e, &r).into_iter().map(|d| d.key).collect();
        assert_eq!(found, ["s/1 body/resources/b", "s/1 body/resources/c/v"]);
    }

    #[test]
    fn deep_differences_are_reported_once_at_the_cut_off() {
        let e = json!({"body": {"a": {"b": {"c": {"d": {"x": 1, "y": 1}}}}}});
        let r = json!({"body": {"a": {"b": {"c": {"d": {"x": 2, "y": 2}}}}}});
        let found = compare("s/1", "x", &e, &r);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key, "s/1 body/a/b/c/d");
    }
}
