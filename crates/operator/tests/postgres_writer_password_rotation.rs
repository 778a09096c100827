//! A rotated database password, as an administrator rotates it: `ALTER ROLE ... PASSWORD`, the old
//! sessions terminated, and the password file (a mounted Secret) replaced later. The manager
//! (`operator run`, as users run it) is never restarted.

mod support;

use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams, PostParams};
use operator::db::throwaway::ThrowawayPostgres;
use serde_json::json;
use support::{
    Backend, Scene,
    database_access::{create_role, replace_file, terminate_sessions},
    eventually,
    postgres_writer::{connect, ready_reason, rows, wait_reason, wait_refused_saying, writer},
};

const SHORT: Duration = Duration::from_secs(15);

/// How long the password file lags behind the rotation in this test: long enough for the retries'
/// back-off (5 ms, doubled at each failure) to reach its cap.
const OUTAGE: Duration = Duration::from_secs(60);

/// How soon a PostgresWriter that failed is Ready after the password file holds the right password:
/// its next retry, at most the back-off's cap (30 s) after its last failure, and that retry's one
/// database step (--db-connect-timeout 5 s + --db-statement-timeout 10 s).
const READY_AFTER_THE_FILE_CHANGES: Duration = Duration::from_secs(30 + 5 + 10);

async fn a_rotated_password_is_used_by_new_connections_without_a_restart(backend: Backend) {
    let scene = Scene::start(backend, "pgw-password-rotation").await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let admin = connect(&pg).await;
    let old_password = format!("old-{}", rand_hex());
    let new_password = format!("new-{}", rand_hex());
    create_role(&admin, "writer", &old_password).await;
    let password_file = scene.dir().join("password");
    std::fs::write(&password_file, format!("{old_password}\n")).expect("password file");

    let url = format!(
        "postgres://writer@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port()
    );
    let password_path = password_file.display().to_string();
    let mut manager = scene.operator(
        &[
            "run",
            "--controllers",
            "postgres-writer",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ],
        &[("DATABASE_URL", &url), ("PSQL_PASSWORD_FILE", &password_path)],
    );
    let api = scene.api();
    let id = |name: &str| scene.id(name);

    api.create(
        &PostParams::default(),
        &writer("before", "students", "ada", 30, "peru"),
    )
    .await
    .expect("created");
    wait_reason(&api, "before", "True/Synced", SHORT).await;

    // The password changes in PostgreSQL first: sessions opened with the old one go on.
    admin
        .batch_execute(&format!("ALTER ROLE writer PASSWORD '{new_password}'"))
        .await
        .expect("password changed");
    api.patch(
        "before",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"age": 31}})),
    )
    .await
    .expect("patched");
    eventually(
        "the change written over a session opened before the rotation",
        SHORT,
        || async {
            let rows = rows(&admin, "students").await;
            (rows == [(id("before"), "ada".into(), 31, "peru".into())]).then_some(())
        },
    )
    .await;

    // Then the old sessions are cut; new ones are refused while the file still holds the old password.
    assert!(
        terminate_sessions(&admin, "writer").await > 0,
        "the pool had sessions"
    );
    api.create(
        &PostParams::default(),
        &writer("after", "students", "grace", 40, "chile"),
    )
    .await
    .expect("created");
    wait_refused_saying(&api, "after", "password authentication failed", SHORT).await;

    // The file lags (the kubelet refreshes a Secret's volume a minute or two after its update): the
    // retries back off to their cap meanwhile, the worst case for how soon the change is noticed.
    let refused_at = Instant::now();
    eventually("the refusals to last a minute", OUTAGE + SHORT, || async {
        let writer = api.get("after").await.ok()?;
        assert_eq!(
            ready_reason(&writer).as_deref(),
            Some("False/DatabaseUnavailable"),
            "refused while the file holds the old password"
        );
        (refused_at.elapsed() >= OUTAGE).then_some(())
    })
    .await;

    // The Secret's new content reaches the file: the next connection uses it.
    let replaced = Instant::now();
    replace_file(&password_file, format!("{new_password}\n").as_bytes());
    wait_reason(&api, "after", "True/Synced", READY_AFTER_THE_FILE_CHANGES).await;
    println!(
        "PostgresWriter Ready {:.1} s after the password file changed (refused for {:.0} s before)",
        replaced.elapsed().as_secs_f64(),
        (replaced - refused_at).as_secs_f64()
    );
    let mut expected = vec![
        (id("after"), "grace".to_string(), 40, "chile".to_string()),
        (id("before"), "ada".into(), 31, "peru".into()),
    ];
    expected.sort();
    assert_eq!(rows(&admin, "students").await, expected);
    assert_eq!(
        ready_reason(&api.get("before").await.expect("read")).as_deref(),
        Some("True/Synced")
    );

    assert_eq!(manager.exit_within(Duration::ZERO).await, None, "never restarted");
    let log = manager.log_so_far();
    assert!(
        !log.contains(&old_password) && !log.contains(&new_password),
        "no password in the log:\n{log}"
    );
}

/// A password of hex digits: nothing in it needs quoting in SQL.
fn rand_hex() -> String {
    rand::random::<[u8; 8]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

testenv::each_control_plane!(a_rotated_password_is_used_by_new_connections_without_a_restart);
