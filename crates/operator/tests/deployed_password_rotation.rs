//! The database password rotated on the deployed operator, as an administrator does it: `ALTER ROLE
//! ... PASSWORD` in PostgreSQL, the Secret `postgres-password` updated with kubectl, the sessions
//! opened with the old password terminated. The PostgresWriters report `DatabaseUnavailable` until the
//! kubelet brings the new password into the pods' mounted file, then are Ready again with no pod
//! restarted. The figure a user asks for, how long they were not Ready, is printed.
//!
//! The manager's controllers watch every namespace, so this test runs alone, after the rest of the
//! tier (the `cluster-deployed` nextest profile).

mod support;

use std::time::{Duration, Instant};

use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use operator::api::postgres_writer::PostgresWriter;
use serde_json::json;
use support::{
    Backend,
    database_access::terminate_sessions,
    deployment::{Deployed, NAMESPACE, manager_restarts},
    postgres_writer::{rows, wait_reason, wait_refused_saying, writer},
};

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-password-rotation";

/// How long a resource may take to converge once a leader runs: a reconcile and a database write.
const CONVERGED_WITHIN: Duration = Duration::from_secs(60);

/// How long after the Secret's update the PostgresWriters may stay not Ready: the kubelet brings a
/// Secret's new content into mounted volumes at its next sync of the pod (every minute, plus up to a
/// minute's jitter and its cache's time to live), then a failed PostgresWriter's next retry comes at
/// most the back-off's cap (30 s) later and takes one database step (5 s + 10 s).
const READY_AFTER_THE_SECRET_CHANGES: Duration = Duration::from_secs(120 + 30 + 15);

async fn a_rotated_password_reaches_the_deployed_manager_without_a_restart(backend: Backend) {
    let deployed = Deployed::up(backend, WORKLOADS).await;
    let client = &deployed.client;
    let sql = &deployed.sql;
    deployed.replicas_ready(2).await;
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    let create = |name: &str, student: &str| {
        let mut resource = writer(name, "students", student, 30, "peru");
        resource.metadata.namespace = Some(WORKLOADS.into());
        let writers = writers.clone();
        async move {
            writers
                .create(&PostParams::default(), &resource)
                .await
                .expect("created");
        }
    };
    create("before", "Ada").await;
    wait_reason(&writers, "before", "True/Synced", CONVERGED_WITHIN).await;
    let restarts_before = manager_restarts(client).await;

    // The administrator's rotation: the role's password first, then the old sessions cut.
    let new_password: String = rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    sql.batch_execute(&format!("ALTER ROLE postgres PASSWORD '{new_password}'"))
        .await
        .expect("password changed");
    let cut = Instant::now();
    assert!(
        terminate_sessions(sql, "postgres").await > 0,
        "the manager had sessions"
    );

    // A change now needs a new connection, which the old password no longer opens.
    writers
        .patch(
            "before",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"age": 31}})),
        )
        .await
        .expect("patched");
    create("after", "Grace").await;
    wait_refused_saying(
        &writers,
        "after",
        "password authentication failed",
        CONVERGED_WITHIN,
    )
    .await;

    // The Secret updated as the README made it, with kubectl.
    let secret = support::kubectl(
        &deployed.kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "create",
            "secret",
            "generic",
            "postgres-password",
            &format!("--from-literal=password={new_password}"),
            "--dry-run=client",
            "-o",
            "yaml",
        ],
    );
    support::kubectl_with_input(&deployed.kubeconfig, &["apply", "-f", "-"], &secret);
    let updated = Instant::now();

    for name in ["after", "before"] {
        wait_reason(&writers, name, "True/Synced", READY_AFTER_THE_SECRET_CHANGES).await;
    }
    println!(
        "PostgresWriters not Ready for {:.0} s after the old sessions were cut, {:.0} s of them after \
         the Secret was updated",
        cut.elapsed().as_secs_f64(),
        updated.elapsed().as_secs_f64()
    );
    let mut students: Vec<(String, i32)> = rows(sql, "students")
        .await
        .into_iter()
        .map(|(_, name, age, _)| (name, age))
        .collect();
    students.sort();
    assert_eq!(students, [("Ada".to_string(), 31), ("Grace".into(), 30)]);
    assert_eq!(
        manager_restarts(client).await,
        restarts_before,
        "no manager pod restarted"
    );

    deployed.undeploy().await;
}

testenv::cluster_tier!(a_rotated_password_reaches_the_deployed_manager_without_a_restart);
