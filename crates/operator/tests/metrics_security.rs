//! `/metrics` as a scraper meets it, on the fresh tiers: served over HTTPS (a self-signed certificate,
//! which the scraper does not verify, as config/prometheus's ServiceMonitor), to a bearer token the
//! API server authenticates (TokenReview) and authorizes for `get /metrics` (SubjectAccessReview).
//! A ServiceAccount bound to config/rbac's `metrics-reader` reads every name the README lists; without
//! a token the answer is 401, with the token of an account not bound to it 403. `--metrics-secure=false`
//! serves plain HTTP to anyone.

mod support;

use std::{collections::BTreeSet, path::Path, time::Duration};

use k8s_openapi::api::{
    authentication::v1::TokenRequest,
    core::v1::ServiceAccount,
    rbac::v1::{ClusterRole, ClusterRoleBinding},
};
use kube::{Api, api::PostParams};
use operator::{
    api::{postgres_writer::PostgresWriter, vote_config::VoteConfig, web_app::WebApp},
    db::throwaway::ThrowawayPostgres,
};
use serde_json::json;
use support::{
    Backend, EXIT_AFTER_SIGNAL, Scene, WEB_IMAGE, eventually, http_get,
    postgres_writer::writer,
    scrape::{declared_names, https_get, readme_metric_names},
};

/// How long the manager may take to serve every family: its start and its first reconciles.
const SERVED_WITHIN: Duration = Duration::from_secs(60);

fn vote_config(name: &str) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}
        ]}
    }))
    .unwrap()
}

fn web_app(name: &str) -> WebApp {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": {"image": WEB_IMAGE, "replicas": 1}
    }))
    .unwrap()
}

/// The `metrics-reader` ClusterRole as config/rbac declares it.
fn metrics_reader() -> ClusterRole {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/rbac/metrics_reader_role.yaml");
    let text = std::fs::read_to_string(&path).expect("config/rbac/metrics_reader_role.yaml");
    serde_yaml::from_str(&text).expect("a ClusterRole")
}

/// A ServiceAccount `name` in the scene's namespace, and a token the API server issued for it.
async fn account_token(scene: &Scene, name: &str) -> String {
    let accounts: Api<ServiceAccount> = scene.api();
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("a ServiceAccount");
    let request: TokenRequest = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token")
        .status
        .expect("a token issued")
        .token
}

/// `name` bound to the ClusterRole `role`, cluster-wide.
async fn bind(scene: &Scene, role: &str, account: &str) {
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{role}-{account}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": scene.namespace}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(scene.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("a ClusterRoleBinding");
}

async fn metrics_are_served_over_https_to_metrics_readers_only(backend: Backend) {
    let scene = Scene::start(backend, "metrics-security").await;
    let reader = metrics_reader();
    let role = reader.metadata.name.clone().expect("a name");
    Api::<ClusterRole>::all(scene.client.clone())
        .create(&PostParams::default(), &reader)
        .await
        .expect("the metrics-reader ClusterRole");
    let scraper = account_token(&scene, "prometheus").await;
    bind(&scene, &role, "prometheus").await;
    let stranger = account_token(&scene, "stranger").await;

    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let url = pg.url();
    let mut operator = scene.operator(
        &[
            "run",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--metrics-secure",
            "--health-probe-bind-address",
            "0",
        ],
        &[("DATABASE_URL", &url)],
    );
    let metrics = operator.bound_address("serving /metrics").await;

    // One object of each kind, so that every family has samples: the database's too.
    let pp = PostParams::default();
    scene
        .api::<PostgresWriter>()
        .create(&pp, &writer("ada", "students", "Ada", 36, "UK"))
        .await
        .unwrap();
    scene
        .api::<VoteConfig>()
        .create(&pp, &vote_config("pets"))
        .await
        .unwrap();
    scene.api::<WebApp>().create(&pp, &web_app("shop")).await.unwrap();

    let wanted = readme_metric_names();
    assert!(wanted.len() > 10, "the README lists the metrics: {wanted:?}");
    let seen = std::sync::Mutex::new(BTreeSet::new());
    let body = eventually(
        "every metric the README lists, over HTTPS with the reader's token",
        SERVED_WITHIN,
        || async {
            let response = https_get(metrics, "/metrics", Some(&scraper)).await.ok()?;
            assert_eq!(response.status, 200, "the reader is let in: {}", response.body);
            let mut seen = seen.lock().unwrap();
            seen.extend(declared_names(&response.body));
            let missing: Vec<&String> = wanted.iter().filter(|name| !seen.contains(*name)).collect();
            if !missing.is_empty() {
                eprintln!("not yet: {missing:?}");
            }
            missing.is_empty().then_some(response.body)
        },
    )
    .await;
    assert!(body.ends_with("# EOF\n"), "an OpenMetrics exposition");

    let anonymous = https_get(metrics, "/metrics", None).await.expect("an answer");
    assert_eq!(anonymous.status, 401, "no token: {}", anonymous.body);
    let unknown = https_get(metrics, "/metrics", Some("not-a-token"))
        .await
        .expect("an answer");
    assert_eq!(
        unknown.status, 401,
        "a token the API server does not know: {}",
        unknown.body
    );
    let forbidden = https_get(metrics, "/metrics", Some(&stranger))
        .await
        .expect("an answer");
    assert_eq!(
        forbidden.status, 403,
        "an account not bound to {role}: {}",
        forbidden.body
    );
    // Asked again, the same answers: the cached ones.
    for _ in 0..3 {
        let again = https_get(metrics, "/metrics", Some(&scraper))
            .await
            .expect("an answer");
        assert_eq!(again.status, 200);
        let again = https_get(metrics, "/metrics", Some(&stranger))
            .await
            .expect("an answer");
        assert_eq!(again.status, 403);
    }
    // Plain HTTP to the HTTPS port reads nothing.
    let plain = http_get(metrics, "/metrics").await;
    assert!(
        plain.as_ref().map_or(true, |r| r.status != 200),
        "plain HTTP is not served metrics: {plain:?}"
    );

    operator.signal("TERM");
    let status = operator.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );
}

async fn metrics_secure_false_serves_plain_http_to_anyone(backend: Backend) {
    let scene = Scene::start(backend, "metrics-plain").await;
    // On every interface, where the default would be HTTPS: the flag turns it off.
    let mut operator = scene.operator(
        &[
            "run",
            "--controllers",
            "vote-config",
            "--metrics-bind-address",
            "0.0.0.0:0",
            "--metrics-secure=false",
            "--health-probe-bind-address",
            "0",
        ],
        &[],
    );
    let line = operator
        .wait_for_log("serving /metrics", Duration::from_secs(60))
        .await;
    let port: u16 = line
        .split("0.0.0.0:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let response = eventually("plain /metrics", SERVED_WITHIN, || async {
        http_get(metrics, "/metrics").await.ok()
    })
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .body
            .contains("# TYPE controller_event_backlog_bytes gauge"),
        "{}",
        response.body
    );
    operator.signal("TERM");
    let status = operator.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );
}

testenv::each_control_plane!(
    metrics_are_served_over_https_to_metrics_readers_only,
    metrics_secure_false_serves_plain_http_to_anyone,
);
