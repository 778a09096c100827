//! The ledger: which rows this operator wrote, in a table of its own. A row is ours only while the
//! ledger lists it, so the orphan sweep never touches a row another application wrote into the same
//! table (whatever its owner_uid looks like), nor one a user released with
//! `demo.yash.com/leave-row`.
//!
//! The statement that writes a row records it and the statement that deletes a row forgets it (data-
//! modifying CTEs of the same statement: both or neither). Rows written before the ledger existed are
//! recorded the first time their resource is reconciled and finds the row holding its own uid; a row
//! whose resource was gone before that is not known to be ours and is never swept.
//!
//! The ledger's name holds a hyphen, which a PostgresWriter's table name (`^[a-z_][a-z0-9_]*$`) cannot,
//! so no resource can write into it.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use super::{
    DatabaseMetrics, Pool, TableName,
    pool::Client,
    statement::{is_undefined_table, query},
    table_creation::{self, TableGates},
};
use tokio_postgres::error::SqlState;

use crate::{Error, Result};

/// The ledger table, in the schema the rows' tables are in (the connection's current schema).
pub const LEDGER_TABLE: &str = "postgres-writer-rows";
const LEDGER: &str = "\"postgres-writer-rows\"";

/// Keyed row first: every statement looks its rows up by id (`row_id = ANY(...)`, which PostgreSQL
/// uses to seek the key directly), and the sweep reads the whole ledger. With the table first, the
/// planner could read a table's whole share of the ledger instead, and chose to whenever its statistics
/// said the ledger was empty: as autovacuum finds it after a table's rows were all deleted, until it
/// analyses it again, so a burst of new rows then cost each statement a read of all its table's
/// entries.
const CREATE: &str = "CREATE TABLE IF NOT EXISTS \"postgres-writer-rows\" (\
     row_table text NOT NULL, row_id text NOT NULL, owner_uid text NOT NULL, \
     PRIMARY KEY (row_id, row_table))";

/// Whether the ledger exists, and whether its key starts with the table, as versions before the key
/// was turned made it.
const FIND: &str = "SELECT c.oid IS NOT NULL, coalesce(( \
       SELECT a.attname = 'row_table' FROM pg_index AS i \
         JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
       WHERE i.indrelid = c.oid AND i.indisprimary), false) \
     FROM (SELECT to_regclass($1) AS oid) AS c";

/// Turns a table-first key row first, in place (the entries stay; the ledger is locked while its
/// index is rebuilt). Checks again, under the lock another replica doing the same takes.
const REKEY: &str = "DO $$ \
     DECLARE key name; \
     BEGIN \
       SELECT con.conname INTO key FROM pg_constraint AS con \
         JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1] \
       WHERE con.conrelid = '\"postgres-writer-rows\"'::regclass AND con.contype = 'p' AND a.attname = 'row_table'; \
       IF key IS NOT NULL THEN \
         EXECUTE format('ALTER TABLE \"postgres-writer-rows\" DROP CONSTRAINT %I, ADD PRIMARY KEY (row_id, row_table)', key); \
       END IF; \
     END $$";

/// How long the ledger, once found, is trusted to exist (as the rows' tables are); a statement that
/// fails on a missing ledger forgets it at once.
const CHECK_TTL: Duration = Duration::from_secs(30);

/// Part of the row-syncing statement (see `RowStore::sync_many`, `$6` the table): records every row it
/// wrote, and every row it found already holding the resource's own uid (written before the ledger
/// existed). A row already recorded for its owner is not written again, so a resync of settled rows
/// writes nothing.
pub(super) const RECORD_WRITTEN_ROWS: &str = "recorded AS ( \
     INSERT INTO \"postgres-writer-rows\" AS l (row_table, row_id, owner_uid) \
     SELECT $6, i.id, i.owner_uid FROM input AS i \
       LEFT JOIN stored AS s ON s.id = i.id LEFT JOIN written AS w ON w.id = i.id \
     WHERE (w.id IS NOT NULL OR s.owner_uid = i.owner_uid) \
       AND NOT EXISTS (SELECT 1 FROM \"postgres-writer-rows\" AS k \
         WHERE k.row_id = ANY($1) AND k.row_table = $6 AND k.row_id = i.id AND k.owner_uid = i.owner_uid) \
     ON CONFLICT (row_id, row_table) DO UPDATE SET owner_uid = EXCLUDED.owner_uid)";

/// Part of the new-row statement (see `RowStore::insert_new`, `$6` the table): records every row it
/// inserted. An entry left for the id (its row deleted by hand, or by another owner's resource) is
/// made this owner's.
pub(super) const RECORD_INSERTED_ROWS: &str = "recorded AS ( \
     INSERT INTO \"postgres-writer-rows\" AS l (row_table, row_id, owner_uid) \
     SELECT $6, w.id, w.owner_uid FROM written AS w \
     ON CONFLICT (row_id, row_table) DO UPDATE SET owner_uid = EXCLUDED.owner_uid)";

/// Part of the row-deleting statement (`gone(id, owner_uid)`, `$1` the ids, `$3` the table): forgets
/// those rows.
pub(super) const FORGET_GONE_ROWS: &str = "forgotten AS ( \
     DELETE FROM \"postgres-writer-rows\" AS l USING gone \
     WHERE l.row_id = ANY($1) AND l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid)";

/// One row the ledger says this operator wrote.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnedRow {
    pub table: TableName,
    pub id: String,
    pub owner_uid: String,
}

/// The ledger and what it keeps in this process: whether it was found recently, and the releases
/// that could not reach the database yet. Cheap to clone: every clone shares the same state.
#[derive(Clone)]
pub(super) struct Ledger {
    pool: Pool,
    metrics: DatabaseMetrics,
    /// Shared with the row store: its tables' checks and the ledger's take turns by name.
    gates: Arc<TableGates>,
    checked_at: Arc<Mutex<Option<Instant>>>,
    /// The role may not re-key a ledger keyed table first: asked once per process.
    rekey_refused: Arc<AtomicBool>,
    pending_releases: Arc<Mutex<HashSet<OwnedRow>>>,
}

impl Ledger {
    pub(super) fn new(pool: Pool, metrics: DatabaseMetrics, gates: Arc<TableGates>) -> Self {
        Ledger {
            pool,
            metrics,
            gates,
            checked_at: Arc::default(),
            rekey_refused: Arc::default(),
            pending_releases: Arc::default(),
        }
    }

    /// Trust no longer that the ledger exists: a statement failed in a way its loss explains.
    pub(super) fn forget(&self) {
        *self.checked_at.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn recently_checked(&self) -> bool {
        self.checked_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() < CHECK_TTL)
    }

    fn checked(&self) {
        *self.checked_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    fn pending(&self) -> Vec<OwnedRow> {
        let pending = self.pending_releases.lock().unwrap_or_else(|p| p.into_inner());
        pending.iter().cloned().collect()
    }

    fn is_pending(&self, row: &OwnedRow) -> bool {
        self.pending_releases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(row)
    }

    fn defer(&self, rows: impl IntoIterator<Item = OwnedRow>) {
        self.pending_releases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(rows);
    }

    fn done(&self, rows: &[OwnedRow]) {
        let mut pending = self.pending_releases.lock().unwrap_or_else(|p| p.into_inner());
        for row in rows {
            pending.remove(row);
        }
    }
}

/// What [`FIND`] says of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Missing,
    /// Keyed table first, as earlier versions made it.
    TableFirst,
    RowFirst,
}

async fn find(client: &Client) -> Result<Found> {
    let row = client
        .query_one(FIND, &[&LEDGER])
        .await
        .map_err(Error::Database)?;
    Ok(match (row.get(0), row.get(1)) {
        (false, _) => Found::Missing,
        (true, true) => Found::TableFirst,
        (true, false) => Found::RowFirst,
    })
}

/// Creates the ledger if it is missing, once however many callers find it missing at once (see
/// [`table_creation`]). Looked up first: `CREATE TABLE IF NOT EXISTS` needs the right to create tables
/// even when the table exists, which a role given the ledger ready-made may lack.
pub(super) async fn create(client: &mut Client) -> Result<()> {
    match find(client).await? {
        Found::Missing => create_missing(client).await,
        Found::TableFirst | Found::RowFirst => Ok(()),
    }
}

async fn create_missing(client: &mut Client) -> Result<()> {
    table_creation::create_once(client, LEDGER_TABLE, CREATE).await
}

/// Turns a ledger keyed table first row first (see [`CREATE`]). Returns false when the role may not
/// alter it (it does not own the ledger): every statement still finds its rows, only more slowly
/// while PostgreSQL's statistics say the ledger is empty.
async fn rekey(client: &mut Client) -> Result<bool> {
    match table_creation::under_lock(client, LEDGER_TABLE, REKEY).await {
        Ok(()) => {
            tracing::info!(ledger = LEDGER_TABLE, "the ledger is keyed row first now");
            Ok(true)
        }
        Err(error) if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {
            tracing::warn!(
                ledger = LEDGER_TABLE,
                %error,
                "the ledger keeps its table-first key: its owner can turn it (docs/operators.md, \"The ledger\")"
            );
            Ok(false)
        }
        Err(error) => Err(Error::Database(error)),
    }
}

/// Forgets the rows `keys` of `table` in the ledger alone (their table is gone).
pub(super) async fn forget(client: &Client, table: &TableName, keys: &[(&str, &str)]) -> Result<()> {
    let ids: Vec<&str> = keys.iter().map(|(id, _)| *id).collect();
    let owners: Vec<&str> = keys.iter().map(|(_, owner)| *owner).collect();
    let sql = format!(
        "DELETE FROM {LEDGER} AS l USING unnest($1::text[], $2::text[]) AS gone(id, owner_uid) \
         WHERE l.row_id = ANY($1) AND l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid"
    );
    let table = table.as_str();
    match query(client, &sql, &[&ids, &owners, &table]).await {
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(()),
        other => other.map(drop).map_err(Error::Database),
    }
}

/// What releasing a row did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The ledger no longer lists the row.
    Now,
    /// The database did not answer: the release waits in this process and is applied before any
    /// sweep, which skips the row until then. A caller that lets the resource go must also record
    /// the release where a restarted process finds it (the PostgresWriter controller's ConfigMap).
    Deferred,
}

impl Ledger {
    /// Creates the ledger unless it was found recently.
    pub(super) async fn ensure(&self) -> Result<()> {
        if self.recently_checked() {
            return Ok(());
        }
        // Its name holds a hyphen, so it shares its gate with no table of rows.
        let _turn = self.gates.turn(LEDGER_TABLE).await;
        if self.recently_checked() {
            return Ok(());
        }
        let started = Instant::now();
        self.pool
            .run(async |client| match find(client).await? {
                Found::Missing => create_missing(client).await,
                Found::TableFirst if !self.rekey_refused.load(Ordering::Relaxed) => {
                    let rekeyed = rekey(client).await?;
                    self.rekey_refused.store(!rekeyed, Ordering::Relaxed);
                    Ok(())
                }
                Found::TableFirst | Found::RowFirst => Ok(()),
            })
            .await?;
        self.metrics.observe("schema", 1, started.elapsed());
        self.checked();
        Ok(())
    }

    /// Every row the ledger lists, after applying the releases that were waiting for the database.
    pub(super) async fn owned_rows(&self) -> Result<Vec<OwnedRow>> {
        self.apply_pending_releases().await?;
        let started = Instant::now();
        let listed = self
            .pool
            .run(async |client| {
                let sql = format!("SELECT row_table, row_id, owner_uid FROM {LEDGER}");
                let rows = client.query(&sql, &[]).await;
                if is_undefined_table(&rows) {
                    return Ok(Vec::new());
                }
                rows.map_err(Error::Database)
            })
            .await?;
        self.metrics.observe("list", listed.len(), started.elapsed());
        Ok(listed
            .iter()
            .filter_map(|row| {
                Some(OwnedRow {
                    table: TableName::parse(row.get(0)).ok()?,
                    id: row.get(1),
                    owner_uid: row.get(2),
                })
            })
            .collect())
    }

    /// Takes `rows` off the ledger: they stay in their tables, no longer ours. When the database does
    /// not answer, the release is kept in this process and retried before every sweep.
    pub(super) async fn release(&self, rows: Vec<OwnedRow>) -> Released {
        match self.release_now(&rows).await {
            Ok(()) => Released::Now,
            Err(error) => {
                tracing::warn!(%error, "releasing rows failed; retried before the next orphan sweep");
                self.defer(rows);
                Released::Deferred
            }
        }
    }

    async fn release_now(&self, rows: &[OwnedRow]) -> Result<()> {
        let tables: Vec<&str> = rows.iter().map(|r| r.table.as_str()).collect();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let owners: Vec<&str> = rows.iter().map(|r| r.owner_uid.as_str()).collect();
        let sql = format!(
            "DELETE FROM {LEDGER} AS l USING unnest($1::text[], $2::text[], $3::text[]) AS r(t, id, owner_uid) \
             WHERE l.row_id = ANY($2) AND l.row_table = r.t AND l.row_id = r.id AND l.owner_uid = r.owner_uid"
        );
        self.pool
            .run(
                async |client| match client.execute(&sql, &[&tables, &ids, &owners]).await {
                    Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(()),
                    other => other.map(drop).map_err(Error::Database),
                },
            )
            .await
    }

    async fn apply_pending_releases(&self) -> Result<()> {
        let pending = self.pending();
        if pending.is_empty() {
            return Ok(());
        }
        self.release_now(&pending).await?;
        self.done(&pending);
        Ok(())
    }

    /// Deletes `orphans`, rows whose resource is gone, together with their ledger entries: only rows
    /// the ledger still lists for that owner when the statement runs (not one released meanwhile)
    /// and not one whose release is waiting. Returns how many rows went.
    pub(super) async fn sweep(&self, orphans: Vec<OwnedRow>) -> Result<u64> {
        let mut by_table: BTreeMap<TableName, Vec<(String, String)>> = BTreeMap::new();
        for orphan in orphans {
            if self.is_pending(&orphan) {
                continue;
            }
            by_table
                .entry(orphan.table)
                .or_default()
                .push((orphan.id, orphan.owner_uid));
        }
        let mut swept = 0;
        for (table, keys) in by_table {
            let keys: Vec<(&str, &str)> = keys.iter().map(|(i, o)| (i.as_str(), o.as_str())).collect();
            let started = Instant::now();
            let deleted = self
                .pool
                .run(async |client| sweep_table(client, &table, &keys).await)
                .await?;
            self.metrics.observe("sweep", keys.len(), started.elapsed());
            for id in &deleted {
                tracing::info!(%table, row = %id, "orphan row deleted");
            }
            self.metrics.rows_deleted.inc_by(deleted.len() as u64);
            swept += deleted.len() as u64;
        }
        Ok(swept)
    }
}

/// One statement: the ledger entries go first and drive the row deletes, so a row is deleted only
/// if this statement took its entry (one released, or forgotten by a concurrent delete, is skipped).
async fn sweep_table(client: &Client, table: &TableName, keys: &[(&str, &str)]) -> Result<Vec<String>> {
    let ids: Vec<&str> = keys.iter().map(|(id, _)| *id).collect();
    let owners: Vec<&str> = keys.iter().map(|(_, owner)| *owner).collect();
    let sql = format!(
        "WITH taken AS ( \
           DELETE FROM {LEDGER} AS l USING unnest($1::text[], $2::text[]) AS gone(id, owner_uid) \
           WHERE l.row_id = ANY($1) AND l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid \
           RETURNING l.row_id, l.owner_uid) \
         DELETE FROM {t} USING taken WHERE {t}.id = taken.row_id AND {t}.owner_uid = taken.owner_uid \
         RETURNING {t}.id",
        t = table.quoted()
    );
    let table_name = table.as_str();
    let deleted = query(client, &sql, &[&ids, &owners, &table_name]).await;
    if is_undefined_table(&deleted) {
        // The table was dropped (or the ledger, which then lists nothing): its rows are gone already.
        forget(client, table, keys).await?;
        return Ok(Vec::new());
    }
    Ok(deleted
        .map_err(Error::Database)?
        .iter()
        .map(|row| row.get(0))
        .collect())
}
