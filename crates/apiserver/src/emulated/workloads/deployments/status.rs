//! A Deployment's status, counted from its ReplicaSets, and its conditions: Available (enough replicas
//! available, given `maxUnavailable`) and Progressing (a new ReplicaSet made or found, progress made,
//! the rollout complete, or no progress within `progressDeadlineSeconds`), with upstream's reasons
//! and messages.

use apimachinery::meta;
use serde_json::{Map, Value, json};

use super::{Pass, Split, replicas};
use crate::emulated::workloads::objects::{Kind, int_at};

pub(super) fn condition<'v>(deployment: &'v Value, kind: &str) -> Option<&'v Value> {
    deployment
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Sets a condition as the controller does: one of the same status and reason is left as it is; one
/// of the same status keeps its transition time; the new one goes last.
pub(super) fn set_condition(deployment: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    let now = meta::now_rfc3339();
    let current = condition(deployment, kind).cloned();
    if let Some(current) = &current
        && current["status"] == status
        && current["reason"] == reason
    {
        return;
    }
    let transition = match &current {
        Some(current) if current["status"] == status => current["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    push_condition(
        deployment,
        json!({"type": kind, "status": status, "lastUpdateTime": now, "lastTransitionTime": transition,
            "reason": reason, "message": message}),
    );
}

/// Replaces the condition of the same type by `condition`, placed last.
fn push_condition(deployment: &mut Value, condition: Value) {
    let status = deployment
        .as_object_mut()
        .map(|d| d.entry("status").or_insert_with(|| json!({})));
    let Some(status) = status.and_then(Value::as_object_mut) else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if let Some(conditions) = conditions.as_array_mut() {
        conditions.retain(|c| c["type"] != condition["type"]);
        conditions.push(condition);
    }
}

fn remove_condition(deployment: &mut Value, kind: &str) {
    if let Some(conditions) = deployment
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        conditions.retain(|c| c["type"] != kind);
    }
}

fn count(replica_sets: &[Value], pointer: &str) -> i64 {
    replica_sets.iter().map(|rs| int_at(rs, pointer, 0)).sum()
}

impl Pass<'_> {
    /// The Deployment with the status its ReplicaSets make: counts, observed generation, and the
    /// Available condition.
    fn calculated(&self, all: &[Value], new: Option<&Value>) -> Value {
        let available = count(all, "/status/availableReplicas");
        let total: i64 = all.iter().map(replicas).sum();
        let mut deployment = self.deployment.clone();
        let mut status = Map::new();
        status.insert("observedGeneration".into(), json!(meta::generation(&deployment)));
        for (field, value) in [
            ("replicas", count(all, "/status/replicas")),
            (
                "updatedReplicas",
                new.map_or(0, |n| int_at(n, "/status/replicas", 0)),
            ),
            ("readyReplicas", count(all, "/status/readyReplicas")),
            ("availableReplicas", available),
            ("unavailableReplicas", (total - available).max(0)),
        ] {
            // Zero counts are left out, as Go's `omitempty` drops them.
            if value != 0 {
                status.insert(field.into(), json!(value));
            }
        }
        for kept in ["collisionCount", "conditions"] {
            if let Some(value) = deployment.pointer(&format!("/status/{kept}")) {
                status.insert(kept.into(), value.clone());
            }
        }
        deployment["status"] = Value::Object(status);
        if available >= self.replicas() - self.max_unavailable() {
            set_condition(
                &mut deployment,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            );
        } else {
            set_condition(
                &mut deployment,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            );
        }
        deployment
    }

    /// The status alone, as after scaling or while paused or deleted.
    pub(super) fn sync_status(&mut self, split: &Split) {
        let next = self.calculated(&split.all(), split.new.as_ref());
        self.write_status(next);
    }

    /// The status with the Progressing condition of a rollout.
    pub(super) fn sync_rollout_status(&mut self, split: &Split) {
        let mut next = self.calculated(&split.all(), split.new.as_ref());
        let new_name = split.new.as_ref().map(|n| meta::name(n).to_owned());
        let named = |text: &str, fallback: &str| match &new_name {
            Some(name) => format!("ReplicaSet {name:?} {text}"),
            None => fallback.to_owned(),
        };
        if !self.has_progress_deadline() {
            remove_condition(&mut next, "Progressing");
        } else {
            let current = condition(&self.deployment, "Progressing").cloned();
            let complete_noted = current
                .as_ref()
                .is_some_and(|c| c["reason"] == "NewReplicaSetAvailable");
            let status_of = |field: &str| int_at(&next, &format!("/status/{field}"), 0);
            let already_complete = status_of("replicas") == status_of("updatedReplicas") && complete_noted;
            if !already_complete {
                if self.is_complete(&next) {
                    let message = named(
                        "has successfully progressed.",
                        "Deployment has successfully progressed.",
                    );
                    set_condition(
                        &mut next,
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &message,
                    );
                } else if self.made_progress(&next) {
                    let message = named("is progressing.", "Deployment is progressing.");
                    let now = meta::now_rfc3339();
                    let transition = match &current {
                        Some(c) if c["status"] == "True" => c["lastTransitionTime"].clone(),
                        _ => json!(now),
                    };
                    push_condition(
                        &mut next,
                        json!({"type": "Progressing", "status": "True", "lastUpdateTime": now,
                            "lastTransitionTime": transition, "reason": "ReplicaSetUpdated", "message": message}),
                    );
                } else if self.timed_out(current.as_ref()) {
                    let message = named(
                        "has timed out progressing.",
                        "Deployment has timed out progressing.",
                    );
                    set_condition(
                        &mut next,
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        &message,
                    );
                }
            }
            self.watch_deadline(&next);
        }
        self.write_status(next);
    }

    /// Every replica updated and available, and the spec observed.
    fn is_complete(&self, next: &Value) -> bool {
        let status_of = |field: &str| int_at(next, &format!("/status/{field}"), 0);
        let wanted = self.replicas();
        status_of("updatedReplicas") == wanted
            && status_of("replicas") == wanted
            && status_of("availableReplicas") == wanted
            && status_of("observedGeneration") >= meta::generation(&self.deployment)
    }

    /// More replicas updated, fewer old ones, or more ready or available than the last status said.
    fn made_progress(&self, next: &Value) -> bool {
        let before = |field: &str| int_at(&self.deployment, &format!("/status/{field}"), 0);
        let after = |field: &str| int_at(next, &format!("/status/{field}"), 0);
        after("updatedReplicas") > before("updatedReplicas")
            || after("replicas") - after("updatedReplicas") < before("replicas") - before("updatedReplicas")
            || after("readyReplicas") > before("readyReplicas")
            || after("availableReplicas") > before("availableReplicas")
    }

    fn deadline(&self, progressing: Option<&Value>) -> Option<i64> {
        let seconds = int_at(&self.deployment, "/spec/progressDeadlineSeconds", 600);
        let since = progressing?.get("lastUpdateTime")?.as_str()?;
        Some(since.parse::<jiff::Timestamp>().ok()?.as_second() + seconds)
    }

    fn timed_out(&self, progressing: Option<&Value>) -> bool {
        let Some(current) = progressing else {
            return false;
        };
        match current["reason"].as_str() {
            Some("NewReplicaSetAvailable") => false,
            Some("ProgressDeadlineExceeded") => true,
            _ => self
                .deadline(Some(current))
                .is_some_and(|at| at < jiff::Timestamp::now().as_second()),
        }
    }

    /// A rollout still progressing is looked at again when its deadline passes.
    fn watch_deadline(&mut self, next: &Value) {
        let progressing = condition(next, "Progressing");
        let open =
            progressing.is_some_and(|c| c["status"] == "True" && c["reason"] != "NewReplicaSetAvailable");
        if open && let Some(at) = self.deadline(progressing) {
            let (namespace, name) = (
                meta::namespace(&self.deployment).to_owned(),
                meta::name(&self.deployment).to_owned(),
            );
            self.state
                .extensions
                .get::<crate::emulated::workloads::queue::Queue>()
                .after(at + 1, Kind::Deployment, &namespace, &name);
        }
    }
}
