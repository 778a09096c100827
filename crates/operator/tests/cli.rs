//! The `operator` binary as users run it: `operator dev` end to end with kubectl and psql, and
//! managers with leader election against the embedded API server: one leads, a standby takes over when
//! it dies or lets go, and each exits 0 at once on a signal.

mod support;

use support::Backend;

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

const OPERATOR: &str = env!("CARGO_BIN_EXE_operator");

/// Lines of a child's output, read on a thread so a test can wait for one with a deadline.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str, limit: Duration) -> String {
    // The API server under test runs on this runtime: let it keep serving while this thread waits.
    tokio::task::block_in_place(|| wait_for_line_blocking(lines, needle, limit))
}

fn wait_for_line_blocking(lines: &mpsc::Receiver<String>, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => continue,
            Err(_) => panic!("no line containing {needle:?} within {limit:?}"),
        }
    }
}

fn interrupt(child: &Child) {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
}

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

#[tokio::test(flavor = "multi_thread")]
async fn dev_serves_kubectl_writes_rows_and_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut dev = Command::new(OPERATOR)
        .args([
            "dev",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("operator dev starts");
    let out = lines(dev.stdout.take().unwrap());
    let url_line = wait_for_line(&out, "DATABASE_URL=", Duration::from_secs(60));
    let database_url = url_line.trim_start_matches("DATABASE_URL=").to_owned();
    wait_for_line(&out, "Ctrl-C stops everything", Duration::from_secs(10));

    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/samples");
    support::kubectl(&kubeconfig, &["apply", "-f", samples.to_str().unwrap()]);
    let (sql, connection) = tokio_postgres::connect(&database_url, tokio_postgres::NoTls)
        .await
        .expect("psql connects");
    tokio::spawn(connection);
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
    let table = support::kubectl(&kubeconfig, &["get", "postgreswriters"]);
    assert!(
        table.contains("sample-student") && table.contains("True"),
        "{table}"
    );

    let data_dirs = |_: ()| -> Vec<String> {
        std::fs::read_dir(std::env::temp_dir())
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("throwaway-pg-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = data_dirs(());
    interrupt(&dev);
    // Nothing slow is in flight: the controllers and the throwaway PostgreSQL stop well within the 30 s
    // graceful-shutdown bound.
    let status = wait_exit(&mut dev, Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "operator dev exits cleanly on SIGINT: {status:?}"
    );
    // The throwaway PostgreSQL is gone: nothing answers on its port any more.
    assert!(
        tokio::net::TcpStream::connect(database_url.split('@').nth(1).unwrap().split('/').next().unwrap())
            .await
            .is_err()
    );
    let after = data_dirs(());
    assert!(
        after.len() < before.len() || before.is_empty(),
        "its data dir was removed: {before:?} -> {after:?}"
    );
}

/// `operator run --leader-elect` for VoteConfig only, as replica `identity`.
fn replica(kubeconfig: &Path, identity: &str, lease_seconds: &str) -> support::OperatorProcess {
    support::OperatorProcess::spawn(
        kubeconfig,
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

async fn lease_holder(client: &kube::Client) -> Option<String> {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client.clone(), "default");
    leases
        .get("operator.demo.yash.com")
        .await
        .ok()?
        .spec?
        .holder_identity
}

/// How long a shutdown with nothing slow in flight may take, signal to exit.
const PROMPT_EXIT: Duration = Duration::from_secs(5);

async fn with_leader_election_one_manager_reconciles_and_the_other_takes_over_when_it_dies(backend: Backend) {
    let (plane, client) = support::cluster(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let mut first = replica(&kubeconfig, "first", "3");
    first
        .wait_for_log("became the leader", Duration::from_secs(20))
        .await;
    let mut second = replica(&kubeconfig, "second", "3");
    second
        .wait_for_log("waiting to become the leader", Duration::from_secs(20))
        .await;
    assert!(
        second
            .find_log("became the leader", Duration::from_secs(4))
            .await
            .is_none(),
        "only one leader at a time"
    );
    let holder = lease_holder(&client).await.unwrap_or_default();
    assert!(holder.starts_with("first"), "{holder}");

    // The leader reconciles.
    let vote_configs: kube::Api<operator::api::vote_config::VoteConfig> =
        kube::Api::namespaced(client.clone(), "default");
    let vote_config = serde_json::from_value(serde_json::json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"name": "elected", "namespace": "default"},
        "spec": {"options": [{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]}
    }))
    .unwrap();
    vote_configs
        .create(&Default::default(), &vote_config)
        .await
        .unwrap();
    let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "default");
    support::eventually("the leader's ConfigMap", Duration::from_secs(20), || async {
        config_maps.get_opt("elected-config").await.ok()?.map(|_| ())
    })
    .await;

    first.signal("KILL");
    assert!(first.exit_within(Duration::from_secs(10)).await.is_some());
    second
        .wait_for_log("became the leader", Duration::from_secs(20))
        .await;
    // At once, while the new leader's controllers are still listing: the shutdown must not wait for
    // caches that stop filling when it begins.
    second.signal("INT");
    let signalled = Instant::now();
    let status = second.exit_within(PROMPT_EXIT).await;
    eprintln!(
        "the new leader exited {:?} after SIGINT: {status:?}",
        signalled.elapsed()
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "the new leader exits 0 within {PROMPT_EXIT:?} of SIGINT: {status:?}\n{}",
        second.log_so_far()
    );
}

async fn sigterm_releases_the_lease_so_the_standby_takes_over_at_once(backend: Backend) {
    let (plane, client) = support::cluster(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    // A 15 s Lease, renewed 5 s before it ends: without a release the standby waits 5 s or more.
    let mut first = replica(&kubeconfig, "first", "15");
    first
        .wait_for_log("became the leader", Duration::from_secs(20))
        .await;
    let mut second = replica(&kubeconfig, "second", "15");
    second
        .wait_for_log("waiting to become the leader", Duration::from_secs(20))
        .await;
    support::eventually(
        "the standby sees the held Lease",
        Duration::from_secs(10),
        || async { lease_holder(&client).await.filter(|h| h.starts_with("first")) },
    )
    .await;

    first.signal("TERM");
    let signalled = Instant::now();
    let status = first.exit_within(PROMPT_EXIT).await;
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
        .wait_for_log("became the leader", Duration::from_secs(4))
        .await;
    eprintln!("the standby led {:?} after SIGTERM", signalled.elapsed());
    let holder = lease_holder(&client).await.unwrap_or_default();
    assert!(holder.starts_with("second"), "{holder}");

    second.signal("TERM");
    let status = second.exit_within(PROMPT_EXIT).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

async fn a_leader_whose_lease_is_taken_over_exits_saying_leadership_was_lost(backend: Backend) {
    let (plane, client) = support::cluster(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let mut leader = replica(&kubeconfig, "first", "3");
    leader
        .wait_for_log("became the leader", Duration::from_secs(20))
        .await;

    // Another holder, as if this replica had missed its renewals while the other took over.
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client.clone(), "default");
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    leases
        .patch(
            "operator.demo.yash.com",
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

    // A 3 s Lease is renewed every 2 s: the next renewal finds the other holder.
    let status = leader.exit_within(Duration::from_secs(10)).await;
    let log = leader.log_so_far();
    assert!(status.is_some_and(|s| s.code() == Some(1)), "{status:?}\n{log}");
    assert!(
        log.lines()
            .any(|l| l == "operator: leadership lost; stopping so that the new leader reconciles alone"),
        "{log}"
    );
}

testenv::each_control_plane!(
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

#[tokio::test(flavor = "multi_thread")]
async fn logs_to_a_pipe_carry_no_colour_codes() {
    let (plane, _client) = support::cluster(Backend::Embedded).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let mut operator = Command::new(OPERATOR)
        .args([
            "run",
            "--controllers",
            "vote-config",
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
    let log = lines(operator.stderr.take().unwrap());
    // Logged once every controller runs, after the servers' lines.
    tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while !seen.iter().any(|l: &String| l.contains("controllers started")) {
            let left = deadline.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no \"controllers started\" within 30 s: {seen:#?}"),
            }
        }
        assert!(seen.iter().all(|l| !l.contains('\x1b')), "{seen:#?}");
    });
    interrupt(&operator);
    let status = wait_exit(&mut operator, Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}");
}
