//! The deployed operator against a PostgreSQL that accepts only TLS (`hostnossl ... reject` in
//! pg_hba.conf), its certificate for the Service name `postgres.operator-system.svc` signed by a CA
//! the test makes, as a user sets it up: the CA in a Secret mounted into the manager, `verify-full`
//! through the Deployment's environment. Then the CA in the Secret replaced by a wrong one (refused,
//! with a condition that says so) and back (Ready again), with no pod restarted.
//!
//! The manager's controllers watch every namespace, so this test runs alone, after the rest of the
//! tier (the `cluster-deployed` nextest profile).

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use operator::{api::postgres_writer::PostgresWriter, db::throwaway::ServerTls};
use serde_json::json;
use serving::authority::Authority;
use support::{
    Backend,
    database_access::{ready_message, terminate_sessions},
    deployment::{Deployed, MANAGER, NAMESPACE, READY_WITHIN, manager_restarts},
    postgres_writer::{rows, wait_reason, writer},
};

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-database-tls";
/// The name the manager connects to, and the certificate holds.
const SERVICE_NAME: &str = "postgres.operator-system.svc";
const CA_MOUNT: &str = "/var/run/secrets/postgres-ca";

/// How long a resource may take to converge once a leader runs: a reconcile and a database write.
const CONVERGED_WITHIN: Duration = Duration::from_secs(60);
/// How long after a Secret's update the manager may take to use its new content: the kubelet's next
/// sync of the pod (every minute, plus up to a minute's jitter and its cache's time to live), then a
/// failed PostgresWriter's next retry at most the back-off's cap (30 s) later, and one database step.
const SECRET_USED_WITHIN: Duration = Duration::from_secs(120 + 30 + 15);

async fn verify_full_reaches_a_tls_only_database_with_the_ca_from_a_secret(backend: Backend) {
    let ca = Authority::generate("database CA", None).expect("a CA");
    let server = ca
        .sign_serving(&[SERVICE_NAME.into()], "postgres", None)
        .expect("a server certificate");
    let tls = ServerTls {
        certificate_pem: server.cert_pem(),
        key_pem: server.key_pem(),
    };
    let ca_pem = ca.cert_pem().to_owned();
    let deployed = Deployed::up_with(backend, WORKLOADS, Some(&tls), |before| {
        let ca_pem = ca_pem.clone();
        async move { ca_secret(&before.kubeconfig, &ca_pem) }
    })
    .await;
    let client = &deployed.client;
    let sql = &deployed.sql;

    // The user's change to the manager: verify-full against the Service's name, the CA mounted.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let patch = json!({"spec": {"template": {"spec": {
        "containers": [{
            "name": "manager",
            "env": [
                {"name": "PSQL_HOST", "value": SERVICE_NAME},
                {"name": "PSQL_SSLMODE", "value": "verify-full"},
                {"name": "PSQL_SSLROOTCERT", "value": format!("{CA_MOUNT}/ca.crt")},
            ],
            "volumeMounts": [{"name": "postgres-ca", "mountPath": CA_MOUNT, "readOnly": true}],
        }],
        "volumes": [{"name": "postgres-ca", "secret": {"secretName": "postgres-ca"}}],
    }}}});
    deployments
        .patch(MANAGER, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("the manager's Deployment patched");
    support::kubectl(
        &deployed.kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            &format!("deployment/{MANAGER}"),
            &format!("--timeout={}s", READY_WITHIN.as_secs()),
        ],
    );

    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    let create = |name: &str| {
        let mut resource = writer(name, "students", name, 30, "peru");
        resource.metadata.namespace = Some(WORKLOADS.into());
        let writers = writers.clone();
        async move {
            writers
                .create(&PostParams::default(), &resource)
                .await
                .expect("created");
        }
    };
    create("ada").await;
    wait_reason(&writers, "ada", "True/Synced", CONVERGED_WITHIN).await;
    assert!(
        rows(sql, "students").await.iter().any(|row| row.1 == "ada"),
        "the row written over TLS"
    );
    let encrypted = sql
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s \
             JOIN pg_stat_activity a USING (pid) WHERE a.client_addr IS NOT NULL",
            &[],
        )
        .await
        .expect("pg_stat_ssl read");
    assert!(
        encrypted.get::<_, i64>(0) > 0 && encrypted.get::<_, bool>(1),
        "every session from the pods is encrypted"
    );
    let restarts_before = manager_restarts(client).await;

    // A wrong CA reaches the pods: new connections are refused, and the condition says why. Until
    // the kubelet has refreshed the mounted file, the pool's sessions are cut and the resource
    // changed every few seconds, so that each look needs a new connection.
    let other = Authority::generate("someone else's CA", None).expect("another CA");
    ca_secret(&deployed.kubeconfig, other.cert_pem());
    create("wrong").await;
    let last_poke = std::sync::Mutex::new(None::<Instant>);
    let age = std::sync::atomic::AtomicI64::new(30);
    let refused = support::eventually(
        "a PostgresWriter refused for the wrong CA",
        SECRET_USED_WITHIN,
        || async {
            let poke = {
                let mut last = last_poke.lock().unwrap_or_else(|p| p.into_inner());
                let due = last.is_none_or(|at| at.elapsed() > Duration::from_secs(5));
                if due {
                    *last = Some(Instant::now());
                }
                due
            };
            if poke {
                terminate_sessions(sql, "postgres").await;
                let next = age.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                let change = Patch::Merge(json!({"spec": {"age": next}}));
                let _ = writers.patch("wrong", &PatchParams::default(), &change).await;
            }
            let message = ready_message(&writers.get("wrong").await.ok()?)?;
            message
                .contains("not signed by a CA of sslrootcert")
                .then_some(message)
        },
    )
    .await;
    println!("refused with: {refused}");

    // The right CA back: Ready again, no pod restarted.
    ca_secret(&deployed.kubeconfig, &ca_pem);
    let right_since = Instant::now();
    create("grace").await;
    wait_reason(&writers, "grace", "True/Synced", SECRET_USED_WITHIN).await;
    println!(
        "a PostgresWriter Ready {:.0} s after the right CA was put back in the Secret",
        right_since.elapsed().as_secs_f64()
    );
    assert_eq!(
        manager_restarts(client).await,
        restarts_before,
        "no manager pod restarted"
    );

    deployed.undeploy().await;
}

/// Creates or replaces the Secret `postgres-ca` (key `ca.crt`) as a user does, with kubectl.
fn ca_secret(kubeconfig: &std::path::Path, ca_pem: &str) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("ca.crt");
    std::fs::write(&file, ca_pem).expect("CA file");
    let secret = support::kubectl(
        kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "create",
            "secret",
            "generic",
            "postgres-ca",
            &format!("--from-file=ca.crt={}", file.display()),
            "--dry-run=client",
            "-o",
            "yaml",
        ],
    );
    support::kubectl_with_input(kubeconfig, &["apply", "-f", "-"], &secret);
}

testenv::cluster_tier!(verify_full_reaches_a_tls_only_database_with_the_ca_from_a_secret);
