//! Custom resources' columns: Name, then the CRD version's `additionalPrinterColumns` (an Age column
//! when it declares none), each cell the first value its JSONPath selects, typed as the column says.

use serde_json::{Value, json};

use super::{
    columns::{ColumnDefinition, name_cell},
    duration, json_path,
};
use crate::resource::PrinterColumn;

/// What a CRD serves when it declares no columns.
fn age_column() -> PrinterColumn {
    PrinterColumn {
        name: "Age".into(),
        column_type: "date".into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }
}

fn or_default(columns: &[PrinterColumn]) -> Vec<PrinterColumn> {
    if columns.is_empty() {
        vec![age_column()]
    } else {
        columns.to_vec()
    }
}

/// Name, then `columns` (Age when there are none); a column without a description gets the one
/// kube-apiserver gives it, naming its JSONPath.
pub fn definitions(columns: &[PrinterColumn]) -> Vec<ColumnDefinition> {
    let mut definitions = vec![ColumnDefinition::name()];
    definitions.extend(or_default(columns).into_iter().map(|c| {
        let description = if c.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                c.json_path
            )
        } else {
            c.description
        };
        ColumnDefinition {
            name: c.name,
            column_type: c.column_type,
            format: c.format,
            description,
            priority: c.priority,
        }
    }));
    definitions
}

/// `object`'s row: its name, then one cell per column of [`definitions`]; dates are shown as ages
/// up to `now`.
pub fn cells(columns: &[PrinterColumn], object: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut cells = vec![name_cell(object)];
    cells.extend(or_default(columns).iter().map(|c| cell(c, object, now)));
    cells
}

/// Only the first value a path selects is shown, and only if it has the column's type.
fn cell(column: &PrinterColumn, object: &Value, now: jiff::Timestamp) -> Value {
    let Some(value) = json_path::evaluate(&column.json_path, object).into_iter().next() else {
        return Value::Null;
    };
    match column.column_type.as_str() {
        "string" => match value {
            Value::String(_) => value,
            other => json!(other.to_string()),
        },
        "integer" => value
            .as_i64()
            .or_else(|| value.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        "number" => value.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => value.as_bool().map_or(Value::Null, |b| json!(b)),
        "date" => match value.as_str() {
            Some(text) => match text.parse::<jiff::Timestamp>() {
                Ok(at) => json!(duration::human_duration(now.as_second() - at.as_second())),
                Err(_) => json!("<invalid>"),
            },
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, kind: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            column_type: kind.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        }
    }

    #[test]
    fn t1_cells_take_the_first_value_of_the_column_type() {
        let object = json!({
            "metadata": {"name": "w1", "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"table": "students", "age": 23, "hosts": [{"name": "x"}, {"name": "y"}], "when": "soon"},
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
            column("Hosts", "string", ".spec.hosts[*].name"),
            column("Text", "integer", ".spec.table"),
            column("AgeText", "string", ".spec.age"),
            column("When", "date", ".spec.when"),
        ];
        let now: jiff::Timestamp = "2026-11-22T10:05:03Z".parse().unwrap();
        assert_eq!(
            cells(&columns, &object, now),
            [
                json!("w1"),
                json!("students"),
                json!(23),
                json!("True"),
                Value::Null,
                json!("5m3s"),
                json!("x"),
                Value::Null,
                json!("23"),
                json!("<invalid>")
            ]
        );
    }

    #[test]
    fn t1_a_crd_without_columns_shows_its_age_and_descriptions_name_the_path() {
        let object = json!({"metadata": {"name": "w1", "creationTimestamp": "2026-11-22T10:00:00Z"}});
        let now: jiff::Timestamp = "2026-11-22T10:00:05Z".parse().unwrap();
        assert_eq!(cells(&[], &object, now), [json!("w1"), json!("5s")]);
        let definitions = definitions(&[]);
        assert_eq!(definitions[1].name, "Age");
        assert_eq!(definitions[1].column_type, "date");
        assert_eq!(
            definitions[1].description,
            "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp"
        );
        let mut described = column("Table", "string", ".spec.table");
        described.description = "The table".into();
        assert_eq!(super::definitions(&[described])[1].description, "The table");
    }
}
