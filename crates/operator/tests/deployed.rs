//! What a user deploys, deployed the way the README tells them, on the cluster tier's real node: the
//! image `make docker-build` built (loaded into the node's containerd, as a push to a registry would
//! make it pullable), then the README's "Deploying to a real cluster" steps played for real (`make
//! deploy` applies `make build-installer`'s install.yaml), and everything it promises checked as a
//! user would notice it:
//! - both manager pods Running and Ready, as non-root on a read-only root filesystem;
//! - exactly one holds the Lease; killing that pod hands the Lease to the other within the lease's
//!   terms, and a resource created right after the kill still converges;
//! - PostgresWriter rows written from the pods to a PostgreSQL outside the cluster, reached through
//!   the `postgres` Service with the password from the `postgres-password` Secret;
//! - the webhooks answered from the pods through their Service (defaulting, validation, VoteConfig's
//!   conversion), with the certificate the manager issues itself and the CA it injects;
//! - `/metrics` scraped through the metrics Service over HTTPS, with the names the README lists, by a
//!   ServiceAccount bound to `operator-metrics-reader`, and refused to anyone else;
//! - `make undeploy` leaves nothing behind.
//!
//! The manager's controllers watch every namespace, so this test runs alone, after the rest of the
//! tier (the `cluster-deployed` nextest profile).

mod support;

use std::{collections::BTreeSet, net::SocketAddr, time::Duration};

use jiff::Timestamp;
use k8s_openapi::{
    api::{
        authentication::v1::TokenRequest,
        core::v1::{Service, ServiceAccount},
        rbac::v1::ClusterRoleBinding,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use operator::api::{postgres_writer::PostgresWriter, vote_config::v1::VoteConfig};
use serde_json::{Value, json};
use support::{
    Backend,
    deployment::{
        CONVERGED_WITHIN, Deployed, INJECTED_WITHIN, LEASE_DURATION, LEASE_RETRY, NAMESPACE, holds,
    },
    eventually,
    scrape::{declared_names, https_get, readme_metric_names},
};

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-operator";

async fn the_readme_deploy_runs_the_operator_as_pods_on_a_real_node(backend: Backend) {
    let deployed = Deployed::up(backend, WORKLOADS).await;
    let pods = deployed.replicas_ready(2).await;
    runs_as_deployed(&deployed, &pods).await;
    let leader = deployed.leader(&pods).await;
    webhooks_answer_through_their_service(&deployed).await;
    rows_are_written_from_the_pods(&deployed).await;
    metrics_are_scraped_through_their_service(&deployed.client).await;
    the_standby_takes_over_when_the_leader_dies(&deployed, &leader).await;
    deployed.undeploy().await;
}

/// Both replicas run the tier's image, as non-root on a read-only root filesystem.
async fn runs_as_deployed(deployed: &Deployed, pods: &[k8s_openapi::api::core::v1::Pod]) {
    let deployment = deployed.manager_deployment().await;
    assert_eq!(deployment.spec.unwrap().replicas, Some(2));
    for pod in pods {
        let spec = pod.spec.as_ref().unwrap();
        let container = &spec.containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some(support::deployment::operator_image().as_str())
        );
        let security = container.security_context.as_ref().unwrap();
        assert_eq!(security.read_only_root_filesystem, Some(true));
        assert_eq!(
            spec.security_context.as_ref().and_then(|s| s.run_as_non_root),
            Some(true),
            "the kubelet refuses to start a root image under runAsNonRoot: the pod runs as non-root"
        );
        assert_eq!(pod.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    }
}

/// The CA the manager issued is in the three places that call its Service; then each webhook answers:
/// defaulting fills colors, conversion serves v1alpha1, validation refuses a table that cannot hold
/// rows.
async fn webhooks_answer_through_their_service(deployed: &Deployed) {
    let client = &deployed.client;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually(
        "the CA injected into VoteConfig's conversion webhook",
        INJECTED_WITHIN,
        || async {
            let crd = crds.get("voteconfigs.voting.schoolofdevops.com").await.ok()?;
            let bundle = crd.spec.conversion?.webhook?.client_config?.ca_bundle?;
            (!bundle.0.is_empty()).then_some(())
        },
    )
    .await;
    for kind in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        eventually(
            &format!("the CA injected into the {kind}"),
            INJECTED_WITHIN,
            || async {
                let listed = deployed.kubectl(&["get", kind, "-o", "json"]);
                let listed: Value = serde_json::from_str(&listed).ok()?;
                let ours: Vec<&Value> = listed["items"]
                    .as_array()?
                    .iter()
                    .flat_map(|c| c["webhooks"].as_array().into_iter().flatten())
                    .filter(|w| w["clientConfig"]["service"]["namespace"] == NAMESPACE)
                    .collect();
                (!ours.is_empty() && ours.iter().all(|w| w["clientConfig"]["caBundle"].is_string()))
                    .then_some(())
            },
        )
        .await;
    }
    // Defaulting: the options left without a color get one.
    let votes: Api<VoteConfig> = Api::namespaced(client.clone(), WORKLOADS);
    let vote: VoteConfig = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "pets"},
        "spec": {"question": "Which pet?", "options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]},
    }))
    .unwrap();
    let created = votes
        .create(&PostParams::default(), &vote)
        .await
        .expect("the defaulting webhook answers from the pods");
    assert!(
        created.spec.options.iter().all(|o| o.color.is_some()),
        "every option got a color: {:?}",
        created.spec.options
    );

    // Conversion: read in the old version, the question rides in an annotation.
    let old = deployed.kubectl(&[
        "get",
        "voteconfigs.v1alpha1.voting.schoolofdevops.com",
        "pets",
        "-n",
        WORKLOADS,
        "-o",
        "json",
    ]);
    let old: Value = serde_json::from_str(&old).unwrap();
    assert_eq!(old["apiVersion"], "voting.schoolofdevops.com/v1alpha1");
    assert_eq!(
        old["metadata"]["annotations"]["voting.schoolofdevops.com/question"],
        "Which pet?"
    );

    // Validation: a table whose columns cannot hold rows is refused before anything is stored.
    deployed
        .sql
        .batch_execute("CREATE TABLE grades (id text PRIMARY KEY, name text, age text, country text)")
        .await
        .unwrap();
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    let mut bad = support::postgres_writer::writer("ada", "grades", "Ada", 36, "UK");
    bad.metadata.namespace = Some(WORKLOADS.into());
    match writers.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(status)) => assert!(
            status
                .message
                .contains("spec.table: table grades cannot hold PostgresWriter rows"),
            "{}",
            status.message
        ),
        other => panic!("the validating webhook refuses the table: {other:?}"),
    }
}

/// A PostgresWriter's row is written by the deployed manager, and goes with it.
async fn rows_are_written_from_the_pods(deployed: &Deployed) {
    deployed.converges("alan", "Alan").await;
    let writers = deployed.writers();
    writers.delete("alan", &DeleteParams::default()).await.unwrap();
    support::until_gone(&writers, "alan", "the PostgresWriter to go", CONVERGED_WITHIN).await;
    let rows = support::postgres_writer::rows(&deployed.sql, "students").await;
    assert!(
        rows.iter().all(|r| r.1 != "Alan"),
        "the row went with its resource: {rows:?}"
    );
}

/// A ServiceAccount `name` in the test's namespace, bound to the ClusterRole `role` when given, and a
/// token the API server issued for it, as Prometheus's own.
async fn scraper_token(client: &kube::Client, name: &str, role: Option<&str>) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), WORKLOADS);
    let pp = PostParams::default();
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    accounts.create(&pp, &account).await.unwrap();
    if let Some(role) = role {
        // Not named operator-...: make undeploy does not remove it, the test does.
        let binding: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": format!("deployed-{name}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": WORKLOADS}],
        }))
        .unwrap();
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        let _ = bindings
            .delete(&format!("deployed-{name}"), &DeleteParams::default())
            .await;
        bindings.create(&pp, &binding).await.unwrap();
    }
    let request: TokenRequest = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    accounts
        .create_token_request(name, &pp, &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// `/metrics` through the metrics Service over HTTPS (kube-proxy picks a replica each time), with the
/// token of a ServiceAccount bound to `operator-metrics-reader`, until every name the README lists was
/// seen; refused without a token (401) and to an account not bound to it (403).
async fn metrics_are_scraped_through_their_service(client: &kube::Client) {
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let service = services
        .get("operator-controller-manager-metrics-service")
        .await
        .unwrap();
    let spec = service.spec.unwrap();
    let port = spec.ports.unwrap()[0].clone();
    assert_eq!((port.name.as_deref(), port.port), (Some("https"), 8443));
    let address = SocketAddr::new(
        spec.cluster_ip.unwrap().parse().unwrap(),
        u16::try_from(port.port).unwrap(),
    );
    let reader = scraper_token(client, "metrics-scraper", Some("operator-metrics-reader")).await;
    let stranger = scraper_token(client, "metrics-stranger", None).await;
    let wanted = readme_metric_names();
    assert!(wanted.len() > 10, "the README lists the metrics: {wanted:?}");
    let seen = std::sync::Mutex::new(BTreeSet::new());
    eventually(
        "every metric the README lists, through the Service, with the reader's token",
        CONVERGED_WITHIN,
        || async {
            let response = https_get(address, "/metrics", Some(&reader)).await.ok()?;
            // The binding may take a moment to reach the API server's authorizer.
            (response.status == 200).then_some(())?;
            let mut seen = seen.lock().unwrap();
            seen.extend(declared_names(&response.body));
            wanted.iter().all(|name| seen.contains(name)).then_some(())
        },
    )
    .await;
    let anonymous = https_get(address, "/metrics", None).await.unwrap();
    assert_eq!(anonymous.status, 401, "no token: {}", anonymous.body);
    let forbidden = https_get(address, "/metrics", Some(&stranger)).await.unwrap();
    assert_eq!(forbidden.status, 403, "not a metrics reader: {}", forbidden.body);
    let plain = support::http_get(address, "/metrics").await;
    assert!(
        plain.as_ref().map_or(true, |r| r.status != 200),
        "no plain HTTP: {plain:?}"
    );
    let _ = Api::<ClusterRoleBinding>::all(client.clone())
        .delete("deployed-metrics-scraper", &DeleteParams::default())
        .await;
}

/// The leader's pod killed at once: the standby holds the Lease no later than the Lease's terms allow,
/// and a resource created right after the kill converges.
async fn the_standby_takes_over_when_the_leader_dies(deployed: &Deployed, leader: &str) {
    let before = deployed.lease().await.expect("the Lease is held");
    deployed
        .pods()
        .delete(
            leader,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let killed_at = Timestamp::now();
    // Made while no one leads: the new leader must pick it up.
    let writers = deployed.writers();
    let mut writer = support::postgres_writer::writer("grace", "students", "Grace", 45, "US");
    writer.metadata.namespace = Some(WORKLOADS.into());
    writers.create(&PostParams::default(), &writer).await.unwrap();

    let after = eventually(
        "another manager to hold the Lease",
        2 * LEASE_DURATION + LEASE_RETRY,
        || async {
            let spec = deployed.lease().await?;
            let holder = spec.holder_identity.clone()?;
            (!holds(&holder, leader)).then_some(spec)
        },
    )
    .await;
    // Judged by the Lease's own times: taken no later than its term after the last renewal, plus the
    // standby's next look.
    let renewed = before.renew_time.map(|t| t.0).expect("the Lease was renewed");
    let acquired = after
        .acquire_time
        .map(|t| t.0)
        .expect("the new holder acquired it");
    let waited = Duration::try_from(acquired.duration_since(renewed)).unwrap_or_default();
    assert!(
        waited <= LEASE_DURATION + LEASE_RETRY + Duration::from_secs(2),
        "the Lease was taken {waited:?} after the last renewal (killed at {killed_at})"
    );
    support::postgres_writer::wait_reason(&writers, "grace", "True/Synced", CONVERGED_WITHIN).await;
    let rows = support::postgres_writer::rows(&deployed.sql, "students").await;
    assert!(
        rows.iter().any(|r| r.1 == "Grace"),
        "converged under the new leader: {rows:?}"
    );
    // The ReplicaSet replaces the killed pod: two replicas again.
    deployed.replicas_ready(2).await;
}

testenv::cluster_tier!(the_readme_deploy_runs_the_operator_as_pods_on_a_real_node);
