//! What every table shares: its column definitions, as kube-apiserver sends them beside the rows,
//! and the Name column's cell.

use serde_json::{Value, json};

use crate::openapi::definitions::{OBJECT_META, definitions};

/// One entry of a Table's `columnDefinitions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDefinition {
    /// The header, as kubectl shows it in capitals.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub column_type: String,
    /// An OpenAPI format refining the type (`name` for the Name column); mostly empty.
    pub format: String,
    /// What the column shows, mostly the documentation of the field it reads.
    pub description: String,
    /// 0 for columns kubectl always shows; above 0 only with `-o wide`.
    pub priority: i64,
}

impl ColumnDefinition {
    /// The Name column every kind starts with.
    pub fn name() -> ColumnDefinition {
        ColumnDefinition {
            name: "Name".into(),
            column_type: "string".into(),
            format: "name".into(),
            description: object_meta_doc("name"),
            priority: 0,
        }
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "name": self.name, "type": self.column_type, "format": self.format,
            "description": self.description, "priority": self.priority,
        })
    }
}

pub(super) fn object_meta_doc(field: &str) -> String {
    definitions()
        .field_description(OBJECT_META, field)
        .unwrap_or_default()
        .to_owned()
}

/// The Name column's cell of `object`.
pub(super) fn name_cell(object: &Value) -> Value {
    json!(
        object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    )
}
