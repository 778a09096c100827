//! The orphan sweep: rows this operator wrote whose resource no longer exists.

use std::{collections::HashSet, time::Duration};

use kube::{Api, ResourceExt};

use super::pending_releases::PendingReleases;
use crate::{
    Error, Result,
    api::postgres_writer::PostgresWriter,
    db::{Released, RowWriter},
};

/// Sweeps every `interval` until the future is dropped.
pub(super) async fn sweep_orphan_rows_periodically(
    client: kube::Client,
    rows: RowWriter,
    pending: PendingReleases,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        let outcome = sweep_orphan_rows(&client, &rows, &pending).await;
        rows.store().metrics().count_sweep(outcome.is_ok());
        if let Err(error) = outcome {
            tracing::warn!(%error, "orphan sweep failed");
        }
    }
}

/// Deletes the rows the ledger lists whose resource no longer exists; returns how many went. Only
/// rows this operator wrote are listed (see `crate::db::OwnedRow`): never another writer's, never a
/// released one.
///
/// Releases that waited for the database, in this process or in one before a restart, reach the
/// ledger first; a sweep that cannot apply them deletes nothing.
///
/// The ledger is read before resources are listed: a row is only written for a resource that exists,
/// and a resource keeps existing (its finalizer) until its row is gone, so any row read here whose
/// resource is missing from the later list is a true orphan, never a row of a resource created
/// mid-sweep.
pub async fn sweep_orphan_rows(
    client: &kube::Client,
    rows: &RowWriter,
    pending: &PendingReleases,
) -> Result<u64> {
    let recorded = pending.list().await?;
    if !recorded.is_empty() {
        if rows.store().release(recorded.clone()).await == Released::Deferred {
            return Err(Error::DatabaseUnavailable(
                "releases recorded while the database was down cannot be applied yet".into(),
            ));
        }
        pending.forget(&recorded).await?;
    }
    let owned = rows.store().owned_rows().await?;
    let api: Api<PostgresWriter> = Api::all(client.clone());
    let live_uids: HashSet<String> = api
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter_map(|w| w.uid())
        .collect();
    let orphans = owned
        .into_iter()
        .filter(|row| !live_uids.contains(&row.owner_uid))
        .collect();
    rows.store().sweep(orphans).await
}
