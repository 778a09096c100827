//! A table is created once, however many reconciles, in however many operator replicas, find it
//! missing at the same moment. `CREATE TABLE IF NOT EXISTS` alone does not promise that: two sessions
//! that both find the name free both insert it into the catalog, and the second fails on the catalog's
//! unique index (`pg_type_typname_nsp_index`), so a burst of first writers on a new table used to fail
//! a resource or two.
//!
//! Two guards: in the process, one check of a table at a time (the others wait, then find it checked);
//! in the database, creators of one table take the same transaction-scoped advisory lock, so a second
//! replica's `IF NOT EXISTS` runs after the first one's table is committed and sees it. A table made by
//! someone who takes no lock (a person at psql, say) in that same instant still races; its catalog
//! errors are read as "the table exists now", and the caller checks its columns as for any table.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use tokio::sync::OwnedMutexGuard;
use tokio_postgres::error::SqlState;

use super::pool::Client;
use crate::{Error, Result};

/// The first key of the operator's advisory locks: "pgwr", so that another application's advisory
/// locks in the same database (keyed by their own numbers) never wait on ours.
const LOCK_CLASS: i32 = 0x7067_7772;

/// One async mutex per table name, held while that table is checked or created. Hand-written: a
/// keyed mutex is a few lines, and the single-flight crates cache results, which here the caller's
/// [`super::checked_tables::CheckedTables`] already does. An entry lives while someone holds or waits
/// for it, so the map holds only the tables being checked right now.
#[derive(Debug, Default)]
pub struct TableGates {
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// The turn of one caller at one table; the next waiter goes when it is dropped.
pub struct Turn<'a> {
    gates: &'a TableGates,
    name: String,
    guard: Option<OwnedMutexGuard<()>>,
}

impl TableGates {
    /// Waits until no one else in this process checks or creates the table `name`.
    pub async fn turn(&self, name: &str) -> Turn<'_> {
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            // A caller cancelled while it waited leaves its table's gate behind with no other holder.
            gates.retain(|_, gate| Arc::strong_count(gate) > 1);
            gates.entry(name.to_owned()).or_default().clone()
        };
        Turn {
            gates: self,
            name: name.to_owned(),
            guard: Some(gate.lock_owned().await),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.gates.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut gates = self.gates.gates.lock().unwrap_or_else(|p| p.into_inner());
        drop(self.guard.take());
        // The map's reference is the last one: no one holds or waits for this table any more. Clones
        // are only made under the map's lock, so none can appear between the count and the removal.
        if gates
            .get(&self.name)
            .is_some_and(|gate| Arc::strong_count(gate) == 1)
        {
            gates.remove(&self.name);
        }
    }
}

/// Runs `create` (a `CREATE TABLE IF NOT EXISTS` for `name`) under the advisory lock of `name`, in one
/// transaction: another replica creating the same table waits for this one's commit, then finds the
/// table. A catalog conflict with a creator that took no lock means the table exists now, which is
/// what the caller wanted; the caller checks its columns either way.
pub async fn create_once(client: &mut Client, name: &str, create: &str) -> Result<()> {
    match under_lock(client, name, create).await {
        Ok(()) => Ok(()),
        Err(error) if created_meanwhile(&error) => Ok(()),
        Err(error) => Err(Error::Database(error)),
    }
}

/// Runs `ddl` on table `name` in one transaction under the advisory lock of `name`, the lock its
/// creators take: a change to a table's definition waits for, and is seen by, any other replica's.
pub async fn under_lock(client: &mut Client, name: &str, ddl: &str) -> Result<(), tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&LOCK_CLASS, &name],
        )
        .await?;
    transaction.batch_execute(ddl).await?;
    transaction.commit().await
}

/// The errors of a `CREATE TABLE IF NOT EXISTS` that lost a race with another session's create of the
/// same name: the name was free when checked, taken when inserted into the catalog.
fn created_meanwhile(error: &tokio_postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| *code == SqlState::UNIQUE_VIOLATION || *code == SqlState::DUPLICATE_TABLE)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn one_caller_at_a_time_per_table_and_nothing_kept_once_all_are_done() {
        let gates = TableGates::default();
        let first = gates.turn("students").await;
        // Another table is not held up by this one.
        let other = tokio::time::timeout(Duration::from_secs(1), gates.turn("alumni")).await;
        assert!(other.is_ok());
        drop(other);
        let waiting = tokio::time::timeout(Duration::from_millis(50), gates.turn("students")).await;
        assert!(waiting.is_err(), "a second caller waits for the first");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), gates.turn("students")).await;
        assert!(second.is_ok(), "and goes once the first is done");
        drop(second);
        assert_eq!(gates.len(), 0, "no gate is kept for tables no one is checking");
        let cancelled = tokio::time::timeout(Duration::from_millis(1), async {
            let _held = gates.turn("students").await;
            std::future::pending::<()>().await
        });
        assert!(cancelled.await.is_err());
        drop(gates.turn("alumni").await);
        assert_eq!(
            gates.len(),
            0,
            "nor for a caller cancelled while it held or waited"
        );
    }
}
