//! Pods: how many containers are ready, and one word for the state of the pod, derived from its
//! phase, its init containers and its containers as kubectl users know it (`Init:0/1`,
//! `CrashLoopBackOff`, `Completed`, `Terminating` ...).

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields, wide};
use crate::table::duration;

const SPEC: &str = "io.k8s.api.core.v1.PodSpec";
const STATUS: &str = "io.k8s.api.core.v1.PodStatus";

pub static POD: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Ready",
            Doc::Text("The aggregate readiness state of this pod for accepting traffic."),
        ),
        column(
            "Status",
            Doc::Text("The aggregate status of the containers in this pod."),
        ),
        column(
            "Restarts",
            Doc::Text(
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
        ),
        AGE,
        wide("IP", Doc::Field(STATUS, "podIP")),
        wide("Node", Doc::Field(SPEC, "nodeName")),
        wide("Nominated Node", Doc::Field(STATUS, "nominatedNodeName")),
        wide("Readiness Gates", Doc::Field(SPEC, "readinessGates")),
    ],
    cells: pod,
};

/// A sidecar: an init container that keeps running beside the main ones.
fn restartable(pod: &Value, name: &str) -> bool {
    fields::items(pod, "/spec/initContainers")
        .iter()
        .any(|c| fields::text(c, "/name") == name && fields::text(c, "/restartPolicy") == "Always")
}

fn condition_true(pod: &Value, kind: &str) -> bool {
    fields::items(pod, "/status/conditions")
        .iter()
        .any(|c| fields::text(c, "/type") == kind && fields::text(c, "/status") == "True")
}

/// The latest `finishedAt` of the containers' last terminations.
fn last_termination(statuses: &[&Value]) -> Option<jiff::Timestamp> {
    statuses
        .iter()
        .filter_map(|s| duration::timestamp(s.pointer("/lastState/terminated/finishedAt")))
        .max()
}

fn terminated_reason(prefix: &str, terminated: &Value) -> String {
    let reason = fields::text(terminated, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    match fields::int(terminated, "/signal") {
        0 => format!("{prefix}ExitCode:{}", fields::int(terminated, "/exitCode")),
        signal => format!("{prefix}Signal:{signal}"),
    }
}

struct Summary {
    reason: String,
    ready: usize,
    restarts: i64,
    last_restart: Option<jiff::Timestamp>,
}

fn summarise(pod: &Value) -> Summary {
    let phase = fields::text(pod, "/status/phase");
    let mut reason = Some(fields::text(pod, "/status/reason"))
        .filter(|r| !r.is_empty())
        .unwrap_or(phase)
        .to_owned();
    let gated = fields::items(pod, "/status/conditions").iter().any(|c| {
        fields::text(c, "/type") == "PodScheduled" && fields::text(c, "/reason") == "SchedulingGated"
    });
    if gated {
        reason = "SchedulingGated".into();
    }
    let init_statuses = fields::items(pod, "/status/initContainerStatuses");
    let init_count = fields::items(pod, "/spec/initContainers").len();
    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart = None;
    let mut initializing = false;
    for (index, status) in init_statuses.iter().enumerate() {
        // Counted up to the init container the pod waits for.
        restarts += fields::int(status, "/restartCount");
        last_restart = last_restart.max(last_termination(&[status]));
        let sidecar = restartable(pod, fields::text(status, "/name"));
        let terminated = status.pointer("/state/terminated");
        let waiting_reason = fields::text(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| fields::int(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(terminated) => terminated_reason("Init:", terminated),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                format!("Init:{waiting_reason}")
            }
            None => format!("Init:{index}/{init_count}"),
        };
        initializing = true;
        break;
    }
    if !initializing || condition_true(pod, "Initialized") {
        let sidecars: Vec<&Value> = init_statuses
            .iter()
            .filter(|s| restartable(pod, fields::text(s, "/name")))
            .collect();
        let statuses = fields::items(pod, "/status/containerStatuses");
        restarts = sidecars
            .iter()
            .map(|s| fields::int(s, "/restartCount"))
            .sum::<i64>()
            + statuses
                .iter()
                .map(|s| fields::int(s, "/restartCount"))
                .sum::<i64>();
        let mut counted: Vec<&Value> = sidecars;
        counted.extend(statuses.iter());
        last_restart = last_termination(&counted);
        let mut running = false;
        for status in statuses.iter().rev() {
            let waiting = fields::text(status, "/state/waiting/reason");
            if !waiting.is_empty() {
                reason = waiting.to_owned();
            } else if let Some(terminated) = status.pointer("/state/terminated") {
                reason = terminated_reason("", terminated);
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && status.pointer("/state/running").is_some()
            {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            reason = if condition_true(pod, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .into();
        }
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        if fields::text(pod, "/status/reason") == "NodeLost" {
            reason = "Unknown".into();
        } else if !matches!(phase, "Succeeded" | "Failed") {
            reason = "Terminating".into();
        }
    }
    Summary {
        reason,
        ready,
        restarts,
        last_restart,
    }
}

fn pod(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let summary = summarise(o);
    let sidecars = fields::items(o, "/spec/initContainers")
        .iter()
        .filter(|c| fields::text(c, "/restartPolicy") == "Always")
        .count();
    let total = fields::items(o, "/spec/containers").len() + sidecars;
    let restarts = match summary.last_restart {
        Some(at) if summary.restarts != 0 => format!(
            "{} ({} ago)",
            summary.restarts,
            duration::human_duration(now.as_second() - at.as_second())
        ),
        _ => summary.restarts.to_string(),
    };
    let or_none = |text: &str| {
        if text.is_empty() {
            "<none>".to_owned()
        } else {
            text.to_owned()
        }
    };
    let gates = fields::items(o, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let conditions = fields::items(o, "/status/conditions");
        let met = gates
            .iter()
            .filter(|gate| {
                let wanted = fields::text(gate, "/conditionType");
                conditions
                    .iter()
                    .find(|c| fields::text(c, "/type") == wanted)
                    .is_some_and(|c| fields::text(c, "/status") == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    let ip = fields::items(o, "/status/podIPs")
        .first()
        .map(|ip| fields::text(ip, "/ip"))
        .unwrap_or_default();
    vec![
        fields::name(o),
        json!(format!("{}/{total}", summary.ready)),
        json!(summary.reason),
        json!(restarts),
        fields::age(o, now),
        json!(or_none(ip)),
        json!(or_none(fields::text(o, "/spec/nodeName"))),
        json!(or_none(fields::text(o, "/status/nominatedNodeName"))),
        json!(readiness_gates),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(pod: Value) -> Vec<Value> {
        (POD.cells)(&pod, "2026-11-22T10:10:00Z".parse().unwrap())
    }

    #[test]
    fn t1_a_pending_pod_without_status_is_pending_and_not_ready() {
        let pending = json!({"metadata": {"name": "p", "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {"phase": "Pending"}});
        assert_eq!(
            cells(pending),
            [
                json!("p"),
                json!("0/2"),
                json!("Pending"),
                json!("0"),
                json!("10m"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn t1_container_states_and_restarts_name_the_pod_status() {
        let crashing = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.4"}],
                "containerStatuses": [{"name": "a", "restartCount": 3, "ready": false,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-22T10:05:00Z"}}}]}});
        let row = cells(crashing);
        assert_eq!(
            row[1..4],
            [json!("0/1"), json!("CrashLoopBackOff"), json!("3 (5m ago)")]
        );
        assert_eq!(row[5..7], [json!("10.1.0.4"), json!("n1")]);

        let initializing = json!({"metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "state": {"running": {}}}]}});
        assert_eq!(cells(initializing)[2], json!("Init:1/2"));

        let deleting = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-11-22T10:09:00Z"},
            "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}});
        assert_eq!(cells(deleting)[1..3], [json!("1/1"), json!("Terminating")]);

        let gated = json!({"spec": {"containers": [{"name": "a"}], "readinessGates": [{"conditionType": "x"}]},
            "status": {"phase": "Pending", "conditions": [{"type": "x", "status": "True"}]}});
        assert_eq!(cells(gated)[8], json!("1/1"));
    }
}
