//! `meta.k8s.io/v1` Table rendering (T1, T2).

use serde_json::Value;

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
    let _ = (
        columns,
        objects,
        with_headers,
        resource_version,
        continue_token,
        now,
    );
    todo!("T1")
}
