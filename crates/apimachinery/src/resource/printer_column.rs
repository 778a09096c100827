//! A custom resource's printer column, as its CRD declares it; [`crate::table`] prints them.

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// The column's header, as kubectl shows it in capitals.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub column_type: String,
    /// An OpenAPI format refining the type (`int32`, `date-time` ...); empty when none is given.
    pub format: String,
    /// Shown in the Table's column definitions; empty when none is given.
    pub description: String,
    /// 0 for columns kubectl always shows; above 0 only with `-o wide`.
    pub priority: i64,
    /// Simple JSONPath such as `.spec.table` or `.status.conditions[?(@.type=="Ready")].status`.
    pub json_path: String,
}
