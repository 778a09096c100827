//! The subset of JSONPath CRD printer columns use: `.a.b`, `.a[0]`, `.a[*].b`, `.a[?(@.k=="v")].b`.

use serde_json::Value;

/// Every value `path` selects in `object`, nulls left out.
pub fn evaluate(path: &str, object: &Value) -> Vec<Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = vec![object.clone()];
    for step in split_steps(path) {
        let (field, selector) = match step.find('[') {
            Some(i) => (&step[..i], Some(step[i + 1..].trim_end_matches(']'))),
            None => (step.as_str(), None),
        };
        if !field.is_empty() {
            current = current.iter().filter_map(|v| v.get(field).cloned()).collect();
        }
        if let Some(selector) = selector {
            current = current
                .iter()
                .filter_map(Value::as_array)
                .flat_map(|items| select(items, selector))
                .collect();
        }
    }
    current.into_iter().filter(|v| !v.is_null()).collect()
}

fn split_steps(path: &str) -> Vec<String> {
    let mut steps = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => {
                if !current.is_empty() {
                    steps.push(std::mem::take(&mut current));
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.is_empty() {
        steps.push(current);
    }
    steps
}

fn select(items: &[Value], selector: &str) -> Vec<Value> {
    if selector == "*" {
        return items.to_vec();
    }
    if let Ok(index) = selector.parse::<usize>() {
        return items.get(index).cloned().into_iter().collect();
    }
    // ?(@.type=="Ready")
    let filter = selector.trim_start_matches("?(").trim_end_matches(')');
    let Some((lhs, rhs)) = filter.split_once("==") else {
        return Vec::new();
    };
    let key = lhs.trim().trim_start_matches("@.");
    let wanted = rhs.trim().trim_matches('"').trim_matches('\'');
    items
        .iter()
        .filter(|item| {
            item.get(key)
                .map(|v| v.as_str().map_or(v.to_string(), str::to_owned))
                .as_deref()
                == Some(wanted)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn t1_json_path_indexes_wildcards_filters_and_missing_values() {
        let object = json!({
            "metadata": {"name": "a"},
            "spec": {"ports": [{"port": 80}, {"port": 443}], "hosts": [{"name": "x"}, {"name": "y"}]},
            "status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}
        });
        assert_eq!(evaluate(".spec.ports[0].port", &object), [json!(80)]);
        assert_eq!(evaluate(".spec.ports[*].port", &object), [json!(80), json!(443)]);
        assert_eq!(evaluate("{.spec.hosts[1].name}", &object), [json!("y")]);
        assert_eq!(
            evaluate(r#".status.conditions[?(@.type=="Ready")].status"#, &object),
            [json!("True")]
        );
        assert!(evaluate(".spec.ports[5].port", &object).is_empty());
        assert!(evaluate(".status.nothing", &object).is_empty());
    }
}
