//! The ledger of rows (`"postgres-writer-rows"`) against a real, throwaway PostgreSQL: its statements
//! look each row up by its key whatever PostgreSQL's statistics say, and a ledger keyed the way earlier
//! versions made it (table first) is re-keyed where the operator's role may, and used as it is where
//! it may not.

mod support;

use std::time::Duration;

use operator::{
    db::{
        DatabaseConfig, LEDGER_TABLE, Pool, Row, RowStore, TableName, TableState, UpsertOutcome,
        throwaway::ThrowawayPostgres,
    },
    runtime::metrics::Metrics,
};
use support::{eventually, postgres_writer::connect};

/// Resources of each pass: enough that the ledger spans more pages than PostgreSQL would rather read
/// whole than look rows up in (with a few hundred it rightly reads them whole), and that reading the
/// table's whole share of it for each statement costs a thousand reads per row.
const RESOURCES: usize = 4_000;

/// Rows per statement, as a burst of reconciles batches them.
const BATCH: usize = 4;

/// The ledger as versions before its key was turned made it.
const TABLE_FIRST_LEDGER: &str = "CREATE TABLE \"postgres-writer-rows\" (row_table text NOT NULL, \
     row_id text NOT NULL, owner_uid text NOT NULL, PRIMARY KEY (row_table, row_id))";

fn row(pass: usize, i: usize) -> Row {
    Row {
        id: format!("default/w{i:05}"),
        owner_uid: format!("uid-{pass}-{i}"),
        name: format!("student {i}"),
        age: 20,
        country: "nz".into(),
    }
}

/// A throwaway PostgreSQL and a superuser's connection to it.
async fn postgres() -> (ThrowawayPostgres, tokio_postgres::Client) {
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let sql = connect(&pg).await;
    (pg, sql)
}

/// The operator's SQL over a pool of its own, connecting as `url` says.
fn store(url: &str) -> (RowStore, Pool) {
    let pool = DatabaseConfig::from_url(url).connect().expect("pool");
    (RowStore::new(pool.clone(), Metrics::new().database), pool)
}

/// Writes the rows of `pass` into `table` in batches, each statement as a reconcile burst sends it
/// (the new rows inserted), then syncs each batch again as a resync does (the rows found settled).
async fn write_all(store: &RowStore, pool: &Pool, table: &TableName, pass: usize) {
    let rows: Vec<Row> = (0..RESOURCES).map(|i| row(pass, i)).collect();
    let client = pool.get().await.expect("a connection");
    for batch in rows.chunks(BATCH) {
        let batch: Vec<&Row> = batch.iter().collect();
        let inserted = store
            .insert_new(&client, table, &batch)
            .await
            .expect("rows inserted");
        assert_eq!(inserted.len(), batch.len(), "every row of the pass is new");
    }
    for batch in rows.chunks(BATCH) {
        let batch: Vec<&Row> = batch.iter().collect();
        let outcomes = store
            .sync_many(&client, table, &batch)
            .await
            .expect("rows synced");
        assert!(
            outcomes.values().all(|o| *o == Some(UpsertOutcome::Unchanged)),
            "settled rows are left as they are: {outcomes:?}"
        );
    }
}

/// Deletes the rows of `pass` from `table` in batches.
async fn delete_all(store: &RowStore, pool: &Pool, table: &TableName, pass: usize) {
    let rows: Vec<Row> = (0..RESOURCES).map(|i| row(pass, i)).collect();
    let mut client = pool.get().await.expect("a connection");
    for batch in rows.chunks(BATCH) {
        let keys: Vec<(&str, &str)> = batch
            .iter()
            .map(|r| (r.id.as_str(), r.owner_uid.as_str()))
            .collect();
        store
            .delete_many(&mut client, table, &keys)
            .await
            .expect("rows deleted");
    }
}

/// The ledger's columns in the order of its primary key.
async fn ledger_key(sql: &tokio_postgres::Client) -> Vec<String> {
    sql.query(
        "SELECT a.attname::text FROM pg_index i \
           JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true \
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
         WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.n",
        &[&format!("\"{LEDGER_TABLE}\"")],
    )
    .await
    .expect("the ledger's key")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// What PostgreSQL's cumulative statistics say was done to the ledger: rows inserted, rows deleted and
/// rows read by any scan. Backends report them when idle or gone, so callers wait for the counts they
/// expect.
async fn ledger_activity(sql: &tokio_postgres::Client) -> (i64, i64, i64) {
    let row = sql
        .query_one(
            "SELECT n_tup_ins, n_tup_del, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) \
             FROM pg_stat_user_tables WHERE relid = to_regclass($1)",
            &[&format!("\"{LEDGER_TABLE}\"")],
        )
        .await
        .expect("the ledger's statistics");
    (row.get(0), row.get(1), row.get(2))
}

/// Writes and deletes the rows of `pass` over a pool of its own, then waits until PostgreSQL's
/// statistics count them; returns how many ledger rows all scans have read so far.
async fn write_and_delete(
    pg: &ThrowawayPostgres,
    sql: &tokio_postgres::Client,
    table: &TableName,
    pass: usize,
) -> i64 {
    let (store, pool) = store(&pg.url());
    write_all(&store, &pool, table, pass).await;
    delete_all(&store, &pool, table, pass).await;
    // Closed connections report their counts as they go.
    drop((store, pool));
    let done = (pass * RESOURCES) as i64;
    eventually(
        &format!("the ledger's statistics to count pass {pass}"),
        Duration::from_secs(30),
        || async {
            let (inserted, deleted, read) = ledger_activity(sql).await;
            (inserted == done && deleted == done).then_some(read)
        },
    )
    .await
}

/// After a table's rows were all deleted and PostgreSQL analysed the ledger as autovacuum does (its
/// statistics now say: no rows, over pages of deleted ones), a burst of new rows is still looked up
/// row by row. Planned from those statistics by the table's entries, each statement read every entry
/// of its table in the ledger: the burst's cost grew with the square of its size.
#[tokio::test]
async fn rows_written_after_a_mass_delete_are_looked_up_by_key_whatever_the_statistics() {
    let (pg, sql) = postgres().await;
    let table = TableName::parse("students").unwrap();
    let (store, _pool) = store(&pg.url());
    store.ensure_ledger().await.expect("the ledger");
    assert_eq!(
        store.ensure_table(&table, true).await.expect("table"),
        TableState::Ready
    );

    let before = write_and_delete(&pg, &sql, &table, 1).await;
    sql.batch_execute(&format!("ANALYZE \"{LEDGER_TABLE}\""))
        .await
        .expect("analyse");
    let (pages, tuples): (i32, f32) = sql
        .query_one(
            "SELECT relpages, reltuples FROM pg_class WHERE oid = to_regclass($1)",
            &[&format!("\"{LEDGER_TABLE}\"")],
        )
        .await
        .map(|r| (r.get(0), r.get(1)))
        .expect("the ledger's statistics");
    assert!(
        pages > 0 && tuples == 0.0,
        "the statistics say no rows over {pages} pages ({tuples} rows)"
    );

    let read = write_and_delete(&pg, &sql, &table, 2).await - before;
    // A row's entry is read when the row is synced again and when it is deleted (inserted, it is not
    // there yet to be read): two reads per row, where reading the table's share of the ledger for
    // each statement was a thousand.
    let per_row = read as f64 / RESOURCES as f64;
    assert!(
        per_row < 4.0,
        "the ledger's statements read {read} rows for {RESOURCES} rows written and deleted ({per_row:.1} each)"
    );
}

/// A new row whose id the ledger still lists for an earlier owner (that row deleted by hand, say) is
/// recorded as the new owner's, so that a sweep would treat it as the new resource's; a row another
/// owner holds is left to it by the new-row statement and reported by the compare statement.
#[tokio::test]
async fn a_new_row_takes_over_its_ids_stale_ledger_entry_and_leaves_anothers_row_alone() {
    let (pg, sql) = postgres().await;
    let table = TableName::parse("students").unwrap();
    let (store, pool) = store(&pg.url());
    assert_eq!(
        store.ensure_table(&table, true).await.expect("table"),
        TableState::Ready
    );
    let client = pool.get().await.expect("a connection");
    let (earlier, other) = (row(1, 1), row(1, 2));
    store
        .insert_new(&client, &table, &[&earlier, &other])
        .await
        .expect("rows inserted");
    sql.batch_execute(&format!("DELETE FROM students WHERE id = '{}'", earlier.id))
        .await
        .expect("a row deleted by hand");

    let (later, contender) = (row(2, 1), row(2, 2));
    let inserted = store
        .insert_new(&client, &table, &[&later, &contender])
        .await
        .expect("new rows");
    assert_eq!(
        inserted,
        std::slice::from_ref(&later.id),
        "only the free id is inserted"
    );
    let owner: String = sql
        .query_one(
            &format!("SELECT owner_uid FROM \"{LEDGER_TABLE}\" WHERE row_id = $1"),
            &[&later.id],
        )
        .await
        .expect("the ledger's entry")
        .get(0);
    assert_eq!(owner, later.owner_uid, "the entry is the new owner's");
    let outcomes = store
        .sync_many(&client, &table, &[&contender])
        .await
        .expect("the other row compared");
    assert_eq!(
        outcomes[&contender.id],
        Some(UpsertOutcome::OwnedByOther(other.owner_uid.clone()))
    );
    let stored: String = sql
        .query_one("SELECT owner_uid FROM students WHERE id = $1", &[&other.id])
        .await
        .expect("the other row")
        .get(0);
    assert_eq!(stored, other.owner_uid, "the other owner's row is untouched");
}

/// A ledger keyed table first, as earlier versions made it, is re-keyed (row first) the first time
/// the operator looks for it, with every entry kept; written and deleted through as before.
#[tokio::test]
async fn a_ledger_keyed_table_first_is_re_keyed_with_its_entries() {
    let (pg, sql) = postgres().await;
    sql.batch_execute(&format!(
        "{TABLE_FIRST_LEDGER}; INSERT INTO \"{LEDGER_TABLE}\" VALUES ('students', 'default/kept', 'uid-kept')"
    ))
    .await
    .expect("an old ledger");
    assert_eq!(ledger_key(&sql).await, ["row_table", "row_id"]);

    let table = TableName::parse("students").unwrap();
    let (store, pool) = store(&pg.url());
    store.ensure_ledger().await.expect("the ledger");
    assert_eq!(ledger_key(&sql).await, ["row_id", "row_table"], "re-keyed");
    assert_ledger_works(&store, &pool, &table, &sql).await;
}

/// A role that does not own an old ledger (a database administrator made it, and granted it only
/// reading and writing) cannot re-key it: the operator goes on with the ledger as it is.
#[tokio::test]
async fn a_ledger_keyed_table_first_that_the_role_may_not_alter_is_used_as_it_is() {
    let (pg, sql) = postgres().await;
    sql.batch_execute(&format!(
        "CREATE ROLE writer LOGIN PASSWORD 'writer-password'; \
         {TABLE_FIRST_LEDGER}; \
         INSERT INTO \"{LEDGER_TABLE}\" VALUES ('students', 'default/kept', 'uid-kept'); \
         CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
           country text NOT NULL, owner_uid text NOT NULL); \
         GRANT SELECT, INSERT, UPDATE, DELETE ON students, \"{LEDGER_TABLE}\" TO writer"
    ))
    .await
    .expect("an old ledger and a role that may only read and write it");
    let url = format!(
        "postgres://writer:writer-password@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port()
    );

    let table = TableName::parse("students").unwrap();
    let (store, pool) = store(&url);
    store.ensure_ledger().await.expect("the ledger, as it is");
    assert_eq!(ledger_key(&sql).await, ["row_table", "row_id"], "left as it was");
    assert_ledger_works(&store, &pool, &table, &sql).await;
}

/// The ledger records a row written and forgets it deleted, and still lists the entry made before.
async fn assert_ledger_works(store: &RowStore, pool: &Pool, table: &TableName, sql: &tokio_postgres::Client) {
    let entries = async || -> Vec<String> {
        sql.query(
            &format!("SELECT row_id FROM \"{LEDGER_TABLE}\" ORDER BY row_id"),
            &[],
        )
        .await
        .expect("the ledger")
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    assert_eq!(
        store.ensure_table(table, true).await.expect("table"),
        TableState::Ready
    );
    let written = row(1, 1);
    let client = pool.get().await.expect("a connection");
    store
        .sync_many(&client, table, &[&written])
        .await
        .expect("row written");
    assert_eq!(entries().await, ["default/kept", "default/w00001"]);
    drop(client);
    let mut client = pool.get().await.expect("a connection");
    store
        .delete_many(
            &mut client,
            table,
            &[(written.id.as_str(), written.owner_uid.as_str())],
        )
        .await
        .expect("row deleted");
    assert_eq!(entries().await, ["default/kept"]);
}
