//! config/rbac enforced by RBAC, on the real kube-apiserver (`--authorization-mode=RBAC`, with the
//! OwnerReferencesPermissionEnforcement admission plugin hardened clusters run) and on the embedded
//! server (RBAC by default, the same plugin switched on). `config/default` is
//! rendered and applied as `make deploy` applies it (its admission webhooks then narrowed to objects
//! that never exist: no pod serves them here), and `operator run --leader-elect` runs as the manager's
//! ServiceAccount, with a token the API server issued for it, issuing its webhook certificate as
//! config/default runs it. Then:
//! 1. with the roles as written, leader election, the webhook certificate (issued into its Secret, its
//!    CA put into the configurations and the CRD that call the webhook Service) and every controller
//!    work: each kind is reconciled to Ready and deleted cleanly;
//!    /metrics, served securely, answers a ServiceAccount bound to `operator-metrics-reader` (the
//!    manager reviews its token and access with `operator-metrics-auth-role`) and no one else;
//! 2. with any single rule taken away, the operator fails visibly: it exits, its `/readyz` never turns
//!    ready, it counts reconcile errors, it refuses the metrics reader, or it logs a warning that the
//!    API server refused a request.
//!
//! `crates/operator/tests/rbac.rs` proves the other half against the embedded server's audit: no
//! request outside the roles, and no rule that no request needed.

mod support;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        apps::v1::Deployment,
        authentication::v1::TokenRequest,
        core::v1::ServiceAccount,
        rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, PostParams},
};
use operator::{
    api::{postgres_writer::PostgresWriter, vote_config::VoteConfig, web_app::WebApp},
    db::throwaway::ThrowawayPostgres,
};
use serde_json::json;
use support::{
    Backend, ControlPlane, OperatorProcess, eventually, http_get, kubelet::KubeletStandIn, scrape::https_get,
};

/// Where `config/default` puts the manager.
const NAMESPACE: &str = "operator-system";
const SERVICE_ACCOUNT: &str = "operator-controller-manager";
/// The manager's roles, as config/default names them: a ClusterRole, or a Role in [`NAMESPACE`].
const ROLES: [(RoleKind, &str); 5] = [
    (RoleKind::Cluster, "operator-manager-role"),
    (RoleKind::Namespaced, "operator-leader-election-role"),
    (RoleKind::Namespaced, "operator-webhook-certificate-role"),
    (RoleKind::Cluster, "operator-webhook-ca-injection-role"),
    (RoleKind::Cluster, "operator-metrics-auth-role"),
];
/// Who may read /metrics, as config/rbac names the ClusterRole; the test's scraper is bound to it.
const METRICS_READER: &str = "operator-metrics-reader";
const SCRAPER: &str = "prometheus";
/// The manager's Deployment in config/default: the flags it runs with.
const DEPLOYMENT: &str = "operator-controller-manager";

#[derive(Clone, Copy, Debug, PartialEq)]
enum RoleKind {
    Cluster,
    Namespaced,
}

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

/// The webhook flags config/default runs the manager with (the certificate it issues itself, for the
/// webhook Service), from the Deployment it applied.
async fn webhook_flags(client: &kube::Client) -> Vec<String> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), NAMESPACE)
        .get(DEPLOYMENT)
        .await
        .unwrap();
    let containers = deployment.spec.unwrap().template.spec.unwrap().containers;
    let manager = containers.iter().find(|c| c.name == "manager").unwrap();
    let flags: Vec<String> = manager
        .args
        .iter()
        .flatten()
        .filter(|a| a.starts_with("--webhook-"))
        .cloned()
        .collect();
    assert!(
        flags.iter().any(|f| f.starts_with("--webhook-cert-secret=")),
        "config/default's manager issues its webhook certificate: {flags:?}"
    );
    flags
}

fn manager(kubeconfig: &Path, database_url: &str, webhook_flags: &[String]) -> OperatorProcess {
    let mut args = vec![
        "run",
        "--leader-elect",
        "--metrics-bind-address",
        "127.0.0.1:0",
        // As config/default serves it; on loopback it would be plain HTTP unless asked.
        "--metrics-secure",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        // The webhook port on loopback: the manager runs beside the control plane, not in a pod.
        "--webhook-bind-address",
        "127.0.0.1:0",
        // No Service sends the API server here (the admission configurations call for objects that
        // never exist), so there is nothing to drain at SIGTERM: each run stops as soon as its
        // controllers have, and its Lease is released for the next one.
        "--shutdown-drain-seconds",
        "0",
    ];
    args.extend(webhook_flags.iter().map(String::as_str));
    OperatorProcess::spawn(
        kubeconfig,
        &args,
        &[("POD_NAMESPACE", NAMESPACE), ("DATABASE_URL", database_url)],
    )
}

/// Every place that calls the webhook Service and so gets the manager's CA: the admission
/// configurations and VoteConfig's CRD, as (kind, name, JSON pointer to the CA bundle).
const CA_PLACES: [(&str, &str, &str); 3] = [
    (
        "mutatingwebhookconfigurations",
        "operator-mutating-webhook-configuration",
        "/webhooks/0/clientConfig/caBundle",
    ),
    (
        "validatingwebhookconfigurations",
        "operator-validating-webhook-configuration",
        "/webhooks/0/clientConfig/caBundle",
    ),
    (
        "customresourcedefinitions",
        "voteconfigs.voting.schoolofdevops.com",
        "/spec/conversion/webhook/clientConfig/caBundle",
    ),
];

/// The objects of CA_PLACES' `kind`. Each [`CA_PLACES`] pointer is into such an object's fields
/// beside its metadata.
fn ca_places(client: &kube::Client, kind: &str) -> Api<DynamicObject> {
    let resource = match kind {
        "mutatingwebhookconfigurations" => ApiResource::erase::<MutatingWebhookConfiguration>(&()),
        "validatingwebhookconfigurations" => ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
        _ => ApiResource::erase::<CustomResourceDefinition>(&()),
    };
    Api::all_with(client.clone(), &resource)
}

/// Whether every place in [`CA_PLACES`] has a CA bundle.
async fn ca_everywhere(client: &kube::Client) -> Option<()> {
    for (kind, name, pointer) in CA_PLACES {
        let object = ca_places(client, kind).get(name).await.ok()?;
        object.data.pointer(pointer)?.as_str().filter(|b| !b.is_empty())?;
    }
    Some(())
}

/// Takes the CA bundles away, as on a fresh install, so that the manager puts them back. Through the
/// test's client, not kubectl: a dozen runs each doing this would spend their time in kubectl's
/// discovery.
async fn remove_ca_bundles(client: &kube::Client) {
    for (kind, name, pointer) in CA_PLACES {
        let places = ca_places(client, kind);
        let mut object = places.get(name).await.unwrap();
        let (config, field) = pointer.rsplit_once('/').unwrap();
        let removed = object
            .data
            .pointer_mut(config)
            .and_then(serde_json::Value::as_object_mut)
            .and_then(|config| config.remove(field));
        if removed.is_some() {
            places
                .replace(name, &PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| panic!("{kind} {name} without its CA bundle: {e}"));
        }
    }
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
    conditions.iter().any(|c| c.is("Ready", "True"))
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

/// A ServiceAccount of the scraper bound to [`METRICS_READER`], and a token the API server issued for it.
async fn scraper_token(client: &kube::Client) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": SCRAPER}})).unwrap();
    accounts.create(&PostParams::default(), &account).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "metrics-reader-scraper"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER},
        "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": NAMESPACE}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let request: TokenRequest = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    accounts
        .create_token_request(SCRAPER, &PostParams::default(), &request)
        .await
        .expect("a token for the scraper")
        .status
        .expect("token issued")
        .token
}

/// How the operator shows that something is wrong, if it does within [`WITHIN`].
async fn visible_failure(
    operator: &mut OperatorProcess,
    probes: std::net::SocketAddr,
    metrics: std::net::SocketAddr,
    scraper: &str,
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
        if let Ok(scraped) = https_get(metrics, "/metrics", Some(scraper)).await {
            if scraped.status != 200 {
                return Some(format!(
                    "refused the metrics reader: {} {}",
                    scraped.status, scraped.body
                ));
            }
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

/// Every rule of the manager's roles, with the role it belongs to.
async fn every_rule(client: &kube::Client) -> Vec<(&'static str, usize, PolicyRule)> {
    let mut rules = Vec::new();
    for (kind, role) in ROLES {
        let of_role = match kind {
            RoleKind::Cluster => {
                Api::<ClusterRole>::all(client.clone())
                    .get(role)
                    .await
                    .unwrap()
                    .rules
            }
            RoleKind::Namespaced => {
                Api::<Role>::namespaced(client.clone(), NAMESPACE)
                    .get(role)
                    .await
                    .unwrap()
                    .rules
            }
        };
        for (i, rule) in of_role.unwrap_or_default().into_iter().enumerate() {
            rules.push((role, i, rule));
        }
    }
    rules
}

/// Replaces the rules of `role` (one of [`ROLES`]) with `rules`.
async fn set_rules(client: &kube::Client, role: &str, rules: Vec<PolicyRule>) {
    let kind = ROLES.iter().find(|(_, r)| *r == role).map(|(k, _)| *k);
    match kind {
        Some(RoleKind::Cluster) => {
            replace_rules(Api::<ClusterRole>::all(client.clone()), role, rules, |r| {
                &mut r.rules
            })
            .await
        }
        Some(RoleKind::Namespaced) => {
            let roles = Api::<Role>::namespaced(client.clone(), NAMESPACE);
            replace_rules(roles, role, rules, |r| &mut r.rules).await
        }
        None => panic!("{role} is none of the manager's roles"),
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
    let short = role.trim_start_matches("operator-").trim_end_matches("-role");
    format!("without-{short}-{index}")
}

/// How long a manager takes at most to exit after SIGTERM, with no drain: its in-flight reconciles'
/// graceful shutdown timeout (30 s), and a margin.
const STOPPED_WITHIN: Duration = Duration::from_secs(40);

async fn stop(mut operator: OperatorProcess) {
    operator.signal("TERM");
    let status = operator.exit_within(STOPPED_WITHIN).await;
    assert!(
        status.is_some(),
        "the operator exits on SIGTERM\n{}",
        operator.log_so_far()
    );
}

async fn the_operator_works_with_exactly_config_rbac_and_fails_visibly_without_any_one_rule(
    backend: Backend,
) {
    let plane = match backend {
        // As the real tier runs kube-apiserver: with OwnerReferencesPermissionEnforcement, which the
        // finalizers rules are for.
        Backend::Embedded => ControlPlane::embedded(apiserver::Config {
            owner_reference_permissions: true,
            ..apiserver::Config::default()
        })
        .await
        .expect("API server starts"),
        _ => ControlPlane::start(backend).await.expect("control plane starts"),
    };
    let client = plane.client();
    let _kubelet = KubeletStandIn::start(&plane, &client);
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.kubeconfig");
    plane.write_kubeconfig(&admin).unwrap();
    support::kubectl(&admin, &["apply", "-k", "config/default"]);
    support::wait_established(&client).await;
    // No pod serves the webhook Service here (the manager runs as a process beside the control plane,
    // outside any cluster network), so the admission configurations config/default registers would
    // refuse every VoteConfig (failurePolicy Fail). They stay, for the manager puts its CA into them,
    // but call for objects that never exist. RBAC is this test's subject; tests/webhooks.rs covers
    // admission on this control plane.
    let never = json!([{"op": "add", "path": "/webhooks/0/objectSelector",
                        "value": {"matchLabels": {"operator-tests/admission": "never"}}}])
    .to_string();
    for kind in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        let names = support::kubectl(&admin, &["get", kind, "-o", "name"]);
        for name in names.lines() {
            support::kubectl(&admin, &["patch", name, "--type=json", "-p", &never]);
        }
    }
    let webhook_flags = webhook_flags(&client).await;
    let kubeconfig = dir.path().join("manager.kubeconfig");
    service_account_kubeconfig(&plane, &client, &kubeconfig).await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");

    let scraper = scraper_token(&client).await;

    // 1. The roles as written: leader election, the webhook certificate, every controller and the
    // metrics reader's scrape work.
    let mut operator = manager(&kubeconfig, &pg.url(), &webhook_flags);
    let metrics = operator.bound_address("serving /metrics").await;
    let scraped = https_get(metrics, "/metrics", Some(&scraper))
        .await
        .expect("/metrics answers");
    assert_eq!(scraped.status, 200, "the metrics reader reads: {}", scraped.body);
    let anonymous = https_get(metrics, "/metrics", None)
        .await
        .expect("/metrics answers");
    assert_eq!(anonymous.status, 401, "no one else: {}", anonymous.body);
    operator.wait_for_log("became the leader", WITHIN).await;
    eventually(
        "the manager's CA where the webhook Service is called",
        WITHIN,
        || ca_everywhere(&client),
    )
    .await;
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
        // As on a fresh install, so that the manager must put its CA in again.
        remove_ca_bundles(&client).await;
        let mut operator = manager(&kubeconfig, &pg.url(), &webhook_flags);
        // In the order the manager logs them.
        let metrics = operator.bound_address("serving /metrics").await;
        let probes = operator.bound_address("serving /healthz and /readyz").await;
        let name = case_name(role, *index);
        create_one_of_each(&client, &name).await;
        let failure = visible_failure(&mut operator, probes, metrics, &scraper).await;
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
        // Stopped as a Deployment's pod is, so that a Lease it holds is released and the next run
        // leads at once rather than after the Lease runs out. One that exited (refused its webhook
        // certificate's Secret, say) is gone already; one that does not stop is killed.
        if operator.exit_within(Duration::ZERO).await.is_none() {
            operator.signal("TERM");
            if operator.exit_within(STOPPED_WITHIN).await.is_none() {
                operator.signal("KILL");
            }
        }
        set_rules(&client, role, all).await;
    }
    // Whatever the broken runs left is finished by an operator with every rule back.
    let operator = manager(&kubeconfig, &pg.url(), &webhook_flags);
    for (role, index, _) in &rules {
        let name = case_name(role, *index);
        eventually("a leftover object Ready once the rules are back", WITHIN, || {
            all_ready(&client, &name)
        })
        .await;
    }
    stop(operator).await;
}

testenv::each_control_plane!(
    the_operator_works_with_exactly_config_rbac_and_fails_visibly_without_any_one_rule
);
