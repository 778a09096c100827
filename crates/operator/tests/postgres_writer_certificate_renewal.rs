//! Certificates renewed while the manager runs, as they are in a cluster: the CA bundle, the server's
//! certificate, and the manager's own client certificate, each replaced on disk (a mounted Secret
//! updated by the kubelet) or on the database's side. The manager (`operator run`, as users run it) is
//! never restarted, and its PostgresWriters are Ready with their rows written within the bound
//! docs/operators.md promises.

mod support;

use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::{
    Backend,
    database_access::{MountedSecret, ready_message, replace_file, terminate_sessions},
    database_tls::{READY_AFTER_A_FILE_CHANGES, SHORT, World, client_certificate, path, server_tls, world},
    eventually,
    postgres_writer::{rows, wait_reason},
};

async fn a_ca_file_replaced_on_disk_is_used_by_the_next_connection(backend: Backend) {
    let w = world(backend, "pgw-tls-ca-renewed").await;
    // The mounted CA starts wrong (a CA bundle not yet updated for a renewed server certificate)...
    let mounted_ca = w.scene.dir().join("mounted-ca.crt");
    std::fs::copy(&w.other_ca_file, &mounted_ca).expect("mounted CA");
    let url = w.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", path(&mounted_ca)),
    );
    let mut manager = w.manager(&[], &[("DATABASE_URL", &url)]);
    let message = w.refused("ada").await;
    assert!(message.contains("not signed by a CA of sslrootcert"), "{message}");

    // ... then the Secret's new content arrives: the same process connects.
    let replaced = Instant::now();
    replace_file(&mounted_ca, &std::fs::read(&w.ca_file).expect("the right CA"));
    wait_reason(&w.api(), "ada", "True/Synced", READY_AFTER_A_FILE_CHANGES).await;
    println!(
        "PostgresWriter Ready {:.1} s after the CA file changed",
        replaced.elapsed().as_secs_f64()
    );
    assert_eq!(manager.exit_within(Duration::ZERO).await, None, "never restarted");
}

/// Changes `name`'s age and waits for its row to hold it: a write over whatever connection the pool
/// has now.
async fn row_follows_a_change(w: &World, name: &str, age: i64, limit: Duration) {
    w.api()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"age": age}})),
        )
        .await
        .expect("patched");
    let id = w.scene.id(name);
    eventually(&format!("the row of {name} at age {age}"), limit, || async {
        let rows = rows(&w.admin, "students").await;
        rows.iter()
            .any(|row| row.0 == id && i64::from(row.2) == age)
            .then_some(())
    })
    .await;
    wait_reason(&w.api(), name, "True/Synced", limit).await;
}

async fn a_renewed_client_certificate_is_used_without_a_restart_once_the_old_one_is_refused(
    backend: Backend,
) {
    let w = world(backend, "pgw-tls-client-renewed").await;
    let old = client_certificate("writer", 0x1001);
    w.pg.require_client_certificates(&old.ca_pem)
        .expect("client certificates required");
    w.pg.reload().await.expect("PostgreSQL reloads");
    let mut secret = MountedSecret::mount(
        &w.scene.dir().join("client-certificate"),
        &[
            ("tls.crt", old.certificate_pem.as_bytes()),
            ("tls.key", old.key_pem.as_bytes()),
        ],
    );
    // No password: pg_hba's `cert` logs `writer` in by its certificate alone.
    let url = format!(
        "postgres://writer@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        w.pg.port(),
        path(&w.ca_file)
    );
    let (certificate_file, key_file) = (secret.path("tls.crt"), secret.path("tls.key"));
    let mut manager = w.manager(
        &[
            "--db-sslcert",
            path(&certificate_file),
            "--db-sslkey",
            path(&key_file),
        ],
        &[("DATABASE_URL", &url)],
    );
    w.converges("before", SHORT).await;
    assert_eq!(w.writer_client_serials().await, [old.serial.to_string()]);

    // The certificate is renewed by a new CA, and from its reload on the server trusts only that CA:
    // the old certificate no longer logs in. Sessions already open were checked at their login and go
    // on until they end; they are ended here, as a restart or a failover of the database ends them.
    let new = client_certificate("writer", 0x2002);
    w.pg.replace_client_ca(&new.ca_pem)
        .expect("the server's client CA replaced");
    w.pg.reload().await.expect("PostgreSQL reloads");
    assert!(
        terminate_sessions(&w.admin, "writer").await > 0,
        "the pool had sessions"
    );
    let message = w.refused("during").await;
    assert!(
        message.contains("TLS to PostgreSQL failed, the server refused the client certificate"),
        "says the client certificate is what the server refused: {message}"
    );

    // The Secret's renewed certificate and key reach the mounted files, both at once.
    let replaced = Instant::now();
    secret.update(&[
        ("tls.crt", new.certificate_pem.as_bytes()),
        ("tls.key", new.key_pem.as_bytes()),
    ]);
    wait_reason(&w.api(), "during", "True/Synced", READY_AFTER_A_FILE_CHANGES).await;
    println!(
        "PostgresWriter Ready {:.1} s after the client certificate's files changed",
        replaced.elapsed().as_secs_f64()
    );
    w.has_row("during").await;
    row_follows_a_change(&w, "before", 21, SHORT).await;
    w.converges("after", SHORT).await;
    assert_eq!(
        w.writer_client_serials().await,
        [new.serial.to_string()],
        "every session logged in with the renewed certificate"
    );
    assert_eq!(manager.exit_within(Duration::ZERO).await, None, "never restarted");
    let log = manager.log_so_far();
    assert!(!log.contains("PRIVATE KEY"), "no key in the log:\n{log}");
}

async fn a_server_certificate_from_a_new_ca_is_trusted_once_the_bundle_holds_both(backend: Backend) {
    let w = world(backend, "pgw-tls-server-renewed").await;
    let mut bundle = MountedSecret::mount(
        &w.scene.dir().join("postgres-ca"),
        &[("ca.crt", w.ca.cert_pem().as_bytes())],
    );
    let url = w.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", path(&bundle.path("ca.crt"))),
    );
    let mut manager = w.manager(&[], &[("DATABASE_URL", &url)]);
    w.converges("before", SHORT).await;

    // A CA rotation done in the order that loses nothing: the bundle holds the old CA and the new one
    // first, then the server takes a certificate from the new CA, then the bundle drops the old CA.
    let new_ca = serving::authority::Authority::generate("database CA, renewed", None).expect("a new CA");
    let both = format!("{}{}", w.ca.cert_pem(), new_ca.cert_pem());
    bundle.update(&[("ca.crt", both.as_bytes())]);
    w.pg.replace_server_certificate(&server_tls(&new_ca))
        .expect("the server's certificate replaced");
    w.pg.reload().await.expect("PostgreSQL reloads");
    // New connections see the new certificate; the sessions opened before it are ended to make sure.
    terminate_sessions(&w.admin, "writer").await;
    row_follows_a_change(&w, "before", 21, READY_AFTER_A_FILE_CHANGES).await;
    w.converges("after", READY_AFTER_A_FILE_CHANGES).await;

    bundle.update(&[("ca.crt", new_ca.cert_pem().as_bytes())]);
    terminate_sessions(&w.admin, "writer").await;
    row_follows_a_change(&w, "before", 22, READY_AFTER_A_FILE_CHANGES).await;
    w.converges("later", READY_AFTER_A_FILE_CHANGES).await;
    for name in ["before", "after", "later"] {
        let writer = w.api().get(name).await.expect("read");
        assert_eq!(
            support::postgres_writer::ready_reason(&writer).as_deref(),
            Some("True/Synced"),
            "{name}: {:?}",
            ready_message(&writer)
        );
    }
    assert_eq!(manager.exit_within(Duration::ZERO).await, None, "never restarted");
}

testenv::each_control_plane!(
    a_ca_file_replaced_on_disk_is_used_by_the_next_connection,
    a_renewed_client_certificate_is_used_without_a_restart_once_the_old_one_is_refused,
    a_server_certificate_from_a_new_ca_is_trusted_once_the_bundle_holds_both,
);
