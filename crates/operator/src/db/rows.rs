//! The rows PostgresWriter owns. Table names are validated identifiers and always quoted; every value
//! is a bound parameter. `owner_uid` records which resource incarnation wrote a row, so a row someone
//! else wrote, or a deleted-and-recreated resource's old row, is never overwritten or deleted silently.
//! Each statement that writes or deletes a row also records or forgets it in the ledger
//! ([`super::ledger`]), in the same statement, so the two never disagree.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use super::{
    DatabaseMetrics, OwnedRow, Pool, Released, TableName,
    checked_tables::CheckedTables,
    ledger::{self, Ledger},
    pool::Client,
    statement::{is_undefined_table, query},
    table_creation::{self, TableGates},
};
use crate::{Error, Result};

/// One resource's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `<namespace>/<name>`.
    pub id: String,
    /// The uid of the resource that wrote it.
    pub owner_uid: String,
    pub name: String,
    pub age: i32,
    pub country: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableState {
    Ready,
    Missing,
    Incompatible(String),
}

/// What syncing one row found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpsertOutcome {
    Written,
    Unchanged,
    /// The id exists with another owner's uid; nothing was written.
    OwnedByOther(String),
}

const COLUMNS: &[(&str, &str)] = &[
    ("id", "text"),
    ("name", "text"),
    ("age", "integer"),
    ("country", "text"),
    ("owner_uid", "text"),
];

/// What a table with the columns `found` (name, type) is to PostgresWriter; no columns: it is missing.
fn table_state(found: &[(String, String)]) -> TableState {
    if found.is_empty() {
        return TableState::Missing;
    }
    let mut problems = Vec::new();
    for (column, expected) in COLUMNS {
        match found.iter().find(|(name, _)| name == column) {
            None => problems.push(format!("column {column} is missing")),
            Some((_, actual)) if actual != expected => {
                problems.push(format!("column {column} is {actual}, expected {expected}"))
            }
            Some(_) => {}
        }
    }
    if problems.is_empty() {
        TableState::Ready
    } else {
        TableState::Incompatible(problems.join("; "))
    }
}

/// The SQL PostgresWriter runs, each statement over many rows at once (see [`super::RowWriter`]).
#[derive(Clone)]
pub struct RowStore {
    pool: Pool,
    metrics: DatabaseMetrics,
    checked_tables: Arc<Mutex<CheckedTables>>,
    /// One check or creation of a table at a time; the ledger's too.
    gates: Arc<TableGates>,
    ledger: Ledger,
}

impl RowStore {
    pub fn new(pool: Pool, metrics: DatabaseMetrics) -> Self {
        let gates = Arc::<TableGates>::default();
        RowStore {
            ledger: Ledger::new(pool.clone(), metrics.clone(), gates.clone()),
            pool,
            metrics,
            checked_tables: Arc::new(Mutex::new(CheckedTables::new(Instant::now()))),
            gates,
        }
    }

    /// Creates the ledger unless it was found recently.
    pub async fn ensure_ledger(&self) -> Result<()> {
        self.ledger.ensure().await
    }

    /// Every row the ledger lists, after applying the releases that were waiting for the database.
    pub async fn owned_rows(&self) -> Result<Vec<OwnedRow>> {
        self.ledger.owned_rows().await
    }

    /// Takes `rows` off the ledger: they stay in their tables, no longer ours. When the database does
    /// not answer, the release is kept in this process and retried before every sweep.
    pub async fn release(&self, rows: Vec<OwnedRow>) -> Released {
        self.ledger.release(rows).await
    }

    /// Deletes `orphans`, rows whose resource is gone, with their ledger entries (see
    /// [`super::ledger`]); returns how many rows went.
    pub async fn sweep(&self, orphans: Vec<OwnedRow>) -> Result<u64> {
        self.ledger.sweep(orphans).await
    }

    pub fn metrics(&self) -> &DatabaseMetrics {
        &self.metrics
    }

    pub fn pool_status(&self) -> deadpool_postgres::Status {
        self.pool.status()
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Trust `table`'s columns no longer: a statement on it failed in a way a hand edit explains.
    /// The prepared statements go too: one prepared before a column's type changed would keep failing.
    pub fn forget_table(&self, table: &TableName) {
        self.checked_tables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(table);
        self.ledger.forget();
        self.pool.manager().statement_caches.clear();
    }

    fn recently_checked(&self, table: &TableName) -> bool {
        self.checked_tables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_fresh(table, Instant::now())
    }

    /// Checks the table's columns; creates it when missing and `auto_create` is on. The ledger is the
    /// operator's own and is always created. Concurrent reconciles of one table wait for one check
    /// (see [`super::table_creation`]), so a burst of first writers creates it once.
    pub async fn ensure_table(&self, table: &TableName, auto_create: bool) -> Result<TableState> {
        self.ensure_ledger().await?;
        if self.recently_checked(table) {
            return Ok(TableState::Ready);
        }
        let _turn = self.gates.turn(table.as_str()).await;
        // Found by the reconcile this one waited for.
        if self.recently_checked(table) {
            return Ok(TableState::Ready);
        }
        let started = Instant::now();
        let state = self
            .pool
            .run(async |client| Self::check_table(client, table, auto_create).await)
            .await;
        self.metrics.observe("schema", 1, started.elapsed());
        if let Ok(TableState::Ready) = state {
            self.checked_tables
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(table.clone(), Instant::now());
        }
        state
    }

    /// The table's state as it is now, changing nothing: what admission checks before a PostgresWriter
    /// is stored.
    pub async fn inspect_table(&self, table: &TableName) -> Result<TableState> {
        self.pool
            .run(async |client| Self::check_table(client, table, false).await)
            .await
    }

    async fn check_table(client: &mut Client, table: &TableName, auto_create: bool) -> Result<TableState> {
        let found = Self::columns(client, table).await?;
        if !found.is_empty() || !auto_create {
            return Ok(table_state(&found));
        }
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
             country text NOT NULL, owner_uid text NOT NULL)",
            table.quoted()
        );
        table_creation::create_once(client, table.as_str(), &create).await?;
        // Read again: whoever created it first (another replica, a person) chose its columns.
        Ok(table_state(&Self::columns(client, table).await?))
    }

    /// The table's columns and their types; none when it does not exist.
    async fn columns(client: &Client, table: &TableName) -> Result<Vec<(String, String)>> {
        let columns = client
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&table.as_str()],
            )
            .await
            .map_err(Error::Database)?;
        Ok(columns.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// Inserts each row whose id the table does not hold yet, and records it in the ledger, in one
    /// statement; returns the ids inserted. The rows of new resources, most of a burst, need nothing
    /// more: this statement scans no table, so PostgreSQL plans and runs it in about a quarter of the
    /// time of [`Self::sync_many`]'s, which the rows left over (found in the table) go on to. An id
    /// the table holds is neither written nor locked here. `rows` must not repeat an id.
    pub async fn insert_new(&self, client: &Client, table: &TableName, rows: &[&Row]) -> Result<Vec<String>> {
        let columns = Columns::of(rows);
        let sql = format!(
            "WITH written AS ( \
               INSERT INTO {t} AS target (id, owner_uid, name, age, country) \
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[]) \
               ON CONFLICT (id) DO NOTHING \
               RETURNING target.id, target.owner_uid), \
             {record} \
             SELECT id FROM written",
            t = table.quoted(),
            record = ledger::RECORD_INSERTED_ROWS,
        );
        let started = Instant::now();
        let table_name = table.as_str();
        let inserted = query(client, &sql, &columns.params(&table_name))
            .await
            .map_err(Error::Database)?;
        self.metrics.observe("insert", rows.len(), started.elapsed());
        self.metrics.rows_written.inc_by(inserted.len() as u64);
        Ok(inserted.iter().map(|row| row.get(0)).collect())
    }

    /// Makes each row hold its values in one statement, which reads, compares and writes inside
    /// PostgreSQL (one round trip per batch): a row already holding its values is neither written nor
    /// locked, and a row another owner wrote is left alone. Returns each id's outcome, or `None` for a
    /// row that changed hands or values while the statement ran (look again). `rows` must not repeat
    /// an id.
    pub async fn sync_many(
        &self,
        client: &Client,
        table: &TableName,
        rows: &[&Row],
    ) -> Result<HashMap<String, Option<UpsertOutcome>>> {
        let t = table.quoted();
        let columns = Columns::of(rows);
        // All parts of the statement see the same snapshot, so `stored` is the table before the insert.
        // (`= ANY($1)` lets the planner use the primary key: it cannot see through a join with unnest.)
        // The insert's own guard repeats the comparison for rows a concurrent writer inserted since.
        let sql = format!(
            "WITH input (id, owner_uid, name, age, country) AS ( \
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[])), \
             stored AS ( \
               SELECT cur.id, cur.owner_uid, \
                 (cur.name, cur.age, cur.country) IS NOT DISTINCT FROM (i.name, i.age, i.country) AS same \
               FROM {t} AS cur JOIN input AS i ON cur.id = i.id WHERE cur.id = ANY($1)), \
             written AS ( \
               INSERT INTO {t} AS target (id, owner_uid, name, age, country) \
               SELECT i.* FROM input AS i LEFT JOIN stored AS s ON s.id = i.id \
               WHERE s.id IS NULL OR (s.owner_uid = i.owner_uid AND NOT s.same) \
               ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country \
               WHERE target.owner_uid = EXCLUDED.owner_uid \
               AND (target.name, target.age, target.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country) \
               RETURNING target.id), \
             {record} \
             SELECT i.id, w.id IS NOT NULL, s.owner_uid, coalesce(s.same, false) \
             FROM input AS i LEFT JOIN stored AS s ON s.id = i.id LEFT JOIN written AS w ON w.id = i.id",
            record = ledger::RECORD_WRITTEN_ROWS,
        );
        let started = Instant::now();
        let table_name = table.as_str();
        let outcomes = query(client, &sql, &columns.params(&table_name))
            .await
            .map_err(Error::Database)?;
        self.metrics.observe("upsert", rows.len(), started.elapsed());
        let owner_of: HashMap<&str, &str> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.owner_uid.as_str()))
            .collect();
        let mut written = 0;
        let outcomes = outcomes
            .iter()
            .map(|outcome| {
                let (id, wrote, owner, same): (String, bool, Option<String>, bool) =
                    (outcome.get(0), outcome.get(1), outcome.get(2), outcome.get(3));
                let outcome = match owner {
                    _ if wrote => {
                        written += 1;
                        Some(UpsertOutcome::Written)
                    }
                    Some(owner) if Some(owner.as_str()) != owner_of.get(id.as_str()).copied() => {
                        Some(UpsertOutcome::OwnedByOther(owner))
                    }
                    Some(_) if same => Some(UpsertOutcome::Unchanged),
                    // Inserted or changed by someone else while the statement ran.
                    _ => None,
                };
                (id, outcome)
            })
            .collect();
        self.metrics.rows_written.inc_by(written);
        Ok(outcomes)
    }

    /// Deletes each (id, owner_uid) row, only if that owner wrote it, and forgets it in the ledger, in
    /// one statement. Returns the ids deleted; a table that is gone holds nothing to delete.
    pub async fn delete_many(
        &self,
        client: &mut Client,
        table: &TableName,
        keys: &[(&str, &str)],
    ) -> Result<Vec<String>> {
        let ids: Vec<&str> = keys.iter().map(|(id, _)| *id).collect();
        let owners: Vec<&str> = keys.iter().map(|(_, owner)| *owner).collect();
        let started = Instant::now();
        let sql = format!(
            "WITH gone (id, owner_uid) AS (SELECT * FROM unnest($1::text[], $2::text[])), \
             {forget} \
             DELETE FROM {t} USING gone WHERE {t}.id = ANY($1) AND {t}.id = gone.id AND {t}.owner_uid = gone.owner_uid \
             RETURNING {t}.id",
            t = table.quoted(),
            forget = ledger::FORGET_GONE_ROWS,
        );
        let table_name = table.as_str();
        let mut deleted = query(client, &sql, &[&ids, &owners, &table_name]).await;
        if is_undefined_table(&deleted) {
            // The ledger or the table is missing. With the ledger there, the table is gone and holds
            // nothing; its rows are forgotten all the same.
            ledger::create(client).await?;
            deleted = query(client, &sql, &[&ids, &owners, &table_name]).await;
            if is_undefined_table(&deleted) {
                ledger::forget(client, table, keys).await?;
                deleted = Ok(Vec::new());
            }
        }
        self.metrics.observe("delete", keys.len(), started.elapsed());
        let rows = deleted.map_err(Error::Database)?;
        self.metrics.rows_deleted.inc_by(rows.len() as u64);
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

/// A batch's rows as the column arrays its statements take (`$1` to `$5`).
struct Columns<'a> {
    ids: Vec<&'a str>,
    owners: Vec<&'a str>,
    names: Vec<&'a str>,
    ages: Vec<i32>,
    countries: Vec<&'a str>,
}

impl<'a> Columns<'a> {
    fn of(rows: &[&'a Row]) -> Self {
        let column = |f: fn(&'a Row) -> &'a str| rows.iter().map(|r| f(r)).collect::<Vec<&str>>();
        Columns {
            ids: column(|r| &r.id),
            owners: column(|r| &r.owner_uid),
            names: column(|r| &r.name),
            ages: rows.iter().map(|r| r.age).collect(),
            countries: column(|r| &r.country),
        }
    }

    /// The statement's parameters: the five columns, then the table's name (`$6`, for the ledger).
    fn params<'p>(&'p self, table: &'p &str) -> [&'p (dyn tokio_postgres::types::ToSql + Sync); 6] {
        [
            &self.ids,
            &self.owners,
            &self.names,
            &self.ages,
            &self.countries,
            table,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(spec: &[(&str, &str)]) -> Vec<(String, String)> {
        spec.iter()
            .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn a_table_is_ready_missing_or_incompatible_by_its_columns() {
        assert_eq!(table_state(&[]), TableState::Missing);
        assert_eq!(table_state(&columns(COLUMNS)), TableState::Ready);
        let mut extra = columns(COLUMNS);
        extra.push(("note".into(), "text".into()));
        assert_eq!(
            table_state(&extra),
            TableState::Ready,
            "columns of others' may be added"
        );
        let typed = columns(&[
            ("id", "text"),
            ("name", "text"),
            ("age", "text"),
            ("country", "text"),
        ]);
        assert_eq!(
            table_state(&typed),
            TableState::Incompatible(
                "column age is text, expected integer; column owner_uid is missing".into()
            )
        );
    }
}
