//! The validating webhook for PostgresWriter: a `spec.table` that exists with columns this operator
//! cannot write is refused before the object is stored, where the author sees it, instead of in a
//! status condition later. The controller keeps its own check, for tables altered after admission.
//!
//! Only a table known to be wrong is refused. A missing table is admitted (it may be created before
//! the row is written, or by the operator with --auto-create-tables), and so is every table while the
//! database does not answer: each with a warning that says so.

use kube::core::{
    DynamicObject,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation},
};
use serde_json::Value;

use crate::db::{RowStore, TableName, TableState};

/// How the webhook reads a table's columns: the operator's row store, and whether it creates tables.
#[derive(Clone)]
pub struct TableCheck {
    pub store: RowStore,
    pub auto_create: bool,
}

/// What admission says about a PostgresWriter's table.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Allow,
    Warn(String),
    Deny(String),
}

pub async fn review(body: &[u8], tables: Option<&TableCheck>) -> Result<Value, String> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(|e| format!("not an AdmissionReview: {e}"))?;
    let request: AdmissionRequest<DynamicObject> = review.try_into().map_err(|e| format!("{e}"))?;
    let mut response = AdmissionResponse::from(&request);
    match verdict(&request, tables).await {
        Verdict::Allow => {}
        Verdict::Warn(warning) => response.warnings = Some(vec![warning]),
        Verdict::Deny(why) => response = response.deny(why),
    }
    serde_json::to_value(response.into_review()).map_err(|e| e.to_string())
}

fn table_of(object: Option<&DynamicObject>) -> Option<&str> {
    object?.data["spec"]["table"].as_str()
}

async fn verdict(request: &AdmissionRequest<DynamicObject>, tables: Option<&TableCheck>) -> Verdict {
    let Some(table) = table_of(request.object.as_ref()) else {
        return Verdict::Allow;
    };
    // An update that keeps the table is not refused for a table altered since: the controller
    // reports that one, and the author may be fixing something else meanwhile.
    if request.operation == Operation::Update && table_of(request.old_object.as_ref()) == Some(table) {
        return Verdict::Allow;
    }
    // Not an identifier: the schema's pattern refuses it with its own message.
    let (Ok(name), Some(tables)) = (TableName::parse(table), tables) else {
        return Verdict::Allow;
    };
    judge(&name, tables.auto_create, tables.store.inspect_table(&name).await)
}

/// The verdict for `table` in the state the database reported.
pub fn judge(table: &TableName, auto_create: bool, state: crate::Result<TableState>) -> Verdict {
    match state {
        Ok(TableState::Ready) => Verdict::Allow,
        Ok(TableState::Missing) if auto_create => Verdict::Allow,
        Ok(TableState::Missing) => Verdict::Warn(format!(
            "table {table} does not exist yet: the row is written once someone creates it"
        )),
        Ok(TableState::Incompatible(why)) => Verdict::Deny(format!(
            "spec.table: table {table} cannot hold PostgresWriter rows ({why}): alter the table or name another one"
        )),
        Err(error) => Verdict::Warn(format!(
            "table {table} was not checked ({error}): the operator checks it before writing the row"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_table_known_to_be_wrong_is_refused() {
        let table = TableName::parse("students").unwrap();
        assert_eq!(judge(&table, false, Ok(TableState::Ready)), Verdict::Allow);
        assert_eq!(judge(&table, true, Ok(TableState::Missing)), Verdict::Allow);
        assert!(matches!(
            judge(&table, false, Ok(TableState::Missing)),
            Verdict::Warn(_)
        ));
        assert_eq!(
            judge(
                &table,
                false,
                Ok(TableState::Incompatible(
                    "column age is text, expected integer".into()
                ))
            ),
            Verdict::Deny(
                "spec.table: table students cannot hold PostgresWriter rows (column age is text, expected \
                 integer): alter the table or name another one"
                    .into()
            )
        );
        let down = Err(crate::Error::DatabaseUnavailable("connection refused".into()));
        assert!(matches!(judge(&table, false, down), Verdict::Warn(w) if w.contains("not checked")));
    }
}
