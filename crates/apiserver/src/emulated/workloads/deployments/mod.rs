//! The Deployment controller: one ReplicaSet per pod template, named after the Deployment and the
//! template's hash, the newest scaled up and the older ones down as the strategy allows
//! ([`rollout`]), the revision annotations that number the templates, old ReplicaSets beyond
//! `revisionHistoryLimit` deleted, and the status counted from the ReplicaSets ([`status`]). Each
//! scaling is recorded as a `ScalingReplicaSet` Event, as kube-controller-manager records it.

mod rollout;
mod status;

use apimachinery::meta;
use serde_json::{Map, Value, json};

use super::{
    events::{self, Source},
    objects::{self, Component, Kind, int_at},
    templates,
};
use crate::store::{State, Store};

const KIND: (&str, &str) = ("apps/v1", "Deployment");

pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub(crate) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub(crate) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Annotations of a Deployment its ReplicaSets do not copy: the controller's own, and kubectl's
/// record of the last applied manifest.
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// How long the revision history annotation may grow, in characters.
const REVISION_HISTORY_LENGTH: usize = 2000;

/// One pass of the controller over Deployment `namespace`/`name`. A pass that writes something is
/// followed by another (the write queues the Deployment again), so each pass may stop at its first
/// change, as the controller's own syncs return after one.
pub(crate) fn sync(store: &Store, state: &mut State, namespace: &str, name: &str) {
    let Some(deployment) = objects::get(store, state, Kind::Deployment, namespace, name) else {
        return;
    };
    let replica_sets = objects::controlled_by(state, Kind::ReplicaSet, meta::uid(&deployment));
    let mut pass = Pass {
        store,
        state,
        deployment,
    };
    if meta::is_deleting(&pass.deployment) {
        pass.sync_status_only(replica_sets);
        return;
    }
    if pass.check_paused_conditions() {
        return;
    }
    if pass.is_paused() || pass.is_scaling_event(&replica_sets) {
        pass.sync_scale(replica_sets);
        return;
    }
    if pass
        .deployment
        .pointer("/spec/strategy/type")
        .and_then(Value::as_str)
        == Some("Recreate")
    {
        pass.rollout_recreate(replica_sets);
    } else {
        pass.rollout_rolling(replica_sets);
    }
}

/// A pass over one Deployment: the stores and the Deployment as last written.
struct Pass<'a> {
    store: &'a Store,
    state: &'a mut State,
    deployment: Value,
}

/// The new ReplicaSet (the one of the current template), if any, and the others.
struct Split {
    new: Option<Value>,
    old: Vec<Value>,
}

impl Split {
    fn all(&self) -> Vec<Value> {
        self.old.iter().cloned().chain(self.new.clone()).collect()
    }
}

pub(crate) fn replicas(object: &Value) -> i64 {
    int_at(object, "/spec/replicas", 1)
}

fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

fn revision(replica_set: &Value) -> i64 {
    annotation(replica_set, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn annotations_mut(object: &mut Value) -> &mut Map<String, Value> {
    let metadata = meta::metadata_mut(object);
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    // Made an object just above.
    annotations.as_object_mut().expect("annotations are an object")
}

impl Pass<'_> {
    fn replicas(&self) -> i64 {
        replicas(&self.deployment)
    }

    fn is_paused(&self) -> bool {
        self.deployment.pointer("/spec/paused") == Some(&Value::Bool(true))
    }

    fn is_rolling(&self) -> bool {
        self.deployment
            .pointer("/spec/strategy/type")
            .and_then(Value::as_str)
            != Some("Recreate")
    }

    /// The surge a rolling update allows (none for Recreate).
    fn max_surge(&self) -> i64 {
        if !self.is_rolling() {
            return 0;
        }
        templates::fenceposts(&self.deployment, self.replicas()).0
    }

    /// How many replicas may be unavailable (none for Recreate or no replicas), at most all of them.
    fn max_unavailable(&self) -> i64 {
        if !self.is_rolling() || self.replicas() == 0 {
            return 0;
        }
        templates::fenceposts(&self.deployment, self.replicas())
            .1
            .min(self.replicas())
    }

    fn has_progress_deadline(&self) -> bool {
        self.deployment
            .pointer("/spec/progressDeadlineSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|s| s != i64::from(i32::MAX))
    }

    fn event(&mut self, reason: &str, message: String) {
        let deployment = self.deployment.clone();
        events::normal(
            self.store,
            self.state,
            Source::DeploymentController,
            KIND,
            &deployment,
            reason,
            message,
        );
    }

    /// Writes the Deployment's status (and annotations, which a status update may change too).
    fn write_status(&mut self, next: Value) -> bool {
        if next == self.deployment {
            return false;
        }
        let written = objects::update(
            self.store,
            self.state,
            Kind::Deployment,
            &self.deployment,
            next,
            Component::ControllerManager,
            true,
        );
        if let Some(written) = written {
            self.deployment = written;
        }
        true
    }

    fn write_replica_set(&mut self, old: &Value, next: Value) -> Option<Value> {
        objects::update(
            self.store,
            self.state,
            Kind::ReplicaSet,
            old,
            next,
            Component::ControllerManager,
            false,
        )
    }

    /// The new ReplicaSet and the old ones, the new one's annotations kept in step with the
    /// Deployment (and the Deployment's revision with it); with `create`, the new one is made when
    /// missing. `None` when a write was made that calls for another pass.
    fn split_and_sync_revision(&mut self, replica_sets: Vec<Value>, create: bool) -> Option<Split> {
        let template = self
            .deployment
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_default();
        let position = replica_sets.iter().position(|rs| {
            rs.pointer("/spec/template")
                .is_some_and(|t| templates::equal_ignoring_hash(t, &template))
        });
        let mut old = replica_sets;
        let existing = position.map(|i| old.remove(i));
        let new_revision = old.iter().map(revision).max().unwrap_or(0) + 1;
        if let Some(existing) = existing {
            let mut next = existing.clone();
            let annotated = self.set_new_annotations(&mut next, new_revision, true);
            let min_ready = self.deployment.pointer("/spec/minReadySeconds").cloned();
            if annotated || next.pointer("/spec/minReadySeconds") != min_ready.as_ref() {
                set_or_remove(&mut next, "minReadySeconds", min_ready);
                self.write_replica_set(&existing, next);
                return None;
            }
            let mut deployment = self.deployment.clone();
            let revision = annotation(&existing, REVISION).unwrap_or_default().to_owned();
            if annotation(&deployment, REVISION) != Some(revision.as_str()) {
                annotations_mut(&mut deployment).insert(REVISION.into(), json!(revision));
            }
            if self.has_progress_deadline() && status::condition(&deployment, "Progressing").is_none() {
                let message = format!("Found new replica set {:?}", meta::name(&existing));
                status::set_condition(
                    &mut deployment,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    &message,
                );
            }
            self.write_status(deployment);
            return Some(Split {
                new: Some(existing),
                old,
            });
        }
        if !create {
            return Some(Split { new: None, old });
        }
        // Made, the pass goes on with it (its status still empty), as the controller's sync does.
        let new = self.create_new_replica_set(&old, &template, new_revision)?;
        Some(Split { new: Some(new), old })
    }

    /// Makes the new ReplicaSet and notes it in the Deployment's status; the ReplicaSet made, if any.
    fn create_new_replica_set(
        &mut self,
        old: &[Value],
        template: &Value,
        new_revision: i64,
    ) -> Option<Value> {
        let collisions = int_at(&self.deployment, "/status/collisionCount", 0);
        let hash = templates::pod_template_hash(template, collisions);
        let mut rs_template = template.clone();
        rs_template["metadata"]["labels"] = templates::with_hash(template.pointer("/metadata/labels"), &hash);
        let mut selector = self
            .deployment
            .pointer("/spec/selector")
            .cloned()
            .unwrap_or_else(|| json!({}));
        selector["matchLabels"] = templates::with_hash(selector.get("matchLabels"), &hash);
        let name = format!("{}-{hash}", meta::name(&self.deployment));
        let mut replica_set = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": name, "namespace": meta::namespace(&self.deployment),
                "labels": rs_template["metadata"]["labels"].clone(),
                "ownerReferences": [templates::controller_reference("apps/v1", "Deployment", &self.deployment)],
            },
            "spec": {"replicas": 0, "selector": selector, "template": rs_template},
        });
        if let Some(min_ready) = self.deployment.pointer("/spec/minReadySeconds") {
            replica_set["spec"]["minReadySeconds"] = min_ready.clone();
        }
        let count = self.new_replica_set_replicas(old, &replica_set);
        replica_set["spec"]["replicas"] = json!(count);
        self.set_new_annotations(&mut replica_set, new_revision, false);
        let namespace = meta::namespace(&self.deployment).to_owned();
        let created = objects::create(
            self.store,
            self.state,
            Kind::ReplicaSet,
            &namespace,
            replica_set,
            Component::ControllerManager,
        );
        let mut deployment = self.deployment.clone();
        let made = created.as_ref().ok().cloned();
        match created {
            Ok(created) => {
                if count > 0 {
                    let message = format!("Scaled up replica set {} from 0 to {count}", meta::name(&created));
                    self.event("ScalingReplicaSet", message);
                }
                annotations_mut(&mut deployment).insert(REVISION.into(), json!(new_revision.to_string()));
                if self.has_progress_deadline() {
                    let message = format!("Created new replica set {:?}", meta::name(&created));
                    status::set_condition(
                        &mut deployment,
                        "Progressing",
                        "True",
                        "NewReplicaSetCreated",
                        &message,
                    );
                }
            }
            Err(_) if objects::get(self.store, self.state, Kind::ReplicaSet, &namespace, &name).is_some() => {
                // The name is taken by a ReplicaSet of another template: a hash collision, which the
                // next hash (with the count bumped) resolves.
                deployment["status"]["collisionCount"] = json!(collisions + 1);
            }
            Err(error) => {
                let message = format!("Failed to create new replica set {name:?}: {error}");
                if self.has_progress_deadline() {
                    status::set_condition(
                        &mut deployment,
                        "Progressing",
                        "False",
                        "ReplicaSetCreateError",
                        &message,
                    );
                }
                let deployment = self.deployment.clone();
                events::warning(
                    self.store,
                    self.state,
                    Source::DeploymentController,
                    KIND,
                    &deployment,
                    "ReplicaSetCreateError",
                    message,
                );
            }
        }
        self.write_status(deployment);
        made
    }

    /// The new ReplicaSet's annotations: the Deployment's (those copied), the revision (an older one
    /// moves to the history: a rollback to this template), and on creation the replica counts.
    fn set_new_annotations(&self, replica_set: &mut Value, new_revision: i64, exists: bool) -> bool {
        let mut changed = false;
        let copied: Vec<(String, Value)> = self
            .deployment
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(key, _)| !NOT_COPIED.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let old_revision = annotation(replica_set, REVISION).map(str::to_owned);
        let annotations = annotations_mut(replica_set);
        for (key, value) in copied {
            if annotations.get(&key) != Some(&value) {
                annotations.insert(key, value);
                changed = true;
            }
        }
        let old_number = old_revision
            .as_deref()
            .and_then(|r| r.parse::<i64>().ok())
            .unwrap_or(0);
        if old_number < new_revision {
            annotations.insert(REVISION.into(), json!(new_revision.to_string()));
            changed = true;
            if let Some(old_revision) = old_revision {
                let history = annotations
                    .get(REVISION_HISTORY)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut revisions: Vec<&str> = history.split(',').filter(|r| !r.is_empty()).collect();
                revisions.push(&old_revision);
                while revisions.join(",").len() > REVISION_HISTORY_LENGTH && revisions.len() > 1 {
                    revisions.remove(0);
                }
                annotations.insert(REVISION_HISTORY.into(), json!(revisions.join(",")));
            }
        }
        if !exists {
            let surge = self.max_surge();
            changed |= set_replicas_annotations(replica_set, self.replicas(), self.replicas() + surge);
        }
        changed
    }

    /// How many replicas a new ReplicaSet starts with: all for Recreate; for a rolling update, what
    /// the surge leaves room for.
    fn new_replica_set_replicas(&self, old: &[Value], new: &Value) -> i64 {
        if !self.is_rolling() {
            return self.replicas();
        }
        let current: i64 = old.iter().chain(std::iter::once(new)).map(replicas).sum();
        let max_total = self.replicas() + self.max_surge();
        if current >= max_total {
            return replicas(new);
        }
        let up = (max_total - current).min(self.replicas() - replicas(new));
        replicas(new) + up
    }

    /// A ReplicaSet scaled to `count`, its replica annotations kept current, with a
    /// `ScalingReplicaSet` Event when its size changed. Returns whether it changed size.
    fn scale(&mut self, replica_set: &Value, count: i64) -> bool {
        let resized = replicas(replica_set) != count;
        let mut next = replica_set.clone();
        let annotated =
            set_replicas_annotations(&mut next, self.replicas(), self.replicas() + self.max_surge());
        if !resized && !annotated {
            return false;
        }
        next["spec"]["replicas"] = json!(count);
        if self.write_replica_set(replica_set, next).is_some() && resized {
            let direction = if replicas(replica_set) < count {
                "up"
            } else {
                "down"
            };
            let message = format!(
                "Scaled {direction} replica set {} from {} to {count}",
                meta::name(replica_set),
                replicas(replica_set)
            );
            self.event("ScalingReplicaSet", message);
        }
        resized
    }

    /// Marks the Progressing condition when the Deployment is paused or resumed. Returns whether it
    /// wrote (another pass follows).
    fn check_paused_conditions(&mut self) -> bool {
        if !self.has_progress_deadline() {
            return false;
        }
        let reason = status::condition(&self.deployment, "Progressing")
            .and_then(|c| c.get("reason")?.as_str().map(str::to_owned));
        if reason.as_deref() == Some("ProgressDeadlineExceeded") {
            return false;
        }
        let paused_noted = reason.as_deref() == Some("DeploymentPaused");
        let mut next = self.deployment.clone();
        match (self.is_paused(), paused_noted) {
            (true, false) => status::set_condition(
                &mut next,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
            ),
            (false, true) => status::set_condition(
                &mut next,
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
            ),
            _ => return false,
        }
        self.write_status(next)
    }

    /// Whether the replica count changed since the active ReplicaSets were last sized for it.
    fn is_scaling_event(&mut self, replica_sets: &[Value]) -> bool {
        let wanted = self.replicas().to_string();
        replica_sets
            .iter()
            .filter(|rs| replicas(rs) > 0)
            .filter_map(|rs| annotation(rs, DESIRED_REPLICAS))
            .any(|desired| desired != wanted)
    }
}

/// Sets the desired and max replica annotations; returns whether they changed.
fn set_replicas_annotations(replica_set: &mut Value, desired: i64, max: i64) -> bool {
    let annotations = annotations_mut(replica_set);
    let mut changed = false;
    for (key, value) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let value = json!(value.to_string());
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.into(), value);
            changed = true;
        }
    }
    changed
}

fn set_or_remove(replica_set: &mut Value, field: &str, value: Option<Value>) {
    if let Some(spec) = replica_set.get_mut("spec").and_then(Value::as_object_mut) {
        match value {
            Some(value) => spec.insert(field.into(), value),
            None => spec.remove(field),
        };
    }
}
