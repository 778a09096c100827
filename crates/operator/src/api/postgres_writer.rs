//! PostgresWriter (`demo.yash.com/v1`): each resource is exactly one row in a PostgreSQL table.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Set to `"true"` to let a PostgresWriter be deleted without deleting its row (for example while the
/// database is gone for good). The finalizer is then released at once.
pub const LEAVE_ROW_ANNOTATION: &str = "demo.yash.com/leave-row";

/// The finalizer that holds a resource until its row's delete has committed.
pub const FINALIZER: &str = "demo.yash.com/row";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "demo.yash.com",
    version = "v1",
    kind = "PostgresWriter",
    namespaced,
    status = "PostgresWriterStatus",
    shortname = "pgw",
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table"}"#,
    printcolumn = r#"{"name":"Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Age","type":"integer","jsonPath":".spec.age"}"#,
    printcolumn = r#"{"name":"Country","type":"string","jsonPath":".spec.country"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Created","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct PostgresWriterSpec {
    /// The table the row lives in: a lower-case PostgreSQL identifier (quoted in SQL all the same).
    #[schemars(regex(pattern = r"^[a-z_][a-z0-9_]*$"), length(min = 1, max = 63))]
    pub table: String,
    pub name: String,
    #[schemars(range(min = 0, max = 2147483647))]
    pub age: i64,
    pub country: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostgresWriterStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The table the row lives in now; differs from spec.table only mid-move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// When the row was last written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write_time: Option<String>,
}

/// A status condition, as `metav1.Condition`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    #[test]
    fn crd_validates_table_identifier_and_age_range_with_printer_columns() {
        let crd = serde_json::to_value(PostgresWriter::crd()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["table"]["pattern"], "^[a-z_][a-z0-9_]*$");
        assert_eq!(spec["properties"]["table"]["maxLength"], 63);
        assert_eq!(spec["properties"]["age"]["minimum"], 0.0);
        assert_eq!(spec["properties"]["age"]["maximum"], 2147483647.0);
        let mut required: Vec<&str> = spec["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort();
        assert_eq!(required, ["age", "country", "name", "table"]);
        let columns: Vec<&str> = crd["spec"]["versions"][0]["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Table", "Name", "Age", "Country", "Ready", "Created"]);
        assert_eq!(crd["spec"]["names"]["shortNames"][0], "pgw");
    }
}
