//! Deployments, ReplicaSets, StatefulSets and Jobs.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, CONTAINERS, Column, Doc, IMAGES, NAME, column, fields, wide};
use crate::table::duration;

const CONTAINERS_PATH: &str = "/spec/template/spec/containers";

const fn integer(name: &'static str, doc: Doc) -> Column {
    Column {
        column_type: "integer",
        ..column(name, doc)
    }
}

const READY: Column = column("Ready", Doc::Text("Number of the pod with ready state"));

pub static DEPLOYMENT: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        READY,
        column(
            "Up-to-date",
            Doc::Field("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
        ),
        column(
            "Available",
            Doc::Field("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            Doc::Text(
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
            ),
        ),
    ],
    cells: deployment,
};

fn deployment(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, CONTAINERS_PATH);
    let selector = fields::selector(o, "/spec/selector").unwrap_or_else(|| "<invalid>".into());
    vec![
        fields::name(o),
        json!(format!(
            "{}/{}",
            fields::int(o, "/status/readyReplicas"),
            fields::int(o, "/spec/replicas")
        )),
        json!(fields::int(o, "/status/updatedReplicas")),
        json!(fields::int(o, "/status/availableReplicas")),
        fields::age(o, now),
        containers,
        images,
        json!(selector),
    ]
}

fn formatted_selector(o: &Value) -> String {
    fields::formatted_selector(o, "/spec/selector")
}

pub static REPLICA_SET: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        integer(
            "Desired",
            Doc::Field("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas"),
        ),
        integer(
            "Current",
            Doc::Field("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas"),
        ),
        integer(
            "Ready",
            Doc::Field("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            Doc::Text(
                "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ),
    ],
    cells: replica_set,
};

fn replica_set(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, CONTAINERS_PATH);
    vec![
        fields::name(o),
        json!(fields::int(o, "/spec/replicas")),
        json!(fields::int(o, "/status/replicas")),
        json!(fields::int(o, "/status/readyReplicas")),
        fields::age(o, now),
        containers,
        images,
        json!(formatted_selector(o)),
    ]
}

pub static STATEFUL_SET: BuiltInTable = BuiltInTable {
    columns: &[NAME, READY, AGE, CONTAINERS, IMAGES],
    cells: stateful_set,
};

fn stateful_set(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, CONTAINERS_PATH);
    vec![
        fields::name(o),
        json!(format!(
            "{}/{}",
            fields::int(o, "/status/readyReplicas"),
            fields::int(o, "/spec/replicas")
        )),
        fields::age(o, now),
        containers,
        images,
    ]
}

pub static JOB: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Status", Doc::Text("Status of the job.")),
        column(
            "Completions",
            Doc::Field("io.k8s.api.batch.v1.JobStatus", "succeeded"),
        ),
        column("Duration", Doc::Text("Time required to complete the job.")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", Doc::Field("io.k8s.api.batch.v1.JobSpec", "selector")),
    ],
    cells: job,
};

/// Whether the job's condition of `kind` is True (the first condition of that type decides).
fn job_condition(o: &Value, kind: &str) -> bool {
    fields::items(o, "/status/conditions")
        .iter()
        .find(|c| fields::text(c, "/type") == kind)
        .is_some_and(|c| fields::text(c, "/status") == "True")
}

fn job(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let succeeded = fields::int(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(wanted) => format!("{succeeded}/{wanted}"),
        None => match fields::int(o, "/spec/parallelism") {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let started = duration::timestamp(o.pointer("/status/startTime"));
    let completed = duration::timestamp(o.pointer("/status/completionTime"));
    let took = match (started, completed) {
        (None, _) => String::new(),
        (Some(start), None) => duration::human_duration(now.as_second() - start.as_second()),
        (Some(start), Some(end)) => duration::human_duration(end.as_second() - start.as_second()),
    };
    let status = if job_condition(o, "Complete") {
        "Complete"
    } else if job_condition(o, "Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if job_condition(o, "Suspended") {
        "Suspended"
    } else if job_condition(o, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (containers, images) = fields::containers_and_images(o, CONTAINERS_PATH);
    vec![
        fields::name(o),
        json!(status),
        json!(completions),
        json!(took),
        fields::age(o, now),
        containers,
        images,
        json!(formatted_selector(o)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Value {
        json!({"spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}})
    }

    #[test]
    fn t1_workload_cells_show_replicas_containers_and_selectors() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let deployment = json!({"metadata": {"name": "d"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}}, "template": template()},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            (DEPLOYMENT.cells)(&deployment, now),
            [
                json!("d"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("<unknown>"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=d")
            ]
        );
        let replica_set = json!({"metadata": {"name": "r"}, "spec": {"replicas": 2, "template": template()}});
        assert_eq!(
            (REPLICA_SET.cells)(&replica_set, now)[1..4],
            [json!(2), json!(0), json!(0)]
        );
        assert_eq!((REPLICA_SET.cells)(&replica_set, now)[7], json!("<none>"));
        let stateful = json!({"metadata": {"name": "s"}, "spec": {"replicas": 1}});
        assert_eq!((STATEFUL_SET.cells)(&stateful, now)[1], json!("0/1"));
    }

    #[test]
    fn t1_job_cells_show_status_completions_and_duration() {
        let now: jiff::Timestamp = "2026-11-22T10:10:00Z".parse().unwrap();
        let running = json!({"metadata": {"name": "j"}, "spec": {"parallelism": 2},
            "status": {"startTime": "2026-11-22T10:09:00Z"}});
        assert_eq!(
            (JOB.cells)(&running, now)[1..4],
            [json!("Running"), json!("0/1 of 2"), json!("60s")]
        );
        let done = json!({"metadata": {"name": "j"}, "spec": {"completions": 1},
            "status": {"succeeded": 1, "startTime": "2026-11-22T10:00:00Z", "completionTime": "2026-11-22T10:00:30Z",
                "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            (JOB.cells)(&done, now)[1..4],
            [json!("Complete"), json!("1/1"), json!("30s")]
        );
    }
}
