//! PostgresWriter on every tier, each test in a namespace of its own, against a real, throwaway PostgreSQL.

mod support;

use std::time::Duration;

use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use operator::{
    api::postgres_writer::{LEAVE_ROW_ANNOTATION, PostgresWriter},
    controllers::postgres_writer::{self, Settings},
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
};
use serde_json::json;
use support::{
    Backend, Running, Scene, eventually,
    postgres_writer::{StoredRow, connect, rows, wait_reason, writer},
};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_secs(15);

struct World {
    scene: Scene,
    pg: ThrowawayPostgres,
    sql: tokio_postgres::Client,
    api: Api<PostgresWriter>,
}

/// A namespace of the test's own (see [`Scene`]) and a throwaway PostgreSQL.
async fn world(backend: Backend, name: &str) -> World {
    let scene = Scene::start(backend, name).await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let sql = connect(&pg).await;
    let api = scene.api();
    World { scene, pg, sql, api }
}

impl World {
    /// The row resource `name` asks for.
    fn row(&self, name: &str, student: &str, age: i32, country: &str) -> StoredRow {
        (self.scene.id(name), student.into(), age, country.into())
    }
}

/// The manager's default resync: nothing is reconciled again within a test unless it changes.
const DEFAULT_RESYNC: Duration = Duration::from_secs(300);

/// Resyncs every second, so hand edits show within a test's patience.
const FAST_RESYNC: Duration = Duration::from_secs(1);

/// The controller in this process, watching the test's namespace.
fn operator(world: &World, settings: Settings, resync: Duration) -> Running {
    let (ctx, shutdown) = world.scene.context(resync);
    let pool = DatabaseConfig::from_url(&world.pg.url()).connect().expect("pool");
    support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, settings)
    })
}

async fn tutorial_manifest_creates_updates_moves_and_deletes_exactly_one_row(backend: Backend) {
    let w = world(backend, "pgw-tutorial").await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    w.api
        .create(
            &PostParams::default(),
            &writer("sample-student", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    let ready = wait_reason(&w.api, "sample-student", "True/Synced", SHORT).await;
    assert_eq!(
        rows(&w.sql, "students").await,
        [w.row("sample-student", "alex", 23, "canada")]
    );
    let status = ready.status.unwrap();
    assert_eq!(status.table.as_deref(), Some("students"));
    assert_eq!(status.observed_generation, Some(1));
    assert!(status.last_write_time.is_some());

    w.api
        .patch(
            "sample-student",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"age": 24}})),
        )
        .await
        .unwrap();
    eventually("the row to follow the update", SHORT, || async {
        (rows(&w.sql, "students").await == [w.row("sample-student", "alex", 24, "canada")]).then_some(())
    })
    .await;

    w.api
        .patch(
            "sample-student",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"table": "alumni"}})),
        )
        .await
        .unwrap();
    eventually("the row to move to alumni", SHORT, || async {
        let moved = rows(&w.sql, "alumni").await.len() == 1 && rows(&w.sql, "students").await.is_empty();
        let status_table = w.api.get("sample-student").await.ok()?.status?.table;
        (moved && status_table.as_deref() == Some("alumni")).then_some(())
    })
    .await;

    w.api
        .delete("sample-student", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the resource and its row to go", SHORT, || async {
        let gone = w.api.get_opt("sample-student").await.ok()?.is_none();
        (gone && rows(&w.sql, "alumni").await.is_empty()).then_some(())
    })
    .await;
    running.stop().await;
}

async fn values_round_trip_exactly_and_a_converged_reconcile_writes_nothing(backend: Backend) {
    let w = world(backend, "pgw-round-trip").await;
    let running = operator(&w, Settings::default(), FAST_RESYNC);
    let long = "x".repeat(5000);
    w.api
        .create(
            &PostParams::default(),
            &writer(
                "obrien",
                "students",
                "O'Brien; DROP TABLE students; --",
                2147483647,
                "Ísland 🇮🇸",
            ),
        )
        .await
        .unwrap();
    w.api
        .create(
            &PostParams::default(),
            &writer("long", "students", &long, 0, "ca"),
        )
        .await
        .unwrap();
    wait_reason(&w.api, "obrien", "True/Synced", SHORT).await;
    wait_reason(&w.api, "long", "True/Synced", SHORT).await;
    let stored = rows(&w.sql, "students").await;
    assert_eq!(stored[0], w.row("long", &long, 0, "ca"));
    assert_eq!(
        stored[1],
        w.row(
            "obrien",
            "O'Brien; DROP TABLE students; --",
            2147483647,
            "Ísland 🇮🇸"
        )
    );

    let before_rv = w.api.get("obrien").await.unwrap().metadata.resource_version;
    let xmin = |sql: &'static str| sql;
    let before_xmin: Vec<String> = w
        .sql
        .query(xmin("SELECT xmin::text FROM students ORDER BY id"), &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Let at least two resyncs of each resource run.
    let reconciles = running.reconciles();
    eventually("more resyncs", SHORT, || async {
        (running.reconciles() >= reconciles + 4).then_some(())
    })
    .await;
    assert_eq!(
        w.api.get("obrien").await.unwrap().metadata.resource_version,
        before_rv,
        "no status write"
    );
    let after_xmin: Vec<String> = w
        .sql
        .query("SELECT xmin::text FROM students ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(after_xmin, before_xmin, "no row write");
    running.stop().await;
}

async fn rows_deleted_or_edited_by_hand_are_repaired_on_resync(backend: Backend) {
    let w = world(backend, "pgw-repaired").await;
    let running = operator(&w, Settings::default(), FAST_RESYNC);
    w.api
        .create(
            &PostParams::default(),
            &writer("a", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    w.sql.execute("UPDATE students SET age = 99", &[]).await.unwrap();
    eventually("the edited row to be repaired", SHORT, || async {
        (rows(&w.sql, "students").await.first()?.2 == 23).then_some(())
    })
    .await;
    w.sql.execute("DELETE FROM students", &[]).await.unwrap();
    eventually("the deleted row to come back", SHORT, || async {
        (rows(&w.sql, "students").await.len() == 1).then_some(())
    })
    .await;
    running.stop().await;
}

async fn database_down_at_create_reports_unavailable_then_converges(backend: Backend) {
    let w = world(backend, "pgw-down-at-create").await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    w.pg.stop().await.unwrap();
    w.api
        .create(
            &PostParams::default(),
            &writer("a", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    let waiting = wait_reason(&w.api, "a", "False/DatabaseUnavailable", SHORT).await;
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"demo.yash.com/row".to_owned())
    );
    w.pg.restart().await.unwrap();
    wait_reason(&w.api, "a", "True/Synced", LONG).await;
    let sql = connect(&w.pg).await;
    assert_eq!(rows(&sql, "students").await.len(), 1);
    running.stop().await;
}

async fn database_down_at_delete_holds_the_finalizer_until_the_annotation_releases_it(backend: Backend) {
    let w = world(backend, "pgw-down-at-delete").await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    w.api
        .create(
            &PostParams::default(),
            &writer("a", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    w.pg.stop().await.unwrap();
    w.api.delete("a", &DeleteParams::default()).await.unwrap();
    let pending = wait_reason(&w.api, "a", "False/DeletePending", SHORT).await;
    assert!(
        pending.status.unwrap().conditions[0]
            .message
            .contains(LEAVE_ROW_ANNOTATION),
        "the status says how to release it"
    );
    let annotate = json!({"metadata": {"annotations": {LEAVE_ROW_ANNOTATION: "true"}}});
    w.api
        .patch("a", &PatchParams::default(), &Patch::Merge(annotate))
        .await
        .unwrap();
    support::until_gone(&w.api, "a", "the released resource to go", LONG).await;
    w.pg.restart().await.unwrap();
    let sql = connect(&w.pg).await;
    assert_eq!(
        rows(&sql, "students").await.len(),
        1,
        "the row was left behind as asked"
    );
    running.stop().await;
}

async fn incompatible_or_foreign_tables_and_rows_are_reported_not_overwritten(backend: Backend) {
    let w = world(backend, "pgw-foreign").await;
    w.sql
        .batch_execute(
            "CREATE TABLE typed (id text PRIMARY KEY, name text, age text, country text, owner_uid text)",
        )
        .await
        .unwrap();
    w.sql
        .batch_execute(
            "CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
             country text NOT NULL, owner_uid text NOT NULL)",
        )
        .await
        .unwrap();
    w.sql
        .execute(
            "INSERT INTO students VALUES ($1, 'someone', 1, 'x', 'not-ours')",
            &[&w.scene.id("taken")],
        )
        .await
        .unwrap();
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    w.api
        .create(
            &PostParams::default(),
            &writer("bad", "typed", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    w.api
        .create(
            &PostParams::default(),
            &writer("taken", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    w.api
        .create(
            &PostParams::default(),
            &writer("fine", "students", "bo", 30, "peru"),
        )
        .await
        .unwrap();
    let bad = wait_reason(&w.api, "bad", "False/TableIncompatible", SHORT).await;
    assert!(
        bad.status.unwrap().conditions[0].message.contains("age is text"),
        "the message names the column"
    );
    wait_reason(&w.api, "taken", "False/RowConflict", SHORT).await;
    wait_reason(&w.api, "fine", "True/Synced", SHORT).await;
    let stored = rows(&w.sql, "students").await;
    assert!(
        stored.contains(&w.row("taken", "someone", 1, "x")),
        "the foreign row is untouched"
    );
    running.stop().await;
}

async fn invalid_table_names_and_ages_are_rejected_by_the_api_server(backend: Backend) {
    let scene = Scene::start(backend, "pgw-invalid").await;
    let api: Api<PostgresWriter> = scene.api();
    for (table, age, field) in [
        ("Bad-Name", 1, "spec.table"),
        ("students", -1, "spec.age"),
        ("students", 2147483648, "spec.age"),
    ] {
        let error = api
            .create(&PostParams::default(), &writer("x", table, "a", age, "b"))
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("expected a Status error")
        };
        assert_eq!(status.code, 422);
        assert!(status.message.contains(field), "{}", status.message);
    }
}

async fn a_thousand_resources_converge_to_exactly_their_rows_through_a_restart(backend: Backend) {
    let w = world(backend, "pgw-thousand").await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    let count = 1000;
    for i in 0..count {
        w.api
            .create(
                &PostParams::default(),
                &writer(&format!("s{i:04}"), "students", "n", i, "c"),
            )
            .await
            .unwrap();
        if i == count / 2 {
            // Crash mid-burst; a fresh operator must finish the job.
            running.kill();
            break;
        }
    }
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    for i in (count / 2 + 1)..count {
        w.api
            .create(
                &PostParams::default(),
                &writer(&format!("s{i:04}"), "students", "n", i, "c"),
            )
            .await
            .unwrap();
    }
    for i in (0..count).step_by(2) {
        w.api
            .patch(
                &format!("s{i:04}"),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"country": "updated"}})),
            )
            .await
            .unwrap();
    }
    for i in (0..count).step_by(3) {
        w.api
            .delete(&format!("s{i:04}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    let expected: Vec<(String, String, i32, String)> = (0..count)
        .filter(|i| i % 3 != 0)
        .map(|i| {
            w.row(
                &format!("s{i:04}"),
                "n",
                i as i32,
                if i % 2 == 0 { "updated" } else { "c" },
            )
        })
        .collect();
    eventually("the table to match the live resources exactly", LONG, || async {
        (rows(&w.sql, "students").await == expected).then_some(())
    })
    .await;
    running.stop().await;
}

async fn a_role_that_may_not_create_tables_writes_once_its_tables_and_the_ledger_exist(backend: Backend) {
    let w = world(backend, "pgw-restricted-role").await;
    // As a database administrator would prepare it: the tables made for the operator, which logs in
    // as a role that may read and write them and create nothing.
    w.sql
        .batch_execute(&format!(
            "CREATE ROLE writer LOGIN PASSWORD 'writer-password'; \
             REVOKE CREATE ON SCHEMA public FROM PUBLIC; \
             CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
               country text NOT NULL, owner_uid text NOT NULL); \
             CREATE TABLE \"{ledger}\" (row_table text NOT NULL, row_id text NOT NULL, owner_uid text NOT NULL, \
               PRIMARY KEY (row_id, row_table)); \
             GRANT SELECT, INSERT, UPDATE, DELETE ON students, \"{ledger}\" TO writer",
            ledger = operator::db::LEDGER_TABLE
        ))
        .await
        .expect("tables and a role made by hand");
    let url = format!(
        "postgres://writer:writer-password@127.0.0.1:{}/postgres?sslmode=disable",
        w.pg.port()
    );
    let (ctx, shutdown) = w.scene.context(DEFAULT_RESYNC);
    let pool = DatabaseConfig::from_url(&url).connect().expect("pool");
    let settings = Settings {
        auto_create_tables: false,
        ..Settings::default()
    };
    let running = support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, settings)
    });
    w.api
        .create(
            &PostParams::default(),
            &writer("restricted", "students", "alex", 23, "canada"),
        )
        .await
        .unwrap();
    wait_reason(&w.api, "restricted", "True/Synced", SHORT).await;
    assert_eq!(
        rows(&w.sql, "students").await,
        [w.row("restricted", "alex", 23, "canada")]
    );
    w.api
        .delete("restricted", &DeleteParams::default())
        .await
        .unwrap();
    support::until_gone(&w.api, "restricted", "the resource to go", SHORT).await;
    assert_eq!(rows(&w.sql, "students").await, []);
    running.stop().await;
}

testenv::every_tier!(
    tutorial_manifest_creates_updates_moves_and_deletes_exactly_one_row,
    values_round_trip_exactly_and_a_converged_reconcile_writes_nothing,
    rows_deleted_or_edited_by_hand_are_repaired_on_resync,
    database_down_at_create_reports_unavailable_then_converges,
    database_down_at_delete_holds_the_finalizer_until_the_annotation_releases_it,
    incompatible_or_foreign_tables_and_rows_are_reported_not_overwritten,
    invalid_table_names_and_ages_are_rejected_by_the_api_server,
    a_thousand_resources_converge_to_exactly_their_rows_through_a_restart,
    a_role_that_may_not_create_tables_writes_once_its_tables_and_the_ledger_exist,
);
