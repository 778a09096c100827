//! How a Deployment moves from its old ReplicaSets to the new one: a rolling update within
//! `maxSurge` and `maxUnavailable`, Recreate (every old Pod gone before the new ones), proportional
//! scaling of every active ReplicaSet when the replica count changes mid-rollout or while paused, and
//! the clean-up of old ReplicaSets beyond `revisionHistoryLimit`.

use apimachinery::meta;
use serde_json::Value;

use super::{MAX_REPLICAS, Pass, Split, annotation, replicas, revision};
use crate::emulated::workloads::{
    objects::{self, Kind, int_at},
    readiness,
};

fn available(replica_set: &Value) -> i64 {
    int_at(replica_set, "/status/availableReplicas", 0)
}

fn active(replica_sets: &[Value]) -> Vec<Value> {
    replica_sets
        .iter()
        .filter(|rs| replicas(rs) > 0)
        .cloned()
        .collect()
}

impl Pass<'_> {
    pub(super) fn rollout_rolling(&mut self, replica_sets: Vec<Value>) {
        let Some(split) = self.split_and_sync_revision(replica_sets, true) else {
            return;
        };
        let Some(new) = split.new.clone() else {
            return;
        };
        if self.reconcile_new(&split, &new) || self.reconcile_old(&split, &new) {
            // A scaling was written; the next pass (the write queued one) counts it.
            return;
        }
        if self.is_complete_now(&split) {
            self.clean_up(&split.old);
        }
        self.sync_rollout_status(&split);
    }

    pub(super) fn rollout_recreate(&mut self, replica_sets: Vec<Value>) {
        let Some(split) = self.split_and_sync_revision(replica_sets, false) else {
            return;
        };
        let mut scaled_down = false;
        for old in active(&split.old) {
            scaled_down |= self.scale(&old, 0);
        }
        if scaled_down {
            return;
        }
        // Recreate waits until no Pod of an old ReplicaSet is left running.
        let old_pods_running = split.old.iter().any(|rs| {
            objects::controlled_by(self.state, Kind::Pod, meta::uid(rs))
                .iter()
                .any(|pod| !matches!(readiness::phase(pod), "Succeeded" | "Failed"))
        });
        if old_pods_running {
            self.sync_rollout_status(&split);
            return;
        }
        let split = match split.new {
            Some(_) => split,
            None => match self.split_and_sync_revision(split.all(), true) {
                Some(made) => made,
                None => return,
            },
        };
        let Some(new) = split.new.clone() else {
            return;
        };
        if self.scale(&new, self.replicas()) {
            return;
        }
        if self.is_complete_now(&split) {
            self.clean_up(&split.old);
        }
        self.sync_rollout_status(&split);
    }

    /// Scaling without a rollout: a changed replica count spread over the active ReplicaSets, or a
    /// paused Deployment kept at its size.
    pub(super) fn sync_scale(&mut self, replica_sets: Vec<Value>) {
        let Some(split) = self.split_and_sync_revision(replica_sets, false) else {
            return;
        };
        if self.scale_proportionally(&split) {
            return;
        }
        if self.is_paused() {
            self.clean_up(&split.old);
        }
        self.sync_status(&split);
    }

    pub(super) fn sync_status_only(&mut self, replica_sets: Vec<Value>) {
        if let Some(split) = self.split_and_sync_revision(replica_sets, false) {
            self.sync_status(&split);
        }
    }

    fn is_complete_now(&self, split: &Split) -> bool {
        let wanted = self.replicas();
        let all = split.all();
        let sum = |pointer: &str| all.iter().map(|rs| int_at(rs, pointer, 0)).sum::<i64>();
        let updated = split.new.as_ref().map_or(0, |n| int_at(n, "/status/replicas", 0));
        updated == wanted && sum("/status/replicas") == wanted && sum("/status/availableReplicas") == wanted
    }

    /// Scales the new ReplicaSet toward the replica count, as far as the surge allows.
    fn reconcile_new(&mut self, split: &Split, new: &Value) -> bool {
        let wanted = self.replicas();
        if replicas(new) == wanted {
            return false;
        }
        if replicas(new) > wanted {
            return self.scale(new, wanted);
        }
        let count = self.new_replica_set_replicas(&split.old, new);
        self.scale(new, count)
    }

    /// Scales old ReplicaSets down as far as availability allows: their unhealthy replicas first,
    /// then the oldest ReplicaSets' replicas beyond the minimum available.
    fn reconcile_old(&mut self, split: &Split, new: &Value) -> bool {
        let old: Vec<Value> = active(&split.old);
        let old_count: i64 = old.iter().map(replicas).sum();
        if old_count == 0 {
            return false;
        }
        let all_count: i64 = split.all().iter().map(replicas).sum();
        let min_available = self.replicas() - self.max_unavailable();
        let new_unavailable = replicas(new) - available(new);
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        // Unhealthy replicas of old ReplicaSets, oldest first, go first: they serve nothing.
        let mut cleaned = 0;
        for rs in &old {
            if cleaned >= max_scaled_down {
                break;
            }
            let unhealthy = replicas(rs) - available(rs);
            if unhealthy <= 0 {
                continue;
            }
            let down = unhealthy.min(max_scaled_down - cleaned);
            self.scale(rs, replicas(rs) - down);
            cleaned += down;
        }
        if cleaned > 0 {
            return true;
        }
        // Then as many available replicas as stay above the minimum.
        let all_available: i64 = split.all().iter().map(available).sum();
        if all_available <= min_available {
            return false;
        }
        let total = all_available - min_available;
        let mut scaled = 0;
        for rs in &old {
            if scaled >= total {
                break;
            }
            let down = replicas(rs).min(total - scaled);
            self.scale(rs, replicas(rs) - down);
            scaled += down;
        }
        scaled > 0
    }

    /// A changed replica count: one active ReplicaSet (or none: the newest) takes it all; a saturated
    /// new ReplicaSet lets the old ones go; otherwise each active ReplicaSet gets its share of the
    /// change, the biggest the rounding leftover. Returns whether it wrote.
    fn scale_proportionally(&mut self, split: &Split) -> bool {
        let wanted = self.replicas();
        if let Some(only) = self.active_or_latest(split) {
            return replicas(&only) != wanted && self.scale(&only, wanted);
        }
        if let Some(new) = &split.new
            && annotation(new, super::DESIRED_REPLICAS) == Some(wanted.to_string().as_str())
            && replicas(new) == wanted
            && available(new) == wanted
        {
            let mut wrote = false;
            for old in active(&split.old) {
                wrote |= self.scale(&old, 0);
            }
            return wrote;
        }
        if !self.is_rolling() {
            return false;
        }
        let mut all = active(&split.all());
        let current: i64 = all.iter().map(replicas).sum();
        let allowed = if wanted > 0 { wanted + self.max_surge() } else { 0 };
        let to_add = allowed - current;
        if to_add == 0 {
            return false;
        }
        // Bigger first; among equals the newer when growing, the older when shrinking.
        all.sort_by(|a, b| {
            let created = |rs: &Value| {
                meta::str_at(rs, "/metadata/creationTimestamp")
                    .unwrap_or_default()
                    .to_owned()
            };
            let ties = if to_add > 0 {
                created(b).cmp(&created(a))
            } else {
                created(a).cmp(&created(b))
            };
            replicas(b).cmp(&replicas(a)).then(ties)
        });
        let mut added = 0;
        let mut sizes: Vec<i64> = Vec::with_capacity(all.len());
        for rs in &all {
            let share = self.proportion(rs, to_add, added);
            sizes.push(replicas(rs) + share);
            added += share;
        }
        if let Some(first) = sizes.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
        let mut wrote = false;
        for (rs, size) in all.iter().zip(sizes) {
            wrote |= self.scale(rs, size);
        }
        wrote
    }

    fn active_or_latest(&self, split: &Split) -> Option<Value> {
        let all = active(&split.all());
        match all.len() {
            0 => split.new.clone().or_else(|| split.old.last().cloned()),
            1 => all.into_iter().next(),
            _ => None,
        }
    }

    /// A ReplicaSet's share of `to_add` replicas (of which `added` are placed), by its size against
    /// the Deployment size it was last scaled for.
    fn proportion(&self, rs: &Value, to_add: i64, added: i64) -> i64 {
        if replicas(rs) == 0 || to_add == 0 || to_add == added {
            return 0;
        }
        let fraction = if self.replicas() == 0 {
            -replicas(rs)
        } else {
            let target = (self.replicas() + self.max_surge()) as f64;
            let annotated = annotation(rs, MAX_REPLICAS)
                .and_then(|m| m.parse::<i64>().ok())
                .unwrap_or_else(|| int_at(&self.deployment, "/status/replicas", 0));
            if annotated == 0 {
                0
            } else {
                (replicas(rs) as f64 * target / annotated as f64).round() as i64 - replicas(rs)
            }
        };
        let allowed = to_add - added;
        if to_add > 0 {
            fraction.min(allowed)
        } else {
            fraction.max(allowed)
        }
    }

    /// Deletes the oldest revisions of ReplicaSets scaled to nothing beyond `revisionHistoryLimit`.
    fn clean_up(&mut self, old: &[Value]) {
        let Some(limit) = self
            .deployment
            .pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
        else {
            return;
        };
        let mut cleanable: Vec<&Value> = old
            .iter()
            .filter(|rs| {
                replicas(rs) == 0
                    && int_at(rs, "/status/replicas", 0) == 0
                    && !meta::is_deleting(rs)
                    && int_at(rs, "/status/observedGeneration", 0) >= meta::generation(rs)
            })
            .collect();
        let excess = cleanable.len() as i64 - limit;
        if excess <= 0 {
            return;
        }
        cleanable.sort_by_key(|rs| revision(rs));
        for rs in cleanable.into_iter().take(excess as usize) {
            objects::delete(self.store, self.state, Kind::ReplicaSet, rs);
        }
    }
}
