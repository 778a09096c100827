//! Pod templates as the Deployment and ReplicaSet controllers use them: the pod-template-hash that
//! names a Deployment's ReplicaSets, template comparison that ignores it, the Pods a ReplicaSet makes,
//! and a rolling update's surge and unavailability resolved against the replica count.

use apimachinery::meta;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The label that tells a Deployment's ReplicaSets (and their Pods) apart.
pub(crate) const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// The alphabet of kube-apiserver's generated names and of the hash's printed digits: no vowels
/// (no words), no lookalike characters.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The pod-template-hash of `template` with `collision_count`: a 32-bit hash printed in decimal with
/// each digit mapped onto the alphabet, as the Deployment controller prints its own. Its hash is
/// of Go's dump of the template, which cannot be reproduced here; this one hashes the template's
/// JSON with its keys sorted, so the same template always gets the same value.
pub(crate) fn pod_template_hash(template: &Value, collision_count: i64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(template.to_string().as_bytes());
    if collision_count > 0 {
        hasher.update(collision_count.to_le_bytes());
    }
    let digest = hasher.finalize();
    let value = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    value
        .to_string()
        .bytes()
        .map(|digit| ALPHABET[usize::from(digit) % ALPHABET.len()] as char)
        .collect()
}

/// Whether two pod templates are the same, the hash label aside (a ReplicaSet's template carries it,
/// its Deployment's does not).
pub(crate) fn equal_ignoring_hash(a: &Value, b: &Value) -> bool {
    let strip = |template: &Value| {
        let mut copy = template.clone();
        if let Some(labels) = copy
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.remove(POD_TEMPLATE_HASH);
            if labels.is_empty()
                && let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut)
            {
                metadata.remove("labels");
            }
        }
        copy
    };
    strip(a) == strip(b)
}

/// `labels` with the hash label added.
pub(crate) fn with_hash(labels: Option<&Value>, hash: &str) -> Value {
    let mut labels = labels.and_then(Value::as_object).cloned().unwrap_or_default();
    labels.insert(POD_TEMPLATE_HASH.into(), json!(hash));
    Value::Object(labels)
}

/// The Pod a ReplicaSet makes from its template: named after it plus a generated suffix, with the
/// template's labels, annotations, finalizers and spec, and the ReplicaSet as its controller.
pub(crate) fn pod_from(replica_set: &Value, (api_version, kind): (&str, &str)) -> Value {
    let template = replica_set.pointer("/spec/template").cloned().unwrap_or_default();
    let mut metadata = Map::new();
    metadata.insert(
        "generateName".into(),
        json!(format!("{}-", meta::name(replica_set))),
    );
    metadata.insert("namespace".into(), json!(meta::namespace(replica_set)));
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(value) = template.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), value.clone());
        }
    }
    metadata.insert(
        "ownerReferences".into(),
        json!([controller_reference(api_version, kind, replica_set)]),
    );
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The owner reference a controller puts on what it makes.
pub(crate) fn controller_reference(api_version: &str, kind: &str, owner: &Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": meta::name(owner), "uid": meta::uid(owner),
        "controller": true, "blockOwnerDeletion": true})
}

/// A rolling update's `maxSurge` and `maxUnavailable` against `replicas`: a percentage rounds up for
/// the surge and down for unavailability, and both zero would never progress, so unavailability is 1.
pub(crate) fn fenceposts(deployment: &Value, replicas: i64) -> (i64, i64) {
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let value = |field: &str, round_up: bool| {
        let amount = rolling
            .and_then(|r| r.get(field))
            .cloned()
            .unwrap_or(json!("25%"));
        scaled(&amount, replicas, round_up)
    };
    let surge = value("maxSurge", true);
    let unavailable = value("maxUnavailable", false);
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

fn scaled(amount: &Value, total: i64, round_up: bool) -> i64 {
    match amount {
        Value::Number(number) => number.as_i64().unwrap_or(0),
        Value::String(text) => match text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(percent) if round_up => (percent * total + 99) / 100,
            Some(percent) => percent * total / 100,
            None => text.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_stable_and_printed_in_the_name_alphabet() {
        let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
        let hash = pod_template_hash(&template, 0);
        assert_eq!(hash, pod_template_hash(&template, 0));
        assert_ne!(hash, pod_template_hash(&template, 1));
        assert!(hash.bytes().all(|c| ALPHABET.contains(&c)), "{hash}");
    }

    #[test]
    fn surge_rounds_up_and_unavailability_down() {
        let deployment =
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        assert_eq!(fenceposts(&deployment, 2), (1, 0));
        assert_eq!(fenceposts(&deployment, 10), (3, 2));
        let none = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(fenceposts(&none, 3), (0, 1));
    }

    #[test]
    fn templates_compare_without_the_hash_label() {
        let plain = json!({"metadata": {"labels": {"app": "web"}}});
        let hashed = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "b4"}}});
        assert!(equal_ignoring_hash(&plain, &hashed));
        assert!(!equal_ignoring_hash(
            &plain,
            &json!({"metadata": {"labels": {"app": "db"}}})
        ));
    }
}
