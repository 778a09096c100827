//! Running a statement, as the row store and the ledger both do.

use tokio_postgres::error::SqlState;

use super::pool::Client;

/// Whether `result` failed because a table the statement names does not exist.
pub(super) fn is_undefined_table<T>(result: &Result<T, tokio_postgres::Error>) -> bool {
    matches!(result, Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE))
}

/// Runs `sql` as a statement prepared once per connection: the batch statements are the same text
/// every time for a table, and parsing and planning them each time cost PostgreSQL more CPU than
/// running them on a small batch.
pub(super) async fn query(
    client: &Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
    let statement = client.prepare_cached(sql).await?;
    client.query(&statement, params).await
}
