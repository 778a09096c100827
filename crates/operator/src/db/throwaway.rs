//! A throwaway PostgreSQL cluster from the machine's own binaries, for `operator dev` and the tests:
//! initdb into a temp dir, serve on a free loopback port, stop and delete everything on drop. As root it
//! runs as the `postgres` user, since PostgreSQL refuses to run as root. Connections over TCP need a
//! random password (any local user could otherwise reach the loopback port); the server's own Unix
//! socket, in the temp dir, is only for `pg_ctl`.

use std::{
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::{Error, Result};

/// The certificate chain (PEM, the server's first) and key (PEM) a TLS-only cluster serves.
pub struct ServerTls {
    pub certificate_pem: String,
    pub key_pem: String,
}

pub struct ThrowawayPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Where it listens: loopback, unless asked to serve a network the machine is on.
    address: std::net::IpAddr,
    port: u16,
    user: Option<(u32, u32)>,
    password: String,
}

/// The superuser of every throwaway cluster.
pub const USER: &str = "postgres";

fn find_bin_dir() -> Option<PathBuf> {
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if dir.join("initdb").exists() {
            return Some(dir);
        }
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    candidates
        .into_iter()
        .rev()
        .find(|dir| dir.join("initdb").exists())
}

/// The uid and gid of the `postgres` user, when running as root.
fn postgres_user() -> Result<Option<(u32, u32)>> {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")?;
    if !is_root {
        return Ok(None);
    }
    let id = |flag: &str| -> Result<u32> {
        let output = Command::new("id").args([flag, "postgres"]).output()?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .map_err(|_| Error::Config("running as root needs a `postgres` user to run PostgreSQL as".into()))
    };
    Ok(Some((id("-u")?, id("-g")?)))
}

fn free_port(address: std::net::IpAddr) -> Result<u16> {
    Ok(std::net::TcpListener::bind((address, 0))?.local_addr()?.port())
}

impl ThrowawayPostgres {
    /// Creates and starts a cluster on loopback. Errors name what to install when the binaries are
    /// missing.
    pub async fn start() -> Result<ThrowawayPostgres> {
        Self::start_on(std::net::Ipv4Addr::LOCALHOST.into()).await
    }

    /// Creates and starts a cluster listening on `address`, reachable with the password from the
    /// networks the machine has an address on (a test cluster's pods, say).
    pub async fn start_on(address: std::net::IpAddr) -> Result<ThrowawayPostgres> {
        Self::start_with(address, None).await
    }

    /// Creates and starts a cluster on `address` that accepts only TLS over the network (`hostssl`
    /// rules; plain-text attempts are rejected by a `hostnossl ... reject` rule), serving the
    /// certificate `tls` (PEM certificate chain and key). Its Unix socket, in [`Self::path`], stays
    /// open to the local superuser without TLS: see [`Self::local_config`].
    pub async fn start_tls_only_on(address: std::net::IpAddr, tls: &ServerTls) -> Result<ThrowawayPostgres> {
        Self::start_with(address, Some(tls)).await
    }

    async fn start_with(address: std::net::IpAddr, tls: Option<&ServerTls>) -> Result<ThrowawayPostgres> {
        let bin = find_bin_dir().ok_or_else(|| {
            Error::Config(
                "PostgreSQL server binaries not found: install them with `apt-get install postgresql`".into(),
            )
        })?;
        let user = postgres_user()?;
        let dir = tempfile::Builder::new().prefix("throwaway-pg-").tempdir()?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        let port = free_port(address)?;
        // Hex: nothing in it needs quoting in a URL or escaping in a pgpass line.
        let password: String = rand::random::<[u8; 16]>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let password_file = dir.path().join("password");
        std::fs::write(&password_file, &password)?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&password_file, Some(uid), Some(gid))?;
        }
        let postgres = ThrowawayPostgres {
            dir,
            bin,
            address,
            port,
            user,
            password,
        };
        let data = postgres.data_dir();
        let password_file = password_file.display().to_string();
        postgres
            .run(
                "initdb",
                &[
                    "-D",
                    &data,
                    "-U",
                    USER,
                    "--pwfile",
                    &password_file,
                    "--auth-host=scram-sha-256",
                    "--auth-local=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ],
            )
            .await?;
        std::fs::remove_file(&password_file)?;
        if !address.is_loopback() {
            // initdb lets password logins in from loopback only.
            use std::io::Write;
            let mut hba = std::fs::OpenOptions::new()
                .append(true)
                .open(postgres.dir.path().join("data/pg_hba.conf"))?;
            writeln!(hba, "host all all samenet scram-sha-256")?;
        }
        if let Some(tls) = tls {
            postgres.serve_tls_only(tls)?;
        }
        postgres.start_server().await?;
        Ok(postgres)
    }

    /// Turns TLS on with `tls`'s certificate, and refuses every network connection without it: the
    /// first rule of pg_hba.conf (the first that matches wins) rejects plain text, the `host` rules
    /// after it then match only TLS connections.
    fn serve_tls_only(&self, tls: &ServerTls) -> Result<()> {
        use std::io::Write;
        let data = self.dir.path().join("data");
        self.replace_server_certificate(tls)?;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))?;
        writeln!(
            conf,
            "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'"
        )?;
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba)?;
        std::fs::write(&hba, format!("hostnossl all all all reject\n{rules}"))?;
        Ok(())
    }

    /// Writes `tls` as the server's certificate and key; a running server serves it to new
    /// connections after [`Self::reload`].
    pub fn replace_server_certificate(&self, tls: &ServerTls) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let data = self.dir.path().join("data");
        for (name, content) in [("server.crt", &tls.certificate_pem), ("server.key", &tls.key_pem)] {
            let path = data.join(name);
            std::fs::write(&path, content)?;
            // PostgreSQL refuses a key that others may read.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            if let Some((uid, gid)) = self.user {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
            }
        }
        Ok(())
    }

    /// Makes a TLS-only cluster ask for a client certificate signed by `ca_pem` (PEM) and log in
    /// whoever its common name names, with no password (pg_hba's `cert` method), from the next
    /// connection on: [`Self::reload`] applies it.
    pub fn require_client_certificates(&self, ca_pem: &str) -> Result<()> {
        use std::io::Write;
        let data = self.dir.path().join("data");
        std::fs::write(data.join("client-ca.crt"), ca_pem)?;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))?;
        writeln!(conf, "ssl_ca_file = 'client-ca.crt'")?;
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba)?;
        std::fs::write(&hba, format!("hostssl all all all cert\n{rules}"))?;
        Ok(())
    }

    /// Replaces the CA a client certificate must be signed by (after
    /// [`Self::require_client_certificates`]); [`Self::reload`] applies it to new connections, and a
    /// certificate of the CA before is refused from then on.
    pub fn replace_client_ca(&self, ca_pem: &str) -> Result<()> {
        std::fs::write(self.dir.path().join("data").join("client-ca.crt"), ca_pem)?;
        Ok(())
    }

    /// Makes the running server read its configuration and certificate files again.
    pub async fn reload(&self) -> Result<()> {
        self.run("pg_ctl", &["-D", &self.data_dir(), "reload"]).await
    }

    /// The superuser over the server's Unix socket, which needs neither password nor TLS: the tests'
    /// own way in, whatever the network rules say.
    pub fn local_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(self.dir.path())
            .port(self.port)
            .user(USER)
            .dbname("postgres");
        config
    }

    fn data_dir(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A DATABASE_URL for this cluster, password included: never print it.
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{}@{}:{}/postgres?sslmode=disable",
            self.password, self.address, self.port
        )
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    async fn run(&self, program: &str, args: &[&str]) -> Result<()> {
        let mut command = Command::new(self.bin.join(program));
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.current_dir(self.dir.path());
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .map_err(|e| Error::Config(format!("{program} did not run: {e}")))??;
        if !output.status.success() {
            return Err(Error::Config(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        Ok(())
    }

    async fn start_server(&self) -> Result<()> {
        let options = format!(
            "-p {} -c listen_addresses={} -c unix_socket_directories={} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            self.port,
            self.address,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data_dir(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "-t",
                "30",
                "start",
            ],
        )
        .await?;
        self.wait_until_accepting(Duration::from_secs(10)).await
    }

    async fn wait_until_accepting(&self, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if tokio::net::TcpStream::connect((self.address, self.port))
                .await
                .is_ok()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Config(format!(
                    "PostgreSQL did not accept connections on port {}",
                    self.port
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the server, keeping its data: connections are cut as in an outage, committed rows stay.
    pub async fn stop(&self) -> Result<()> {
        self.run("pg_ctl", &["-D", &self.data_dir(), "-m", "fast", "-w", "stop"])
            .await
    }

    /// Starts a stopped server again on the same port with the same data.
    pub async fn restart(&self) -> Result<()> {
        self.start_server().await
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ThrowawayPostgres {
    fn drop(&mut self) {
        let mut command = Command::new(self.bin.join("pg_ctl"));
        command
            .args(["-D", &self.data_dir(), "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        // Already stopped is fine; the temp dir goes with `self.dir` either way.
        let _ = command.status();
    }
}
