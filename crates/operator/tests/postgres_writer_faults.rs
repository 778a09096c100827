//! PostgresWriter under faults, on each control plane:
//! PostgreSQL restarted mid-burst, the operator SIGKILLed mid-burst, a name recreated right after its
//! delete, finalizers removed by hand, tables dropped by hand, deletes while the operator is down, and
//! watches cut long enough that resuming them is 410 Gone.
//!
//! Each test asserts what a user sees: the rows in PostgreSQL and the resources' Ready condition.

mod support;

use std::{
    net::SocketAddr,
    path::Path,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use operator::{
    api::postgres_writer::{FINALIZER, LEAVE_ROW_ANNOTATION, PostgresWriter},
    controllers::postgres_writer::{self, Settings},
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
};
use serde_json::json;
use support::{
    Backend, ControlPlane, Running, eventually,
    postgres_writer::{
        Frozen, StoredRow, connect, ledger, ready_reason, rows, select_or_none, wait_reason, writer,
    },
    until_gone,
};
use tokio::task::AbortHandle;

const OPERATOR: &str = env!("CARGO_BIN_EXE_operator");
const LONG: Duration = Duration::from_secs(45);
const SHORT: Duration = Duration::from_secs(15);

struct World {
    plane: ControlPlane,
    client: kube::Client,
    pg: ThrowawayPostgres,
    sql: tokio_postgres::Client,
    api: Api<PostgresWriter>,
}

async fn world(backend: Backend) -> World {
    world_on(support::cluster(backend).await).await
}

/// A world whose API server remembers few changes: a watch that was away for a few dozen writes cannot
/// resume and must relist. Only the embedded server's history can be shrunk from a test; the real one
/// keeps its own.
async fn world_with_short_history(backend: Backend) -> World {
    let cluster = match backend {
        Backend::Embedded => {
            support::embedded_cluster_with(apiserver::Config {
                history_capacity: 50,
                ..apiserver::Config::default()
            })
            .await
        }
        Backend::Real | Backend::Cluster => support::cluster(backend).await,
    };
    world_on(cluster).await
}

async fn world_on((plane, client): (ControlPlane, kube::Client)) -> World {
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let sql = connect(&pg).await;
    let api = Api::namespaced(client.clone(), "default");
    World {
        plane,
        client,
        pg,
        sql,
        api,
    }
}

/// The controller in this process, talking to the API server through `client`.
fn operator_via(
    client: &kube::Client,
    pg: &ThrowawayPostgres,
    settings: Settings,
    resync: Duration,
) -> Running {
    let (ctx, shutdown) = support::context(client, resync);
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, settings)
    })
}

fn operator(world: &World, settings: Settings, resync: Duration) -> Running {
    operator_via(&world.client, &world.pg, settings, resync)
}

/// The manager's default resync: nothing is reconciled again within a test unless it changes.
const DEFAULT_RESYNC: Duration = Duration::from_secs(300);

/// Resyncs (and sweeps) every second, so hand edits and sweeps show within a test's patience.
const FAST_RESYNC: Duration = Duration::from_secs(1);

/// Resource `s<i>` of a burst, in table `students`.
fn student(i: i64) -> PostgresWriter {
    writer(
        &format!("s{i:04}"),
        "students",
        &format!("student {i}"),
        i,
        "canada",
    )
}

/// The row [`student`] asks for.
fn student_row(i: i64) -> StoredRow {
    (
        format!("default/s{i:04}"),
        format!("student {i}"),
        i as i32,
        "canada".into(),
    )
}

/// (id, owner_uid) of every row, by id.
async fn owners(sql: &tokio_postgres::Client, table: &str) -> Vec<(String, String)> {
    let query = format!("SELECT id, owner_uid FROM \"{table}\" ORDER BY id");
    select_or_none(sql, table, &query)
        .await
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// How many rows `table` holds; `None` when it does not exist.
async fn row_count(sql: &tokio_postgres::Client, table: &str) -> Option<i64> {
    let query = format!("SELECT count(*) FROM \"{table}\"");
    select_or_none(sql, table, &query)
        .await
        .first()
        .map(|row| row.get(0))
}

async fn table_exists(sql: &tokio_postgres::Client, table: &str) -> bool {
    let row = sql
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .expect("catalog query");
    row.get(0)
}

/// Whether every resource is Ready/Synced for its current generation with its row in `students`, and
/// there are exactly `count` of them.
async fn all_synced(api: &Api<PostgresWriter>, count: usize) -> Option<()> {
    let items = api.list(&ListParams::default()).await.ok()?.items;
    let synced = items.iter().all(|w| {
        let status = w.status.as_ref();
        ready_reason(w).as_deref() == Some("True/Synced")
            && status.and_then(|s| s.table.as_deref()) == Some("students")
            && status.and_then(|s| s.observed_generation) == w.metadata.generation
    });
    (items.len() == count && synced).then_some(())
}

/// Creates every resource, 16 requests at a time.
async fn create_all(api: Api<PostgresWriter>, writers: Vec<PostgresWriter>) {
    futures::stream::iter(writers)
        .map(|writer| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &writer)
                    .await
                    .unwrap_or_else(|e| panic!("create {}: {e}", writer.name_any()))
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

async fn delete_all(api: Api<PostgresWriter>, names: Vec<String>) {
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                api.delete(&name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("delete {name}: {e}"));
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

async fn postgres_restarted_mid_burst_converges_with_no_missing_or_duplicate_rows(backend: Backend) {
    let w = world(backend).await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    let count = 200;
    // Half the burst is in flight when PostgreSQL stops; the other half arrives while it is down.
    let first_half = tokio::spawn(create_all(w.api.clone(), (0..count / 2).map(student).collect()));
    eventually("the first rows of the burst", SHORT, || async {
        (row_count(&w.sql, "students").await? > 0).then_some(())
    })
    .await;
    w.pg.stop().await.expect("PostgreSQL stops");
    first_half.await.expect("first half created");
    create_all(w.api.clone(), (count / 2..count).map(student).collect()).await;
    eventually("a resource to report the outage", SHORT, || async {
        let items = w.api.list(&ListParams::default()).await.ok()?.items;
        items
            .iter()
            .any(|w| ready_reason(w).as_deref() == Some("False/DatabaseUnavailable"))
            .then_some(())
    })
    .await;
    w.pg.restart().await.expect("PostgreSQL starts again");

    let sql = connect(&w.pg).await;
    let expected: Vec<StoredRow> = (0..count).map(student_row).collect();
    eventually("exactly one row per resource", LONG, || async {
        (rows(&sql, "students").await == expected).then_some(())
    })
    .await;
    eventually("every resource to be Ready/Synced", LONG, || async {
        all_synced(&w.api, count as usize).await
    })
    .await;
    assert_eq!(
        rows(&sql, "students").await,
        expected,
        "no row written twice or late"
    );
    running.stop().await;
}

async fn a_postgres_that_stops_answering_is_reported_within_the_timeouts_and_converges_after(
    backend: Backend,
) {
    let w = world(backend).await;
    let config = DatabaseConfig {
        connect_timeout_seconds: 1,
        statement_timeout_seconds: 2,
        ..DatabaseConfig::from_url(&w.pg.url())
    };
    // What the operator promises: a database step (a connection, one statement) unanswered for this
    // long is abandoned. A reconcile fails at its first abandoned step, after waiting at most for one
    // batch ahead of its own: two steps, then its status is written.
    let step = config.step_timeout();
    let reported_within = step * 2 + SHORT;
    let (ctx, shutdown) = support::context(&w.client, DEFAULT_RESYNC);
    let pool = config.connect().expect("pool");
    let running = support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, Settings::default())
    });
    create_all(w.api.clone(), (0..2).map(student).collect()).await;
    eventually("the first resources to be Ready/Synced", SHORT, || async {
        all_synced(&w.api, 2).await
    })
    .await;

    let frozen = Frozen::start(&w.pg);
    // As many reconciles as run at once (more than the batch writer's connection slots), each of
    // which would wait forever on a connection to the stopped server.
    create_all(w.api.clone(), (2..5).map(student).collect()).await;
    w.api
        .patch(
            "s0000",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"age": 40}})),
        )
        .await
        .expect("update");
    let names: Vec<String> = (0..5)
        .map(|i| format!("s{i:04}"))
        .filter(|n| n != "s0001")
        .collect();
    eventually(
        &format!("every changed resource to report DatabaseUnavailable within {reported_within:?}"),
        reported_within,
        || async {
            for name in &names {
                let writer = w.api.get(name).await.ok()?;
                (ready_reason(&writer).as_deref() == Some("False/DatabaseUnavailable")).then_some(())?;
            }
            Some(())
        },
    )
    .await;
    drop(frozen);

    let mut expected: Vec<StoredRow> = (1..5).map(student_row).collect();
    expected.push(("default/s0000".into(), "student 0".into(), 40, "canada".into()));
    expected.sort();
    eventually("every row after PostgreSQL answers again", LONG, || async {
        (rows(&w.sql, "students").await == expected).then_some(())
    })
    .await;
    eventually("every resource to be Ready/Synced again", LONG, || async {
        all_synced(&w.api, 5).await
    })
    .await;
    running.stop().await;
}

/// Runs `operator run --controllers postgres-writer` as users do, logging to `log`.
fn spawn_binary(kubeconfig: &Path, database_url: &str, log: &Path) -> tokio::process::Child {
    let log = std::fs::File::create(log).expect("log file");
    tokio::process::Command::new(OPERATOR)
        .args(["run", "--controllers", "postgres-writer"])
        .args(["--metrics-bind-address", "0", "--health-probe-bind-address", "0"])
        .env("KUBECONFIG", kubeconfig)
        .env("DATABASE_URL", database_url)
        .env("LOG_LEVEL", "warn")
        .env("LOG_FORMAT", "text")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("operator run starts")
}

/// Fails the test with the process's log when it exited on its own.
fn assert_running(child: &mut tokio::process::Child, log: &Path) {
    if let Some(status) = child.try_wait().expect("wait") {
        panic!(
            "operator exited early ({status}):\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
}

async fn operator_killed_with_sigkill_mid_burst_converges_after_restart(backend: Backend) {
    let w = world(backend).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    w.plane.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let first_log = dir.path().join("first.log");
    let mut first = spawn_binary(&kubeconfig, &w.pg.url(), &first_log);
    let count = 500;
    // The first half of the burst is created while the operator runs, the second half after the
    // kill: the kill comes mid-burst by construction, however fast the operator is.
    let half = count / 2;
    let creating = tokio::spawn(create_all(w.api.clone(), (0..half).map(student).collect()));

    // SIGKILL once some rows are in: the process gets no chance to finish anything.
    let deadline = tokio::time::Instant::now() + LONG;
    while row_count(&w.sql, "students").await.unwrap_or(0) < 20 {
        assert_running(&mut first, &first_log);
        assert!(tokio::time::Instant::now() < deadline, "no rows within {LONG:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    first.start_kill().expect("SIGKILL");
    let status = first.wait().await.expect("killed operator is reaped");
    assert!(!status.success(), "the operator died: {status}");
    creating.await.expect("first half created");
    create_all(w.api.clone(), (half..count).map(student).collect()).await;

    let second_log = dir.path().join("second.log");
    let mut second = spawn_binary(&kubeconfig, &w.pg.url(), &second_log);
    let expected: Vec<StoredRow> = (0..count).map(student_row).collect();
    eventually("exactly one row per resource after the restart", LONG, || async {
        (rows(&w.sql, "students").await == expected).then_some(())
    })
    .await;
    eventually("every resource to be Ready/Synced", LONG, || async {
        all_synced(&w.api, count as usize).await
    })
    .await;
    assert_running(&mut second, &second_log);

    delete_all(w.api.clone(), (0..count).map(|i| format!("s{i:04}")).collect()).await;
    eventually("every resource and every row to go", LONG, || async {
        let left = w.api.list(&ListParams::default()).await.ok()?.items.len();
        (left == 0 && row_count(&w.sql, "students").await? == 0).then_some(())
    })
    .await;
    assert_running(&mut second, &second_log);
    second.start_kill().expect("SIGKILL");
    let _ = second.wait().await;
}

async fn same_name_recreated_right_after_delete_gets_its_own_row(backend: Backend) {
    let w = world(backend).await;
    let running = operator(&w, Settings::default(), FAST_RESYNC);
    let created = w
        .api
        .create(
            &PostParams::default(),
            &writer("a", "students", "alex", 23, "canada"),
        )
        .await
        .expect("create");
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    let mut previous_uid = created.uid().expect("uid");

    for round in 1..=3_i64 {
        w.api.delete("a", &DeleteParams::default()).await.expect("delete");
        // Recreate as soon as the API server lets us (the finalizer holds the old one until its row is gone).
        let student = format!("generation {round}");
        let recreated = eventually("the name to be free again", SHORT, || async {
            let fresh = writer("a", "students", &student, 30 + round, "peru");
            match w.api.create(&PostParams::default(), &fresh).await {
                Ok(created) => Some(created),
                Err(kube::Error::Api(status)) if status.code == 409 => None,
                Err(error) => panic!("recreate: {error}"),
            }
        })
        .await;
        let uid = recreated.uid().expect("uid");
        assert_ne!(uid, previous_uid, "a new incarnation");
        let expected = vec![(
            "default/a".to_owned(),
            student.clone(),
            (30 + round) as i32,
            "peru".to_owned(),
        )];
        eventually("the new incarnation's row", SHORT, || async {
            let mine = owners(&w.sql, "students").await == [("default/a".to_owned(), uid.clone())];
            (mine && rows(&w.sql, "students").await == expected).then_some(())
        })
        .await;
        let synced = wait_reason(&w.api, "a", "True/Synced", SHORT).await;
        assert_eq!(synced.uid().as_deref(), Some(uid.as_str()));
        previous_uid = uid;
    }

    // Nothing left over from the old incarnations removes or rewrites the row in later reconciles.
    let reconciles = running.reconciles();
    eventually("a few more resyncs", SHORT, || async {
        assert_eq!(
            owners(&w.sql, "students").await,
            [("default/a".to_owned(), previous_uid.clone())],
            "the row stays the newest incarnation's"
        );
        (running.reconciles() >= reconciles + 3).then_some(())
    })
    .await;
    running.stop().await;
}

/// Waits until `running` has finished two more sweeps: at least one of them started, and ended, after
/// this call.
async fn two_more_sweeps(running: &Running) {
    let sweeps = running.sweeps();
    eventually("two more sweeps", SHORT, || async {
        (running.sweeps() >= sweeps + 2).then_some(())
    })
    .await;
}

/// Deletes `name` and removes its finalizer by hand before any cleanup deleted its row (the operator
/// is down, or the database is): the resource goes, its row is left behind, an orphan.
async fn orphan(api: &Api<PostgresWriter>, name: &str) {
    api.delete(name, &DeleteParams::default()).await.expect("delete");
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove the finalizer");
    until_gone(api, name, "the resource without its finalizer to go", SHORT).await;
}

/// Sets `demo.yash.com/leave-row` on `name` and deletes it: the resource goes, its row stays.
async fn release(api: &Api<PostgresWriter>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {(LEAVE_ROW_ANNOTATION): "true"}}})),
    )
    .await
    .expect("annotate");
    api.delete(name, &DeleteParams::default()).await.expect("delete");
    until_gone(api, name, "the released resource to go", SHORT).await;
}

async fn orphan_sweep_deletes_only_the_rows_the_operator_wrote_and_still_owns(backend: Backend) {
    let w = world(backend).await;
    // Another application's rows, in our table and in a table of its own shaped like ours, owned by
    // UUIDs as Kubernetes uids are; one sits at the id a resource will ask for.
    let shape = "(id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, country text NOT NULL, \
                 owner_uid text NOT NULL)";
    w.sql
        .batch_execute(&format!(
            "CREATE TABLE students {shape}; CREATE TABLE enrolments {shape}; \
             INSERT INTO students VALUES ('default/blank', 'nobody', 1, 'x', ''), \
             ('default/foreign', 'someone', 2, 'y', '0b6f1c9e-3f2a-4d7b-9c1e-2a4b6c8d0e1f'), \
             ('default/taken', 'first come', 3, 'z', '5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d'); \
             INSERT INTO enrolments VALUES ('default/kept', 'elsewhere', 4, 'w', 'a3c9e2f1-7b6d-4e5a-9c8b-1d2e3f4a5b6c')"
        ))
        .await
        .expect("foreign rows");
    let foreign: Vec<StoredRow> = vec![
        ("default/blank".into(), "nobody".into(), 1, "x".into()),
        ("default/foreign".into(), "someone".into(), 2, "y".into()),
        ("default/taken".into(), "first come".into(), 3, "z".into()),
    ];
    let enrolments = vec![(
        "default/kept".to_owned(),
        "elsewhere".to_owned(),
        4,
        "w".to_owned(),
    )];
    let ours = |name: &str, age| {
        (
            format!("default/{name}"),
            name.to_owned(),
            age,
            "chile".to_owned(),
        )
    };
    let create = |name: &'static str, age| {
        let api = w.api.clone();
        async move {
            api.create(
                &PostParams::default(),
                &writer(name, "students", name, age, "chile"),
            )
            .await
            .expect("create")
        }
    };
    // A row an earlier version wrote, before there was a ledger: the resource's uid, no ledger entry.
    let legacy = create("legacy", 19).await;
    w.sql
        .execute(
            "INSERT INTO students VALUES ('default/legacy', 'legacy', 19, 'chile', $1)",
            &[&legacy.uid().expect("uid")],
        )
        .await
        .expect("a row from an earlier version");

    let sweeping = || Settings {
        orphan_sweep: true,
        ..Settings::default()
    };
    let running = operator(&w, sweeping(), FAST_RESYNC);
    for (name, age) in [("gone", 20), ("kept", 21), ("taken", 22), ("released", 23)] {
        create(name, age).await;
    }
    for name in ["legacy", "gone", "kept", "released"] {
        wait_reason(&w.api, name, "True/Synced", SHORT).await;
    }
    wait_reason(&w.api, "taken", "False/RowConflict", SHORT).await;
    release(&w.api, "released").await;
    let mut everything = foreign.clone();
    everything.extend([
        ours("legacy", 19),
        ours("gone", 20),
        ours("kept", 21),
        ours("released", 23),
    ]);
    everything.sort();
    two_more_sweeps(&running).await;
    assert_eq!(
        rows(&w.sql, "students").await,
        everything,
        "with every resource alive the sweep deletes nothing: not another writer's rows, not a released one"
    );
    assert_eq!(rows(&w.sql, "enrolments").await, enrolments);
    running.stop().await;

    // While the operator is down, two resources lose their finalizer by hand and go: their rows are
    // orphans. The legacy one counts: its resource's reconcile found the row holding its uid.
    orphan(&w.api, "gone").await;
    orphan(&w.api, "legacy").await;
    assert_eq!(
        rows(&w.sql, "students").await,
        everything,
        "nobody deleted the rows"
    );

    let running = operator(&w, sweeping(), FAST_RESYNC);
    let mut expected = foreign.clone();
    expected.extend([ours("kept", 21), ours("released", 23)]);
    expected.sort();
    eventually("the orphan rows to be swept", SHORT, || async {
        (rows(&w.sql, "students").await == expected).then_some(())
    })
    .await;
    two_more_sweeps(&running).await;
    assert_eq!(
        rows(&w.sql, "students").await,
        expected,
        "later sweeps delete nothing more"
    );
    assert_eq!(rows(&w.sql, "enrolments").await, enrolments);
    assert_eq!(
        ledger(&w.sql).await,
        [("students".to_owned(), "default/kept".to_owned())],
        "the ledger lists the one row the operator still owns"
    );
    let taken = wait_reason(&w.api, "taken", "False/RowConflict", SHORT).await;
    assert!(
        taken
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&FINALIZER.to_owned())
    );
    running.stop().await;
}

async fn a_row_released_while_the_database_is_down_survives_the_sweeps_after(backend: Backend) {
    let w = world(backend).await;
    let running = operator(
        &w,
        Settings {
            orphan_sweep: true,
            ..Settings::default()
        },
        FAST_RESYNC,
    );
    for (name, age) in [("released", 30), ("orphaned", 31)] {
        w.api
            .create(
                &PostParams::default(),
                &writer(name, "students", name, age, "peru"),
            )
            .await
            .expect("create");
        wait_reason(&w.api, name, "True/Synced", SHORT).await;
    }
    w.pg.stop().await.expect("PostgreSQL stops");
    // The escape hatch works with the database down; the release waits for it.
    release(&w.api, "released").await;
    orphan(&w.api, "orphaned").await;
    w.pg.restart().await.expect("PostgreSQL starts again");

    let sql = connect(&w.pg).await;
    let kept = vec![(
        "default/released".to_owned(),
        "released".to_owned(),
        30,
        "peru".to_owned(),
    )];
    eventually("the orphan row to be swept", LONG, || async {
        (rows(&sql, "students").await == kept).then_some(())
    })
    .await;
    two_more_sweeps(&running).await;
    assert_eq!(rows(&sql, "students").await, kept, "the released row stays");
    assert_eq!(ledger(&sql).await, [], "and is no longer the operator's");
    running.stop().await;
}

/// The entries of the ConfigMap where the operator keeps releases that wait for the database.
async fn pending_releases(client: &kube::Client) -> Vec<String> {
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .get_opt(postgres_writer::PENDING_RELEASES_CONFIG_MAP)
        .await
        .expect("read the pending releases")
        .and_then(|c| c.data)
        .unwrap_or_default()
        .into_values()
        .collect()
}

async fn a_row_released_while_the_database_is_down_survives_an_operator_restart(backend: Backend) {
    let w = world(backend).await;
    let sweeping = || Settings {
        orphan_sweep: true,
        ..Settings::default()
    };
    let running = operator(&w, sweeping(), FAST_RESYNC);
    for (name, age) in [("released", 40), ("orphaned", 41)] {
        w.api
            .create(
                &PostParams::default(),
                &writer(name, "students", name, age, "chad"),
            )
            .await
            .expect("create");
        wait_reason(&w.api, name, "True/Synced", SHORT).await;
    }
    w.pg.stop().await.expect("PostgreSQL stops");
    release(&w.api, "released").await;
    assert_eq!(
        pending_releases(&w.client).await,
        ["default/released"],
        "the release the database could not take is recorded before the resource goes"
    );
    // The operator that took the release stops before the database is back; while it is down, a
    // resource loses its finalizer by hand, leaving a true orphan behind.
    running.stop().await;
    orphan(&w.api, "orphaned").await;
    w.pg.restart().await.expect("PostgreSQL starts again");

    let running = operator(&w, sweeping(), FAST_RESYNC);
    let sql = connect(&w.pg).await;
    let kept = vec![(
        "default/released".to_owned(),
        "released".to_owned(),
        40,
        "chad".to_owned(),
    )];
    eventually("the orphan row to be swept", LONG, || async {
        (rows(&sql, "students").await == kept).then_some(())
    })
    .await;
    two_more_sweeps(&running).await;
    assert_eq!(
        rows(&sql, "students").await,
        kept,
        "the restarted operator keeps the released row"
    );
    assert_eq!(ledger(&sql).await, [], "and it is no longer the operator's");
    assert_eq!(
        pending_releases(&w.client).await,
        Vec::<String>::new(),
        "the applied release is no longer pending"
    );
    running.stop().await;
}

async fn table_dropped_by_hand_is_recreated_and_without_auto_create_reports_table_missing(backend: Backend) {
    let w = world(backend).await;
    let expected = vec![("default/a".to_owned(), "alex".to_owned(), 23, "canada".to_owned())];
    let running = operator(&w, Settings::default(), FAST_RESYNC);
    w.api
        .create(
            &PostParams::default(),
            &writer("a", "students", "alex", 23, "canada"),
        )
        .await
        .expect("create");
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    w.sql.batch_execute("DROP TABLE students").await.expect("drop");
    eventually("the table and its row to come back", SHORT, || async {
        (rows(&w.sql, "students").await == expected).then_some(())
    })
    .await;
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    running.stop().await;

    let running = operator(
        &w,
        Settings {
            auto_create_tables: false,
            ..Settings::default()
        },
        FAST_RESYNC,
    );
    w.sql.batch_execute("DROP TABLE students").await.expect("drop");
    let missing = wait_reason(&w.api, "a", "False/TableMissing", SHORT).await;
    let message = &missing.status.expect("status").conditions[0].message;
    assert!(
        message.contains("students") && message.contains("does not exist"),
        "{message}"
    );
    assert!(
        !table_exists(&w.sql, "students").await,
        "the table is not recreated"
    );
    // Recreating it by hand is all the resource needs.
    w.sql
        .batch_execute(
            "CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
             country text NOT NULL, owner_uid text NOT NULL)",
        )
        .await
        .expect("create table");
    wait_reason(&w.api, "a", "True/Synced", SHORT).await;
    assert_eq!(rows(&w.sql, "students").await, expected);
    running.stop().await;
}

async fn resource_deleted_while_operator_down_loses_its_row_when_it_comes_back(backend: Backend) {
    let w = world(backend).await;
    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    create_all(w.api.clone(), (0..3).map(student).collect()).await;
    let all: Vec<StoredRow> = (0..3).map(student_row).collect();
    eventually("the rows", SHORT, || async {
        (rows(&w.sql, "students").await == all).then_some(())
    })
    .await;
    eventually("every resource to be Ready/Synced", SHORT, || async {
        all_synced(&w.api, 3).await
    })
    .await;
    running.stop().await;

    delete_all(w.api.clone(), vec!["s0000".into(), "s0002".into()]).await;
    for name in ["s0000", "s0002"] {
        let held = w.api.get(name).await.expect("held by its finalizer");
        assert!(held.metadata.deletion_timestamp.is_some());
    }
    assert_eq!(
        rows(&w.sql, "students").await,
        all,
        "nothing deletes rows while the operator is down"
    );

    let running = operator(&w, Settings::default(), DEFAULT_RESYNC);
    eventually("the deleted resources and their rows to go", SHORT, || async {
        let names: Vec<String> = w
            .api
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .iter()
            .map(|w| w.name_any())
            .collect();
        (names == ["s0001"] && rows(&w.sql, "students").await == [student_row(1)]).then_some(())
    })
    .await;
    running.stop().await;
}

/// A TCP proxy in front of the API server that can cut every connection and refuse new ones, as a
/// network partition would.
struct Proxy {
    addr: SocketAddr,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    task: AbortHandle,
}

impl Proxy {
    async fn start(plane: &ControlPlane) -> Proxy {
        let upstream: SocketAddr = plane
            .url()
            .rsplit('/')
            .next()
            .and_then(|host_port| host_port.parse().ok())
            .expect("the control plane listens on a loopback address");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("proxy binds");
        let addr = listener.local_addr().expect("proxy address");
        let open = Arc::new(AtomicBool::new(true));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (accepting, tracked) = (open.clone(), connections.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !accepting.load(Ordering::SeqCst) {
                    continue; // Dropped: the client sees its connection closed.
                }
                let relay = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tracked.lock().unwrap().push(relay.abort_handle());
            }
        })
        .abort_handle();
        Proxy {
            addr,
            open,
            connections,
            task,
        }
    }

    /// Closes every open connection (watches included) and refuses new ones until [`Proxy::heal`].
    fn partition(&self) {
        self.open.store(false, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    fn heal(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    /// A client of the server behind the proxy, connecting through it.
    fn client(&self, plane: &ControlPlane) -> kube::Client {
        let mut config = plane.kube_config();
        let scheme = config.cluster_url.scheme_str().unwrap_or("https").to_owned();
        config.cluster_url = format!("{scheme}://{}", self.addr).parse().expect("proxy URL");
        kube::Client::try_from(config).expect("client through the proxy")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.partition();
    }
}

async fn api_server_watch_dropped_resumes_without_missing_changes(backend: Backend) {
    let w = world_with_short_history(backend).await;
    let proxy = Proxy::start(&w.plane).await;
    // No resync: only the watch can tell the operator about the changes made during the partition.
    let running = operator_via(
        &proxy.client(&w.plane),
        &w.pg,
        Settings::default(),
        DEFAULT_RESYNC,
    );
    create_all(w.api.clone(), (0..6).map(student).collect()).await;
    eventually("every resource to be Ready/Synced", SHORT, || async {
        all_synced(&w.api, 6).await
    })
    .await;

    proxy.partition();
    let cut_at = w
        .plane
        .as_embedded()
        .map(|s| s.store().current_resource_version());
    create_all(w.api.clone(), (6..10).map(student).collect()).await;
    for i in [1, 2] {
        w.api
            .patch(
                &format!("s{i:04}"),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"age": 100 + i, "country": "peru"}})),
            )
            .await
            .expect("update");
    }
    delete_all(w.api.clone(), vec!["s0003".into(), "s0004".into()]).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(w.client.clone(), "default");
    for i in 0..60 {
        let noise: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("noise-{i}")}})).expect("ConfigMap");
        config_maps
            .create(&PostParams::default(), &noise)
            .await
            .expect("noise");
    }
    if let (Some(server), Some(cut_at)) = (w.plane.as_embedded(), cut_at) {
        assert!(
            server.store().events_after(cut_at).is_err(),
            "resuming the cut watch is 410 Gone"
        );
    }
    proxy.heal();

    let mut expected: Vec<StoredRow> = [0, 5, 6, 7, 8, 9].into_iter().map(student_row).collect();
    for i in [1, 2] {
        expected.push((
            format!("default/s{i:04}"),
            format!("student {i}"),
            100 + i,
            "peru".into(),
        ));
    }
    expected.sort();
    eventually(
        "the rows to follow every change made while cut off",
        LONG,
        || async { (rows(&w.sql, "students").await == expected).then_some(()) },
    )
    .await;
    eventually(
        "the deleted resources to go and the rest to be Synced",
        LONG,
        || async { all_synced(&w.api, 8).await },
    )
    .await;
    running.stop().await;
}

testenv::each_control_plane!(
    postgres_restarted_mid_burst_converges_with_no_missing_or_duplicate_rows,
    a_postgres_that_stops_answering_is_reported_within_the_timeouts_and_converges_after,
    operator_killed_with_sigkill_mid_burst_converges_after_restart,
    same_name_recreated_right_after_delete_gets_its_own_row,
    orphan_sweep_deletes_only_the_rows_the_operator_wrote_and_still_owns,
    a_row_released_while_the_database_is_down_survives_the_sweeps_after,
    a_row_released_while_the_database_is_down_survives_an_operator_restart,
    table_dropped_by_hand_is_recreated_and_without_auto_create_reports_table_missing,
    resource_deleted_while_operator_down_loses_its_row_when_it_comes_back,
    api_server_watch_dropped_resumes_without_missing_changes,
);
