//! PostgresWriter (`demo.yash.com/v1`): each resource is exactly one row in a PostgreSQL table.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Set to `"true"` to let a PostgresWriter be deleted without deleting its row (for example while the
/// database is gone for good). The finalizer is then released at once.
pub const LEAVE_ROW_ANNOTATION: &str = "demo.yash.com/leave-row";

/// The finalizer that holds a resource until its row's delete has committed.
pub const FINALIZER: &str = "demo.yash.com/row";

// The text fields here, in the status and in its condition are `Box<str>` rather than `String`: none is
// ever grown, and the 8 bytes each saves count once per resource in the controller's cache. They keep a
// PostgresWriter (which the cache holds in an `Arc`) within jemalloc's 512-byte size class rather than
// its 640-byte one, and a condition within the 96-byte class rather than the 160-byte one: together 1.8
// MiB less at 10,000 resources. `cached_objects_keep_to_their_size_classes` guards both. (Not a doc
// comment: the spec's doc is its description in the CRD.)
/// The row a PostgresWriter asks for. Its id is the resource's `<namespace>/<name>`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "demo.yash.com",
    version = "v1",
    kind = "PostgresWriter",
    doc = "A PostgresWriter is one row of a PostgreSQL table, with id `<namespace>/<name>`. The operator writes the row when the resource is created, updates it when the spec changes, moves it when spec.table changes, and deletes it when the resource is deleted: the finalizer demo.yash.com/row holds the resource until the delete has committed. To delete the resource and leave the row, annotate it demo.yash.com/leave-row=true.",
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
    /// The table the row lives in: 1 to 63 lower-case letters, digits and underscores, not starting
    /// with a digit. A missing table is created with the columns id, name, age, country and owner_uid,
    /// unless the operator runs with --auto-create-tables=false (then the resource reports
    /// TableMissing). Changing it moves the row to the new table.
    #[schemars(regex(pattern = r"^[a-z_][a-z0-9_]*$"), length(min = 1, max = 63))]
    pub table: Box<str>,
    /// The row's `name` column: any text.
    pub name: Box<str>,
    /// The row's `age` column: a whole number from 0 to 2147483647.
    #[schemars(range(min = 0, max = 2147483647))]
    pub age: i64,
    /// The row's `country` column: any text.
    pub country: Box<str>,
}

/// What the operator last did with the row.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostgresWriterStatus {
    /// The metadata.generation this status describes. Lower than the resource's generation: the
    /// latest change to the spec is not written yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// One condition, Ready. True (reason Synced) when the row holds the spec's values. False when it
    /// cannot, with a reason and a message that says what to do: DatabaseUnavailable (retried with
    /// back-off), TableIncompatible or TableMissing (a person must fix or create the table; looked at
    /// again at each resync), RowConflict (a row with this id was written by someone else and is left
    /// alone), DeletePending (the row cannot be deleted yet, so the resource stays), InvalidSpec (the
    /// spec cannot be written as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The table the row is in now. It differs from spec.table only while the row moves to a new
    /// table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<Box<str>>,
    /// When the operator last wrote the row (RFC 3339). A resync that finds the row already right
    /// leaves it unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write_time: Option<Box<str>>,
}

/// One aspect of the resource's state; the operator reports a single one, Ready.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// What the condition is about: Ready.
    #[serde(rename = "type")]
    pub type_: Box<str>,
    /// True, False or Unknown.
    pub status: Box<str>,
    /// Why the condition has this status, as one CamelCase word that programs may match on.
    pub reason: Box<str>,
    /// The same for people: what happened and, when something is wrong, what to do.
    pub message: Box<str>,
    /// When status last changed (RFC 3339).
    pub last_transition_time: Box<str>,
    /// The metadata.generation the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// Whether this is the condition `type_` with status `status`, e.g. `is("Ready", "True")`.
    pub fn is(&self, type_: &str, status: &str) -> bool {
        *self.type_ == *type_ && *self.status == *status
    }
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    #[test]
    fn cached_objects_keep_to_their_size_classes() {
        // An `Arc`'s allocation: two counts and the object.
        let cached = 2 * std::mem::size_of::<usize>() + std::mem::size_of::<PostgresWriter>();
        assert!(cached <= 512, "an Arc<PostgresWriter> takes {cached} bytes");
        let condition = std::mem::size_of::<Condition>();
        assert!(condition <= 96, "a Condition takes {condition} bytes");
    }

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
