//! What the tests of TLS to PostgreSQL share: a PostgreSQL that accepts only TLS (`hostnossl ...
//! reject` in pg_hba.conf), its certificate for `localhost` signed by a CA the test makes, a login role
//! `writer`, and `operator run` against it, judged by what a user sees: the row written and the
//! PostgresWriter Ready, or Ready=False/DatabaseUnavailable with a message that says what failed.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use kube::{Api, api::PostParams};
use operator::{
    api::postgres_writer::PostgresWriter,
    db::throwaway::{ServerTls, ThrowawayPostgres},
};
use serving::authority::Authority;

use super::{
    Backend, OperatorProcess, Scene,
    database_access::{create_role, ready_message},
    postgres_writer::{rows, wait_reason, writer},
};

pub const SHORT: Duration = Duration::from_secs(15);

/// How soon a PostgresWriter that failed is Ready after the file it needed changed: its next retry,
/// at most the back-off's cap (30 s) after its last failure, and that retry's one database step
/// (--db-connect-timeout 5 s + --db-statement-timeout 10 s), as docs/operators.md promises.
pub const READY_AFTER_A_FILE_CHANGES: Duration = Duration::from_secs(30 + 5 + 10);

pub const PASSWORD: &str = "writer-password";

/// A TLS-only PostgreSQL with a login role `writer`, the CA that signed its certificate (and that CA
/// in a file), a CA that did not in another file, and a namespace of the test's own.
pub struct World {
    pub scene: Scene,
    pub pg: ThrowawayPostgres,
    pub admin: tokio_postgres::Client,
    pub ca: Authority,
    pub ca_file: PathBuf,
    pub other_ca_file: PathBuf,
}

/// The server's key and certificate for `localhost`, signed by `ca`.
pub fn server_tls(ca: &Authority) -> ServerTls {
    let server = ca
        .sign_serving(&["localhost".into()], "postgres", None)
        .expect("a server certificate");
    ServerTls {
        certificate_pem: server.cert_pem(),
        key_pem: server.key_pem(),
    }
}

pub async fn world(backend: Backend, name: &str) -> World {
    let scene = Scene::start(backend, name).await;
    let ca = Authority::generate("database CA", None).expect("a CA");
    let pg = ThrowawayPostgres::start_tls_only_on(std::net::Ipv4Addr::LOCALHOST.into(), &server_tls(&ca))
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
        ca,
        ca_file,
        other_ca_file,
    }
}

impl World {
    /// A DATABASE_URL for `writer` at `host`, with `parameters` (already URL-encoded).
    pub fn url(&self, host: &str, parameters: &str) -> String {
        format!(
            "postgres://writer:{PASSWORD}@{host}:{}/postgres?{parameters}",
            self.pg.port()
        )
    }

    /// `operator run --controllers postgres-writer` with `env` and extra `args`, in the test's
    /// namespace.
    pub fn manager(&self, args: &[&str], env: &[(&str, &str)]) -> OperatorProcess {
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

    pub fn api(&self) -> Api<PostgresWriter> {
        self.scene.api()
    }

    pub async fn create(&self, name: &str) {
        self.api()
            .create(
                &PostParams::default(),
                &writer(name, "students", name, 20, "peru"),
            )
            .await
            .expect("created");
    }

    /// Creates `name` and waits for it to be Ready with its row written.
    pub async fn converges(&self, name: &str, limit: Duration) {
        self.create(name).await;
        wait_reason(&self.api(), name, "True/Synced", limit).await;
        self.has_row(name).await;
    }

    /// Asserts that the row of `name` is in the table.
    pub async fn has_row(&self, name: &str) {
        let written = rows(&self.admin, "students").await;
        assert!(
            written.iter().any(|row| row.0 == self.scene.id(name)),
            "the row of {name}: {written:?}"
        );
    }

    /// Creates `name` and waits for Ready=False/DatabaseUnavailable; returns the condition's message.
    pub async fn refused(&self, name: &str) -> String {
        self.create(name).await;
        let writer = wait_reason(&self.api(), name, "False/DatabaseUnavailable", SHORT).await;
        let message = ready_message(&writer).unwrap_or_default();
        println!("{name}: {message}");
        message
    }

    /// Whether every session of `writer` from the network is encrypted (and there is one).
    pub async fn writer_sessions_use_tls(&self) -> bool {
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

    /// The serial numbers (decimal) of the client certificates `writer`'s sessions logged in with.
    pub async fn writer_client_serials(&self) -> Vec<String> {
        self.admin
            .query(
                "SELECT DISTINCT coalesce(s.client_serial::text, 'none') FROM pg_stat_ssl s \
                 JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'writer'",
                &[],
            )
            .await
            .expect("pg_stat_ssl read")
            .iter()
            .map(|row| row.get(0))
            .collect()
    }
}

pub fn path(file: &Path) -> &str {
    file.to_str().expect("a UTF-8 path")
}

/// A client certificate for a login role, and the CA of its own that signed it.
pub struct ClientCertificate {
    pub ca_pem: String,
    pub certificate_pem: String,
    pub key_pem: String,
    /// The certificate's serial number.
    pub serial: u16,
}

/// A client certificate for `user` with serial number `serial` (0x100 to 0x7fff: two bytes of DER,
/// the first neither zero nor with its sign bit set), signed by a CA of its own.
pub fn client_certificate(user: &str, serial: u16) -> ClientCertificate {
    assert!((0x100..0x8000).contains(&serial), "a two-byte positive serial");
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
        Issuer, KeyPair, SerialNumber,
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
    params.serial_number = Some(SerialNumber::from_slice(&serial.to_be_bytes()));
    let key = KeyPair::generate().expect("client key");
    let certificate = params.signed_by(&key, &issuer).expect("client certificate");
    ClientCertificate {
        ca_pem: ca.pem(),
        certificate_pem: certificate.pem(),
        key_pem: key.serialize_pem(),
        serial,
    }
}
