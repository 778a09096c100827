//! TLS to a PostgreSQL that accepts only TLS (`hostnossl ... reject` in pg_hba.conf), its certificate
//! for `localhost` signed by a CA the test makes: each of libpq's sslmodes as `operator run` takes it
//! (DATABASE_URL, or the --db-ssl* flags), judged by what a user sees: the row written and the
//! PostgresWriter Ready, or Ready=False/DatabaseUnavailable with a message that says what failed.

mod support;

use std::{path::Path, time::Duration};

use kube::{Api, api::PostParams};
use operator::{
    api::postgres_writer::PostgresWriter,
    db::throwaway::{ServerTls, ThrowawayPostgres},
};
use serving::authority::Authority;
use support::{
    Backend, OperatorProcess, Scene,
    database_access::{create_role, ready_message, replace_file},
    postgres_writer::{rows, wait_reason, writer},
};

const SHORT: Duration = Duration::from_secs(15);

/// How soon a PostgresWriter that failed is Ready after the file it needed changed: its next retry,
/// at most the back-off's cap (30 s) after its last failure, and that retry's one database step
/// (--db-connect-timeout 5 s + --db-statement-timeout 10 s).
const READY_AFTER_A_FILE_CHANGES: Duration = Duration::from_secs(30 + 5 + 10);

const PASSWORD: &str = "writer-password";

/// A TLS-only PostgreSQL with a login role `writer`, the CA that signed its certificate in a file, a
/// CA that did not in another, and a namespace of the test's own.
struct World {
    scene: Scene,
    pg: ThrowawayPostgres,
    admin: tokio_postgres::Client,
    ca_file: std::path::PathBuf,
    other_ca_file: std::path::PathBuf,
}

async fn world(backend: Backend, name: &str) -> World {
    let scene = Scene::start(backend, name).await;
    let ca = Authority::generate("database CA", None).expect("a CA");
    let server = ca
        .sign_serving(&["localhost".into()], "postgres", None)
        .expect("a server certificate");
    let tls = ServerTls {
        certificate_pem: server.cert_pem(),
        key_pem: server.key_pem(),
    };
    let pg = ThrowawayPostgres::start_tls_only_on(std::net::Ipv4Addr::LOCALHOST.into(), &tls)
        .await
        .expect("a TLS-only PostgreSQL starts");
    let (admin, connection) = pg
        .local_config()
        .connect(tokio_postgres::NoTls)
        .await
        .expect("the superuser over the Unix socket");
    tokio::spawn(connection);
    create_role(&admin, "writer", PASSWORD).await;
    let ca_file = scene.dir().join("ca.crt");
    std::fs::write(&ca_file, ca.cert_pem()).expect("CA file");
    let other = Authority::generate("someone else's CA", None).expect("another CA");
    let other_ca_file = scene.dir().join("other-ca.crt");
    std::fs::write(&other_ca_file, other.cert_pem()).expect("other CA file");
    World {
        scene,
        pg,
        admin,
        ca_file,
        other_ca_file,
    }
}

impl World {
    /// A DATABASE_URL for `writer` at `host`, with `parameters` (already URL-encoded).
    fn url(&self, host: &str, parameters: &str) -> String {
        format!(
            "postgres://writer:{PASSWORD}@{host}:{}/postgres?{parameters}",
            self.pg.port()
        )
    }

    /// `operator run --controllers postgres-writer` with `env` and extra `args`, in the test's
    /// namespace.
    fn manager(&self, args: &[&str], env: &[(&str, &str)]) -> OperatorProcess {
        let mut all = vec![
            "run",
            "--controllers",
            "postgres-writer",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ];
        all.extend_from_slice(args);
        self.scene.operator(&all, env)
    }

    fn api(&self) -> Api<PostgresWriter> {
        self.scene.api()
    }

    async fn create(&self, name: &str) {
        self.api()
            .create(
                &PostParams::default(),
                &writer(name, "students", name, 20, "peru"),
            )
            .await
            .expect("created");
    }

    /// Creates `name` and waits for it to be Ready with its row written.
    async fn converges(&self, name: &str, limit: Duration) {
        self.create(name).await;
        wait_reason(&self.api(), name, "True/Synced", limit).await;
        let written = rows(&self.admin, "students").await;
        assert!(
            written.iter().any(|row| row.0 == self.scene.id(name)),
            "the row of {name}: {written:?}"
        );
    }

    /// Creates `name` and waits for Ready=False/DatabaseUnavailable; returns the condition's message.
    async fn refused(&self, name: &str) -> String {
        self.create(name).await;
        let writer = wait_reason(&self.api(), name, "False/DatabaseUnavailable", SHORT).await;
        let message = ready_message(&writer).unwrap_or_default();
        println!("{name}: {message}");
        message
    }

    /// Whether every session of `writer` from the network is encrypted (and there is one).
    async fn writer_sessions_use_tls(&self) -> bool {
        let row = self
            .admin
            .query_one(
                "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s \
                 JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'writer'",
                &[],
            )
            .await
            .expect("pg_stat_ssl read");
        let sessions: i64 = row.get(0);
        let encrypted: bool = row.get(1);
        sessions > 0 && encrypted
    }
}

fn path(file: &Path) -> &str {
    file.to_str().expect("a UTF-8 path")
}

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
    let replaced = std::time::Instant::now();
    replace_file(&mounted_ca, &std::fs::read(&w.ca_file).expect("the right CA"));
    wait_reason(&w.api(), "ada", "True/Synced", READY_AFTER_A_FILE_CHANGES).await;
    println!(
        "PostgresWriter Ready {:.1} s after the CA file changed",
        replaced.elapsed().as_secs_f64()
    );
    assert_eq!(manager.exit_within(Duration::ZERO).await, None, "never restarted");
}

/// A client certificate for `user`, signed by a CA of its own: (CA, certificate, key), PEM.
fn client_certificate(user: &str) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
        Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params.distinguished_name.push(DnType::CommonName, "client CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("client CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, user);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().expect("client key");
    let certificate = params.signed_by(&key, &issuer).expect("client certificate");
    (ca.pem(), certificate.pem(), key.serialize_pem())
}

async fn a_client_certificate_logs_in_where_pg_hba_asks_for_one(backend: Backend) {
    let w = world(backend, "pgw-tls-client-cert").await;
    let (client_ca, certificate, key) = client_certificate("writer");
    w.pg.require_client_certificates(&client_ca)
        .expect("client certificates required");
    w.pg.reload().await.expect("PostgreSQL reloads");
    let certificate_file = w.scene.dir().join("client.crt");
    let key_file = w.scene.dir().join("client.key");
    std::fs::write(&certificate_file, certificate).expect("certificate file");
    std::fs::write(&key_file, key).expect("key file");
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

testenv::each_control_plane!(
    verify_full_connects_to_the_name_on_the_certificate,
    require_connects_without_a_ca_and_prefer_chooses_tls,
    disable_is_refused_by_a_server_that_requires_tls,
    prefer_falls_back_to_plain_text_when_the_handshake_fails,
    a_certificate_from_another_ca_is_refused_as_the_wrong_ca,
    a_host_name_the_certificate_does_not_hold_is_refused_but_verify_ca_connects,
    a_ca_file_replaced_on_disk_is_used_by_the_next_connection,
    a_client_certificate_logs_in_where_pg_hba_asks_for_one,
);
