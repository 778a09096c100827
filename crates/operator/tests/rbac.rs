//! config/rbac is least privilege, and this proves it. The three controllers go through their whole
//! lifecycle (create, update, status, finalizers, drift repair, deletion, Events), two
//! `operator run --leader-elect` replicas take turns on the Lease, and `operator run` issues its
//! webhook certificate into the Secret config/webhook declares and puts its CA into the admission
//! configurations and the CRD that call the webhook Service, and serves /metrics securely to a
//! ServiceAccount bound to metrics_reader_role.yaml (reviewing its token and access), against the
//! embedded API server with its request audit on. Then:
//! 1. every request the operator made is allowed by role.yaml, leader_election_role.yaml,
//!    webhook_certificate_role.yaml or metrics_auth_role.yaml (a ClusterRole anywhere, a Role in its
//!    own namespace only), with RBAC's matching rules, resource names included;
//! 2. every verb those roles grant was needed by some request: nothing is granted "just in case".
//!
//! The operator is everything but this test's own client, which says who it is in its user agent.
//! `operator install`/`uninstall` (CRDs) are run by an administrator, not by the manager's account, so
//! they are not part of the manager's role.

mod support;

use std::{collections::BTreeSet, fmt, path::Path, time::Duration};

use apiserver::{AuditRecord, http::filters::audit::Attributes};
use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        authentication::v1::TokenRequest,
        core::v1::{Secret, Service, ServiceAccount},
        rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use operator::{
    controllers::{
        postgres_writer::{self, Settings},
        vote_config, web_app,
    },
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
};
use support::{
    OperatorProcess, eventually,
    lifecycles::{
        LIMIT, leader_election, postgres_writer_lifecycle, vote_config_lifecycle, web_app_lifecycle,
    },
    scrape::https_get,
};

/// The user agent of this test's own client; every other request is the operator's.
const TEST_AGENT: &str = "rbac-test";

// The roles, as RBAC reads them.

/// A rule of a role, and where it applies.
struct Grant {
    /// `role.yaml: ClusterRole manager-role`, for messages.
    source: String,
    /// A Role's namespace; `None` for a ClusterRole bound cluster-wide, which applies everywhere.
    namespace: Option<String>,
    rule: PolicyRule,
}

fn rbac_documents(file: &str) -> Vec<serde_yaml::Value> {
    config_documents("rbac", file)
}

/// The YAML documents of `config/<dir>/<file>`.
fn config_documents(dir: &str, file: &str) -> Vec<serde_yaml::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config")
        .join(dir)
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| serde::Deserialize::deserialize(document).expect("YAML"))
        .collect()
}

fn typed<T: serde::de::DeserializeOwned>(document: &serde_yaml::Value) -> T {
    serde_yaml::from_value(document.clone()).expect("a valid RBAC object")
}

/// Every rule of the manager's roles, after checking that each role is bound to its ServiceAccount.
fn grants() -> Vec<Grant> {
    let account =
        typed::<k8s_openapi::api::core::v1::ServiceAccount>(&rbac_documents("service_account.yaml")[0]);
    let documents: Vec<(&str, serde_yaml::Value)> = [
        "role.yaml",
        "leader_election_role.yaml",
        "webhook_certificate_role.yaml",
        "metrics_auth_role.yaml",
        "role_binding.yaml",
        "metrics_auth_role_binding.yaml",
    ]
    .into_iter()
    .flat_map(|file| rbac_documents(file).into_iter().map(move |d| (file, d)))
    .collect();
    let kind = |d: &serde_yaml::Value| d["kind"].as_str().unwrap_or_default().to_owned();
    let bound = |role_kind: &str, role: &str| {
        documents.iter().any(|(_, d)| {
            let (role_ref, subjects) = match kind(d).as_str() {
                "ClusterRoleBinding" => {
                    let b: ClusterRoleBinding = typed(d);
                    (b.role_ref, b.subjects.unwrap_or_default())
                }
                "RoleBinding" => {
                    let b: RoleBinding = typed(d);
                    (b.role_ref, b.subjects.unwrap_or_default())
                }
                _ => return false,
            };
            role_ref.kind == role_kind
                && role_ref.name == role
                && subjects
                    .iter()
                    .any(|s| s.kind == "ServiceAccount" && Some(&s.name) == account.metadata.name.as_ref())
        })
    };
    let mut grants = Vec::new();
    for (file, document) in &documents {
        let (namespace, name, rules) = match kind(document).as_str() {
            "ClusterRole" => {
                let role: ClusterRole = typed(document);
                (None, role.metadata.name, role.rules)
            }
            "Role" => {
                let role: Role = typed(document);
                (role.metadata.namespace, role.metadata.name, role.rules)
            }
            _ => continue,
        };
        let name = name.unwrap_or_default();
        let role_kind = if namespace.is_some() {
            "Role"
        } else {
            "ClusterRole"
        };
        assert!(
            bound(role_kind, &name),
            "{file}: {role_kind} {name} is bound to no ServiceAccount"
        );
        for rule in rules.unwrap_or_default() {
            grants.push(Grant {
                source: format!("{file}: {role_kind} {name}"),
                namespace: namespace.clone(),
                rule,
            });
        }
    }
    grants
}

/// One question kube-apiserver's authorizer is asked on the operator's behalf.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Check {
    verb: String,
    group: String,
    /// `webapps`, or `webapps/status` for a subresource.
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "\"\""
        } else {
            &self.group
        };
        let namespace = self.namespace.as_deref().unwrap_or("all namespaces");
        write!(f, "{} {group} {} in {namespace}", self.verb, self.resource)
    }
}

fn check(record: &AuditRecord) -> Option<Check> {
    let attributes = record.resource()?;
    Some(Check {
        verb: attributes.verb.to_string(),
        group: attributes.group.clone(),
        resource: attributes.rbac_resource(),
        namespace: attributes.namespace.clone(),
        name: attributes.name.clone(),
    })
}

fn matches(granted: &Option<Vec<String>>, wanted: &str) -> bool {
    granted.iter().flatten().any(|g| g == "*" || g == wanted)
}

/// RBAC's rule matching: a Role only answers for its namespace; group, resource and verb must be listed
/// (or `*`); `resourceNames`, when given, must name the object.
fn allows(grant: &Grant, check: &Check) -> bool {
    let rule = &grant.rule;
    let in_scope = grant.namespace.is_none() || grant.namespace == check.namespace;
    let resource = match check.resource.split_once('/') {
        Some((_, sub)) => {
            matches(&rule.resources, &check.resource) || matches(&rule.resources, &format!("*/{sub}"))
        }
        None => matches(&rule.resources, &check.resource),
    };
    let named = match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => check.name.as_ref().is_some_and(|n| names.contains(n)),
    };
    in_scope
        && matches(&rule.api_groups, &check.group)
        && resource
        && (rule.verbs.iter().any(|v| v == "*" || *v == check.verb))
        && named
}

/// What kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift and
/// many hardened clusters) asks when a writer sets `blockOwnerDeletion: true` on an owner reference:
/// may it `update` the owner's `finalizers` subresource? The audit cannot see it (the embedded server
/// runs no admission plugins), so it is derived from the owner references the operator wrote.
fn owner_reference_checks(children: &[ObjectMeta]) -> Vec<Check> {
    let crds: Vec<CustomResourceDefinition> = operator::api::crds();
    let mut checks = Vec::new();
    for child in children {
        for owner in child.owner_references.iter().flatten() {
            if owner.block_owner_deletion != Some(true) {
                continue;
            }
            let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
            let crd = crds
                .iter()
                .find(|c| c.spec.group == group && c.spec.names.kind == owner.kind)
                .unwrap_or_else(|| panic!("owner {}/{} is none of our kinds", owner.api_version, owner.kind));
            checks.push(Check {
                verb: "update".into(),
                group: group.into(),
                resource: format!("{}/finalizers", crd.spec.names.plural),
                namespace: child.namespace.clone(),
                name: Some(owner.name.clone()),
            });
        }
    }
    checks
}

/// Each `verb group resource` a rule grants that no check needed, by the role granting it. A `*` is
/// never needed: it grants what the operator does not do yet.
fn unused_grants(grants: &[Grant], checks: &BTreeSet<Check>) -> BTreeSet<String> {
    let mut unused = BTreeSet::new();
    for grant in grants {
        for group in grant.rule.api_groups.iter().flatten() {
            for resource in grant.rule.resources.iter().flatten() {
                for verb in &grant.rule.verbs {
                    let used = checks.iter().any(|c| {
                        c.group == *group && c.resource == *resource && c.verb == *verb && allows(grant, c)
                    });
                    if !used {
                        let group = if group.is_empty() { "\"\"" } else { group };
                        unused.insert(format!("{}: {verb} {group} {resource}", grant.source));
                    }
                }
            }
        }
    }
    unused
}

/// Non-resource URLs every authenticated account may read (ClusterRoles system:discovery and
/// system:public-info-viewer), so the manager's role needs none.
fn granted_to_everyone(path: &str) -> bool {
    let exact = [
        "/api",
        "/apis",
        "/openapi",
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
        "/version/",
    ];
    exact.contains(&path)
        || ["/api/", "/apis/", "/openapi/"]
            .iter()
            .any(|p| path.starts_with(p))
}

// The cluster and the lifecycles.

/// `operator run --webhook-cert-secret` in `namespace` as config/default runs it, until it has issued
/// the certificate into the Secret config/webhook declares and put its CA into every place that calls
/// the webhook Service: the admission configurations of config/webhook and VoteConfig's CRD, as
/// config/crd has it, converting through the Service.
async fn webhook_certificate(kubeconfig: &Path, namespace: &str, client: &kube::Client) {
    let secret: Secret = typed(&config_documents("webhook", "certificate_secret.yaml")[0]);
    let service: Service = typed(&config_documents("webhook", "service.yaml")[0]);
    assert_eq!(
        (
            secret.metadata.namespace.as_deref(),
            service.metadata.namespace.as_deref()
        ),
        (Some(namespace), Some(namespace)),
        "the Secret and the Service are in the manager's namespace"
    );
    let (secret_name, service_name) = (secret.name_any(), service.name_any());
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone());
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    for document in config_documents("webhook", "manifests.yaml") {
        match document["kind"].as_str() {
            Some("MutatingWebhookConfiguration") => {
                mutating
                    .create(&PostParams::default(), &typed(&document))
                    .await
                    .unwrap();
            }
            Some("ValidatingWebhookConfiguration") => {
                validating
                    .create(&PostParams::default(), &typed(&document))
                    .await
                    .unwrap();
            }
            other => panic!("config/webhook/manifests.yaml: an unexpected {other:?}"),
        }
    }
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let converting: CustomResourceDefinition =
        typed(&config_documents("crd", "voteconfigs.voting.schoolofdevops.com.yaml")[0]);
    crds.patch(
        &converting.name_any(),
        &PatchParams::apply(TEST_AGENT).force(),
        &Patch::Apply(&converting),
    )
    .await
    .unwrap();

    let mut operator = OperatorProcess::spawn(
        kubeconfig,
        &[
            "run",
            "--controllers=vote-config",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--webhook-bind-address=127.0.0.1:0",
            "--webhook-cert-secret",
            &secret_name,
            "--webhook-service",
            &service_name,
        ],
        &[("POD_NAMESPACE", namespace)],
    );
    let has_ca = |value: serde_json::Value, at: &str| value.pointer(at).is_some_and(|b| b.is_string());
    eventually(
        "the CA in every place that calls the webhook Service",
        LIMIT,
        || async {
            let mutating = mutating.list(&Default::default()).await.ok()?.items;
            let validating = validating.list(&Default::default()).await.ok()?.items;
            let converting = crds.get(&converting.name_any()).await.ok()?;
            let injected = mutating
                .into_iter()
                .map(|c| serde_json::to_value(c).unwrap_or_default())
                .chain(
                    validating
                        .into_iter()
                        .map(|c| serde_json::to_value(c).unwrap_or_default()),
                )
                .all(|c| has_ca(c, "/webhooks/0/clientConfig/caBundle"))
                && has_ca(
                    serde_json::to_value(converting).unwrap_or_default(),
                    "/spec/conversion/webhook/clientConfig/caBundle",
                );
            injected.then_some(())
        },
    )
    .await;
    operator.signal("TERM");
    let status = operator.exit_within(support::EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );
}

/// `operator run` serving /metrics securely, scraped once by a ServiceAccount bound to config/rbac's
/// metrics-reader: the manager asks the API server about the scraper's token and its access.
async fn secure_metrics(kubeconfig: &Path, namespace: &str, client: &kube::Client) {
    let reader: ClusterRole = typed(&rbac_documents("metrics_reader_role.yaml")[0]);
    let pp = PostParams::default();
    Api::<ClusterRole>::all(client.clone())
        .create(&pp, &reader)
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "prometheus"}})).unwrap();
    accounts.create(&pp, &account).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "metrics-reader-prometheus"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader.name_any()},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": namespace}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&pp, &binding)
        .await
        .unwrap();
    let request: TokenRequest =
        serde_json::from_value(serde_json::json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let token = accounts
        .create_token_request("prometheus", &pp, &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token;

    let mut operator = OperatorProcess::spawn(
        kubeconfig,
        &[
            "run",
            "--controllers=vote-config",
            "--metrics-bind-address=127.0.0.1:0",
            "--metrics-secure",
            "--health-probe-bind-address=0",
            "--webhook-bind-address=0",
        ],
        &[("POD_NAMESPACE", namespace)],
    );
    let metrics = operator.bound_address("serving /metrics").await;
    eventually("the metrics reader's scrape", LIMIT, || async {
        (https_get(metrics, "/metrics", Some(&token)).await.ok()?.status == 200).then_some(())
    })
    .await;
    operator.signal("TERM");
    let status = operator.exit_within(support::EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn config_rbac_allows_every_request_of_the_operator_and_grants_nothing_unused() {
    let grants = grants();
    // Where config/manager runs the manager: kustomize gives the Role and the pod (POD_NAMESPACE, the
    // Lease's namespace) the same namespace.
    let lease_namespace = grants
        .iter()
        .find(|g| matches(&g.rule.resources, "leases"))
        .and_then(|g| g.namespace.clone())
        .expect("a Role for the Lease");
    let (server, client) = support::audited_cluster(TEST_AGENT).await;
    support::create_namespace(&client, &lease_namespace).await;

    // The controllers in this process, through the operator's own (unlabelled) client.
    let operator_client = server.client();
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    let settings = Settings {
        orphan_sweep: true,
        ..Settings::default()
    };
    let (ctx, stop) = support::context(&operator_client, Duration::from_secs(2));
    let writers = support::spawn(ctx, stop, move |ctx| postgres_writer::run(ctx, pool, settings));
    let (ctx, stop) = support::context(&operator_client, Duration::from_secs(2));
    let vote_configs = support::spawn(ctx, stop, vote_config::run);
    let (ctx, stop) = support::context(&operator_client, Duration::from_secs(2));
    let web_apps = support::spawn(ctx, stop, web_app::run);
    let (mut children, more_children, ()) = tokio::join!(
        vote_config_lifecycle(&client),
        web_app_lifecycle(&client),
        postgres_writer_lifecycle(&client),
    );
    children.extend(more_children);
    for running in [writers, vote_configs, web_apps] {
        running.stop().await;
    }

    // Leader election, by the binary (its requests reach the same audit).
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    leader_election(&kubeconfig, &lease_namespace, &client).await;

    // The webhook certificate, by the binary, last: the admission configurations it needs call a
    // Service no pod backs here, so no lifecycle could run beside them.
    webhook_certificate(&kubeconfig, &lease_namespace, &client).await;
    secure_metrics(&kubeconfig, &lease_namespace, &client).await;

    let records: Vec<AuditRecord> = server
        .audit()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() != Some(TEST_AGENT))
        .collect();
    let strays: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.attributes {
            Attributes::NonResource(request) => Some(request.path.as_str()),
            Attributes::Resource(_) => None,
        })
        .filter(|path| !granted_to_everyone(path))
        .collect();
    assert!(
        strays.is_empty(),
        "non-resource requests no default role allows: {strays:?}"
    );
    let mut checks: BTreeSet<Check> = records.iter().filter_map(check).collect();
    checks.extend(owner_reference_checks(&children));
    let asked: BTreeSet<String> = checks.iter().map(Check::to_string).collect();
    eprintln!(
        "what the operator asked for:\n  {}",
        asked.into_iter().collect::<Vec<_>>().join("\n  ")
    );

    let denied: BTreeSet<String> = checks
        .iter()
        .filter(|c| !grants.iter().any(|g| allows(g, c)))
        .map(Check::to_string)
        .collect();
    let unused = unused_grants(&grants, &checks);
    let list = |lines: BTreeSet<String>| lines.into_iter().collect::<Vec<_>>().join("\n  ");
    assert!(
        denied.is_empty() && unused.is_empty(),
        "config/rbac denies what the operator does; grant:\n  {}\nconfig/rbac grants what the operator \
         never needed; remove:\n  {}",
        list(denied),
        list(unused)
    );
}
