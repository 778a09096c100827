//! The bench's PostgreSQL: one role per operator, each with a schema of its name (so each has its
//! own tables and ledger), and pg_stat_statements, which counts the statements each role runs.

use operator::db::throwaway::ThrowawayPostgres;

use crate::operators::Kind;

/// Loads pg_stat_statements into the throwaway cluster (a library loaded at start, so the server
/// restarts once) and creates the extension.
pub async fn track_statements(pg: &ThrowawayPostgres) {
    let sql = connect(&pg.url()).await;
    sql.batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        .await
        .expect("ALTER SYSTEM");
    drop(sql);
    pg.stop().await.expect("PostgreSQL stops");
    pg.restart().await.expect("PostgreSQL starts again");
    connect(&pg.url())
        .await
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .expect("pg_stat_statements (the postgresql package's contrib modules)");
}

/// A superuser connection.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (sql, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("psql");
    tokio::spawn(connection);
    sql
}

/// Creates `kind`'s role, with a random password, and its schema; returns its DATABASE_URL.
pub async fn role(sql: &tokio_postgres::Client, pg: &ThrowawayPostgres, kind: Kind) -> String {
    let role = kind.role();
    // Hex: nothing in it needs quoting in SQL or in a URL.
    let password: String = rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    sql.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD '{password}'; CREATE SCHEMA {role} AUTHORIZATION {role}"
    ))
    .await
    .expect("the operator's role and schema");
    // The schema named after the role comes first in the default search_path ("$user", public).
    format!(
        "postgres://{role}:{password}@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port()
    )
}

/// Statements run so far by `kind`'s role (pg_stat_statements' `calls`: executions, prepared or
/// not, each batch statement once whatever rows it holds; table creation included).
pub async fn statements(sql: &tokio_postgres::Client, kind: Kind) -> i64 {
    sql.query_one(
        "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
         WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = $1)",
        &[&kind.role()],
    )
    .await
    .map(|row| row.get(0))
    .expect("pg_stat_statements")
}

/// The statements `kind`'s role ran most often over the whole run, with their calls and the time
/// PostgreSQL spent executing them (ms, summed over the calls), for `BENCH_STATEMENTS=top`: what the
/// statement counts and PostgreSQL's CPU are made of.
pub async fn top_statements(sql: &tokio_postgres::Client, kind: Kind) -> Vec<(i64, f64, String)> {
    sql.query(
        "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) \
         FROM pg_stat_statements WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = $1) \
         ORDER BY calls DESC LIMIT 10",
        &[&kind.role()],
    )
    .await
    .expect("pg_stat_statements")
    .iter()
    .map(|row| (row.get(0), row.get(1), row.get(2)))
    .collect()
}

/// Rows in `kind`'s table `table`; 0 while the table does not exist.
pub async fn count_rows(sql: &tokio_postgres::Client, kind: Kind, table: &str) -> i64 {
    match sql
        .query_one(
            &format!("SELECT count(*) FROM \"{}\".\"{table}\"", kind.role()),
            &[],
        )
        .await
    {
        Ok(row) => row.get(0),
        Err(_) => 0,
    }
}
