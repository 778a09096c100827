//! config/rbac enforced by the real kube-apiserver (`--authorization-mode=RBAC`, with the
//! OwnerReferencesPermissionEnforcement admission plugin hardened clusters run). `config/default` is
//! rendered and applied as `make deploy` applies it (its admission webhooks then removed: no pod serves
//! them here), and `operator run --leader-elect` runs as the
//! manager's ServiceAccount, with a token the API server issued for it. Then:
//! 1. with the roles as written, leader election and every controller work: each kind is reconciled to
//!    Ready and deleted cleanly;
//! 2. with any single rule taken away, the operator fails visibly: it exits, its `/readyz` never turns
//!    ready, it counts reconcile errors, or it logs a warning that the API server refused a request.
//!
//! `crates/operator/tests/rbac.rs` proves the other half against the embedded server's audit: no
//! request outside the roles, and no rule that no request needed.

mod support;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    authentication::v1::TokenRequest,
    core::v1::ServiceAccount,
    rbac::v1::{ClusterRole, PolicyRule, Role},
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use operator::{
    api::{postgres_writer::PostgresWriter, vote_config::VoteConfig, web_app::WebApp},
    db::throwaway::ThrowawayPostgres,
};
use serde_json::json;
use support::{Backend, ControlPlane, OperatorProcess, eventually, http_get, kubelet::KubeletStandIn};

/// Where `config/default` puts the manager.
const NAMESPACE: &str = "operator-system";
const SERVICE_ACCOUNT: &str = "operator-controller-manager";
const MANAGER_ROLE: &str = "operator-manager-role";
const LEADER_ELECTION_ROLE: &str = "operator-leader-election-role";

/// A healthy operator reconciles a new object in well under a second; a broken one shows it as soon
/// as its first request is refused. The margin covers a loaded 2-core machine.
const WITHIN: Duration = Duration::from_secs(45);
/// Longer than a healthy operator takes to become ready (its caches filled), by a wide margin: still
/// unready then counts as never ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A kubeconfig for the manager's ServiceAccount, with a token from the API server (TokenRequest), as
/// the kubelet would mount into the manager's pod.
async fn service_account_kubeconfig(plane: &ControlPlane, client: &kube::Client, path: &Path) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let request: TokenRequest = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let issued = accounts
        .create_token_request(SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await
        .expect("a token for the manager's ServiceAccount");
    let token = issued.status.expect("token issued").token;
    plane
        .write_kubeconfig_with_token(path, Some(&token))
        .expect("kubeconfig");
}

fn manager(kubeconfig: &Path, database_url: &str) -> OperatorProcess {
    OperatorProcess::spawn(
        kubeconfig,
        &[
            "run",
            "--leader-elect",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ],
        &[("POD_NAMESPACE", NAMESPACE), ("DATABASE_URL", database_url)],
    )
}

/// One object of each kind, named `name`.
async fn create_one_of_each(client: &kube::Client, name: &str) {
    let pp = PostParams::default();
    let vote_config: VoteConfig = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"options": [{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]}
    }))
    .unwrap();
    let web_app: WebApp = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name, "namespace": "default"}, "spec": {"image": "nginx:1.27", "replicas": 1}
    }))
    .unwrap();
    let writer: PostgresWriter = serde_json::from_value(json!({
        "apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"table": "students", "name": name, "age": 30, "country": "chile"}
    }))
    .unwrap();
    Api::<VoteConfig>::namespaced(client.clone(), "default")
        .create(&pp, &vote_config)
        .await
        .unwrap();
    Api::<WebApp>::namespaced(client.clone(), "default")
        .create(&pp, &web_app)
        .await
        .unwrap();
    Api::<PostgresWriter>::namespaced(client.clone(), "default")
        .create(&pp, &writer)
        .await
        .unwrap();
}

fn ready_true(conditions: &[operator::api::postgres_writer::Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Whether every object named `name` reports Ready=True.
async fn all_ready(client: &kube::Client, name: &str) -> Option<()> {
    let vc = Api::<VoteConfig>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .ok()?;
    let wa = Api::<WebApp>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .ok()?;
    let pw = Api::<PostgresWriter>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .ok()?;
    (ready_true(&vc.status?.conditions)
        && ready_true(&wa.status?.conditions)
        && ready_true(&pw.status?.conditions))
    .then_some(())
}

/// Deletes every object named `name` and waits until all are gone (finalizers run by the operator).
async fn delete_each(client: &kube::Client, name: &str) {
    let vote_configs = Api::<VoteConfig>::namespaced(client.clone(), "default");
    let web_apps = Api::<WebApp>::namespaced(client.clone(), "default");
    let writers = Api::<PostgresWriter>::namespaced(client.clone(), "default");
    let dp = DeleteParams::default();
    vote_configs.delete(name, &dp).await.unwrap();
    web_apps.delete(name, &dp).await.unwrap();
    writers.delete(name, &dp).await.unwrap();
    support::until_gone(&vote_configs, name, "the VoteConfig deleted", WITHIN).await;
    support::until_gone(&web_apps, name, "the WebApp deleted", WITHIN).await;
    support::until_gone(
        &writers,
        name,
        "the PostgresWriter deleted (its row's finalizer)",
        WITHIN,
    )
    .await;
}

/// How the operator shows that something is wrong, if it does within [`WITHIN`].
async fn visible_failure(
    operator: &mut OperatorProcess,
    probes: std::net::SocketAddr,
    metrics: std::net::SocketAddr,
) -> Option<String> {
    let started = Instant::now();
    let mut ever_ready = false;
    while started.elapsed() < WITHIN {
        if let Some(status) = operator.exit_within(Duration::ZERO).await {
            return Some(format!("exited: {status}"));
        }
        for line in operator.drain_log() {
            // The API server's refusal as kube-rs reports it: a Status with reason Forbidden.
            let refused = line.contains("Forbidden");
            if refused && (line.contains("WARN") || line.contains("ERROR")) {
                return Some(format!("logged: {line}"));
            }
        }
        if let Ok(readyz) = http_get(probes, "/readyz").await {
            ever_ready |= readyz.status == 200;
            if !ever_ready && started.elapsed() > READY_WITHIN {
                return Some(format!("never ready: /readyz {} {}", readyz.status, readyz.body));
            }
        }
        if let Ok(scraped) = http_get(metrics, "/metrics").await {
            let errors: f64 = scraped
                .body
                .lines()
                .filter(|l| l.starts_with("controller_runtime_reconcile_errors_total{"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum();
            if errors > 0.0 {
                return Some(format!("{errors} reconcile errors counted"));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Every rule of the two roles, with the role it belongs to.
async fn every_rule(client: &kube::Client) -> Vec<(&'static str, usize, PolicyRule)> {
    let cluster_role = Api::<ClusterRole>::all(client.clone())
        .get(MANAGER_ROLE)
        .await
        .unwrap();
    let role = Api::<Role>::namespaced(client.clone(), NAMESPACE)
        .get(LEADER_ELECTION_ROLE)
        .await
        .unwrap();
    let mut rules = Vec::new();
    for (i, rule) in cluster_role.rules.unwrap_or_default().into_iter().enumerate() {
        rules.push((MANAGER_ROLE, i, rule));
    }
    for (i, rule) in role.rules.unwrap_or_default().into_iter().enumerate() {
        rules.push((LEADER_ELECTION_ROLE, i, rule));
    }
    rules
}

/// Replaces the rules of `role` (one of the two above) with `rules`.
async fn set_rules(client: &kube::Client, role: &str, rules: Vec<PolicyRule>) {
    if role == MANAGER_ROLE {
        replace_rules(Api::<ClusterRole>::all(client.clone()), role, rules, |r| {
            &mut r.rules
        })
        .await
    } else {
        let roles = Api::<Role>::namespaced(client.clone(), NAMESPACE);
        replace_rules(roles, role, rules, |r| &mut r.rules).await
    }
}

async fn replace_rules<K>(
    api: Api<K>,
    name: &str,
    rules: Vec<PolicyRule>,
    field: fn(&mut K) -> &mut Option<Vec<PolicyRule>>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let mut current = api.get(name).await.unwrap();
    *field(&mut current) = Some(rules);
    api.replace(name, &PostParams::default(), &current).await.unwrap();
}

/// The objects created while rule `index` of `role` is taken away.
fn case_name(role: &str, index: usize) -> String {
    let short = if role == MANAGER_ROLE { "manager" } else { "leader" };
    format!("without-{short}-{index}")
}

async fn stop(mut operator: OperatorProcess) {
    operator.signal("TERM");
    let status = operator.exit_within(Duration::from_secs(40)).await;
    assert!(
        status.is_some(),
        "the operator exits on SIGTERM\n{}",
        operator.log_so_far()
    );
}

async fn the_operator_works_with_exactly_config_rbac_and_fails_visibly_without_any_one_rule(
    backend: Backend,
) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let _kubelet = KubeletStandIn::start(&plane, &client);
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.kubeconfig");
    plane.write_kubeconfig(&admin).unwrap();
    support::kubectl(&admin, &["apply", "-k", "config/default"]);
    support::wait_established(&client).await;
    // No pod serves the webhook Service here (the manager runs as a process beside the control plane,
    // outside any cluster network), so the admission configurations config/default registers would
    // refuse every VoteConfig (failurePolicy Fail). RBAC is this test's subject; tests/webhooks.rs
    // covers admission on this control plane.
    for kind in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        support::kubectl(&admin, &["delete", kind, "--all"]);
    }
    let kubeconfig = dir.path().join("manager.kubeconfig");
    service_account_kubeconfig(&plane, &client, &kubeconfig).await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");

    // 1. The roles as written: leader election and every controller work.
    let mut operator = manager(&kubeconfig, &pg.url());
    operator.wait_for_log("became the leader", WITHIN).await;
    create_one_of_each(&client, "granted").await;
    eventually("every kind Ready under config/rbac", WITHIN, || {
        all_ready(&client, "granted")
    })
    .await;
    delete_each(&client, "granted").await;
    let log = operator.log_so_far();
    assert!(!log.contains("forbidden"), "a request was refused:\n{log}");
    stop(operator).await;

    // 2. Any one rule taken away: the operator says so.
    let rules = every_rule(&client).await;
    assert!(rules.len() > 5, "the roles were applied: {rules:?}");
    for (role, index, rule) in &rules {
        let all: Vec<PolicyRule> = rules
            .iter()
            .filter(|(r, _, _)| r == role)
            .map(|(_, _, r)| r.clone())
            .collect();
        let without: Vec<PolicyRule> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| i != index)
            .map(|(_, r)| r.clone())
            .collect();
        set_rules(&client, role, without).await;
        let mut operator = manager(&kubeconfig, &pg.url());
        // In the order the manager logs them.
        let metrics = operator.bound_address("serving /metrics").await;
        let probes = operator.bound_address("serving /healthz and /readyz").await;
        let name = case_name(role, *index);
        create_one_of_each(&client, &name).await;
        let failure = visible_failure(&mut operator, probes, metrics).await;
        let what = format!(
            "{role} rule {index} ({:?} {:?} {:?})",
            rule.api_groups, rule.resources, rule.verbs
        );
        match failure {
            Some(how) => eprintln!("without {what}: {how}"),
            None => panic!(
                "without {what} the operator failed silently:\n{}",
                operator.log_so_far()
            ),
        }
        operator.signal("KILL");
        set_rules(&client, role, all).await;
    }
    // Whatever the broken runs left is finished by an operator with every rule back.
    let operator = manager(&kubeconfig, &pg.url());
    for (role, index, _) in &rules {
        let name = case_name(role, *index);
        eventually("a leftover object Ready once the rules are back", WITHIN, || {
            all_ready(&client, &name)
        })
        .await;
    }
    stop(operator).await;
}

testenv::real_control_plane!(
    the_operator_works_with_exactly_config_rbac_and_fails_visibly_without_any_one_rule
);
