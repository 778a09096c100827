//! DaemonSets, ReplicationControllers, CronJobs, and what controllers keep beside them: pod templates
//! and controller revisions.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, CONTAINERS, Column, Doc, IMAGES, NAME, column, fields, wide};
use crate::table::duration;

const fn integer(name: &'static str, doc: Doc) -> Column {
    Column {
        column_type: "integer",
        ..column(name, doc)
    }
}

const DAEMON_SET_STATUS: &str = "io.k8s.api.apps.v1.DaemonSetStatus";

pub static DAEMON_SET: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        integer("Desired", Doc::Field(DAEMON_SET_STATUS, "desiredNumberScheduled")),
        integer("Current", Doc::Field(DAEMON_SET_STATUS, "currentNumberScheduled")),
        // Documented from the older extensions/v1beta1 type, whose words differ from apps/v1's.
        integer(
            "Ready",
            Doc::Text(
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
            ),
        ),
        integer(
            "Up-to-date",
            Doc::Field(DAEMON_SET_STATUS, "updatedNumberScheduled"),
        ),
        integer("Available", Doc::Field(DAEMON_SET_STATUS, "numberAvailable")),
        column(
            "Node Selector",
            Doc::Field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            Doc::Text(
                "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ),
    ],
    cells: daemon_set,
};

fn daemon_set(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, "/spec/template/spec/containers");
    vec![
        fields::name(o),
        json!(fields::int(o, "/status/desiredNumberScheduled")),
        json!(fields::int(o, "/status/currentNumberScheduled")),
        json!(fields::int(o, "/status/numberReady")),
        json!(fields::int(o, "/status/updatedNumberScheduled")),
        json!(fields::int(o, "/status/numberAvailable")),
        json!(fields::labels(o, "/spec/template/spec/nodeSelector")),
        fields::age(o, now),
        containers,
        images,
        json!(fields::formatted_selector(o, "/spec/selector")),
    ]
}

const CONTROLLER_SPEC: &str = "io.k8s.api.core.v1.ReplicationControllerSpec";
const CONTROLLER_STATUS: &str = "io.k8s.api.core.v1.ReplicationControllerStatus";

pub static REPLICATION_CONTROLLER: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        integer("Desired", Doc::Field(CONTROLLER_SPEC, "replicas")),
        integer("Current", Doc::Field(CONTROLLER_STATUS, "replicas")),
        integer("Ready", Doc::Field(CONTROLLER_STATUS, "readyReplicas")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", Doc::Field(CONTROLLER_SPEC, "selector")),
    ],
    cells: replication_controller,
};

fn replication_controller(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, "/spec/template/spec/containers");
    vec![
        fields::name(o),
        json!(fields::int(o, "/spec/replicas")),
        json!(fields::int(o, "/status/replicas")),
        json!(fields::int(o, "/status/readyReplicas")),
        fields::age(o, now),
        containers,
        images,
        json!(fields::labels(o, "/spec/selector")),
    ]
}

const CRON_JOB_SPEC: &str = "io.k8s.api.batch.v1.CronJobSpec";
const CRON_JOB_STATUS: &str = "io.k8s.api.batch.v1.CronJobStatus";

pub static CRON_JOB: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Schedule", Doc::Field(CRON_JOB_SPEC, "schedule")),
        column("Timezone", Doc::Field(CRON_JOB_SPEC, "timeZone")),
        Column {
            column_type: "boolean",
            ..column("Suspend", Doc::Field(CRON_JOB_SPEC, "suspend"))
        },
        integer("Active", Doc::Field(CRON_JOB_STATUS, "active")),
        column("Last Schedule", Doc::Field(CRON_JOB_STATUS, "lastScheduleTime")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", Doc::Field("io.k8s.api.batch.v1.JobSpec", "selector")),
    ],
    cells: cron_job,
};

fn cron_job(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let last_schedule = match o.pointer("/status/lastScheduleTime") {
        Some(at) if !at.is_null() => duration::since(Some(at), now),
        _ => "<none>".into(),
    };
    let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(suspended) => fields::bool_word(suspended),
        None => "<unset>",
    };
    let (containers, images) =
        fields::containers_and_images(o, "/spec/jobTemplate/spec/template/spec/containers");
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/schedule")),
        json!(fields::text_or(o, "/spec/timeZone", "<none>")),
        json!(suspend),
        json!(fields::count(o, "/status/active")),
        json!(last_schedule),
        fields::age(o, now),
        containers,
        images,
        json!(fields::formatted_selector(o, "/spec/jobTemplate/spec/selector")),
    ]
}

pub static POD_TEMPLATE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Containers",
            Doc::Text("Names of each container in the template."),
        ),
        column(
            "Images",
            Doc::Text("Images referenced by each container in the template."),
        ),
        column("Pod Labels", Doc::Text("The labels for the pod template.")),
    ],
    cells: pod_template,
};

fn pod_template(o: &Value, _now: jiff::Timestamp) -> Vec<Value> {
    let (containers, images) = fields::containers_and_images(o, "/template/spec/containers");
    vec![
        fields::name(o),
        containers,
        images,
        json!(fields::labels(o, "/template/metadata/labels")),
    ]
}

pub static CONTROLLER_REVISION: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Controller", Doc::Text("Controller of the object")),
        column(
            "Revision",
            Doc::Text("revision indicates the revision of the state represented by Data."),
        ),
        AGE,
    ],
    cells: controller_revision,
};

/// The owner that controls `o`, as `kind.group/name` in lower case (`statefulset.apps/db`).
pub fn controller_of(o: &Value) -> String {
    let owner = fields::items(o, "/metadata/ownerReferences")
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else {
        return "<none>".into();
    };
    let api_version = fields::text(owner, "/apiVersion");
    let group = match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    let kind = fields::text(owner, "/kind");
    let name = fields::text(owner, "/name");
    match (group, kind) {
        ("", "") => name.to_owned(),
        ("", kind) => format!("{}/{name}", kind.to_lowercase()),
        (group, kind) => format!("{}/{name}", format!("{kind}.{group}").to_lowercase()),
    }
}

fn controller_revision(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(controller_of(o)),
        json!(fields::int(o, "/revision")),
        fields::age(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1"}], "nodeSelector": {"disk": "ssd"}}})
    }

    #[test]
    fn t1_daemon_set_and_replication_controller_cells_show_counts_and_selectors() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let daemon = json!({"metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberReady": 1,
                "updatedNumberScheduled": 2, "numberAvailable": 1}});
        assert_eq!(
            (DAEMON_SET.cells)(&daemon, now),
            [
                json!("agent"),
                json!(3),
                json!(2),
                json!(1),
                json!(2),
                json!(1),
                json!("disk=ssd"),
                json!("<unknown>"),
                json!("web"),
                json!("nginx:1"),
                json!("app=web")
            ]
        );
        let controller = json!({"metadata": {"name": "rc"},
            "spec": {"replicas": 2, "selector": {"app": "web"}, "template": template()}});
        assert_eq!(
            (REPLICATION_CONTROLLER.cells)(&controller, now),
            [
                json!("rc"),
                json!(2),
                json!(0),
                json!(0),
                json!("<unknown>"),
                json!("web"),
                json!("nginx:1"),
                json!("app=web")
            ]
        );
    }

    #[test]
    fn t1_cron_job_cells_show_schedule_suspension_and_last_run() {
        let now: jiff::Timestamp = "2026-11-22T10:10:00Z".parse().unwrap();
        let cron = json!({"metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": template()}}},
            "status": {"active": [{"name": "j"}], "lastScheduleTime": "2026-11-22T10:00:00Z"}});
        assert_eq!(
            (CRON_JOB.cells)(&cron, now),
            [
                json!("nightly"),
                json!("0 3 * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("10m"),
                json!("<unknown>"),
                json!("web"),
                json!("nginx:1"),
                json!("<none>")
            ]
        );
        let unset = json!({"spec": {"timeZone": "Etc/UTC"}});
        let cells = (CRON_JOB.cells)(&unset, now);
        assert_eq!(
            cells[2..6],
            [json!("Etc/UTC"), json!("<unset>"), json!(0), json!("<none>")]
        );
    }

    #[test]
    fn t1_pod_template_and_revision_cells_name_labels_and_controller() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let pod_template = json!({"metadata": {"name": "t"}, "template": template()});
        assert_eq!(
            (POD_TEMPLATE.cells)(&pod_template, now),
            [json!("t"), json!("web"), json!("nginx:1"), json!("app=web")]
        );
        let revision = json!({"metadata": {"name": "db-1", "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "other"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": true}]},
            "revision": 4});
        assert_eq!(
            (CONTROLLER_REVISION.cells)(&revision, now),
            [
                json!("db-1"),
                json!("statefulset.apps/db"),
                json!(4),
                json!("<unknown>")
            ]
        );
        assert_eq!(controller_of(&json!({})), "<none>");
    }
}
