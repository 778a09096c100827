//! Security of the embedded API server : a random bearer token is generated, written
//! into the kubeconfig and required on every request (401 Status otherwise) unless authentication is
//! turned off; the bin listens on loopback by default and never logs the token.

mod common;

use std::{path::Path, process::Stdio, time::Duration};

use apiserver::{ApiServer, Auth, Config};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::PostParams,
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    task::JoinHandle,
};

const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

/// A client like `base` (URL and CA) that sends `token`, or nothing, as its bearer token.
fn client_with_token(base: &kube::Config, token: Option<&str>) -> Client {
    let mut config = base.clone();
    config.auth_info.token = token.map(secrecy::SecretString::from);
    Client::try_from(config).unwrap()
}

/// The kube-rs configuration in a kubeconfig file.
async fn kubeconfig_file(path: &Path) -> kube::Config {
    let text = std::fs::read_to_string(path).unwrap();
    kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&text).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap()
}

/// Every kind of request an anonymous or wrong client might send, a watch included.
async fn assert_every_request_is_unauthorized(client: &Client) {
    let expected: Value = serde_json::from_str(UNAUTHORIZED).unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    let requests: Vec<(&str, String, Vec<u8>)> = vec![
        ("GET", "/version".into(), vec![]),
        ("GET", "/healthz".into(), vec![]),
        ("GET", "/api".into(), vec![]),
        ("GET", "/apis".into(), vec![]),
        ("GET", cms.into(), vec![]),
        ("GET", format!("{cms}?watch=true&timeoutSeconds=1"), vec![]),
        (
            "POST",
            cms.into(),
            serde_json::to_vec(&common::config_map("sneaky", json!({"k": "v"}))).unwrap(),
        ),
        ("DELETE", format!("{cms}/anything"), vec![]),
        ("GET", "/no/such/path".into(), vec![]),
    ];
    for (method, path, body) in requests {
        let (status, body) = common::send_bytes(client, method, &path, "application/json", body).await;
        assert_eq!((status, &body), (401, &expected), "{method} {path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_a_token_get_401_unauthorized_and_change_nothing() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    assert_every_request_is_unauthorized(&client_with_token(&server.kube_config(), None)).await;
    let stored: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    assert!(stored.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_with_a_wrong_token_get_401_unauthorized() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    let token = server.token().expect("a token by default").to_owned();
    let mut last_changed = token.clone();
    last_changed.pop();
    last_changed.push('!');
    for wrong in [
        "wrong".to_owned(),
        format!("{token}x"),
        token[..token.len() - 1].to_owned(),
        last_changed,
        token.to_uppercase(),
    ] {
        assert_every_request_is_unauthorized(&client_with_token(&server.kube_config(), Some(&wrong))).await;
    }
    // The right token under another scheme is no bearer token either.
    let anonymous = client_with_token(&server.kube_config(), None);
    let request = axum::http::Request::builder()
        .uri("/api/v1/namespaces/default/configmaps")
        .header("authorization", format!("Basic {token}"))
        .body(kube::client::Body::empty())
        .unwrap();
    assert_eq!(anonymous.send(request).await.unwrap().status().as_u16(), 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_start_generates_a_different_long_random_token() {
    let (a, b) = (
        ApiServer::start(Config::default()).await.unwrap(),
        ApiServer::start(Config::default()).await.unwrap(),
    );
    let (a, b) = (a.token().unwrap(), b.token().unwrap());
    assert!(a.len() >= 64 && a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_own_kube_client_sends_the_token() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &common::config_map("allowed", json!({"k": "v"})),
    )
    .await
    .unwrap();
    assert_eq!(api.list(&Default::default()).await.unwrap().items.len(), 1);
    let (status, body) = common::send_bytes(&server.client(), "GET", "/version", "", vec![]).await;
    assert_eq!((status, body["major"].as_str()), (200, Some("1")));
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_loads_the_written_kubeconfig_and_is_let_in() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    server.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(server.token().unwrap()),
        "the token is in the kubeconfig"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "only the owner may read the token");
    }
    assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
    let config = kubeconfig_file(&path).await;
    let api: Api<ConfigMap> = Api::namespaced(Client::try_from(config).unwrap(), "default");
    api.create(
        &PostParams::default(),
        &common::config_map("from-kubeconfig", json!({"k": "v"})),
    )
    .await
    .unwrap();
    assert_eq!(api.get("from-kubeconfig").await.unwrap().data.unwrap()["k"], "v");
}

async fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new("kubectl");
    command
        .args(args)
        .arg("--request-timeout=20s")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home);
    tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_uses_the_token_in_the_kubeconfig_and_is_refused_with_a_wrong_one() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let with_token = dir.path().join("kubeconfig");
    server.write_kubeconfig(&with_token).unwrap();
    let manifest = dir.path().join("cm.json");
    std::fs::write(
        &manifest,
        serde_json::to_vec(&common::config_map("via-kubectl", json!({"k": "v"}))).unwrap(),
    )
    .unwrap();
    let output = kubectl(
        &with_token,
        dir.path(),
        &["apply", "-f", manifest.to_str().unwrap()],
    )
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = kubectl(
        &with_token,
        dir.path(),
        &["get", "configmap", "via-kubectl", "-o", "name"],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "configmap/via-kubectl"
    );

    // Without any credentials kubectl would prompt for a user name; a wrong token shows the refusal.
    let wrong_token = dir.path().join("wrong");
    let text = std::fs::read_to_string(&with_token).unwrap();
    std::fs::write(&wrong_token, text.replace(server.token().unwrap(), "wrong-token")).unwrap();
    let output = kubectl(&wrong_token, dir.path(), &["get", "configmaps"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("Unauthorized"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chosen_token_is_required_instead_of_a_generated_one() {
    let server = ApiServer::start(Config {
        auth: Auth::Token("chosen-token-0123456789".into()),
        ..Config::default()
    })
    .await
    .unwrap();
    assert_eq!(server.token(), Some("chosen-token-0123456789"));
    let chosen = client_with_token(&server.kube_config(), Some("chosen-token-0123456789"));
    assert_eq!(
        common::send_bytes(&chosen, "GET", "/api/v1/namespaces", "", vec![])
            .await
            .0,
        200
    );
    assert_every_request_is_unauthorized(&client_with_token(&server.kube_config(), None)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_auth_anonymous_requests_are_served() {
    let server = ApiServer::start(Config {
        auth: Auth::None,
        ..Config::default()
    })
    .await
    .unwrap();
    assert_eq!(server.token(), None);
    assert!(server.kubeconfig_yaml().contains("user: {}"));
    let anonymous: Api<ConfigMap> =
        Api::namespaced(client_with_token(&server.kube_config(), None), "default");
    anonymous
        .create(
            &PostParams::default(),
            &common::config_map("open", json!({"k": "v"})),
        )
        .await
        .unwrap();
    // Any token is ignored rather than checked.
    let any: Api<ConfigMap> = Api::namespaced(
        client_with_token(&server.kube_config(), Some("whatever")),
        "default",
    );
    assert_eq!(any.list(&Default::default()).await.unwrap().items.len(), 1);
}

/// The `apiserver` binary, started in `dir` with `args` and `env`; its stdout and stderr are piped.
fn spawn_bin(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Child {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_apiserver"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("APISERVER_ADDR")
        .env_remove("APISERVER_INSECURE_NO_AUTH")
        .env_remove("APISERVER_TOKEN_FILE")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("the apiserver binary starts")
}

/// The URL from the bin's `serving on URL; ...` line, or `Err(stderr)` when it exits first. Keeps
/// reading stdout and stderr (where the logs go) so the bin never blocks on a full pipe; the task
/// returns both once the bin exits.
async fn served_url(child: &mut tokio::process::Child) -> Result<(String, JoinHandle<String>), String> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        let mut logs = String::new();
        let _ = stderr.read_to_string(&mut logs).await;
        logs
    });
    let (url_tx, url_rx) = tokio::sync::oneshot::channel();
    let reading = tokio::spawn(async move {
        let mut url_tx = Some(url_tx);
        let mut all = String::new();
        while let Ok(Some(line)) = stdout.next_line().await {
            if let Some(rest) = line.split("serving on ").nth(1) {
                let url = rest
                    .split(|c: char| c == ';' || c.is_whitespace())
                    .next()
                    .unwrap();
                if let Some(tx) = url_tx.take() {
                    let _ = tx.send(url.to_owned());
                }
            }
            all.push_str(&line);
            all.push('\n');
        }
        all + &logs.await.unwrap()
    });
    let url = tokio::time::timeout(Duration::from_secs(20), url_rx)
        .await
        .expect("the bin says where it serves within 20 s");
    match url {
        Ok(url) => Ok((url, reading)),
        Err(_) => Err(reading.await.unwrap()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_listens_on_loopback_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_bin(dir.path(), &[], &[]);
    // Port 6443 may be taken on this machine; then the refusal names the address it tried.
    match served_url(&mut child).await {
        Ok((url, _)) => assert_eq!(url, "https://127.0.0.1:6443"),
        Err(stderr) => assert!(stderr.contains("127.0.0.1:6443"), "{stderr}"),
    }
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_requires_the_token_it_writes_into_the_kubeconfig_and_never_logs_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_bin(dir.path(), &["--addr", "127.0.0.1:0", "--log", "debug"], &[]);
    let (url, stdout) = served_url(&mut child).await.expect("the bin serves");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).unwrap();
    let kubeconfig: Value = serde_yaml::from_str(&kubeconfig).unwrap();
    let token = kubeconfig["users"][0]["user"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    assert!(token.len() >= 64);
    let base = kubeconfig_file(&dir.path().join("kubeconfig")).await;

    assert_every_request_is_unauthorized(&client_with_token(&base, None)).await;
    assert_every_request_is_unauthorized(&client_with_token(&base, Some("wrong-token"))).await;
    let api: Api<ConfigMap> = Api::namespaced(client_with_token(&base, Some(&token)), "default");
    api.create(
        &PostParams::default(),
        &common::config_map("bin", json!({"k": "v"})),
    )
    .await
    .unwrap();

    child.kill().await.unwrap();
    let logs = stdout.await.unwrap();
    assert!(logs.contains("request"), "debug logging was on: {logs}");
    assert!(!logs.contains(&token), "the token leaked into the logs");
    assert!(
        !logs.contains("wrong-token"),
        "a presented token leaked into the logs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_logs_to_a_file_without_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("apiserver.log");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_apiserver"));
    command
        .args(["--addr", "127.0.0.1:0", "--insecure-no-auth", "--log", "debug"])
        .current_dir(dir.path())
        .env_remove("APISERVER_ADDR")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the apiserver binary starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = stdout.next_line().await {
            if let Some(rest) = line.split("serving on ").nth(1) {
                return rest.split(';').next().map(str::to_owned);
            }
        }
        None
    })
    .await
    .expect("the bin says where it serves within 20 s")
    .expect("the bin serves");
    let base = kube::Config::new(url.parse().unwrap());
    let (status, _) = common::send_bytes(
        &client_with_token(&base, None),
        "GET",
        "/api/v1/namespaces",
        "",
        vec![],
    )
    .await;
    assert_eq!(status, 200);
    child.kill().await.unwrap();
    let logs = std::fs::read_to_string(&log_path).unwrap();
    assert!(logs.contains("request"), "debug logging was on: {logs}");
    assert!(!logs.contains('\x1b'), "an escape code in the log file: {logs:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_with_insecure_no_auth_serves_anonymous_requests() {
    for (args, env) in [
        (vec!["--addr", "127.0.0.1:0", "--insecure-no-auth"], vec![]),
        (
            vec!["--addr", "127.0.0.1:0"],
            vec![("APISERVER_INSECURE_NO_AUTH", "true")],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_bin(dir.path(), &args, &env);
        let (url, _) = served_url(&mut child).await.expect("the bin serves");
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "plain HTTP without a token: {url}"
        );
        let base = kube::Config::new(url.parse().unwrap());
        let (status, body) = common::send_bytes(
            &client_with_token(&base, None),
            "GET",
            "/api/v1/namespaces",
            "",
            vec![],
        )
        .await;
        assert_eq!(
            (status, body["kind"].as_str()),
            (200, Some("NamespaceList")),
            "{args:?} {env:?}"
        );
        let kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).unwrap();
        assert!(!kubeconfig.contains("token"), "{kubeconfig}");
        child.kill().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_with_a_token_file_requires_that_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "file-token-abcdef\n").unwrap();
    let mut child = spawn_bin(
        dir.path(),
        &["--addr", "127.0.0.1:0", "--token-file", "token"],
        &[],
    );
    served_url(&mut child).await.expect("the bin serves");
    let base = kubeconfig_file(&dir.path().join("kubeconfig")).await;
    let client = client_with_token(&base, Some("file-token-abcdef"));
    assert_eq!(
        common::send_bytes(&client, "GET", "/api/v1/namespaces", "", vec![])
            .await
            .0,
        200
    );
    assert_every_request_is_unauthorized(&client_with_token(&base, None)).await;
    child.kill().await.unwrap();

    std::fs::write(dir.path().join("empty"), "\n").unwrap();
    let mut child = spawn_bin(
        dir.path(),
        &["--addr", "127.0.0.1:0", "--token-file", "empty"],
        &[],
    );
    let refused = served_url(&mut child)
        .await
        .expect_err("an empty token file is refused");
    assert!(refused.contains("empty"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_shutdown_the_https_port_is_free_for_a_new_server_at_once() {
    let first = ApiServer::start(Config::default()).await.unwrap();
    let addr = first.addr();
    first.shutdown().await;
    let second = ApiServer::start(Config {
        addr,
        ..Config::default()
    })
    .await
    .expect("the port was released");
    let (status, _) = common::send_bytes(&second.client(), "GET", "/api/v1/namespaces", "", vec![]).await;
    assert_eq!(status, 200);
}
