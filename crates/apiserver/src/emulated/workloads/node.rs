//! The simulated node: one Node object, registered and ready as a kubelet registers its node, on which
//! the scheduler's part places every Pod that asks for no other node and whose node selector it
//! matches, and whose kubelet's part reports those Pods running and ready at once, with the status a
//! kubelet reports (conditions, container statuses, IPs, start time). kwok's nodes do the same for a
//! real control plane. Switched off ([`crate::Config::simulated_node`]), no node exists and Pods stay
//! Pending, as on a control plane without nodes.
//!
//! Not simulated: images (every pull succeeds, nothing is downloaded), containers (nothing runs:
//! no logs, exec or port-forward), probes (a readiness probe passes at once, a liveness probe never
//! fails), resources and the node's pod capacity (nothing is refused for want of room), restarts,
//! Pods finishing (a Job's Pods run for ever), graceful termination (a deleted Pod goes at once),
//! node affinity, taints and tolerations beyond `nodeSelector`, heartbeats and the node Lease.

use std::net::Ipv4Addr;

use apimachinery::meta;
use serde_json::{Map, Value, json};

use super::{
    events::{self, Source},
    objects::{self, Component, Kind},
};
use crate::store::{State, Store};

/// Set to `"true"` on a Pod, or on the ReplicaSet or Deployment above it (a Deployment's annotations
/// reach its ReplicaSets), to keep its containers unready, as a readiness probe that never passes
/// would: the Pod runs but is not Ready, so a Deployment never becomes available.
pub const NEVER_READY_ANNOTATION: &str = "apiserver.dev/never-ready";

/// The node's name, as its hostname.
pub(crate) const NODE_NAME: &str = "embedded-node";
/// The node's address, and the range its Pods' addresses come from.
const NODE_IP: Ipv4Addr = Ipv4Addr::new(172, 18, 0, 2);
const POD_NETWORK: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 0);
const POD_CIDR: &str = "10.244.0.0/16";
/// Pod addresses within the /16, past the network address and the gateway (.0.1).
const POD_ADDRESSES: u32 = (1 << 16) - 3;

/// The node while it is simulated: the next Pod address to try.
#[derive(Debug, Default)]
pub(crate) struct SimulatedNode {
    next_pod_ip: u32,
}

/// Registers the node (when missing) and simulates it from now on.
pub(crate) fn start(store: &Store, state: &mut State) {
    let mut node = SimulatedNode::default();
    // Addresses of Pods kept from an earlier run (a data dir) are not handed out again soon.
    if let Some(pods) = Kind::Pod.resource_type(state) {
        let key = crate::store::storage_key(&pods);
        let highest = state
            .objects
            .get(&key)
            .into_iter()
            .flat_map(|pods| pods.values())
            .filter_map(|pod| {
                pod.decode()
                    .pointer("/status/podIP")?
                    .as_str()?
                    .parse::<Ipv4Addr>()
                    .ok()
            })
            .filter_map(|ip| u32::from(ip).checked_sub(u32::from(POD_NETWORK) + 2))
            .max();
        node.next_pod_ip = highest.map_or(0, |h| (h + 1) % POD_ADDRESSES);
    }
    *state.extensions.get::<Option<SimulatedNode>>() = Some(node);
    if objects::get(store, state, Kind::Node, "", NODE_NAME).is_none() {
        register(store, state);
    }
}

fn architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The Node as its kubelet registers it and then reports it ready.
fn register(store: &Store, state: &mut State) {
    let arch = architecture();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "labels": {
                "beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch, "kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": "linux",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": POD_CIDR, "podCIDRs": [POD_CIDR]},
    });
    let Ok(created) = objects::create(store, state, Kind::Node, "", node, Component::Kubelet) else {
        return;
    };
    let now = meta::now_rfc3339();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message})
    };
    let resources = json!({"cpu": "8", "ephemeral-storage": "104857600Ki", "hugepages-1Gi": "0",
        "hugepages-2Mi": "0", "memory": "32868764Ki", "pods": "110"});
    let mut ready = created.clone();
    // The node controller lifts the not-ready taint kube-apiserver put on the new node once it is ready.
    if let Some(spec) = ready.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("taints");
    }
    if objects::update(
        store,
        state,
        Kind::Node,
        &created,
        ready.clone(),
        Component::ControllerManager,
        false,
    )
    .is_none()
    {
        return;
    }
    let Some(current) = objects::get(store, state, Kind::Node, "", NODE_NAME) else {
        return;
    };
    let mut next = current.clone();
    next["status"] = json!({
        "addresses": [{"type": "InternalIP", "address": NODE_IP.to_string()},
            {"type": "Hostname", "address": NODE_NAME}],
        "allocatable": resources, "capacity": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "features": {"supplementalGroupsPolicy": true},
        "nodeInfo": {
            "architecture": arch, "bootID": uuid::Uuid::new_v4().to_string(),
            "containerRuntimeVersion": "containerd://2.0.5", "kernelVersion": "6.1.0",
            "kubeProxyVersion": "", "kubeletVersion": "v1.33.13",
            "machineID": uuid::Uuid::new_v4().simple().to_string(), "operatingSystem": "linux",
            "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": uuid::Uuid::new_v4().to_string(),
        },
    });
    objects::update(store, state, Kind::Node, &current, next, Component::Kubelet, true);
}

/// The node's part for Pod `namespace`/`name`: schedules it here, then runs it.
pub(crate) fn sync(store: &Store, state: &mut State, namespace: &str, name: &str) {
    if state.extensions.get::<Option<SimulatedNode>>().is_none() {
        return;
    }
    let Some(pod) = objects::get(store, state, Kind::Pod, namespace, name) else {
        return;
    };
    if meta::is_deleting(&pod) {
        return;
    }
    let node_name = meta::str_at(&pod, "/spec/nodeName").unwrap_or_default();
    if node_name.is_empty() {
        schedule(store, state, &pod);
    } else if node_name == NODE_NAME {
        run(store, state, &pod);
    }
}

fn condition(kind: &str, status: &str, time: &Value) -> Value {
    json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": time})
}

/// The scheduler's part: a Pod for the default scheduler whose node selector the node matches is
/// bound to it; one it does not match is marked unschedulable.
fn schedule(store: &Store, state: &mut State, pod: &Value) {
    let scheduler = meta::str_at(pod, "/spec/schedulerName").unwrap_or("default-scheduler");
    if scheduler != "default-scheduler" {
        return;
    }
    let Some(node) = objects::get(store, state, Kind::Node, "", NODE_NAME) else {
        return;
    };
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let selector = pod.pointer("/spec/nodeSelector").and_then(Value::as_object);
    let fits = selector
        .into_iter()
        .flatten()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value));
    let now = json!(meta::now_rfc3339());
    if !fits {
        const WHY: &str = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
        let current = pod.pointer("/status/conditions").and_then(Value::as_array);
        if current.is_some_and(|c| c.iter().any(|c| c["reason"] == "Unschedulable")) {
            return;
        }
        let mut next = pod.clone();
        next["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": now, "reason": "Unschedulable", "message": WHY}]);
        objects::update(store, state, Kind::Pod, pod, next, Component::Scheduler, true);
        events::warning(
            store,
            state,
            Source::Scheduler,
            ("v1", "Pod"),
            pod,
            "FailedScheduling",
            WHY.to_owned(),
        );
        return;
    }
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(NODE_NAME);
    let Some(bound) = objects::update(store, state, Kind::Pod, pod, bound, Component::Scheduler, false)
    else {
        return;
    };
    let mut next = bound.clone();
    next["status"]["conditions"] = json!([condition("PodScheduled", "True", &now)]);
    objects::update(store, state, Kind::Pod, &bound, next, Component::Scheduler, true);
}

/// Whether the Pod's containers are kept unready by [`NEVER_READY_ANNOTATION`], on it or above it.
fn kept_unready(store: &Store, state: &State, pod: &Value) -> bool {
    let marked = |object: &Value| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(NEVER_READY_ANNOTATION))
            .and_then(Value::as_str)
            == Some("true")
    };
    marked(pod) || objects::controller(store, state, Kind::ReplicaSet, pod).is_some_and(|rs| marked(&rs))
}

/// Whether the node reports `pod` ready; `None` for a Pod it does not run.
pub(crate) fn reports_ready(pod: &Value) -> Option<bool> {
    if meta::str_at(pod, "/spec/nodeName") != Some(NODE_NAME)
        || meta::str_at(pod, "/status/phase") != Some("Running")
    {
        return None;
    }
    Some(super::readiness::is_ready(pod))
}

/// Whether `pod` should be ready as the node reports it.
pub(crate) fn expected_ready(store: &Store, state: &State, pod: &Value) -> bool {
    !kept_unready(store, state, pod)
}

/// The kubelet's part: the Pod's status as a kubelet reports a Pod whose containers started.
fn run(store: &Store, state: &mut State, pod: &Value) {
    let ready = expected_ready(store, state, pod);
    let status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let running = status["phase"] == "Running";
    let reported_ready = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True");
    if running && reported_ready == ready {
        return;
    }
    let mut next = pod.clone();
    next["status"] = running_status(state, pod, &status, ready);
    objects::update(store, state, Kind::Pod, pod, next, Component::Kubelet, true);
}

fn running_status(state: &mut State, pod: &Value, status: &Value, ready: bool) -> Value {
    let now = json!(meta::now_rfc3339());
    let kept = |field: &str| status.get(field).filter(|v| !v.is_null()).cloned();
    let started = kept("startTime").unwrap_or_else(|| now.clone());
    let pod_ip = kept("podIP").unwrap_or_else(|| json!(next_pod_ip(state).to_string()));
    // A condition keeps its transition time while its status stays.
    let since = |kind: &str, value: &str| {
        status
            .get("conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == kind && c["status"] == value))
            .map(|c| c["lastTransitionTime"].clone())
            .unwrap_or_else(|| now.clone())
    };
    let containers: Vec<&Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let names: Vec<&str> = containers.iter().filter_map(|c| c["name"].as_str()).collect();
    let ready_text = if ready { "True" } else { "False" };
    let unready = |kind: &str| {
        let mut condition = condition(kind, ready_text, &since(kind, ready_text));
        if !ready {
            condition["reason"] = json!("ContainersNotReady");
            condition["message"] = json!(format!("containers with unready status: [{}]", names.join(" ")));
        }
        condition
    };
    let conditions = json!([
        condition(
            "PodReadyToStartContainers",
            "True",
            &since("PodReadyToStartContainers", "True")
        ),
        condition("Initialized", "True", &since("Initialized", "True")),
        unready("Ready"),
        unready("ContainersReady"),
        condition("PodScheduled", "True", &since("PodScheduled", "True")),
    ]);
    let previous_statuses = status.get("containerStatuses").and_then(Value::as_array);
    let container_statuses: Vec<Value> = containers
        .iter()
        .map(|container| {
            let name = container["name"].as_str().unwrap_or_default();
            let before = previous_statuses.and_then(|s| s.iter().find(|s| s["name"] == name));
            container_status(container, before, &started, ready)
        })
        .collect();
    let mut next = Map::new();
    next.insert("phase".into(), json!("Running"));
    next.insert("conditions".into(), conditions);
    next.insert("hostIP".into(), json!(NODE_IP.to_string()));
    next.insert("hostIPs".into(), json!([{"ip": NODE_IP.to_string()}]));
    next.insert("podIP".into(), pod_ip.clone());
    next.insert("podIPs".into(), json!([{"ip": pod_ip}]));
    next.insert("startTime".into(), started.clone());
    let init: Vec<Value> = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|container| init_container_status(container, &started))
        .collect();
    if !init.is_empty() {
        next.insert("initContainerStatuses".into(), Value::Array(init));
    }
    next.insert("containerStatuses".into(), Value::Array(container_statuses));
    next.insert(
        "qosClass".into(),
        status
            .get("qosClass")
            .cloned()
            .unwrap_or_else(|| json!(crate::kinds::pods::qos::qos_class(pod))),
    );
    Value::Object(next)
}

/// A running container as the kubelet reports it, the runtime's image reference and IDs included.
fn container_status(container: &Value, before: Option<&Value>, started: &Value, ready: bool) -> Value {
    let image = container["image"].as_str().unwrap_or_default();
    let started_at = before
        .and_then(|b| b.pointer("/state/running/startedAt"))
        .cloned()
        .unwrap_or_else(|| started.clone());
    let container_id = before
        .and_then(|b| b.get("containerID"))
        .cloned()
        .unwrap_or_else(|| json!(format!("containerd://{}", random_hex(64))));
    json!({
        "name": container["name"], "image": full_image(image), "imageID": image_id(image),
        "containerID": container_id, "ready": ready, "started": true, "restartCount": 0,
        "lastState": {}, "state": {"running": {"startedAt": started_at}},
    })
}

/// An init container that ran to completion before the others started.
fn init_container_status(container: &Value, started: &Value) -> Value {
    let image = container["image"].as_str().unwrap_or_default();
    let container_id = format!("containerd://{}", random_hex(64));
    json!({
        "name": container["name"], "image": full_image(image), "imageID": image_id(image),
        "containerID": container_id, "ready": true, "started": false, "restartCount": 0, "lastState": {},
        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
            "finishedAt": started, "containerID": container_id}},
    })
}

/// An image name as the container runtime reports it: registry, repository path and tag in full
/// (`nginx` is `docker.io/library/nginx:latest`).
fn full_image(image: &str) -> String {
    let (name, suffix) = match image.split_once('@') {
        Some((name, digest)) => (name, format!("@{digest}")),
        None => match image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')) {
            Some((name, tag)) => (name, format!(":{tag}")),
            None => (image, ":latest".to_owned()),
        },
    };
    let first = name.split('/').next().unwrap_or_default();
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let name = match (has_registry, name.contains('/')) {
        (true, _) => name.to_owned(),
        (false, true) => format!("docker.io/{name}"),
        (false, false) => format!("docker.io/library/{name}"),
    };
    format!("{name}{suffix}")
}

/// The image's digest reference: a stand-in digest derived from its name, the same for every Pod.
fn image_id(image: &str) -> String {
    use sha2::{Digest, Sha256};
    let full = full_image(image);
    let repository = full.split(['@']).next().unwrap_or_default();
    let repository = repository
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or(repository, |(name, _)| name);
    let digest: String = Sha256::digest(full.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{repository}@sha256:{digest}")
}

fn random_hex(length: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..length)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

fn next_pod_ip(state: &mut State) -> Ipv4Addr {
    let Some(node) = state.extensions.get::<Option<SimulatedNode>>().as_mut() else {
        return POD_NETWORK;
    };
    let offset = node.next_pod_ip;
    node.next_pod_ip = (offset + 1) % POD_ADDRESSES;
    Ipv4Addr::from(u32::from(POD_NETWORK) + 2 + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_reported_in_full() {
        assert_eq!(full_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(full_image("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(full_image("bitnami/redis:7"), "docker.io/bitnami/redis:7");
        assert_eq!(
            full_image("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(full_image("localhost:5000/app"), "localhost:5000/app:latest");
        assert!(image_id("nginx:1.27").starts_with("docker.io/library/nginx@sha256:"));
    }
}
