//! What the PostgresWriter tests share: a PostgreSQL client, resources, and their Ready reason.

use std::time::Duration;

use kube::Api;
use operator::{api::postgres_writer::PostgresWriter, db::throwaway::ThrowawayPostgres};
use serde_json::json;

use super::eventually;

pub async fn connect(pg: &ThrowawayPostgres) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("psql connects");
    tokio::spawn(connection);
    client
}

pub fn writer(name: &str, table: &str, student: &str, age: i64, country: &str) -> PostgresWriter {
    serde_json::from_value(json!({
        "apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"table": table, "name": student, "age": age, "country": country}
    }))
    .expect("valid PostgresWriter")
}

/// `status/reason` of the Ready condition, e.g. `True/Synced`.
pub fn ready_reason(writer: &PostgresWriter) -> Option<String> {
    let condition = writer
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some(format!("{}/{}", condition.status, condition.reason))
}

/// Waits until `name` reports `reason` (as [`ready_reason`] spells it) and returns it.
pub async fn wait_reason(
    api: &Api<PostgresWriter>,
    name: &str,
    reason: &str,
    limit: Duration,
) -> PostgresWriter {
    eventually(&format!("{name} to report {reason}"), limit, || async {
        let writer = api.get(name).await.ok()?;
        (ready_reason(&writer).as_deref() == Some(reason)).then_some(writer)
    })
    .await
}

/// A row as the tests read it: id, name, age, country.
pub type StoredRow = (String, String, i32, String);

/// Every row of `table`, by id; none when the table does not exist. Any other failure (a dead
/// connection, say) fails the test: read as "no rows", it would make an emptiness check pass.
pub async fn rows(sql: &tokio_postgres::Client, table: &str) -> Vec<StoredRow> {
    let query = format!("SELECT id, name, age, country FROM \"{table}\" ORDER BY id");
    select_or_none(sql, table, &query)
        .await
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// The rows `query` (on `table`) selects; none when `table` does not exist; any other failure fails
/// the test.
pub async fn select_or_none(
    sql: &tokio_postgres::Client,
    table: &str,
    query: &str,
) -> Vec<tokio_postgres::Row> {
    match sql.query(query, &[]).await {
        Ok(rows) => rows,
        Err(error) if error.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Vec::new(),
        Err(error) => panic!("reading table {table}: {error}"),
    }
}
