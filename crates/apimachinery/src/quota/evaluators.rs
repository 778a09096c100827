//! What each kind of object costs a ResourceQuota, as kube-apiserver's and kube-controller-manager's
//! quota evaluators measure it: Pods (compute resources, by scope), Services (node ports and load
//! balancers), PersistentVolumeClaims (storage, by storage class), and any other kind by count
//! (`count/<resource>.<group>`, and the legacy names `configmaps`, `secrets`, ...).

use serde_json::Value;

use super::{ResourceList, Scope, add_into};
use crate::quantity::Quantity;

/// The resources a Pod's quota may name besides those with a prefix.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];
const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];
const CLAIM_RESOURCES: &[&str] = &[
    "count/persistentvolumeclaims",
    "persistentvolumeclaims",
    "requests.storage",
];
/// A claim's storage class prefixes its resources: `gold.storageclass.storage.k8s.io/requests.storage`.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";
/// The kinds counted under a name of their own since before `count/` existed.
const LEGACY_COUNTS: &[(&str, &str)] = &[
    ("configmaps", "configmaps"),
    ("resourcequotas", "resourcequotas"),
    ("replicationcontrollers", "replicationcontrollers"),
    ("secrets", "secrets"),
];
/// The resources whose requests (or limits) every container must state once a quota limits them: a
/// rule kept from before QoS classes existed.
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// What a write does, for whether an evaluator looks at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch, of the main resource or a subresource.
    Update,
}

/// The evaluator of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    /// Pods: counted, and their compute resources (`requests.cpu`, `limits.memory` ...) while they
    /// may run.
    Pods,
    /// Services: counted, and their load balancers and node ports.
    Services,
    /// PersistentVolumeClaims: counted, and the storage they request, also per storage class.
    Claims,
    /// Any other resource: counted, by `count/<plural>[.<group>]` and its legacy name if it has one.
    Count {
        /// The resource's API group; empty for the core group.
        group: String,
        /// The resource's plural name.
        plural: String,
    },
}

impl Evaluator {
    /// The evaluator of `group`/`plural`; `None` for what quota ignores (Events).
    pub fn of(group: &str, plural: &str) -> Option<Evaluator> {
        Some(match (group, plural) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::Claims,
            ("", "events") | ("events.k8s.io", "events") => return None,
            _ => Evaluator::Count {
                group: group.to_owned(),
                plural: plural.to_owned(),
            },
        })
    }

    /// The resource whose objects this evaluator measures.
    pub fn resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::Claims => ("", "persistentvolumeclaims"),
            Evaluator::Count { group, plural } => (group, plural),
        }
    }

    fn count_name(&self) -> String {
        match self.resource() {
            ("", plural) => format!("count/{plural}"),
            (group, plural) => format!("count/{plural}.{group}"),
        }
    }

    /// Of a quota's resource names, those this evaluator measures.
    pub fn matching_resources<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Vec<String> {
        let count = self.count_name();
        names
            .into_iter()
            .filter(|name| match self {
                Evaluator::Pods => {
                    POD_RESOURCES.contains(name)
                        || name.starts_with("hugepages-")
                        || name.starts_with("requests.hugepages-")
                        || is_extended_for_quota(name)
                }
                Evaluator::Services => SERVICE_RESOURCES.contains(name),
                Evaluator::Claims => {
                    CLAIM_RESOURCES.contains(name)
                        || name
                            .split_once(STORAGE_CLASS_SUFFIX)
                            .is_some_and(|(_, r)| r == "persistentvolumeclaims" || r == "requests.storage")
                }
                Evaluator::Count { group, plural } => {
                    *name == count
                        || (group.is_empty()
                            && LEGACY_COUNTS
                                .iter()
                                .any(|(p, alias)| p == plural && alias == name))
                }
            })
            .map(str::to_owned)
            .collect()
    }

    /// Whether this evaluator looks at a write at all.
    pub fn handles(
        &self,
        operation: Operation,
        subresource: Option<&str>,
        object: &Value,
        old: Option<&Value>,
    ) -> bool {
        match (self, subresource) {
            (Evaluator::Pods, None) => match operation {
                Operation::Create => true,
                // An update changes a Pod's usage only when it changes its scope.
                Operation::Update => old.is_some_and(|old| is_terminating(old) != is_terminating(object)),
            },
            (Evaluator::Pods, Some("resize")) => operation == Operation::Update,
            (Evaluator::Services | Evaluator::Claims, None) => true,
            (Evaluator::Count { .. }, _) => operation == Operation::Create,
            _ => false,
        }
    }

    /// Whether `object` is in `scope`. Only Pods have scopes: nothing else is ever in one.
    pub fn matches_scope(&self, scope: &Scope, object: &Value) -> bool {
        if *self != Evaluator::Pods {
            return false;
        }
        match scope.name.as_str() {
            "Terminating" => is_terminating(object),
            "NotTerminating" => !is_terminating(object),
            "BestEffort" => is_best_effort(object),
            "NotBestEffort" => !is_best_effort(object),
            "PriorityClass" => {
                let class = object
                    .pointer("/spec/priorityClassName")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty());
                match scope.operator.as_str() {
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    "In" => class.is_some_and(|c| scope.values.iter().any(|v| v == c)),
                    "NotIn" => class.is_none_or(|c| !scope.values.iter().any(|v| v == c)),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(object),
            _ => false,
        }
    }

    /// What `object` costs.
    pub fn usage(&self, object: &Value, now: i64) -> ResourceList {
        match self {
            Evaluator::Pods => pod_usage(object, now),
            Evaluator::Services => service_usage(object),
            Evaluator::Claims => claim_usage(object),
            Evaluator::Count { group, plural } => {
                let mut usage = ResourceList::new();
                usage.insert(self.count_name(), Quantity::count(1));
                if group.is_empty()
                    && let Some((_, alias)) = LEGACY_COUNTS.iter().find(|(p, _)| p == plural)
                {
                    usage.insert((*alias).to_owned(), Quantity::count(1));
                }
                usage
            }
        }
    }

    /// What a quota limiting `required` demands of `object` beyond its cost: each container of a
    /// Pod must state its CPU and memory when a quota limits them. The refusal's text otherwise.
    pub fn constraints(&self, required: &[String], object: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: Vec<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| MUST_SPECIFY.contains(r))
            .collect();
        // Resource -> the containers that leave it out, both sorted.
        let mut missing: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
            std::collections::BTreeMap::new();
        for container in containers(object, "containers").chain(containers(object, "initContainers")) {
            let (requests, limits) = container_resources(container);
            let usage = compute_usage(&requests, &limits);
            for resource in &required {
                if !usage.contains_key(*resource) {
                    let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
                    missing.entry(resource).or_default().insert(name.to_owned());
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(resource, names)| {
                format!(
                    "{resource} for: {}",
                    names.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// An extended resource as a quota names it: `requests.example.com/dongle`.
fn is_extended_for_quota(name: &str) -> bool {
    name.starts_with("requests.") && !is_native(name)
}

/// Unprefixed names and those under `kubernetes.io/` are Kubernetes' own.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

/// A Pod with an active deadline is one that ends.
pub fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0)
}

/// A Pod none of whose containers asks for or limits CPU or memory (QoS class BestEffort).
fn is_best_effort(pod: &Value) -> bool {
    containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .all(|container| {
            ["requests", "limits"].iter().all(|kind| {
                container
                    .pointer(&format!("/resources/{kind}"))
                    .and_then(Value::as_object)
                    .is_none_or(|list| {
                        list.iter()
                            .filter(|(name, _)| *name == "cpu" || *name == "memory")
                            .all(|(_, value)| {
                                value
                                    .as_str()
                                    .and_then(Quantity::parse)
                                    .is_none_or(|q| q.is_zero())
                            })
                    })
            })
        })
}

fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|affinity| {
        let required = pod
            .pointer(&format!(
                "/spec/affinity/{affinity}/requiredDuringSchedulingIgnoredDuringExecution"
            ))
            .and_then(Value::as_array);
        let preferred = pod
            .pointer(&format!(
                "/spec/affinity/{affinity}/preferredDuringSchedulingIgnoredDuringExecution"
            ))
            .and_then(Value::as_array);
        required.into_iter().flatten().any(cross)
            || preferred
                .into_iter()
                .flatten()
                .filter_map(|w| w.get("podAffinityTerm"))
                .any(cross)
    })
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn list(value: Option<&Value>) -> ResourceList {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str().and_then(Quantity::parse)?)))
        .collect()
}

/// A container's requests (a limit without a request requests as much, as defaulting sets it) and
/// limits.
fn container_resources(container: &Value) -> (ResourceList, ResourceList) {
    let mut requests = list(container.pointer("/resources/requests"));
    let limits = list(container.pointer("/resources/limits"));
    for (name, limit) in &limits {
        requests.entry(name.clone()).or_insert(*limit);
    }
    (requests, limits)
}

fn max_into(total: &mut ResourceList, other: &ResourceList) {
    for (name, value) in other {
        let entry = total.entry(name.clone()).or_insert(*value);
        if *value > *entry {
            *entry = *value;
        }
    }
}

/// A Pod's requests and limits as the scheduler sums them: its containers together, or its largest
/// init container (with the sidecars started before it) if that is more, plus its overhead.
fn pod_resources(pod: &Value) -> (ResourceList, ResourceList) {
    let mut totals = [ResourceList::new(), ResourceList::new()];
    for container in containers(pod, "containers") {
        let (requests, limits) = container_resources(container);
        add_into(&mut totals[0], &requests);
        add_into(&mut totals[1], &limits);
    }
    let mut sidecars = [ResourceList::new(), ResourceList::new()];
    let mut init_peak = [ResourceList::new(), ResourceList::new()];
    for container in containers(pod, "initContainers") {
        let (requests, limits) = container_resources(container);
        let sidecar = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        for (i, own) in [requests, limits].iter().enumerate() {
            if sidecar {
                add_into(&mut totals[i], own);
                add_into(&mut sidecars[i], own);
                max_into(&mut init_peak[i], &sidecars[i]);
            } else {
                let mut while_running = sidecars[i].clone();
                add_into(&mut while_running, own);
                max_into(&mut init_peak[i], &while_running);
            }
        }
    }
    let overhead = list(pod.pointer("/spec/overhead"));
    let [mut requests, mut limits] = totals;
    max_into(&mut requests, &init_peak[0]);
    max_into(&mut limits, &init_peak[1]);
    add_into(&mut requests, &overhead);
    add_into(&mut limits, &overhead);
    (requests, limits)
}

/// Requests and limits under the names a quota gives them.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("pods".into(), Quantity::count(1));
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(resource) {
            usage.insert(resource.into(), *request);
            usage.insert(format!("requests.{resource}"), *request);
        }
        if let Some(limit) = limits.get(resource) {
            usage.insert(format!("limits.{resource}"), *limit);
        }
    }
    for (resource, request) in requests {
        if resource.starts_with("hugepages-") {
            usage.insert(resource.clone(), *request);
            usage.insert(format!("requests.{resource}"), *request);
        }
        if is_extended(resource) {
            usage.insert(format!("requests.{resource}"), *request);
        }
    }
    usage
}

/// A Pod's cost: always its count; its compute resources only while it may run (not finished, not
/// past the grace period of its deletion).
fn pod_usage(pod: &Value, now: i64) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("count/pods".into(), Quantity::count(1));
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return usage;
    }
    let deletion = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if let (Some(deletion), Some(grace)) = (deletion, grace)
        && now > deletion.as_second() + grace
    {
        return usage;
    }
    let (requests, limits) = pod_resources(pod);
    add_into(&mut usage, &compute_usage(&requests, &limits));
    usage
}

fn service_usage(service: &Value) -> ResourceList {
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let kind = service.pointer("/spec/type").and_then(Value::as_str);
    let node_ports = match kind {
        Some("NodePort") => ports.len(),
        // A load balancer that allocates no node ports counts only those it was given.
        Some("LoadBalancer")
            if service.pointer("/spec/allocateLoadBalancerNodePorts") == Some(&Value::Bool(false)) =>
        {
            ports
                .iter()
                .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                .count()
        }
        Some("LoadBalancer") => ports.len(),
        _ => 0,
    };
    let mut usage = ResourceList::new();
    usage.insert("count/services".into(), Quantity::count(1));
    usage.insert("services".into(), Quantity::count(1));
    usage.insert(
        "services.loadbalancers".into(),
        Quantity::count(i64::from(kind == Some("LoadBalancer"))),
    );
    usage.insert(
        "services.nodeports".into(),
        Quantity::count(i64::try_from(node_ports).unwrap_or(i64::MAX)),
    );
    usage
}

fn claim_usage(claim: &Value) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("persistentvolumeclaims".into(), Quantity::count(1));
    usage.insert("count/persistentvolumeclaims".into(), Quantity::count(1));
    // The class field, or the beta annotation that preceded it.
    let class = claim
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .or_else(|| {
            claim
                .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                .and_then(Value::as_str)
        })
        .filter(|c| !c.is_empty());
    if let Some(class) = class {
        usage.insert(
            format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
            Quantity::count(1),
        );
    }
    let storage = claim
        .pointer("/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .and_then(Quantity::parse)
        .map(|q| q.round_up_to_whole());
    if let Some(storage) = storage {
        usage.insert("requests.storage".into(), storage);
        if let Some(class) = class {
            usage.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), storage);
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|| panic!("{text}"))
    }

    #[test]
    fn a_pod_costs_its_containers_requests_and_limits_under_quota_names() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "252Mi", "example.com/dongle": "2"},
                "limits": {"example.com/dongle": "2"}}},
            {"name": "b", "resources": {"limits": {"cpu": "100m"}}},
        ]}});
        let usage = Evaluator::Pods.usage(&pod, 0);
        assert_eq!(usage["pods"], q("1"));
        assert_eq!(usage["count/pods"], q("1"));
        assert_eq!(usage["requests.cpu"], q("600m"));
        assert_eq!(usage["limits.cpu"], q("100m"));
        assert_eq!(usage["memory"].to_string(), "252Mi");
        assert_eq!(usage["requests.example.com/dongle"], q("2"));
        assert!(!usage.contains_key("limits.memory"));
    }

    #[test]
    fn a_finished_pod_costs_only_its_count() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Succeeded"}});
        let usage = Evaluator::Pods.usage(&pod, 0);
        assert_eq!(usage.keys().collect::<Vec<_>>(), ["count/pods"]);
    }

    #[test]
    fn the_largest_init_container_counts_when_it_asks_more_than_the_containers() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(Evaluator::Pods.usage(&pod, 0)["cpu"], q("2"));
    }

    #[test]
    fn node_ports_and_load_balancers_are_counted_by_service_type() {
        let ports = json!([{"port": 80}, {"port": 443}]);
        let node_port = json!({"spec": {"type": "NodePort", "ports": ports}});
        let usage = Evaluator::Services.usage(&node_port, 0);
        assert_eq!(usage["services.nodeports"], q("2"));
        assert!(usage["services.loadbalancers"].is_zero());
        let balancer = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
        assert_eq!(
            Evaluator::Services.usage(&balancer, 0)["services.loadbalancers"],
            q("1")
        );
    }

    #[test]
    fn a_claim_is_charged_to_its_storage_class_too() {
        let claim =
            json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1Gi"}}}});
        let usage = Evaluator::Claims.usage(&claim, 0);
        assert_eq!(usage["requests.storage"].to_string(), "1Gi");
        assert_eq!(
            usage["gold.storageclass.storage.k8s.io/requests.storage"],
            q("1Gi")
        );
        assert_eq!(
            usage["gold.storageclass.storage.k8s.io/persistentvolumeclaims"],
            q("1")
        );
    }

    #[test]
    fn each_evaluator_matches_its_own_resource_names() {
        let names = [
            "pods",
            "cpu",
            "count/replicasets.apps",
            "configmaps",
            "services",
            "requests.example.com/dongle",
            "gold.storageclass.storage.k8s.io/requests.storage",
        ];
        assert_eq!(
            Evaluator::Pods.matching_resources(names),
            ["pods", "cpu", "requests.example.com/dongle"]
        );
        let replica_sets = Evaluator::of("apps", "replicasets").expect("counted");
        assert_eq!(replica_sets.matching_resources(names), ["count/replicasets.apps"]);
        let config_maps = Evaluator::of("", "configmaps").expect("counted");
        assert_eq!(config_maps.matching_resources(names), ["configmaps"]);
        assert_eq!(
            Evaluator::Claims.matching_resources(names),
            ["gold.storageclass.storage.k8s.io/requests.storage"]
        );
        assert!(Evaluator::of("", "events").is_none());
    }

    #[test]
    fn containers_must_state_what_a_quota_limits() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b"}]}});
        let required = vec!["cpu".to_owned(), "memory".to_owned(), "pods".to_owned()];
        assert_eq!(
            Evaluator::Pods.constraints(&required, &pod).unwrap_err(),
            "must specify cpu for: b; memory for: a,b"
        );
    }

    #[test]
    fn priority_class_scopes_select_by_the_pods_class() {
        let pod = json!({"spec": {"priorityClassName": "gold"}});
        let scope = |operator: &str, values: &[&str]| Scope {
            name: "PriorityClass".into(),
            operator: operator.into(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        assert!(Evaluator::Pods.matches_scope(&scope("In", &["gold"]), &pod));
        assert!(!Evaluator::Pods.matches_scope(&scope("NotIn", &["gold"]), &pod));
        assert!(Evaluator::Pods.matches_scope(&scope("Exists", &[]), &pod));
        assert!(Evaluator::Pods.matches_scope(&scope("NotIn", &["gold"]), &json!({"spec": {}})));
    }
}
