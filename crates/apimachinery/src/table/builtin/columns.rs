//! The columns of the built-in kinds' tables, and where each column's description comes from.

use serde_json::Value;

use crate::{
    openapi::definitions::{OBJECT_META, definitions},
    table::ColumnDefinition,
};

/// Where a column's description comes from.
#[derive(Debug, Clone, Copy)]
pub enum Doc {
    /// The documentation of a field: (definition, property).
    Field(&'static str, &'static str),
    /// Its first paragraph, without the list of an enum's values.
    Summary(&'static str, &'static str),
    /// Fixed text, for columns that show no single field.
    Text(&'static str),
}

/// One column of a built-in kind.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The header, as kube-apiserver names it (`Ready`, `Up-to-date`).
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub column_type: &'static str,
    /// An OpenAPI format refining the type (`name` for the Name column); mostly empty.
    pub format: &'static str,
    /// 0 for columns kubectl always shows; above 0 only with `-o wide`.
    pub priority: i64,
    /// Where its description comes from.
    pub doc: Doc,
}

/// A column of type string, shown by default.
pub const fn column(name: &'static str, doc: Doc) -> Column {
    Column {
        name,
        column_type: "string",
        format: "",
        priority: 0,
        doc,
    }
}

/// A column shown with `-o wide` only.
pub const fn wide(name: &'static str, doc: Doc) -> Column {
    Column {
        priority: 1,
        ..column(name, doc)
    }
}

/// The Name column every built-in kind starts with.
pub const NAME: Column = Column {
    format: "name",
    ..column("Name", Doc::Field(OBJECT_META, "name"))
};
/// The Age column: the time since `metadata.creationTimestamp`.
pub const AGE: Column = column("Age", Doc::Field(OBJECT_META, "creationTimestamp"));
/// The wide Containers column of the kinds that have a Pod template.
pub const CONTAINERS: Column = wide(
    "Containers",
    Doc::Text("Names of each container in the template."),
);
/// The wide Images column of the kinds that have a Pod template.
pub const IMAGES: Column = wide(
    "Images",
    Doc::Text("Images referenced by each container in the template."),
);

/// A built-in kind's printer.
#[derive(Debug)]
pub struct BuiltInTable {
    /// Its columns, Name first, in the order they are shown.
    pub columns: &'static [Column],
    /// Every cell of a row, wide ones included: kube-apiserver sends them all and kubectl hides the
    /// columns of priority above 0 unless asked for `-o wide`.
    pub cells: fn(&Value, jiff::Timestamp) -> Vec<Value>,
}

impl BuiltInTable {
    /// Its columns as a Table's `columnDefinitions`, each description resolved from its [`Doc`].
    pub fn column_definitions(&self) -> Vec<ColumnDefinition> {
        self.columns
            .iter()
            .map(|c| ColumnDefinition {
                name: c.name.into(),
                column_type: c.column_type.into(),
                format: c.format.into(),
                description: describe(c.doc),
                priority: c.priority,
            })
            .collect()
    }
}

fn describe(doc: Doc) -> String {
    match doc {
        Doc::Field(definition, field) => definitions()
            .field_description(definition, field)
            .unwrap_or_default()
            .to_owned(),
        Doc::Summary(definition, field) => {
            let full = definitions()
                .field_description(definition, field)
                .unwrap_or_default();
            full.split("\n\n").next().unwrap_or_default().to_owned()
        }
        Doc::Text(text) => text.to_owned(),
    }
}
