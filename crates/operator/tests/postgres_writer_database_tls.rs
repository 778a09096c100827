//! TLS to a PostgreSQL that accepts only TLS (`hostnossl ... reject` in pg_hba.conf), its certificate
//! for `localhost` signed by a CA the test makes: each of libpq's sslmodes as `operator run` takes it
//! (DATABASE_URL, or the --db-ssl* flags), and `sslrootcert=system`, judged by what a user sees: the
//! row written and the PostgresWriter Ready, or Ready=False/DatabaseUnavailable with a message that
//! says what failed. Certificates renewed on disk: postgres_writer_certificate_renewal.rs.

mod support;

use support::{
    Backend,
    database_tls::{PASSWORD, SHORT, client_certificate, path, world},
};

async fn verify_full_connects_to_the_name_on_the_certificate(backend: Backend) {
    let w = world(backend, "pgw-tls-verify-full").await;
    let url = w.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", path(&w.ca_file)),
    );
    let _manager = w.manager(&[], &[("DATABASE_URL", &url)]);
    w.converges("ada", SHORT).await;
    assert!(w.writer_sessions_use_tls().await, "pg_stat_ssl: encrypted");
}

async fn require_connects_without_a_ca_and_prefer_chooses_tls(backend: Backend) {
    let w = world(backend, "pgw-tls-require-prefer").await;
    let require = w.url("127.0.0.1", "sslmode=require");
    let manager = w.manager(&[], &[("DATABASE_URL", &require)]);
    w.converges("ada", SHORT).await;
    assert!(w.writer_sessions_use_tls().await, "require: encrypted");
    drop(manager);

    // The default, as libpq's: TLS first. The server would refuse plain text, so a row written
    // proves TLS; pg_stat_ssl shows it too.
    let prefer = format!("postgres://writer:{PASSWORD}@127.0.0.1:{}/postgres", w.pg.port());
    let _manager = w.manager(&[], &[("DATABASE_URL", &prefer)]);
    w.converges("grace", SHORT).await;
    assert!(w.writer_sessions_use_tls().await, "prefer: encrypted");
}

async fn disable_is_refused_by_a_server_that_requires_tls(backend: Backend) {
    let w = world(backend, "pgw-tls-disable").await;
    let url = w.url("127.0.0.1", "sslmode=disable");
    let _manager = w.manager(&[], &[("DATABASE_URL", &url)]);
    let message = w.refused("ada").await;
    assert!(
        message.contains("pg_hba.conf rejects connection") && message.contains("no encryption"),
        "the server's reason: {message}"
    );
}

async fn prefer_falls_back_to_plain_text_when_the_handshake_fails(backend: Backend) {
    let w = world(backend, "pgw-tls-prefer-fallback").await;
    // With a root certificate, prefer checks the chain (libpq's rule); a CA that did not sign the
    // server's certificate fails the handshake, and prefer tries plain text, which this server refuses.
    let url = w.url(
        "localhost",
        &format!("sslmode=prefer&sslrootcert={}", path(&w.other_ca_file)),
    );
    let mut manager = w.manager(&[], &[("DATABASE_URL", &url)]);
    let message = w.refused("ada").await;
    assert!(
        message.contains("no encryption"),
        "the plain-text attempt's refusal: {message}"
    );
    manager
        .wait_for_log("sslmode prefer tries plain text", SHORT)
        .await;
}

async fn a_certificate_from_another_ca_is_refused_as_the_wrong_ca(backend: Backend) {
    let w = world(backend, "pgw-tls-wrong-ca").await;
    // The flags this time, as a Deployment's args would give them.
    let url = format!("postgres://writer:{PASSWORD}@localhost:{}/postgres", w.pg.port());
    let _manager = w.manager(
        &[
            "--db-sslmode",
            "verify-full",
            "--db-sslrootcert",
            path(&w.other_ca_file),
        ],
        &[("DATABASE_URL", &url)],
    );
    let message = w.refused("ada").await;
    assert!(
        message.contains("not signed by a CA of sslrootcert"),
        "says the CA is wrong: {message}"
    );
}

async fn a_host_name_the_certificate_does_not_hold_is_refused_but_verify_ca_connects(backend: Backend) {
    let w = world(backend, "pgw-tls-host-name").await;
    let full = w.url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", path(&w.ca_file)),
    );
    let manager = w.manager(&[], &[("DATABASE_URL", &full)]);
    let message = w.refused("ada").await;
    assert!(
        message.contains("host name mismatch") && message.contains(r#"only valid for DnsName("localhost")"#),
        "says which name the certificate holds: {message}"
    );
    drop(manager);

    // verify-ca checks the chain only: the same address is accepted.
    let ca_only = w.url(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={}", path(&w.ca_file)),
    );
    let _manager = w.manager(&[], &[("DATABASE_URL", &ca_only)]);
    w.converges("grace", SHORT).await;
    assert!(w.writer_sessions_use_tls().await, "verify-ca: encrypted");
}

async fn a_client_certificate_logs_in_where_pg_hba_asks_for_one(backend: Backend) {
    let w = world(backend, "pgw-tls-client-cert").await;
    let client = client_certificate("writer", 0x1001);
    w.pg.require_client_certificates(&client.ca_pem)
        .expect("client certificates required");
    w.pg.reload().await.expect("PostgreSQL reloads");
    let certificate_file = w.scene.dir().join("client.crt");
    let key_file = w.scene.dir().join("client.key");
    std::fs::write(&certificate_file, &client.certificate_pem).expect("certificate file");
    std::fs::write(&key_file, &client.key_pem).expect("key file");
    let no_password = format!(
        "postgres://writer@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        w.pg.port(),
        path(&w.ca_file)
    );

    let manager = w.manager(&[], &[("DATABASE_URL", &no_password)]);
    let message = w.refused("ada").await;
    assert!(
        message.contains("requires a valid client certificate"),
        "the server asks for one: {message}"
    );
    drop(manager);

    let _manager = w.manager(
        &[
            "--db-sslcert",
            path(&certificate_file),
            "--db-sslkey",
            path(&key_file),
        ],
        &[("DATABASE_URL", &no_password)],
    );
    w.converges("grace", SHORT).await;
}

/// A bundle of `cas` (PEM files), to be the system's CA store of `operator run` ([`system_store`]).
fn bundle(dir: &std::path::Path, cas: &[&std::path::Path]) -> std::path::PathBuf {
    let bundle = dir.join("system-store.pem");
    let pem: Vec<String> = cas
        .iter()
        .map(|ca| std::fs::read_to_string(ca).expect("a CA file"))
        .collect();
    std::fs::write(&bundle, pem.concat()).expect("the bundle");
    bundle
}

/// The environment that makes `bundle` the system's CA store: SSL_CERT_FILE names it, as on a
/// distribution whose store is one file, and an empty SSL_CERT_DIR names no directory to add (the
/// machine running the tests may set one).
fn system_store(bundle: &std::path::Path) -> [(&'static str, &str); 2] {
    [("SSL_CERT_FILE", path(bundle)), ("SSL_CERT_DIR", "")]
}

async fn sslrootcert_system_trusts_the_store_ssl_cert_file_names_and_verifies_the_host(backend: Backend) {
    let w = world(backend, "pgw-tls-system-store").await;
    // The database's CA among others in the store; no sslmode: verify-full is the default.
    let store = bundle(w.scene.dir(), &[&w.other_ca_file, &w.ca_file]);
    let url = w.url("localhost", "sslrootcert=system");
    let manager = w.manager(
        &[],
        &[&[("DATABASE_URL", url.as_str())][..], &system_store(&store)].concat(),
    );
    w.converges("ada", SHORT).await;
    assert!(w.writer_sessions_use_tls().await, "system: encrypted");
    drop(manager);

    // verify-full it is: an address the certificate does not name is refused.
    let by_address = w.url("127.0.0.1", "sslrootcert=system");
    let _manager = w.manager(
        &[],
        &[
            &[("DATABASE_URL", by_address.as_str())][..],
            &system_store(&store),
        ]
        .concat(),
    );
    let message = w.refused("grace").await;
    assert!(message.contains("host name mismatch"), "{message}");
}

async fn sslrootcert_system_refuses_a_server_whose_ca_the_system_does_not_trust(backend: Backend) {
    let w = world(backend, "pgw-tls-system-untrusted").await;
    let store = bundle(w.scene.dir(), &[&w.other_ca_file]);
    // The flags this time, as a Deployment's env would give them.
    let url = format!("postgres://writer:{PASSWORD}@localhost:{}/postgres", w.pg.port());
    let _manager = w.manager(
        &["--db-sslrootcert", "system"],
        &[&[("DATABASE_URL", url.as_str())][..], &system_store(&store)].concat(),
    );
    let message = w.refused("ada").await;
    assert!(
        message.contains("not signed by a CA the system trusts") && message.contains("UnknownIssuer"),
        "says the system does not trust the server's CA: {message}"
    );
}

async fn sslrootcert_system_with_a_weaker_sslmode_or_an_empty_store_stops_start_up(backend: Backend) {
    let w = world(backend, "pgw-tls-system-start-up").await;
    let store = bundle(w.scene.dir(), &[&w.ca_file]);
    let stops_saying = async |args: &[&str], store: &std::path::Path, expected: &[&str]| {
        let url = w.url("localhost", "");
        let mut manager = w.manager(
            args,
            &[&[("DATABASE_URL", url.as_str())][..], &system_store(store)].concat(),
        );
        let status = manager.exit_within(SHORT).await;
        let log = manager.log_after_exit().await;
        assert!(status.is_some_and(|s| !s.success()), "{status:?}\n{log}");
        assert!(expected.iter().all(|e| log.contains(e)), "{expected:?}:\n{log}");
    };
    for weak in ["verify-ca", "require", "prefer", "disable"] {
        stops_saying(
            &["--db-sslrootcert", "system", "--db-sslmode", weak],
            &store,
            &[
                &format!("sslmode {weak} cannot be used with sslrootcert=system"),
                "only verify-full",
            ],
        )
        .await;
    }
    let empty = w.scene.dir().join("empty-store.pem");
    std::fs::write(&empty, "").expect("an empty store");
    stops_saying(
        &["--db-sslrootcert", "system"],
        &empty,
        &["holds no usable certificate", "SSL_CERT_FILE"],
    )
    .await;
}

testenv::each_control_plane!(
    verify_full_connects_to_the_name_on_the_certificate,
    require_connects_without_a_ca_and_prefer_chooses_tls,
    disable_is_refused_by_a_server_that_requires_tls,
    prefer_falls_back_to_plain_text_when_the_handshake_fails,
    a_certificate_from_another_ca_is_refused_as_the_wrong_ca,
    a_host_name_the_certificate_does_not_hold_is_refused_but_verify_ca_connects,
    a_client_certificate_logs_in_where_pg_hba_asks_for_one,
    sslrootcert_system_trusts_the_store_ssl_cert_file_names_and_verifies_the_host,
    sslrootcert_system_refuses_a_server_whose_ca_the_system_does_not_trust,
    sslrootcert_system_with_a_weaker_sslmode_or_an_empty_store_stops_start_up,
);
