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
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use super::{
    RowStore, TableName,
    pool::Client,
    rows::{is_undefined_table, query},
    table_creation,
};
use crate::{Error, Result};

/// The ledger table, in the schema the rows' tables are in (the connection's current schema).
pub const LEDGER_TABLE: &str = "postgres-writer-rows";
const LEDGER: &str = "\"postgres-writer-rows\"";

const CREATE: &str = "CREATE TABLE IF NOT EXISTS \"postgres-writer-rows\" (\
     row_table text NOT NULL, row_id text NOT NULL, owner_uid text NOT NULL, \
     PRIMARY KEY (row_table, row_id))";

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
         WHERE k.row_table = $6 AND k.row_id = i.id AND k.owner_uid = i.owner_uid) \
     ON CONFLICT (row_table, row_id) DO UPDATE SET owner_uid = EXCLUDED.owner_uid)";

/// Part of the row-deleting statement (`gone(id, owner_uid)`, `$3` the table): forgets those rows.
pub(super) const FORGET_GONE_ROWS: &str = "forgotten AS ( \
     DELETE FROM \"postgres-writer-rows\" AS l USING gone \
     WHERE l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid)";

/// One row the ledger says this operator wrote.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnedRow {
    pub table: TableName,
    pub id: String,
    pub owner_uid: String,
}

/// Whether the ledger was found recently, and the releases that could not reach the database yet.
#[derive(Clone, Default)]
pub(super) struct LedgerCheck {
    checked_at: Arc<Mutex<Option<Instant>>>,
    pending_releases: Arc<Mutex<HashSet<OwnedRow>>>,
}

impl LedgerCheck {
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

/// Creates the ledger if it is missing, once however many callers find it missing at once (see
/// [`table_creation`]). Looked up first: `CREATE TABLE IF NOT EXISTS` needs the right to create tables
/// even when the table exists, which a role given the ledger ready-made may lack.
pub(super) async fn create(client: &mut Client) -> Result<()> {
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&LEDGER])
        .await
        .map_err(Error::Database)?
        .get(0);
    if exists {
        return Ok(());
    }
    table_creation::create_once(client, LEDGER_TABLE, CREATE).await
}

/// Forgets the rows `keys` of `table` in the ledger alone (their table is gone).
pub(super) async fn forget(client: &Client, table: &TableName, keys: &[(&str, &str)]) -> Result<()> {
    let ids: Vec<&str> = keys.iter().map(|(id, _)| *id).collect();
    let owners: Vec<&str> = keys.iter().map(|(_, owner)| *owner).collect();
    let sql = format!(
        "DELETE FROM {LEDGER} AS l USING unnest($1::text[], $2::text[]) AS gone(id, owner_uid) \
         WHERE l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid"
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

impl RowStore {
    /// Creates the ledger unless it was found recently.
    pub async fn ensure_ledger(&self) -> Result<()> {
        if self.ledger.recently_checked() {
            return Ok(());
        }
        // Its name holds a hyphen, so it shares its gate with no table of rows.
        let _turn = self.gates.turn(LEDGER_TABLE).await;
        if self.ledger.recently_checked() {
            return Ok(());
        }
        let started = Instant::now();
        self.pool().run(async |client| create(client).await).await?;
        self.metrics().observe("schema", 1, started.elapsed());
        self.ledger.checked();
        Ok(())
    }

    /// Every row the ledger lists, after applying the releases that were waiting for the database.
    pub async fn owned_rows(&self) -> Result<Vec<OwnedRow>> {
        self.apply_pending_releases().await?;
        let started = Instant::now();
        let listed = self
            .pool()
            .run(async |client| {
                let sql = format!("SELECT row_table, row_id, owner_uid FROM {LEDGER}");
                let rows = client.query(&sql, &[]).await;
                if is_undefined_table(&rows) {
                    return Ok(Vec::new());
                }
                rows.map_err(Error::Database)
            })
            .await?;
        self.metrics().observe("list", listed.len(), started.elapsed());
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
    pub async fn release(&self, rows: Vec<OwnedRow>) -> Released {
        match self.release_now(&rows).await {
            Ok(()) => Released::Now,
            Err(error) => {
                tracing::warn!(%error, "releasing rows failed; retried before the next orphan sweep");
                self.ledger.defer(rows);
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
             WHERE l.row_table = r.t AND l.row_id = r.id AND l.owner_uid = r.owner_uid"
        );
        self.pool()
            .run(
                async |client| match client.execute(&sql, &[&tables, &ids, &owners]).await {
                    Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(()),
                    other => other.map(drop).map_err(Error::Database),
                },
            )
            .await
    }

    async fn apply_pending_releases(&self) -> Result<()> {
        let pending = self.ledger.pending();
        if pending.is_empty() {
            return Ok(());
        }
        self.release_now(&pending).await?;
        self.ledger.done(&pending);
        Ok(())
    }

    /// Deletes `orphans`, rows whose resource is gone, together with their ledger entries: only rows
    /// the ledger still lists for that owner when the statement runs (not one released meanwhile)
    /// and not one whose release is waiting. Returns how many rows went.
    pub async fn sweep(&self, orphans: Vec<OwnedRow>) -> Result<u64> {
        let mut by_table: BTreeMap<TableName, Vec<(String, String)>> = BTreeMap::new();
        for orphan in orphans {
            if self.ledger.is_pending(&orphan) {
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
                .pool()
                .run(async |client| sweep_table(client, &table, &keys).await)
                .await?;
            self.metrics().observe("sweep", keys.len(), started.elapsed());
            for id in &deleted {
                tracing::info!(%table, row = %id, "orphan row deleted");
            }
            self.metrics().rows_deleted.inc_by(deleted.len() as u64);
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
           WHERE l.row_table = $3 AND l.row_id = gone.id AND l.owner_uid = gone.owner_uid \
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
