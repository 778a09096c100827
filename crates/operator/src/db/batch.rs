//! Row writes grouped into batches. When many resources arrive together, one statement per table
//! writes all their rows (PostgreSQL does 10,000 rows in one statement in about the time of a few
//! hundred single-row ones), and each reconcile still awaits its own row's commit and outcome. A
//! batch's rows go first to a statement that only inserts the new ones, then, the rows the table
//! already held, to one that compares and updates them (see `RowStore::insert_new`).
//!
//! Batching is natural, never timed: a dispatcher takes whatever is queued when a connection slot
//! frees, so a lone request goes out at once and a burst fills the next batch while the last one runs.
//!
//! Every statement runs under the pool's step deadline. A statement that gets no answer fails its
//! requests and every later one of its batch at once, and its connection is closed: a PostgreSQL that
//! stops answering frees the slot within one deadline instead of holding it until TCP gives up.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::{
    Row, RowStore, TableName, UpsertOutcome,
    pool::{Abandoned, Client, discard},
};
use crate::{Error, Result};

/// The most rows in one statement; bounds a statement's size and a failed batch's blast radius.
const MAX_BATCH: usize = 2_000;

/// Hands row writes to the batching dispatcher. Cheap to clone; the dispatcher stops when the last
/// clone is dropped.
#[derive(Clone)]
pub struct RowWriter {
    store: RowStore,
    requests: mpsc::Sender<Request>,
}

enum Op {
    /// Make the row hold these values, unless another owner wrote it.
    Sync(Row),
    /// Delete the row if this owner wrote it.
    Remove { id: String, owner_uid: String },
}

enum Reply {
    Synced(UpsertOutcome),
    Removed(bool),
}

struct Request {
    table: TableName,
    op: Op,
    reply: oneshot::Sender<Result<Reply>>,
}

impl Request {
    fn id(&self) -> &str {
        match &self.op {
            Op::Sync(row) => &row.id,
            Op::Remove { id, .. } => id,
        }
    }

    fn answer(self, outcome: Result<Reply>) {
        // The reconcile that asked may have been cancelled; its row was written all the same.
        let _ = self.reply.send(outcome);
    }
}

impl RowWriter {
    /// Starts the dispatcher; at most `parallel` batches run at once (each holds one pool connection).
    pub fn start(store: RowStore, parallel: usize) -> Self {
        let (requests, queue) = mpsc::channel(MAX_BATCH * 4);
        tokio::spawn(dispatch(store.clone(), queue, parallel.max(1)));
        RowWriter { store, requests }
    }

    pub fn store(&self) -> &RowStore {
        &self.store
    }

    /// Makes the row in `table` hold `row`'s values, unless another owner wrote it.
    pub async fn sync(&self, table: &TableName, row: Row) -> Result<UpsertOutcome> {
        match self.submit(table, Op::Sync(row)).await? {
            Reply::Synced(outcome) => Ok(outcome),
            Reply::Removed(_) => Err(stopped()),
        }
    }

    /// Deletes the row `id` from `table` if `owner_uid` wrote it; whether a row went.
    pub async fn remove(&self, table: &TableName, id: &str, owner_uid: &str) -> Result<bool> {
        let op = Op::Remove {
            id: id.to_owned(),
            owner_uid: owner_uid.to_owned(),
        };
        match self.submit(table, op).await? {
            Reply::Removed(gone) => Ok(gone),
            Reply::Synced(_) => Err(stopped()),
        }
    }

    async fn submit(&self, table: &TableName, op: Op) -> Result<Reply> {
        let (reply, answer) = oneshot::channel();
        let request = Request {
            table: table.clone(),
            op,
            reply,
        };
        self.requests.send(request).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> Error {
    Error::DatabaseUnavailable("the row writer has stopped".into())
}

async fn dispatch(store: RowStore, mut queue: mpsc::Receiver<Request>, parallel: usize) {
    let slots = Arc::new(Semaphore::new(parallel));
    loop {
        // Take a slot first: while every slot is busy, requests pile up and form the next batch.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = queue.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let store = store.clone();
        tokio::spawn(async move {
            run_batch(&store, batch).await;
            drop(slot);
        });
    }
}

/// One batch's connection; once a statement on it was abandoned, the rest of the batch fails at once.
struct BatchConnection {
    client: Client,
    abandoned: Option<Abandoned>,
}

/// Runs one statement of a batch within the step deadline, or says why it did not run.
async fn within_deadline<T>(
    store: &RowStore,
    abandoned: &mut Option<Abandoned>,
    statement: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    if let Some(earlier) = *abandoned {
        return Err(earlier.into());
    }
    match store.pool().within_deadline(statement).await {
        Ok(outcome) => outcome,
        Err(now) => {
            *abandoned = Some(now);
            Err(now.into())
        }
    }
}

/// Runs one batch: per table, removals then syncs, each one statement per round of distinct ids.
async fn run_batch(store: &RowStore, batch: Vec<Request>) {
    let client = match store.pool().get().await {
        Ok(client) => client,
        Err(error) => return fail_all(batch, &error),
    };
    let mut connection = BatchConnection {
        client,
        abandoned: None,
    };
    let mut by_table: Vec<(TableName, Vec<Request>)> = Vec::new();
    for request in batch {
        match by_table.iter_mut().find(|(table, _)| *table == request.table) {
            Some((_, requests)) => requests.push(request),
            None => by_table.push((request.table.clone(), vec![request])),
        }
    }
    for (table, requests) in by_table {
        let (removes, syncs): (Vec<_>, Vec<_>) = requests
            .into_iter()
            .partition(|r| matches!(r.op, Op::Remove { .. }));
        for round in distinct_rounds(removes) {
            remove_rows(store, &mut connection, &table, round).await;
        }
        for round in distinct_rounds(syncs) {
            sync_rows(store, &mut connection, &table, round).await;
        }
    }
    if connection.abandoned.is_some() {
        discard(connection.client);
    }
}

/// Splits requests into rounds in which no id repeats (one statement cannot touch a row twice), keeping
/// each id's requests in arrival order.
fn distinct_rounds(requests: Vec<Request>) -> Vec<Vec<Request>> {
    let mut rounds: Vec<(HashSet<String>, Vec<Request>)> = Vec::new();
    for request in requests {
        let id = request.id().to_owned();
        // The round after the last one holding this id keeps this id's requests in order.
        let after = rounds
            .iter()
            .rposition(|(ids, _)| ids.contains(&id))
            .map_or(0, |i| i + 1);
        if after == rounds.len() {
            rounds.push((HashSet::new(), Vec::new()));
        }
        let (ids, round) = &mut rounds[after];
        ids.insert(id);
        round.push(request);
    }
    rounds.into_iter().map(|(_, round)| round).collect()
}

async fn sync_rows(
    store: &RowStore,
    connection: &mut BatchConnection,
    table: &TableName,
    requests: Vec<Request>,
) {
    let rows: Vec<&Row> = requests
        .iter()
        .filter_map(|r| match &r.op {
            Op::Sync(row) => Some(row),
            Op::Remove { .. } => None,
        })
        .collect();
    let outcome = sync_statements(store, connection, table, &rows).await;
    match outcome {
        Ok(mut outcomes) => {
            let mut raced = Vec::new();
            for request in requests {
                match outcomes.remove(request.id()) {
                    Some(Some(outcome)) => request.answer(Ok(Reply::Synced(outcome))),
                    Some(None) => raced.push(request),
                    None => {
                        let missing = format!("the statement returned no outcome for row {}", request.id());
                        request.answer(Err(Error::DatabaseRejected(missing)))
                    }
                }
            }
            // Rows that changed hands or values while the statement ran: look again.
            if !raced.is_empty() {
                Box::pin(sync_rows(store, connection, table, raced)).await;
            }
        }
        Err(error) if requests.len() > 1 && is_bad_value(&error) => {
            // One bad row must not fail its batch-mates: retry each alone so the error lands on its own.
            for request in requests {
                Box::pin(sync_rows(store, connection, table, vec![request])).await;
            }
        }
        Err(error) => fail_table(store, table, requests, &error),
    }
}

/// The rows' outcomes: the new ones inserted by one statement, the rest synced by a second, each
/// within the step deadline.
async fn sync_statements(
    store: &RowStore,
    connection: &mut BatchConnection,
    table: &TableName,
    rows: &[&Row],
) -> Result<HashMap<String, Option<UpsertOutcome>>> {
    let BatchConnection { client, abandoned } = connection;
    let inserted: HashSet<String> = within_deadline(store, abandoned, store.insert_new(client, table, rows))
        .await?
        .into_iter()
        .collect();
    let rest: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|row| !inserted.contains(&row.id))
        .collect();
    let mut outcomes = if rest.is_empty() {
        HashMap::new()
    } else {
        within_deadline(store, abandoned, store.sync_many(client, table, &rest)).await?
    };
    outcomes.extend(inserted.into_iter().map(|id| (id, Some(UpsertOutcome::Written))));
    Ok(outcomes)
}

async fn remove_rows(
    store: &RowStore,
    connection: &mut BatchConnection,
    table: &TableName,
    requests: Vec<Request>,
) {
    let keys: Vec<(&str, &str)> = requests
        .iter()
        .filter_map(|r| match &r.op {
            Op::Remove { id, owner_uid } => Some((id.as_str(), owner_uid.as_str())),
            Op::Sync(_) => None,
        })
        .collect();
    let BatchConnection { client, abandoned } = connection;
    let outcome = within_deadline(store, abandoned, store.delete_many(client, table, &keys)).await;
    match outcome {
        Ok(deleted) => {
            let deleted: HashSet<String> = deleted.into_iter().collect();
            for request in requests {
                let gone = deleted.contains(request.id());
                request.answer(Ok(Reply::Removed(gone)));
            }
        }
        Err(error) => fail_table(store, table, requests, &error),
    }
}

/// A value PostgreSQL refused (SQL state classes 22 "data exception" and 23 "integrity constraint"):
/// a property of some row, not of the table or the connection.
fn is_bad_value(error: &Error) -> bool {
    matches!(error, Error::Database(e) if e.code().is_some_and(|c| c.code().starts_with("22") || c.code().starts_with("23")))
}

/// An error PostgreSQL raised about the statement (it has an SQL state), as opposed to a lost connection.
fn is_rejection(error: &Error) -> bool {
    matches!(error, Error::Database(e) if e.code().is_some()) || matches!(error, Error::TableIncompatible(_))
}

fn fail_table(store: &RowStore, table: &TableName, requests: Vec<Request>, error: &Error) {
    if is_rejection(error) {
        // A dropped table or a changed column: check the table again on the next reconcile.
        store.forget_table(table);
    }
    fail_all(requests, error);
}

fn fail_all(requests: Vec<Request>, error: &Error) {
    for request in requests {
        request.answer(Err(shared(error)));
    }
}

/// The batch's error, once for each request that was in it.
fn shared(error: &Error) -> Error {
    match error {
        Error::Database(e) if e.code().is_none() => {
            Error::DatabaseUnavailable(crate::error::postgres_message(e))
        }
        Error::Database(e) => Error::DatabaseRejected(crate::error::postgres_message(e)),
        Error::TableIncompatible(message) => Error::TableIncompatible(message.clone()),
        other => Error::DatabaseUnavailable(other.to_string()),
    }
}
