//! The rows PostgresWriter owns. Table names are validated identifiers and always quoted; every value
//! is a bound parameter. `owner_uid` records which resource incarnation wrote a row, so a row someone
//! else wrote, or a deleted-and-recreated resource's old row, is never overwritten or deleted silently.

use super::Pool;
use crate::{Error, Result};

/// A table name that is a valid lower-case PostgreSQL identifier (the CRD schema enforces the same).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName(String);

impl TableName {
    pub fn parse(name: &str) -> Result<Self> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(TableName(name.to_owned()))
        } else {
            Err(Error::InvalidSpec(format!(
                "table {name:?} is not a valid identifier: use 1-63 lower-case letters, digits and underscores, not starting with a digit"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The identifier quoted for SQL. Parsing admits no `"`, so no escaping is needed.
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

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

#[derive(Clone)]
pub struct RowStore {
    pool: Pool,
}

fn unavailable(error: impl std::fmt::Display) -> Error {
    Error::DatabaseUnavailable(error.to_string())
}

impl RowStore {
    pub fn new(pool: Pool) -> Self {
        RowStore { pool }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(unavailable)
    }

    /// Whether the database answers a trivial query right now.
    pub async fn ping(&self) -> bool {
        match self.client().await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        }
    }

    /// Checks the table's columns; creates it when missing and `auto_create` is on.
    pub async fn ensure_table(&self, table: &TableName, auto_create: bool) -> Result<TableState> {
        let client = self.client().await?;
        let columns = client
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&table.as_str()],
            )
            .await
            .map_err(Error::Database)?;
        if columns.is_empty() {
            if !auto_create {
                return Ok(TableState::Missing);
            }
            client
                .batch_execute(&format!(
                    "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
                     country text NOT NULL, owner_uid text NOT NULL)",
                    table.quoted()
                ))
                .await
                .map_err(Error::Database)?;
            return Ok(TableState::Ready);
        }
        let found: Vec<(String, String)> = columns.iter().map(|row| (row.get(0), row.get(1))).collect();
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
        Ok(if problems.is_empty() {
            TableState::Ready
        } else {
            TableState::Incompatible(problems.join("; "))
        })
    }

    pub async fn read(&self, table: &TableName, id: &str) -> Result<Option<Row>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT id, owner_uid, name, age, country FROM {} WHERE id = $1",
                    table.quoted()
                ),
                &[&id],
            )
            .await
            .map_err(Error::Database)?;
        Ok(row.map(|r| Row {
            id: r.get(0),
            owner_uid: r.get(1),
            name: r.get(2),
            age: r.get(3),
            country: r.get(4),
        }))
    }

    /// Inserts or updates the row, but never one another owner wrote, and writes nothing when the
    /// stored values already match.
    pub async fn upsert(&self, table: &TableName, row: &Row) -> Result<UpsertOutcome> {
        let client = self.client().await?;
        let t = table.quoted();
        let written = client
            .execute(
                &format!(
                    "INSERT INTO {t} (id, owner_uid, name, age, country) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country \
                     WHERE {t}.owner_uid = EXCLUDED.owner_uid \
                     AND ({t}.name, {t}.age, {t}.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)"
                ),
                &[&row.id, &row.owner_uid, &row.name, &row.age, &row.country],
            )
            .await
            .map_err(Error::Database)?;
        if written == 1 {
            return Ok(UpsertOutcome::Written);
        }
        match self.read(table, &row.id).await? {
            Some(existing) if existing.owner_uid != row.owner_uid => {
                Ok(UpsertOutcome::OwnedByOther(existing.owner_uid))
            }
            _ => Ok(UpsertOutcome::Unchanged),
        }
    }

    /// Deletes the row only if `owner_uid` wrote it. Returns how many rows went (0 or 1).
    pub async fn delete(&self, table: &TableName, id: &str, owner_uid: &str) -> Result<u64> {
        let client = self.client().await?;
        match client
            .execute(
                &format!("DELETE FROM {} WHERE id = $1 AND owner_uid = $2", table.quoted()),
                &[&id, &owner_uid],
            )
            .await
        {
            Ok(count) => Ok(count),
            // A table that is gone holds no row to delete.
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(0),
            Err(e) => Err(Error::Database(e)),
        }
    }

    /// Every (id, owner_uid) in the table, for the orphan sweep.
    pub async fn list(&self, table: &TableName) -> Result<Vec<(String, String)>> {
        let client = self.client().await?;
        let rows = client
            .query(&format!("SELECT id, owner_uid FROM {}", table.quoted()), &[])
            .await
            .map_err(Error::Database)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_identifiers_and_render_quoted() {
        assert_eq!(TableName::parse("students").unwrap().quoted(), "\"students\"");
        assert!(TableName::parse("_t1").is_ok());
        for bad in [
            "",
            "1abc",
            "Students",
            "a-b",
            "x\"; DROP TABLE y; --",
            &"a".repeat(64),
        ] {
            assert!(TableName::parse(bad).is_err(), "{bad}");
        }
    }
}
