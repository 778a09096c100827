//! A custom resource's printer column, as its CRD declares it; [`crate::table`] prints them.

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
