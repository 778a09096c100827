//! The `operator` binary as users run it: `operator dev` end to end with kubectl and psql (a throwaway
//! database, one named by flags or the environment, none without postgres-writer; its own webhooks
//! converting, defaulting and validating with no step), and managers with
//! leader election: one leads, a standby takes over when it dies or lets go, and each exits 0 on a
//! signal within the graceful-shutdown bound. The managers run on every tier, each test's replicas in
//! a namespace of its own, holding their Lease there.

mod support;

use support::{Backend, EXIT_AFTER_SIGNAL, Scene};

use std::{
    io::{BufRead, BufReader},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use operator::db::throwaway::ThrowawayPostgres;

const OPERATOR: &str = env!("CARGO_BIN_EXE_operator");

/// How long `operator dev` may take to print that it is ready: an API server, CRDs and an initdb.
const DEV_READY_WITHIN: Duration = Duration::from_secs(60);

/// Lines of a child's output, read on a thread so a test can wait for one with a deadline.
fn lines(stream: impl std::io::Read + Send + 'static, sender: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
}

fn interrupt(child: &Child) {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
}

/// Waits for `child` to exit within `limit` without holding up the runtime's other tasks.
async fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "process did not exit within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `operator dev` as a child with its own TMPDIR (where a throwaway PostgreSQL would put its data) and
/// kubeconfig directory, every line it prints (stdout and stderr) read. Interrupted, then killed, if
/// the test ends without stopping it, so that no API server or PostgreSQL outlives a failing test.
struct Dev {
    child: Child,
    output: mpsc::Receiver<String>,
    printed: Vec<String>,
    dir: tempfile::TempDir,
}

impl Dev {
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Dev {
        let dir = tempfile::tempdir().expect("temp dir");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).expect("TMPDIR");
        // PostgreSQL runs as its own user when the tests run as root: it must reach its data dir.
        for path in [dir.path(), &tmp] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let mut child = Command::new(OPERATOR)
            .arg("dev")
            .args(["--metrics-bind-address", "127.0.0.1:0"])
            .args(["--health-probe-bind-address", "127.0.0.1:0"])
            .arg("--kubeconfig")
            .arg(dir.path().join(".dev/kubeconfig"))
            .args(args)
            .env("TMPDIR", &tmp)
            .env("LOG_FORMAT", "text")
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .env_remove("DATABASE_URL")
            .env_remove("PSQL_HOST")
            .env_remove("PSQL_PORT")
            .env_remove("PSQL_DBNAME")
            .env_remove("PSQL_USER")
            .env_remove("PSQL_PASSWORD")
            .env_remove("PSQL_PASSWORD_FILE")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("operator dev starts");
        let (sender, output) = mpsc::channel();
        lines(child.stdout.take().expect("stdout"), sender.clone());
        lines(child.stderr.take().expect("stderr"), sender);
        Dev {
            child,
            output,
            printed: Vec::new(),
            dir,
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join(".dev/kubeconfig")
    }

    /// The first line from now on that contains `needle`.
    fn wait_for_line(&mut self, needle: &str, limit: Duration) -> String {
        // An API server under test may run on this runtime: let it serve while this thread waits.
        tokio::task::block_in_place(|| {
            let deadline = Instant::now() + limit;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.output.recv_timeout(left) {
                    Ok(line) => {
                        self.printed.push(line.clone());
                        if line.contains(needle) {
                            return line;
                        }
                    }
                    Err(_) => panic!(
                        "no line containing {needle:?} within {limit:?}:\n{}",
                        self.printed.join("\n")
                    ),
                }
            }
        })
    }

    /// Everything printed so far, on stdout and stderr.
    fn printed(&mut self) -> String {
        while let Ok(line) = self.output.try_recv() {
            self.printed.push(line);
        }
        self.printed.join("\n")
    }

    /// Waits until dev mode says what to type next; returns its `Database:` line.
    fn ready(&mut self) -> String {
        let database = self.wait_for_line("Database:", DEV_READY_WITHIN);
        self.wait_for_line("Ctrl-C stops everything", DEV_READY_WITHIN);
        database
    }

    /// The throwaway PostgreSQL data directories in its TMPDIR.
    fn throwaway_dirs(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.path().join("tmp"))
            .expect("TMPDIR")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("throwaway-pg-"))
            .collect()
    }

    /// SIGINT, then its exit status: a clean shutdown exits 0 within the graceful-shutdown bound.
    async fn interrupt(&mut self) -> std::process::ExitStatus {
        interrupt(&self.child);
        wait_exit(&mut self.child, EXIT_AFTER_SIGNAL).await
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // SIGINT lets it stop its throwaway PostgreSQL; SIGKILL only if that does not end it.
        interrupt(&self.child);
        let deadline = Instant::now() + EXIT_AFTER_SIGNAL;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kubectl apply -f config/samples/<file>` against `dev`'s API server.
fn apply_sample(dev: &Dev, file: &str) {
    let sample = support::repository().join("config/samples").join(file);
    support::kubectl(
        &dev.kubeconfig(),
        &["apply", "-f", sample.to_str().expect("utf-8 path")],
    );
}

/// Waits until the sample PostgresWriter's row is in the database `sql` talks to.
async fn sample_row(sql: &tokio_postgres::Client) {
    support::eventually("the sample's row", Duration::from_secs(30), || async {
        let rows = sql
            .query(
                "SELECT name, age, country FROM students WHERE id = 'default/sample-student'",
                &[],
            )
            .await
            .ok()?;
        let row = rows.first()?;
        ((
            row.get::<_, String>(0),
            row.get::<_, i32>(1),
            row.get::<_, String>(2),
        ) == ("alex".into(), 23, "canada".into()))
            .then_some(())
    })
    .await;
}

async fn psql(config: tokio_postgres::Config) -> tokio_postgres::Client {
    let (sql, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("psql connects");
    tokio::spawn(connection);
    sql
}

/// Where the throwaway database of `database` (dev mode's `Database:` line) is, and its password file.
fn throwaway_database(database: &str) -> (&str, PathBuf) {
    // `Database: postgres://postgres@127.0.0.1:<port>/postgres (throwaway; its password is in <file>)`
    let (location, password_file) = database
        .trim_start_matches("Database: ")
        .trim_end_matches(')')
        .split_once(" (throwaway; its password is in ")
        .unwrap_or_else(|| panic!("where the database is and where its password is: {database}"));
    (location, PathBuf::from(password_file))
}

/// The password in a PGPASSFILE line: host:port:database:user:password.
fn pgpass_password(password_file: &Path) -> String {
    let pgpass = std::fs::read_to_string(password_file).expect("the password file");
    pgpass
        .trim_end()
        .rsplit(':')
        .next()
        .expect("a password")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_serves_kubectl_writes_rows_never_prints_the_password_and_leaves_no_process_behind() {
    let mut dev = Dev::spawn(&[], &[]);
    let database = dev.ready();
    let (location, password_file) = throwaway_database(&database);
    assert_eq!(password_file, dev.kubeconfig().with_file_name("pgpass"));
    let mode = std::fs::metadata(&password_file)
        .expect("the password file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "only its owner reads the password file");
    let password = pgpass_password(&password_file);
    assert!(password.len() >= 16, "a real password: {password_file:?}");
    let printed = dev.printed();
    assert!(
        printed.contains(&format!("export PGPASSFILE={}", password_file.display())),
        "{printed}"
    );
    assert!(
        !printed.contains(&password),
        "the password is never printed:\n{printed}"
    );
    assert_eq!(dev.throwaway_dirs().len(), 1, "one throwaway PostgreSQL");

    let mut config: tokio_postgres::Config = location.parse().expect("a connection string");
    assert!(
        config.connect(tokio_postgres::NoTls).await.is_err(),
        "the throwaway PostgreSQL refuses a client without the password"
    );
    config.password(&password);
    let sql = psql(config).await;
    apply_sample(&dev, ""); // every sample
    sample_row(&sql).await;
    let table = support::kubectl(&dev.kubeconfig(), &["get", "postgreswriters"]);
    assert!(
        table.contains("sample-student") && table.contains("True"),
        "{table}"
    );

    let port = location
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .expect("a port")
        .to_owned();
    let status = dev.interrupt().await;
    assert!(
        status.success(),
        "operator dev exits cleanly on SIGINT: {status:?}"
    );
    assert!(
        tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
            .await
            .is_err(),
        "the throwaway PostgreSQL is gone: nothing answers on its port"
    );
    assert_eq!(
        dev.throwaway_dirs(),
        Vec::<String>::new(),
        "its data dir was removed"
    );
    assert!(!password_file.exists(), "its password file went with it");
    let printed = dev.printed();
    assert!(
        !printed.contains(&password),
        "the password is never printed:\n{printed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_uses_the_database_its_flags_or_its_environment_name() {
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let admin = support::postgres_writer::connect(&pg).await;
    for database in ["by_flags", "by_env"] {
        admin
            .batch_execute(&format!("CREATE DATABASE {database}"))
            .await
            .expect("a database");
    }
    let port = pg.port().to_string();
    let password_file = tempfile::NamedTempFile::new().expect("password file");
    std::fs::write(password_file.path(), pg.password()).expect("password written");
    let by_flags = Dev::spawn(
        &[
            "--psql-host",
            "127.0.0.1",
            "--psql-port",
            &port,
            "--psql-dbname",
            "by_flags",
            "--psql-password-file",
            password_file.path().to_str().expect("utf-8 path"),
            "--db-sslmode",
            "disable",
        ],
        &[],
    );
    let url = format!(
        "postgres://postgres:{}@127.0.0.1:{port}/by_env?sslmode=disable",
        pg.password()
    );
    let by_env = Dev::spawn(&[], &[("DATABASE_URL", &url)]);

    for (mut dev, database) in [(by_flags, "by_flags"), (by_env, "by_env")] {
        let line = dev.ready();
        assert_eq!(
            line,
            format!(
                "Database: postgres://postgres@127.0.0.1:{port}/{database} (password, if any, as you configured it)"
            )
        );
        apply_sample(&dev, "demo_v1_postgreswriter.yaml");
        let mut config: tokio_postgres::Config = pg.url().parse().expect("URL");
        config.dbname(database);
        sample_row(&psql(config).await).await;
        assert_eq!(
            dev.throwaway_dirs(),
            Vec::<String>::new(),
            "{database}: no throwaway PostgreSQL"
        );
        let printed = dev.printed();
        assert!(
            !printed.contains(pg.password()),
            "{database}: the password is never printed:\n{printed}"
        );
        let status = dev.interrupt().await;
        assert!(status.success(), "{database}: {status:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_without_postgres_writer_runs_no_database() {
    let mut dev = Dev::spawn(&["--controllers", "vote-config,web-app"], &[]);
    assert_eq!(dev.ready(), "Database: none (postgres-writer is not running)");
    apply_sample(&dev, "voting_v1_voteconfig.yaml");
    let kubeconfig = dev.kubeconfig();
    support::eventually("the VoteConfig's ConfigMap", Duration::from_secs(30), || async {
        let output = Command::new("kubectl")
            .args(["get", "configmap", "pets-config", "--request-timeout=20s"])
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", dev.dir.path())
            .output()
            .ok()?;
        output.status.success().then_some(())
    })
    .await;
    assert_eq!(
        dev.throwaway_dirs(),
        Vec::<String>::new(),
        "no throwaway PostgreSQL"
    );
    assert!(!dev.kubeconfig().with_file_name("pgpass").exists());
    let printed = dev.printed();
    assert!(!printed.contains("psql"), "{printed}");
    let status = dev.interrupt().await;
    assert!(status.success(), "{status:?}");
}

/// `kubectl get <resource> pets -o json` against `dev`.
fn get_json(dev: &Dev, resource: &str, name: &str) -> serde_json::Value {
    let output = support::kubectl(&dev.kubeconfig(), &["get", resource, name, "-o", "json"]);
    serde_json::from_str(&output).expect("kubectl prints JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_converts_defaults_and_validates_through_its_own_webhooks_with_no_step() {
    let mut dev = Dev::spawn(&[], &[]);
    let database = dev.ready();
    let (location, password_file) = throwaway_database(&database);
    let mut config: tokio_postgres::Config = location.parse().expect("a connection string");
    config.password(pgpass_password(&password_file));
    let sql = psql(config).await;
    // A table PostgresWriter cannot write: its age is text.
    sql.batch_execute(
        "CREATE TABLE grades (id text PRIMARY KEY, name text NOT NULL, age text NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL)",
    )
    .await
    .expect("a table");

    // Defaulting: the sample's third option has no color and gets the first palette color the
    // other two do not use.
    apply_sample(&dev, "voting_v1_voteconfig.yaml");
    let pets = get_json(&dev, "voteconfigs.v1.voting.schoolofdevops.com", "pets");
    let colors: Vec<&str> = pets["spec"]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| o["color"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(colors, ["#FF6B6B", "#4ECDC4", "#E6194B"]);

    // Conversion, both ways: the v1 object read as v1alpha1, the v1alpha1 sample read as v1.
    let old = get_json(&dev, "voteconfigs.v1alpha1.voting.schoolofdevops.com", "pets");
    assert_eq!(old["apiVersion"], "voting.schoolofdevops.com/v1alpha1");
    assert_eq!(
        old["metadata"]["annotations"]["voting.schoolofdevops.com/question"],
        "Which pet should be the team's mascot?"
    );
    assert_eq!(old["spec"]["options"], pets["spec"]["options"]);
    apply_sample(&dev, "voting_v1alpha1_voteconfig.yaml");
    let polls = get_json(&dev, "voteconfigs.v1.voting.schoolofdevops.com", "polls");
    assert_eq!(polls["apiVersion"], "voting.schoolofdevops.com/v1");
    assert_eq!(polls["spec"]["options"][1]["label"], "Spaces");

    // Validation: a PostgresWriter naming that table is refused with the webhook's reason.
    let manifest = dev.dir.path().join("grades.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: demo.yash.com/v1\nkind: PostgresWriter\nmetadata: {name: ada, namespace: default}\n\
         spec: {table: grades, name: ada, age: 36, country: uk}\n",
    )
    .expect("manifest written");
    let refused = Command::new("kubectl")
        .args(["apply", "--request-timeout=20s", "-f"])
        .arg(&manifest)
        .env("KUBECONFIG", dev.kubeconfig())
        .env("HOME", dev.dir.path())
        .output()
        .expect("kubectl runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "refused: {stderr}");
    assert!(
        stderr.contains(
            "admission webhook \"vpostgreswriter-v1.demo.yash.com\" denied the request: spec.table: table \
             grades cannot hold PostgresWriter rows (column age is text, expected integer): alter the table \
             or name another one"
        ),
        "{stderr}"
    );
    let listed = support::kubectl(&dev.kubeconfig(), &["get", "postgreswriters", "-o", "name"]);
    assert_eq!(listed, "", "nothing was stored");

    let status = dev.interrupt().await;
    assert!(status.success(), "{status:?}");
}

/// `operator run --leader-elect` for VoteConfig only, as replica `identity`, in the scene's namespace
/// (its Lease there too).
fn replica(scene: &Scene, identity: &str, lease_seconds: &str) -> support::OperatorProcess {
    scene.operator(
        &[
            "run",
            "--leader-elect",
            "--controllers",
            "vote-config",
            "--lease-duration-seconds",
            lease_seconds,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ],
        &[("HOSTNAME", identity)],
    )
}

async fn lease_holder(scene: &Scene) -> Option<String> {
    let leases: kube::Api<Lease> = scene.api();
    leases.get(LEASE).await.ok()?.spec?.holder_identity
}

const LEASE: &str = "operator.demo.yash.com";

/// Every version of the leader Lease from the moment it is started, as a watch delivers them: the
/// order in which replicas held it, and the times they wrote into it.
struct LeaseHistory {
    versions: Arc<Mutex<Vec<LeaseSpec>>>,
    task: tokio::task::AbortHandle,
}

impl LeaseHistory {
    async fn start(scene: &Scene) -> LeaseHistory {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let leases: kube::Api<Lease> = scene.api();
        let config = watcher::Config::default().fields(&format!("metadata.name={LEASE}"));
        let versions: Arc<Mutex<Vec<LeaseSpec>>> = Arc::default();
        let (listed, list_done) = tokio::sync::oneshot::channel();
        let seen = versions.clone();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed);
            // Backed off: once the server is gone, an unbacked watcher retries in a loop that never
            // yields, which can hold up the runtime's shutdown.
            let mut events = watcher(leases, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::InitApply(lease) | watcher::Event::Apply(lease)) => {
                        seen.lock().unwrap().push(lease.spec.unwrap_or_default());
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                    }
                    _ => {}
                }
            }
        })
        .abort_handle();
        tokio::time::timeout(Duration::from_secs(20), list_done)
            .await
            .expect("the Lease is listed")
            .expect("the watch runs");
        LeaseHistory { versions, task }
    }

    /// The last version `holder` held: when it last renewed, and for how long that renewal held.
    fn last_renewal_by(&self, holder: &str) -> (jiff::Timestamp, jiff::SignedDuration) {
        let versions = self.versions.lock().unwrap();
        let held = versions
            .iter()
            .rfind(|v| {
                v.holder_identity
                    .as_deref()
                    .is_some_and(|h| h.starts_with(holder))
            })
            .unwrap_or_else(|| panic!("{holder} never held the Lease: {versions:?}"));
        let renewed = held.renew_time.as_ref().expect("a held Lease has a renewTime").0;
        let duration = held.lease_duration_seconds.expect("a held Lease has a duration");
        (renewed, jiff::SignedDuration::from_secs(duration.into()))
    }

    /// When `holder` acquired the Lease (the first version it held).
    fn acquired_by(&self, holder: &str) -> jiff::Timestamp {
        let versions = self.versions.lock().unwrap();
        let held = versions
            .iter()
            .find(|v| {
                v.holder_identity
                    .as_deref()
                    .is_some_and(|h| h.starts_with(holder))
            })
            .unwrap_or_else(|| panic!("{holder} never held the Lease: {versions:?}"));
        held.acquire_time
            .as_ref()
            .expect("a held Lease has an acquireTime")
            .0
    }

    /// Whether the Lease was free (released) at some point after `holder` last held it.
    fn released_after(&self, holder: &str) -> bool {
        let versions = self.versions.lock().unwrap();
        let last = versions.iter().rposition(|v| {
            v.holder_identity
                .as_deref()
                .is_some_and(|h| h.starts_with(holder))
        });
        last.is_some_and(|last| {
            versions[last..]
                .iter()
                .any(|v| v.holder_identity.as_deref().is_none_or(str::is_empty))
        })
    }
}

impl Drop for LeaseHistory {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a standby may take to lead once the Lease is free or expired: it looks again within a
/// lease duration (it renews or retries on that period), and the API round trips of a loaded machine
/// get the same again.
fn takeover_within(lease_seconds: u64) -> Duration {
    Duration::from_secs(lease_seconds * 2 + 10)
}

/// How long replicas may take to start and reach the API server (a real control plane on a loaded
/// machine): no promise of the product, only patience.
const STARTED_WITHIN: Duration = Duration::from_secs(30);

async fn with_leader_election_one_manager_reconciles_and_the_other_takes_over_when_it_dies(backend: Backend) {
    let scene = Scene::start(backend, "leader-takeover").await;
    let lease_seconds = 3;
    let mut first = replica(&scene, "first", &lease_seconds.to_string());
    first.wait_for_log("became the leader", STARTED_WITHIN).await;
    let mut second = replica(&scene, "second", &lease_seconds.to_string());
    second
        .wait_for_log("waiting to become the leader", STARTED_WITHIN)
        .await;
    let history = LeaseHistory::start(&scene).await;
    let holder = lease_holder(&scene).await.unwrap_or_default();
    assert!(holder.starts_with("first"), "{holder}");

    // The leader reconciles.
    let vote_configs: kube::Api<operator::api::vote_config::VoteConfig> = scene.api();
    let vote_config = serde_json::from_value(serde_json::json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "elected"},
        "spec": {"options": [{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]}
    }))
    .unwrap();
    vote_configs
        .create(&Default::default(), &vote_config)
        .await
        .unwrap();
    let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = scene.api();
    support::eventually("the leader's ConfigMap", Duration::from_secs(20), || async {
        config_maps.get_opt("elected-config").await.ok()?.map(|_| ())
    })
    .await;

    first.signal("KILL");
    assert!(first.exit_within(EXIT_AFTER_SIGNAL).await.is_some());
    second
        .wait_for_log("became the leader", takeover_within(lease_seconds))
        .await;
    // One leader at a time: the standby took the Lease only once the dead leader's last renewal had
    // expired.
    let (renewed, duration) = history.last_renewal_by("first");
    let acquired = history.acquired_by("second");
    assert!(
        acquired >= renewed + duration,
        "the standby acquired the Lease at {acquired}, before the leader's renewal at {renewed} expired"
    );
    // At once, while the new leader's controllers are still listing: the shutdown must not wait for
    // caches that stop filling when it begins. Exit 0 is a shutdown that finished, not one cut short
    // at the bound.
    second.signal("INT");
    let status = second.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "the new leader exits 0 after SIGINT: {status:?}\n{}",
        second.log_so_far()
    );
}

async fn sigterm_releases_the_lease_so_the_standby_takes_over_at_once(backend: Backend) {
    let scene = Scene::start(backend, "leader-release").await;
    let lease_seconds = 15;
    let mut first = replica(&scene, "first", &lease_seconds.to_string());
    first.wait_for_log("became the leader", STARTED_WITHIN).await;
    let mut second = replica(&scene, "second", &lease_seconds.to_string());
    second
        .wait_for_log("waiting to become the leader", STARTED_WITHIN)
        .await;
    let history = LeaseHistory::start(&scene).await;
    assert!(
        lease_holder(&scene).await.is_some_and(|h| h.starts_with("first")),
        "the first replica holds the Lease"
    );

    first.signal("TERM");
    let status = first.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        first.log_so_far()
    );
    assert!(
        first.log_so_far().contains("released the leader Lease"),
        "{}",
        first.log_so_far()
    );
    second
        .wait_for_log("became the leader", takeover_within(lease_seconds))
        .await;
    // Taken over because it was released, not because it expired: before the leader's last renewal
    // ran out.
    assert!(history.released_after("first"), "the Lease was released");
    let (renewed, duration) = history.last_renewal_by("first");
    let acquired = history.acquired_by("second");
    assert!(
        acquired < renewed + duration,
        "the standby acquired the Lease at {acquired}, only once the released Lease (renewed at {renewed}) would have expired anyway"
    );
    let holder = lease_holder(&scene).await.unwrap_or_default();
    assert!(holder.starts_with("second"), "{holder}");

    second.signal("TERM");
    let status = second.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

async fn a_leader_whose_lease_is_taken_over_exits_saying_leadership_was_lost(backend: Backend) {
    let scene = Scene::start(backend, "leader-lost").await;
    let lease_seconds = 3;
    let mut leader = replica(&scene, "first", &lease_seconds.to_string());
    leader.wait_for_log("became the leader", STARTED_WITHIN).await;

    // Another holder, as if this replica had missed its renewals while the other took over.
    let leases: kube::Api<Lease> = scene.api();
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    leases
        .patch(
            LEASE,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {
                "holderIdentity": "another-replica",
                "acquireTime": now,
                "renewTime": now,
                "leaseDurationSeconds": 60,
            }})),
        )
        .await
        .unwrap();

    // Its next renewal, within the lease duration, finds the other holder; then it stops at once.
    let status = leader
        .exit_within(takeover_within(lease_seconds) + EXIT_AFTER_SIGNAL)
        .await;
    let log = leader.log_after_exit().await;
    assert!(status.is_some_and(|s| s.code() == Some(1)), "{status:?}\n{log}");
    assert!(
        log.lines()
            .any(|l| l == "operator: leadership lost; stopping so that the new leader reconciles alone"),
        "{log}"
    );
}

/// The thread count is the process's own, whatever the API server: one tier says it.
#[tokio::test(flavor = "multi_thread")]
async fn run_works_on_one_thread_unless_given_more() {
    let scene = Scene::start(Backend::Embedded, "worker-threads").await;
    for (flags, expected) in [(&[][..], 1), (&["--worker-threads", "3"][..], 3)] {
        let mut operator = scene.operator(
            &[
                &["run", "--controllers", "vote-config"][..],
                &["--metrics-bind-address", "127.0.0.1:0"],
                &["--health-probe-bind-address", "127.0.0.1:0"],
                flags,
            ]
            .concat(),
            &[],
        );
        let started = operator.wait_for_log("controllers started", STARTED_WITHIN).await;
        assert!(
            started.contains(&format!("worker_threads={expected}")),
            "{flags:?}: {started}"
        );
        operator.signal("INT");
        let status = operator.exit_within(EXIT_AFTER_SIGNAL).await;
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
    }
}

testenv::every_tier!(
    with_leader_election_one_manager_reconciles_and_the_other_takes_over_when_it_dies,
    sigterm_releases_the_lease_so_the_standby_takes_over_at_once,
    a_leader_whose_lease_is_taken_over_exits_saying_leadership_was_lost,
);

/// `operator args` with `env`, no cluster, to its end: (exit code, stdout, stderr).
fn operator_output(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let output = Command::new(OPERATOR)
        .args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("DATABASE_URL")
        .env_remove("LOG_LEVEL")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("operator runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_log_level_stops_start_up_with_one_clear_line() {
    let (code, stdout, stderr) = operator_output(&["crds"], &[("LOG_LEVEL", "verbose")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty(), "nothing ran: {stdout}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("'verbose'") && first.contains("--log-level") && first.contains("names no level"),
        "{stderr}"
    );
}

#[test]
fn boolean_settings_still_come_from_the_environment() {
    // Parsed, so the run goes on to look for a cluster; a value that is not a boolean stops it first.
    let booleans = [
        ("ORPHAN_SWEEP", "true"),
        ("AUTO_CREATE_TABLES", "false"),
        ("LEADER_ELECT", "true"),
    ];
    let (code, _, stderr) = operator_output(&["run"], &booleans);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no cluster to talk to"), "{stderr}");
    let (code, _, stderr) = operator_output(&["run"], &[("ORPHAN_SWEEP", "sometimes")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--orphan-sweep"), "{stderr}");
}

#[test]
fn help_never_shows_the_database_url_or_password() {
    let secrets = [
        ("DATABASE_URL", "postgres://writer:s3cret-url@db/app"),
        ("PSQL_PASSWORD", "s3cret-password"),
    ];
    for command in ["run", "dev"] {
        let (code, help, stderr) = operator_output(&[command, "--help"], &secrets);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(help.contains("--database-url"), "{help}");
        assert!(!help.contains("s3cret"), "{help}");
    }
}

/// Reads `log` until a line holds each of `needles`, within `limit`; returns every line read.
fn read_until_seen(log: &mpsc::Receiver<String>, needles: &[&str], limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    let mut seen: Vec<String> = Vec::new();
    while !needles.iter().all(|n| seen.iter().any(|l| l.contains(n))) {
        let left = deadline.saturating_duration_since(Instant::now());
        match log.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("not every one of {needles:?} within {limit:?}: {seen:#?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_to_a_pipe_are_plain_lines_that_name_each_reconciled_object() {
    use kube::api::{Api, PostParams};
    use operator::api::{vote_config::VoteConfig, web_app::WebApp};

    let (plane, client) = support::cluster(Backend::Embedded).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    // No NO_COLOR: stderr being a pipe must be enough.
    let mut operator = Command::new(OPERATOR)
        .args([
            "run",
            "--controllers",
            "vote-config,web-app",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("LOG_FORMAT", "text")
        .env("LOG_LEVEL", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("operator starts");
    let (sender, log) = mpsc::channel();
    lines(operator.stderr.take().unwrap(), sender);
    let mut operator = KilledOnDrop(operator);
    let mut seen = tokio::task::block_in_place(|| {
        // Logged once every controller runs, after the servers' lines.
        read_until_seen(&log, &["controllers started"], Duration::from_secs(30))
    });

    // Reconciles that log: a warning (the VoteConfig's ConfigMap is someone else's) and an info line
    // (a WebApp carrying the finalizer earlier versions added, which the controller removes).
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), "default");
    let foreign = serde_json::json!({"metadata": {"name": "pets-config"}, "data": {"a": "b"}});
    config_maps
        .create(&PostParams::default(), &serde_json::from_value(foreign).unwrap())
        .await
        .unwrap();
    let vote_configs: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let pets = serde_json::json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "pets"},
        "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    });
    vote_configs
        .create(&PostParams::default(), &serde_json::from_value(pets).unwrap())
        .await
        .unwrap();
    let web_apps: Api<WebApp> = Api::namespaced(client.clone(), "default");
    let legacy = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": "legacy", "finalizers": [operator::api::web_app::LEGACY_FINALIZER]},
        "spec": {"image": "nginx:1.27"}
    });
    web_apps
        .create(&PostParams::default(), &serde_json::from_value(legacy).unwrap())
        .await
        .unwrap();
    seen.extend(tokio::task::block_in_place(|| {
        read_until_seen(
            &log,
            &["terminal reconcile error", "removed the finalizer"],
            Duration::from_secs(60),
        )
    }));

    assert!(
        seen.iter().all(|l| !l.contains('\x1b')),
        "escape codes: {seen:#?}"
    );
    // One line per event: each starts with its time (a continuation line would not).
    assert!(
        seen.iter().all(|l| l.starts_with(|c: char| c.is_ascii_digit())),
        "{seen:#?}"
    );
    let warning = seen
        .iter()
        .find(|l| l.contains("terminal reconcile error"))
        .unwrap();
    assert!(
        warning.contains(" WARN ") && warning.contains("object=default/pets"),
        "{warning}"
    );
    let info = seen.iter().find(|l| l.contains("removed the finalizer")).unwrap();
    assert!(
        info.contains(" INFO ") && info.contains("object=default/legacy"),
        "{info}"
    );
    for line in seen.iter().filter(|l| l.contains("reconcile")) {
        assert!(
            line.contains("object=default/pets") || line.contains("object=default/legacy"),
            "a reconcile line that does not name its object: {line}"
        );
    }
    interrupt(&operator.0);
    let status = wait_exit(&mut operator.0, EXIT_AFTER_SIGNAL).await;
    assert!(status.success(), "{status:?}");
}

/// A child killed if the test ends without stopping it.
struct KilledOnDrop(Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
