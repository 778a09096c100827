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

/// A PostgresWriter with no namespace: the `Api` it is created through gives it one.
pub fn writer(name: &str, table: &str, student: &str, age: i64, country: &str) -> PostgresWriter {
    serde_json::from_value(json!({
        "apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name},
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
        .find(|c| &*c.type_ == "Ready")?;
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

/// Waits until `name` reports Ready=False/DatabaseUnavailable with a message that holds `cause`,
/// and returns the message. After sessions were cut under the pool, a first attempt may fail on one
/// of them ("connection closed"); the retries that follow (5 ms apart, doubling) open new sessions,
/// whose refusal the condition then says.
pub async fn wait_refused_saying(
    api: &Api<PostgresWriter>,
    name: &str,
    cause: &str,
    limit: Duration,
) -> String {
    eventually(
        &format!("{name} to be refused saying {cause:?}"),
        limit,
        || async {
            let writer = api.get(name).await.ok()?;
            let message = super::database_access::ready_message(&writer).unwrap_or_default();
            (ready_reason(&writer).as_deref() == Some("False/DatabaseUnavailable") && message.contains(cause))
                .then_some(message)
        },
    )
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

/// The (table, id) of every row the operator's ledger lists.
pub async fn ledger(sql: &tokio_postgres::Client) -> Vec<(String, String)> {
    let table = operator::db::LEDGER_TABLE;
    let query = format!("SELECT row_table, row_id FROM \"{table}\" ORDER BY row_table, row_id");
    select_or_none(sql, table, &query)
        .await
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Every process of a throwaway PostgreSQL stopped (SIGSTOP): its connections stay open and nothing
/// answers on them, as with a hung host or a half-open connection. Dropping it resumes them (SIGCONT),
/// also when the test fails first.
pub struct Frozen {
    pids: Vec<String>,
}

impl Frozen {
    pub fn start(pg: &ThrowawayPostgres) -> Frozen {
        let pid_file = pg.path().join("data/postmaster.pid");
        let postmaster = std::fs::read_to_string(&pid_file)
            .expect("postmaster.pid")
            .lines()
            .next()
            .expect("the postmaster's pid")
            .trim()
            .to_owned();
        // The postmaster first, so that it forks no backend after its children are listed.
        let mut frozen = Frozen { pids: Vec::new() };
        signal("STOP", std::slice::from_ref(&postmaster));
        frozen.pids.push(postmaster.clone());
        let children = std::process::Command::new("pgrep")
            .args(["-P", &postmaster])
            .output()
            .expect("pgrep runs");
        let children: Vec<String> = String::from_utf8_lossy(&children.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert!(!children.is_empty(), "the postmaster has backends and workers");
        signal("STOP", &children);
        frozen.pids.extend(children);
        frozen
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("CONT", &self.pids);
    }
}

fn signal(name: &str, pids: &[String]) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .args(pids)
        .status()
        .expect("kill runs");
    // Not an assert: this also runs while a failing test unwinds.
    if !status.success() {
        eprintln!("kill -{name} {pids:?} failed: {status}");
    }
}
