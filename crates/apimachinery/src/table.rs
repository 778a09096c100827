//! `meta.k8s.io/v1` Table rendering (T1, T2).

use serde_json::{Value, json};

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub column_type: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    /// Simple JSONPath such as `.spec.table` or `.status.conditions[?(@.type=="Ready")].status`.
    pub json_path: String,
}

fn age_column() -> PrinterColumn {
    PrinterColumn {
        name: "Age".into(),
        column_type: "date".into(),
        format: String::new(),
        description:
            "CreationTimestamp is a timestamp representing the server time when this object was created."
                .into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }
}

/// Renders objects as a Table. `columns` are the kind's printer columns (Name is added first; with no
/// columns, Name and Age). `with_headers` false omits `columnDefinitions` (T2: watch events after the
/// first). `now` computes the humanised ages of `date` columns.
pub fn render_table(
    columns: &[PrinterColumn],
    objects: &[&Value],
    with_headers: bool,
    resource_version: &str,
    continue_token: Option<&str>,
    now: jiff::Timestamp,
) -> Value {
    let columns: Vec<PrinterColumn> = if columns.is_empty() {
        vec![age_column()]
    } else {
        columns.to_vec()
    };
    let definitions: Vec<Value> = if with_headers {
        std::iter::once(json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}))
            .chain(columns.iter().map(|c| {
                json!({"name": c.name, "type": c.column_type, "format": c.format, "description": c.description, "priority": c.priority})
            }))
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut cells = vec![object.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
            cells.extend(columns.iter().map(|c| cell(c, object, now)));
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
                },
            })
        })
        .collect();
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": definitions, "rows": rows})
}

fn cell(column: &PrinterColumn, object: &Value, now: jiff::Timestamp) -> Value {
    let values = evaluate(&column.json_path, object);
    let value = match values.len() {
        0 => return Value::Null,
        1 => values[0].clone(),
        _ => json!(
            values
                .iter()
                .map(|v| v.as_str().map_or(v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    if column.column_type == "date"
        && let Some(at) = value.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        return json!(human_duration(now.duration_since(at).as_secs().max(0) as u64));
    }
    value
}

/// The subset of JSONPath CRD printer columns use: `.a.b`, `.a[0]`, `.a[*].b`, `.a[?(@.k=="v")].b`.
fn evaluate(path: &str, object: &Value) -> Vec<Value> {
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

/// kubectl's `duration.HumanDuration`: "5s", "5m3s", "3h4m", "2d3h", "45d", "3y45d".
pub fn human_duration(seconds: u64) -> String {
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let d = days % 365;
        if d == 0 {
            format!("{}y", days / 365)
        } else {
            format!("{}y{d}d", days / 365)
        }
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_columns_cells_and_humanised_ages() {
        let column = |name: &str, kind: &str, path: &str| PrinterColumn {
            name: name.into(),
            column_type: kind.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        };
        let object = json!({
            "metadata": {"name": "w1", "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"table": "students", "age": 23},
            "status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}
        });
        let columns = [
            column("Table", "string", ".spec.table"),
            column("Age", "integer", ".spec.age"),
            column(
                "Ready",
                "string",
                r#".status.conditions[?(@.type=="Ready")].status"#,
            ),
            column("Missing", "string", ".status.nothing"),
            column("Created", "date", ".metadata.creationTimestamp"),
        ];
        let now: jiff::Timestamp = "2026-11-22T10:05:03Z".parse().unwrap();
        let table = render_table(&columns, &[&object], true, "7", None, now);
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["w1", "students", 23, "True", null, "5m3s"])
        );
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        let plain = render_table(&[], &[&object], false, "7", None, now);
        assert_eq!(plain["columnDefinitions"], json!([]));
        assert_eq!(plain["rows"][0]["cells"], json!(["w1", "5m3s"]));
    }

    #[test]
    fn t1_json_path_indexes_wildcards_and_missing_values() {
        let object = json!({
            "metadata": {"name": "a"},
            "spec": {"ports": [{"port": 80}, {"port": 443}], "hosts": [{"name": "x"}, {"name": "y"}]}
        });
        assert_eq!(evaluate(".spec.ports[0].port", &object), [json!(80)]);
        assert_eq!(evaluate(".spec.ports[*].port", &object), [json!(80), json!(443)]);
        assert_eq!(evaluate("{.spec.hosts[1].name}", &object), [json!("y")]);
        assert!(evaluate(".spec.ports[5].port", &object).is_empty());
        assert!(evaluate(".status.conditions[?(@.type==\"Ready\")].status", &object).is_empty());
        let column = PrinterColumn {
            name: "Hosts".into(),
            column_type: "string".into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: ".spec.hosts[*].name".into(),
        };
        let table = render_table(
            &[column],
            &[&object],
            true,
            "3",
            Some("next"),
            jiff::Timestamp::now(),
        );
        assert_eq!(table["rows"][0]["cells"], json!(["a", "x,y"]));
        assert_eq!(
            table["metadata"],
            json!({"resourceVersion": "3", "continue": "next"})
        );
    }

    #[test]
    fn t1_human_durations_match_kubectl() {
        for (seconds, text) in [
            (5, "5s"),
            (119, "119s"),
            (303, "5m3s"),
            (1800, "30m"),
            (11040, "3h4m"),
            (183600, "2d3h"),
            (45 * 86400, "45d"),
            ((3 * 365 + 45) * 86400, "3y45d"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
    }
}
