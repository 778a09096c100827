//! The official Python `kubernetes` client (37.0.2) against the embedded API server: checks 17-21 of
//! docs/apiserver-requirements.md. The scripts live in tests/python/; `scripts/test-deps.sh`
//! (run by `make test`) creates the venv they need.

use std::path::PathBuf;

use apiserver::{ApiServer, Config};

/// How many watch events the server under check 19 remembers: small, so the script can outrun it.
const SMALL_HISTORY: usize = 16;

fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-deps.sh (make test does)",
        python.display()
    );
    python
}

async fn run(check: &str) {
    run_check(check, Config::default()).await;
}

async fn run_check(check: &str, config: Config) {
    let server = ApiServer::start(config).await.expect("the API server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/conformance.py");
    let mut command = tokio::process::Command::new(venv_python());
    command
        .arg(script)
        .arg(check)
        .arg((SMALL_HISTORY * 4).to_string())
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir.path())
        .kill_on_drop(true);
    // A client stuck on a stream the server never ends fails here, not at nextest's 5-minute limit.
    let output = tokio::time::timeout(std::time::Duration::from_secs(90), command.output())
        .await
        .unwrap_or_else(|_| panic!("check {check} still running after 90 s"))
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check {check} failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("ok {check}")),
        "check {check} did not report ok:\n{stdout}\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_crud_strategic_patch_and_watch_check_17() {
    run("17").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_replace_with_stale_resource_version_is_409_check_18() {
    run("18").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_watch_from_expired_resource_version_raises_410_check_19() {
    run_check(
        "19",
        Config {
            history_capacity: SMALL_HISTORY,
            ..Config::default()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_status_patch_keeps_generation_and_lease_create_race_is_409_check_20() {
    run("20").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_pagination_keeps_one_resource_version_check_21() {
    run("21").await;
}
