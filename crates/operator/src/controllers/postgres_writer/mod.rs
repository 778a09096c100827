//! PostgresWriter: each resource is exactly one row, id `<namespace>/<name>`, in the table its spec
//! names. Reconcile observes the row and the status, compares them with the spec, and writes only the
//! difference; the finalizer holds the resource until its row's delete has committed.
//!
//! Every step is idempotent and the next reconcile tells where the last one stopped from what it
//! observes (spec, status.table, the row), so a crash between any two steps converges.

mod pending_releases;
mod sweep;

use kube::{
    Resource, ResourceExt,
    runtime::{controller::Action, events::EventType},
};

use super::conditions::{find_ready, now_rfc3339, ready_condition};
use crate::{
    Error, Result,
    api::postgres_writer::{
        Condition, FINALIZER, LEAVE_ROW_ANNOTATION, PostgresWriter, PostgresWriterStatus,
    },
    db::{OwnedRow, Pool, Released, Row, RowStore, RowWriter, TableName, TableState, UpsertOutcome},
    runtime::{ControllerContext, Reconciler, Toolkit, Triggers, object_key},
};
pub use pending_releases::{CONFIG_MAP as PENDING_RELEASES_CONFIG_MAP, PendingReleases};
pub use sweep::sweep_orphan_rows;

pub const NAME: &str = "postgres-writer";

#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    /// Create a missing table with the expected columns (`--auto-create-tables=false` requires tables
    /// to exist).
    #[arg(long, env = "AUTO_CREATE_TABLES", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub auto_create_tables: bool,
    /// Delete rows whose resource no longer exists (e.g. a finalizer removed by hand), once every
    /// --resync-interval.
    #[arg(long, env = "ORPHAN_SWEEP", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub orphan_sweep: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            auto_create_tables: true,
            orphan_sweep: false,
        }
    }
}

/// Runs the controller until shutdown.
pub async fn run(ctx: ControllerContext, pool: Pool, settings: Settings) -> Result<()> {
    if settings.orphan_sweep && ctx.watch_namespace.is_some() {
        // The ledger does not say which namespace a row's resource was in: a sweep that sees one
        // namespace would take the rows of every other namespace's resources for orphans.
        return Err(Error::Config(
            "--orphan-sweep needs every namespace watched: drop --watch-namespace or the sweep".into(),
        ));
    }
    let store = RowStore::new(pool, ctx.metrics.database.clone());
    let pool_metrics = store.clone();
    ctx.metrics
        .on_scrape(move || pool_metrics.metrics().record_pool(pool_metrics.pool_status()));
    // A quarter of the pool writes batches; the rest serves table checks and the sweep. Fewer writers
    // make larger batches: with 4 of 8 a burst averaged 1.8 rows per statement, with 2 of 8 2.5, and
    // PostgreSQL's CPU fell by a quarter at the same latency (convergence bench).
    let rows = RowWriter::start(store.clone(), (store.pool_status().max_size / 4).max(1));
    // The database is no part of `/readyz`: a pod not ready is taken out of the webhook Service, and
    // VoteConfig's and WebApp's webhooks have nothing to do with PostgreSQL. An outage shows in the
    // resources' DatabaseUnavailable condition, their Warning Events and the reconcile error metrics.
    let pending = PendingReleases::new(ctx.client.clone(), &ctx.namespace);
    if settings.orphan_sweep {
        let sweeping = sweep::sweep_orphan_rows_periodically(
            ctx.client.clone(),
            rows.clone(),
            pending.clone(),
            ctx.resync,
        );
        // The sweep stops with the controller: a stopped operator deletes nothing.
        let shutdown = ctx.shutdown_signal();
        tokio::spawn(async move {
            tokio::select! {
                () = sweeping => {}
                () = shutdown => {}
            }
        });
    }
    crate::runtime::run(
        ctx,
        PostgresWriters {
            rows,
            pending,
            settings,
        },
    )
    .await
}

struct PostgresWriters {
    rows: RowWriter,
    pending: PendingReleases,
    settings: Settings,
}

impl Reconciler for PostgresWriters {
    type Object = PostgresWriter;
    const NAME: &'static str = NAME;
    const TRIGGERS: Triggers<PostgresWriter> = Triggers::UnlessSettled(settled);
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    async fn apply(&self, writer: &PostgresWriter, kit: &Toolkit) -> Result<Action> {
        apply(writer, &self.context(kit)).await
    }

    async fn cleanup(&self, writer: &PostgresWriter, kit: &Toolkit) -> Result<Action> {
        cleanup(writer, &self.context(kit)).await
    }
}

/// What one reconcile works with.
struct Context<'a> {
    rows: &'a RowWriter,
    pending: &'a PendingReleases,
    settings: &'a Settings,
    kit: &'a Toolkit,
}

impl PostgresWriters {
    fn context<'a>(&'a self, kit: &'a Toolkit) -> Context<'a> {
        Context {
            rows: &self.rows,
            pending: &self.pending,
            settings: &self.settings,
            kit,
        }
    }
}

/// Whether `writer` holds its finalizer and its status already answers its generation (Ready or not):
/// a change that leaves it so, such as our own status write coming back, needs no reconcile. A failed
/// one is retried by its back-off, a settled one re-read at the resync.
fn settled(writer: &PostgresWriter) -> bool {
    let meta = writer.meta();
    meta.deletion_timestamp.is_none()
        && meta.generation.is_some()
        && writer.finalizers().iter().any(|f| f == FINALIZER)
        && writer.status.as_ref().and_then(|s| s.observed_generation) == meta.generation
}

/// The row the spec asks for.
pub fn desired_row(writer: &PostgresWriter) -> Result<Row> {
    let age = i32::try_from(writer.spec.age)
        .map_err(|_| Error::InvalidSpec(format!("age {} does not fit an integer column", writer.spec.age)))?;
    Ok(Row {
        id: object_key(writer),
        owner_uid: writer.uid().unwrap_or_default(),
        name: writer.spec.name.to_string(),
        age,
        country: writer.spec.country.to_string(),
    })
}

fn previous_ready(writer: &PostgresWriter) -> Option<&Condition> {
    find_ready(&writer.status.as_ref()?.conditions)
}

/// Reports a failure on the resource (not ready: condition, status, Warning Event) and returns the
/// error for back-off. A status that cannot be written is logged: the failure being reported is what
/// the reconcile returns.
async fn report(ctx: &Context<'_>, writer: &PostgresWriter, reason: &'static str, error: Error) -> Error {
    if let Err(status_error) = ctx.kit.report_not_ready(writer, reason, error.to_string()).await {
        tracing::warn!(%status_error, "could not write the failure status");
    }
    error
}

fn database_reason(error: &Error) -> &'static str {
    match error {
        Error::DatabaseUnavailable(_) => "DatabaseUnavailable",
        Error::Database(e) if e.code().is_none() => "DatabaseUnavailable",
        Error::Database(_) | Error::DatabaseRejected(_) => "DatabaseError",
        _ => "Failed",
    }
}

fn classify(error: Error) -> Error {
    // Closed connections surface as query errors without an SQL state: the database went away.
    match error {
        Error::Database(e) if e.code().is_none() => {
            Error::DatabaseUnavailable(crate::error::postgres_message(&e))
        }
        other => other,
    }
}

async fn apply(writer: &PostgresWriter, ctx: &Context<'_>) -> Result<Action> {
    // Drift (a row edited or deleted by hand) is repaired by the controller's periodic resync.
    let resync = Action::await_change();
    let generation = writer.meta().generation;

    // Observe.
    let table = match TableName::parse(&writer.spec.table) {
        Ok(table) => table,
        Err(error) => return Err(report(ctx, writer, "InvalidSpec", error).await),
    };
    let desired = match desired_row(writer) {
        Ok(row) => row,
        Err(error) => return Err(report(ctx, writer, "InvalidSpec", error).await),
    };
    let state = match ctx
        .rows
        .store()
        .ensure_table(&table, ctx.settings.auto_create_tables)
        .await
        .map_err(classify)
    {
        Ok(state) => state,
        Err(error) => return Err(report(ctx, writer, database_reason(&error), error).await),
    };
    let (reason, message) = match &state {
        TableState::Ready => ("", String::new()),
        TableState::Missing => (
            "TableMissing",
            format!("table {table} does not exist and auto-creation is off"),
        ),
        TableState::Incompatible(why) => (
            "TableIncompatible",
            format!("table {table} cannot hold the row: {why}"),
        ),
    };
    if !reason.is_empty() {
        // Needs a human; retried at each resync rather than in a tight back-off loop.
        let _ = report(ctx, writer, reason, Error::TableIncompatible(message)).await;
        return Ok(resync);
    }
    // Compare and act: the row. The writer reads the stored row and writes only when it differs.
    let wrote = match ctx.rows.sync(&table, desired.clone()).await.map_err(classify) {
        Ok(UpsertOutcome::Written) => true,
        Ok(UpsertOutcome::Unchanged) => false,
        Ok(UpsertOutcome::OwnedByOther(owner)) => {
            let message = format!(
                "row {} in table {table} was written by another owner ({owner}); it is left untouched",
                desired.id
            );
            let _ = report(ctx, writer, "RowConflict", Error::NotOwned(message)).await;
            return Ok(resync);
        }
        Err(error) => return Err(report(ctx, writer, database_reason(&error), error).await),
    };
    // A table move: the row is in the new table; now remove it from the old one.
    let previous_table = writer
        .status
        .as_ref()
        .and_then(|s| s.table.clone())
        .filter(|t| *t != writer.spec.table);
    if let Some(previous) = previous_table.as_deref().and_then(|t| TableName::parse(t).ok()) {
        if let Err(error) = ctx
            .rows
            .remove(&previous, &desired.id, &desired.owner_uid)
            .await
            .map_err(classify)
        {
            return Err(report(ctx, writer, database_reason(&error), error).await);
        }
        ctx.kit.publish(
            writer,
            EventType::Normal,
            "Moved",
            format!("row moved from {previous} to {table}"),
        );
    }
    if wrote {
        ctx.kit.publish(
            writer,
            EventType::Normal,
            "Written",
            format!("row {} written to {table}", desired.id),
        );
    }

    // Compare and act: the status.
    let previous_write = writer.status.as_ref().and_then(|s| s.last_write_time.clone());
    let status = PostgresWriterStatus {
        observed_generation: generation,
        conditions: vec![ready_condition(
            true,
            "Synced",
            &format!("row {} is in table {table}", desired.id),
            previous_ready(writer),
            generation,
        )],
        table: Some(table.to_string().into()),
        last_write_time: if wrote || previous_write.is_none() {
            Some(now_rfc3339().into())
        } else {
            previous_write
        },
    };
    ctx.kit.write_status(writer, status).await?;
    Ok(resync)
}

async fn cleanup(writer: &PostgresWriter, ctx: &Context<'_>) -> Result<Action> {
    let id = object_key(writer);
    let owner = writer.uid().unwrap_or_default();
    // Mid-move the row may be in either table: delete from both.
    let mut tables = vec![writer.spec.table.clone()];
    if let Some(status_table) = writer.status.as_ref().and_then(|s| s.table.clone())
        && !tables.contains(&status_table)
    {
        tables.push(status_table);
    }
    if writer.annotations().get(LEAVE_ROW_ANNOTATION).map(String::as_str) == Some("true") {
        // The row is no longer ours: off the ledger, so that no orphan sweep deletes it. The escape
        // hatch must work while the database is down, so a release it cannot take now waits (see
        // `RowStore::release`), recorded where a restarted operator finds it, rather than holding the
        // deletion.
        let rows: Vec<OwnedRow> = tables
            .iter()
            .filter_map(|t| TableName::parse(t).ok())
            .map(|table| OwnedRow {
                table,
                id: id.clone(),
                owner_uid: owner.clone(),
            })
            .collect();
        let note = match ctx.rows.store().release(rows.clone()).await {
            Released::Now => format!("{LEAVE_ROW_ANNOTATION} is set: the row stays"),
            Released::Deferred => {
                if let Err(error) = ctx.pending.record(&rows).await {
                    let error = Error::DatabaseUnavailable(format!(
                        "the database did not answer and the release could not be recorded for later \
                         ({error}); deletion waits"
                    ));
                    return Err(report(ctx, writer, "DeletePending", error).await);
                }
                format!(
                    "{LEAVE_ROW_ANNOTATION} is set: the row stays (the database did not answer; the \
                     operator releases it when it does, restarted or not)"
                )
            }
        };
        ctx.kit.publish(writer, EventType::Normal, "RowLeft", note);
        return Ok(Action::await_change());
    }
    for table in tables.iter().filter_map(|t| TableName::parse(t).ok()) {
        if let Err(error) = ctx.rows.remove(&table, &id, &owner).await.map_err(classify) {
            let error = Error::DatabaseUnavailable(format!(
                "the row cannot be deleted yet ({error}); deletion waits for the database, or set the annotation {LEAVE_ROW_ANNOTATION}=true to leave the row"
            ));
            return Err(report(ctx, writer, "DeletePending", error).await);
        }
    }
    ctx.kit
        .publish(writer, EventType::Normal, "Deleted", format!("row {id} deleted"));
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::postgres_writer::PostgresWriterSpec;

    fn writer(age: i64) -> PostgresWriter {
        let mut writer = PostgresWriter::new(
            "sample-student",
            PostgresWriterSpec {
                table: "students".into(),
                name: "O'Brien".into(),
                age,
                country: "canada".into(),
            },
        );
        writer.metadata.namespace = Some("default".into());
        writer.metadata.uid = Some("uid-1".into());
        writer
    }

    #[test]
    fn only_a_finalized_writer_whose_status_answers_its_generation_is_settled() {
        let mut w = writer(23);
        w.metadata.generation = Some(2);
        assert!(!settled(&w), "no finalizer yet: the first reconcile adds it");
        w.metadata.finalizers = Some(vec![FINALIZER.into()]);
        assert!(!settled(&w), "no status yet: the row was never written");
        w.status = Some(PostgresWriterStatus {
            observed_generation: Some(1),
            ..Default::default()
        });
        assert!(!settled(&w), "the spec changed since the status was written");
        w.status.as_mut().unwrap().observed_generation = Some(2);
        assert!(settled(&w), "our own status write coming back");
        w.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ));
        assert!(!settled(&w), "a deletion must run the cleanup");
    }

    #[test]
    fn desired_row_is_keyed_by_namespace_and_name_and_owned_by_the_uid() {
        let row = desired_row(&writer(23)).unwrap();
        assert_eq!(
            row,
            Row {
                id: "default/sample-student".into(),
                owner_uid: "uid-1".into(),
                name: "O'Brien".into(),
                age: 23,
                country: "canada".into()
            }
        );
        assert!(matches!(
            desired_row(&writer(i64::from(i32::MAX) + 1)),
            Err(Error::InvalidSpec(_))
        ));
    }
}
