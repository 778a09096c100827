//! Defaults and normalisation the real API server applies to built-in kinds (B4, B5), so that
//! controllers that diff against what they read back converge.
//!
//! Only values kube-apiserver would fill in on its own are set, and never over a value the client
//! sent. Allocation (cluster IPs, node ports) needs server state and is the server's job.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::schema::messages;
use crate::{Error, Result};

/// Applies the defaults of built-in `kind` to `object` in place (Namespace: its name label; Service:
/// type, sessionAffinity,
/// port protocol and targetPort; Deployment: strategy, revisionHistoryLimit,
/// progressDeadlineSeconds, pod template defaults; Secret: `stringData` merged into `data` and
/// dropped, `type: Opaque`). Bad Secret base64 is 400. Cluster IP allocation is the server's job.
pub fn apply_builtin_defaults(kind: &str, object: &mut Value) -> Result<()> {
    match kind {
        "Secret" => default_secret(object)?,
        "Service" => default_service(object),
        "Deployment" => default_deployment(object),
        "Pod" => {
            if let Some(spec) = object.get_mut("spec") {
                default_pod_spec(spec);
                // A Pod's own default, not its template's (SetDefaults_Pod).
                if let Some(spec) = spec.as_object_mut() {
                    set_default(spec, "enableServiceLinks", json!(true));
                }
            }
        }
        "ReplicaSet" | "StatefulSet" | "Job" => default_template(object),
        "DaemonSet" => default_daemon_set(object),
        "ReplicationController" => default_replication_controller(object),
        "PodTemplate" => {
            if let Some(pod_spec) = object.pointer_mut("/template/spec") {
                default_pod_spec(pod_spec);
            }
        }
        "CronJob" => default_cron_job(object),
        "PersistentVolume" | "PersistentVolumeClaim" => default_volume(kind, object),
        "StorageClass" => {
            if let Some(class) = object.as_object_mut() {
                set_default(class, "reclaimPolicy", json!("Delete"));
                set_default(class, "volumeBindingMode", json!("Immediate"));
            }
        }
        "CSIDriver" => default_csi_driver(object),
        "PriorityClass" => {
            if let Some(class) = object.as_object_mut() {
                set_default(class, "preemptionPolicy", json!("PreemptLowerPriority"));
            }
        }
        "HorizontalPodAutoscaler" => default_horizontal_pod_autoscaler(object),
        "FlowSchema" => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
                && spec
                    .get("matchingPrecedence")
                    .is_none_or(|p| p.is_null() || p == 0)
            {
                spec.insert("matchingPrecedence".into(), json!(1000));
            }
        }
        "NetworkPolicy" => default_network_policy(object),
        "LimitRange" => default_limit_range(object),
        "PriorityLevelConfiguration" => default_priority_level(object),
        "IngressClass" => {
            if let Some(parameters) = object
                .pointer_mut("/spec/parameters")
                .and_then(Value::as_object_mut)
            {
                set_default(parameters, "scope", json!("Cluster"));
            }
        }
        "ValidatingAdmissionPolicy" => default_admission_policy(object),
        "Namespace" => default_namespace(object),
        "CustomResourceDefinition" => default_crd(object),
        kind if crate::webhook_configurations::is_webhook_configuration(kind) => {
            crate::webhook_configurations::apply_defaults(kind, object)
        }
        _ => {}
    }
    Ok(())
}

/// A namespace is labelled with its own name, whatever the client sent: a defaulting step, so the
/// writer of the namespace owns the label in managedFields, as on the real server.
fn default_namespace(object: &mut Value) {
    let Some(name) = object.pointer("/metadata/name").cloned() else {
        return;
    };
    let Some(metadata) = object.as_object_mut().and_then(|o| object_at(o, "metadata")) else {
        return;
    };
    if let Some(labels) = object_at(metadata, "labels") {
        labels.insert("kubernetes.io/metadata.name".into(), name);
    }
}

/// A CRD that names no conversion converts by changing apiVersion only; its list kind and singular
/// name follow from its kind (SetDefaults_CustomResourceDefinitionSpec).
fn default_crd(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(spec, "conversion", json!({"strategy": "None"}));
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
        && let Some(kind) = names.get("kind").and_then(Value::as_str).map(str::to_owned)
        && !kind.is_empty()
    {
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
    }
}

/// Inserts `key: value` into `map` unless the key is present with a non-null value.
fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// The object at `key`, created empty when absent or null; `None` when it holds something else.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    set_default(map, key, json!({}));
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// B4: `stringData` is write-only sugar for `data`; `data` holds canonical base64.
fn default_secret(object: &mut Value) -> Result<()> {
    let Some(secret) = object.as_object_mut() else {
        return Ok(());
    };
    let string_data = secret.remove("stringData");
    let mut data = match secret.remove("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(data)) => data,
        Some(_) => {
            return Err(Error::BadRequest(undecodable(
                "data must be a map of base64 strings",
            )));
        }
    };
    for (key, value) in data.iter_mut() {
        let Some(text) = value.as_str() else {
            return Err(Error::BadRequest(undecodable(&format!(
                "data[{key:?}] must be a base64 string"
            ))));
        };
        // Go's decoder skips line breaks; the stored form is the canonical encoding.
        let compact: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        let bytes = STANDARD.decode(compact.as_bytes()).map_err(|err| {
            let position = match err {
                base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                _ => compact.len(),
            };
            Error::BadRequest(undecodable(&format!(
                "illegal base64 data at input byte {position} in data[{key:?}]"
            )))
        })?;
        *value = Value::String(STANDARD.encode(bytes));
    }
    match string_data {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (key, value) in entries {
                let Some(text) = value.as_str() else {
                    return Err(Error::BadRequest(undecodable(&format!(
                        "stringData[{key:?}] must be a string"
                    ))));
                };
                data.insert(key, Value::String(STANDARD.encode(text.as_bytes())));
            }
        }
        Some(_) => {
            return Err(Error::BadRequest(undecodable(
                "stringData must be a map of strings",
            )));
        }
    }
    if !data.is_empty() {
        secret.insert("data".to_owned(), Value::Object(data));
    }
    set_default(secret, "type", json!("Opaque"));
    Ok(())
}

fn undecodable(detail: &str) -> String {
    format!("Secret in version \"v1\" cannot be handled as a Secret: {detail}")
}

/// B5: the Service fields kube-apiserver defaults, except what comes with the allocated address
/// (`clusterIP(s)`, `ipFamilies`, `ipFamilyPolicy`) and `nodePort`.
fn default_service(object: &mut Value) {
    // A Service's status exists from the start: the real server writes an empty load-balancer status.
    if let Some(map) = object.as_object_mut() {
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            set_default(status, "loadBalancer", json!({}));
        }
    }
    let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_owned();
    // ipFamilies and ipFamilyPolicy come with the address allocation, not from defaulting.
    if service_type != "ExternalName" {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                set_default(port, "targetPort", number);
            }
        }
    }
}

/// B5: Deployment spec defaults and its pod template's.
fn default_deployment(object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        map.entry("status").or_insert_with(|| json!({}));
    }
    let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    set_default(spec, "replicas", json!(1));
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
    if let Some(strategy) = object_at(spec, "strategy") {
        set_default(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object_at(strategy, "rollingUpdate")
        {
            set_default(rolling, "maxUnavailable", json!("25%"));
            set_default(rolling, "maxSurge", json!("25%"));
        }
    }
    default_template(object);
}

/// A DaemonSet's update strategy and history limit, and its template's pod defaults.
fn default_daemon_set(object: &mut Value) {
    if let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) {
        set_default(spec, "revisionHistoryLimit", json!(10));
        if let Some(strategy) = object_at(spec, "updateStrategy") {
            set_default(strategy, "type", json!("RollingUpdate"));
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = object_at(strategy, "rollingUpdate")
            {
                set_default(rolling, "maxUnavailable", json!(1));
                set_default(rolling, "maxSurge", json!(0));
            }
        }
    }
    default_template(object);
}

/// A ReplicationController selects, and is labelled with, its template's labels unless it says
/// otherwise; one replica unless it asks for more.
fn default_replication_controller(object: &mut Value) {
    let template_labels = object
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.is_object())
        .cloned();
    let empty = |value: Option<&Value>| value.and_then(Value::as_object).is_none_or(Map::is_empty);
    if let Some(labels) = template_labels {
        if empty(object.pointer("/spec/selector"))
            && let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert("selector".into(), labels.clone());
        }
        if empty(object.pointer("/metadata/labels"))
            && let Some(metadata) = object.as_object_mut().and_then(|o| object_at(o, "metadata"))
        {
            metadata.insert("labels".into(), labels);
        }
    }
    if let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) {
        set_default(spec, "replicas", json!(1));
    }
    default_template(object);
}

/// A CronJob's concurrency policy, suspension and history limits, and its jobs' pod defaults.
fn default_cron_job(object: &mut Value) {
    if let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) {
        set_default(spec, "concurrencyPolicy", json!("Allow"));
        set_default(spec, "suspend", json!(false));
        set_default(spec, "successfulJobsHistoryLimit", json!(3));
        set_default(spec, "failedJobsHistoryLimit", json!(1));
    }
    if let Some(pod_spec) = object.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        default_pod_spec(pod_spec);
    }
}

/// A volume or claim starts `Pending`, mounted as a filesystem; a volume is kept once released.
fn default_volume(kind: &str, object: &mut Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    if let Some(status) = object_at(map, "status")
        && status
            .get("phase")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        status.insert("phase".into(), json!("Pending"));
    }
    if let Some(spec) = object_at(map, "spec") {
        set_default(spec, "volumeMode", json!("Filesystem"));
        if let Some(host_path) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
            set_default(host_path, "type", json!(""));
        }
        if kind == "PersistentVolume"
            && spec
                .get("persistentVolumeReclaimPolicy")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            spec.insert("persistentVolumeReclaimPolicy".into(), json!("Retain"));
        }
    }
}

fn default_csi_driver(object: &mut Value) {
    let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    set_default(spec, "attachRequired", json!(true));
    set_default(spec, "podInfoOnMount", json!(false));
    set_default(spec, "storageCapacity", json!(false));
    set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    set_default(spec, "requiresRepublish", json!(false));
    set_default(spec, "seLinuxMount", json!(false));
    if spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

/// One replica at least, and the CPU utilization v1 always had, where no metric is given.
fn default_horizontal_pod_autoscaler(object: &mut Value) {
    let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    set_default(spec, "minReplicas", json!(1));
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
}

/// A policy that names no types applies to ingress, and to egress too when it has egress rules;
/// its ports are TCP unless they say otherwise.
fn default_network_policy(object: &mut Value) {
    let Some(spec) = object.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    if spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
    for direction in ["ingress", "egress"] {
        for rule in spec
            .get_mut(direction)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for port in rule
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                set_default(port, "protocol", json!("TCP"));
            }
        }
    }
}

/// A container's limits default to its maximum, its requests to its default limit, else its minimum.
fn default_limit_range(object: &mut Value) {
    let Some(limits) = object.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else {
        return;
    };
    for item in limits.iter_mut().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let map_of = |item: &Map<String, Value>, key: &str| {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut default = map_of(item, "default");
        for (resource, value) in map_of(item, "max") {
            default.entry(resource).or_insert(value);
        }
        let mut request = map_of(item, "defaultRequest");
        for (resource, value) in default.iter().chain(map_of(item, "min").iter()) {
            request.entry(resource.clone()).or_insert_with(|| value.clone());
        }
        for (key, values) in [("default", default), ("defaultRequest", request)] {
            if !values.is_empty() {
                item.insert(key.into(), Value::Object(values));
            }
        }
    }
}

/// A limited priority level's shares and lending, and its queues, hand size and queue length.
fn default_priority_level(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let zero_or_unset = |map: &Map<String, Value>, key: &str| {
        map.get(key).is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
    };
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        set_default(exempt, "nominalConcurrencyShares", json!(0));
        set_default(exempt, "lendablePercent", json!(0));
    }
    let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(limited, "nominalConcurrencyShares", json!(30));
    set_default(limited, "lendablePercent", json!(0));
    if let Some(queuing) = limited
        .get_mut("limitResponse")
        .and_then(|r| r.get_mut("queuing"))
        .and_then(Value::as_object_mut)
    {
        for (key, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
            if zero_or_unset(queuing, key) {
                queuing.insert(key.into(), json!(value));
            }
        }
    }
}

/// A policy fails closed, matches equivalent requests, selects every namespace and object, and its
/// rules apply at any scope, unless it says otherwise.
fn default_admission_policy(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(spec, "failurePolicy", json!("Fail"));
    let Some(constraints) = spec.get_mut("matchConstraints").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(constraints, "matchPolicy", json!("Equivalent"));
    set_default(constraints, "namespaceSelector", json!({}));
    set_default(constraints, "objectSelector", json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in constraints
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            set_default(rule, "scope", json!("*"));
        }
    }
}

/// Pod defaults inside `spec.template.spec` of a workload.
fn default_template(object: &mut Value) {
    if let Some(pod_spec) = object.pointer_mut("/spec/template/spec") {
        default_pod_spec(pod_spec);
    }
}

fn default_pod_spec(pod_spec: &mut Value) {
    let Some(spec) = pod_spec.as_object_mut() else {
        return;
    };
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(container);
            }
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for volume in volumes.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["configMap", "secret"] {
                if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
                    set_default(source, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn default_container(container: &mut Map<String, Value>) {
    set_default(container, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(container, "terminationMessagePolicy", json!("File"));
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
    set_default(container, "imagePullPolicy", json!(default_pull_policy(image)));
    set_default(container, "resources", json!({}));
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).and_then(Value::as_object_mut) {
            set_default(probe, "timeoutSeconds", json!(1));
            set_default(probe, "periodSeconds", json!(10));
            set_default(probe, "successThreshold", json!(1));
            set_default(probe, "failureThreshold", json!(3));
            if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
                set_default(http, "scheme", json!("HTTP"));
            }
        }
    }
}

/// `Always` for `:latest` or untagged images, else `IfNotPresent` (digests pin the image).
fn default_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// B4 SHOULD: once a ConfigMap or Secret is `immutable: true`, its data and the flag itself cannot
/// change (422); a Secret's `type` never changes. Call after defaulting both objects.
pub fn check_immutable(kind: &str, old: &Value, new: &Value) -> Result<()> {
    if !matches!(kind, "ConfigMap" | "Secret") {
        return Ok(());
    }
    const DETAIL: &str = "field is immutable when `immutable` is set";
    let mut causes = Vec::new();
    let flag = |object: &Value| object.get("immutable").and_then(Value::as_bool) == Some(true);
    // An absent map and an empty one are the same data to a client.
    let map_of = |object: &Value, key: &str| match object.get(key) {
        None | Some(Value::Null) => json!({}),
        Some(value) => value.clone(),
    };
    if flag(old) {
        if !flag(new) {
            causes.push(messages::forbidden("immutable", DETAIL));
        }
        let fields: &[&str] = if kind == "ConfigMap" {
            &["data", "binaryData"]
        } else {
            &["data"]
        };
        for field in fields {
            if map_of(old, field) != map_of(new, field) {
                causes.push(messages::forbidden(*field, DETAIL));
            }
        }
    }
    if kind == "Secret" {
        let new_type = new.get("type").cloned().unwrap_or(Value::Null);
        if old.get("type").cloned().unwrap_or(Value::Null) != new_type {
            causes.push(messages::invalid("type", &new_type, "field is immutable"));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid { causes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(kind: &str, mut object: Value) -> Value {
        match apply_builtin_defaults(kind, &mut object) {
            Ok(()) => object,
            Err(err) => panic!("defaulting {kind} failed: {err}"),
        }
    }

    #[test]
    fn b4_string_data_is_merged_into_base64_data_and_dropped() {
        let secret = defaulted(
            "Secret",
            json!({"data": {"a": "eA==", "b": "b2xk"}, "stringData": {"b": "new", "c": "hello"}}),
        );
        assert_eq!(
            secret,
            json!({"data": {"a": "eA==", "b": "bmV3", "c": "aGVsbG8="}, "type": "Opaque"})
        );
    }

    #[test]
    fn b4_secret_type_is_kept_when_given() {
        let secret = defaulted("Secret", json!({"type": "kubernetes.io/tls"}));
        assert_eq!(secret, json!({"type": "kubernetes.io/tls"}));
    }

    #[test]
    fn b4_invalid_base64_is_a_bad_request_naming_the_key() {
        let mut secret = json!({"data": {"password": "not base64!"}});
        match apply_builtin_defaults("Secret", &mut secret) {
            Err(Error::BadRequest(message)) => {
                assert!(
                    message.contains("illegal base64 data at input byte 3"),
                    "{message}"
                );
                assert!(message.contains("data[\"password\"]"), "{message}");
            }
            other => panic!("expected BadRequest, got {other:?}"),
        }
    }

    #[test]
    fn b4_base64_with_line_breaks_is_stored_canonically() {
        let secret = defaulted("Secret", json!({"data": {"k": "aGVs\nbG8="}}));
        assert_eq!(secret["data"]["k"], json!("aGVsbG8="));
    }

    #[test]
    fn a_namespace_is_labelled_with_its_name_over_what_the_client_sent() {
        let ns = defaulted(
            "Namespace",
            json!({"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "other", "x": "y"}}}),
        );
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "team-a", "x": "y"})
        );
    }

    #[test]
    fn b4_config_maps_are_left_alone() {
        let cm = json!({"data": {"k": "v"}});
        assert_eq!(defaulted("ConfigMap", cm.clone()), cm);
    }

    #[test]
    fn b5_service_defaults() {
        let svc = defaulted(
            "Service",
            json!({"spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
        );
        assert_eq!(
            svc["spec"],
            json!({
                "selector": {"app": "web"},
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
                "ports": [
                    {"port": 80, "protocol": "TCP", "targetPort": 80},
                    {"port": 53, "protocol": "UDP", "targetPort": "dns"}
                ]
            })
        );
    }

    #[test]
    fn b5_external_name_services_get_no_ip_families() {
        let svc = defaulted(
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "db.example.com"}}),
        );
        assert!(svc["spec"].get("ipFamilies").is_none());
        assert_eq!(svc["spec"]["sessionAffinity"], json!("None"));
    }

    #[test]
    fn b5_deployment_defaults_including_pod_template() {
        let deployment = defaulted(
            "Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "busybox"}
            ]}}}}),
        );
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], json!(1));
        assert_eq!(spec["revisionHistoryLimit"], json!(10));
        assert_eq!(spec["progressDeadlineSeconds"], json!(600));
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], json!("Always"));
        assert_eq!(pod["terminationGracePeriodSeconds"], json!(30));
        assert_eq!(pod["dnsPolicy"], json!("ClusterFirst"));
        assert_eq!(pod["schedulerName"], json!("default-scheduler"));
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(
            pod["containers"][0],
            json!({
                "name": "web", "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "resources": {}
            })
        );
        assert_eq!(pod["containers"][1]["imagePullPolicy"], json!("Always"));
    }

    #[test]
    fn b5_deployment_defaults_never_override_given_values() {
        let deployment = defaulted(
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "template": {"spec": {
                "restartPolicy": "Always", "containers": [{"name": "c", "image": "x", "imagePullPolicy": "Never"}]
            }}}}),
        );
        assert_eq!(deployment["spec"]["replicas"], json!(0));
        assert_eq!(deployment["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            json!("Never")
        );
    }

    #[test]
    fn b5_image_pull_policy_follows_the_tag() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("registry:5000/team/app"), "Always");
        assert_eq!(default_pull_policy("registry:5000/team/app:v1"), "IfNotPresent");
        assert_eq!(default_pull_policy("app@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn b4_immutable_config_map_rejects_data_changes() {
        let old = json!({"immutable": true, "data": {"k": "v"}});
        assert!(check_immutable("ConfigMap", &old, &old).is_ok());
        let changed = json!({"immutable": true, "data": {"k": "w"}});
        match check_immutable("ConfigMap", &old, &changed) {
            Err(Error::Invalid { causes }) => {
                assert_eq!(causes.len(), 1);
                assert_eq!(causes[0].field, "data");
                assert_eq!(causes[0].reason, "FieldValueForbidden");
                assert_eq!(
                    causes[0].message,
                    "Forbidden: field is immutable when `immutable` is set"
                );
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn b4_immutable_flag_cannot_be_cleared_but_mutable_objects_change_freely() {
        let old = json!({"immutable": true, "data": {"k": "dg=="}, "type": "Opaque"});
        let cleared = json!({"data": {"k": "dg=="}, "type": "Opaque"});
        let err = check_immutable("Secret", &old, &cleared).unwrap_err();
        assert_eq!(
            err.to_string(),
            "immutable: Forbidden: field is immutable when `immutable` is set"
        );
        let mutable = json!({"data": {"k": "dg=="}});
        assert!(check_immutable("ConfigMap", &mutable, &json!({"data": {"k": "x"}})).is_ok());
    }

    #[test]
    fn b4_secret_type_never_changes() {
        let old = json!({"type": "Opaque"});
        let err = check_immutable("Secret", &old, &json!({"type": "kubernetes.io/tls"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"type: Invalid value: "kubernetes.io/tls": field is immutable"#
        );
    }

    #[test]
    fn b5_replication_controllers_select_their_template_labels() {
        let controller = defaulted(
            "ReplicationController",
            json!({"metadata": {"name": "rc"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}),
        );
        assert_eq!(controller["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(controller["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(controller["spec"]["replicas"], json!(1));
        assert_eq!(
            controller["spec"]["template"]["spec"]["restartPolicy"],
            json!("Always")
        );
    }

    #[test]
    fn b5_volumes_classes_and_schedules_get_kube_apiservers_defaults() {
        let volume = defaulted("PersistentVolume", json!({"spec": {}}));
        assert_eq!(volume["status"]["phase"], json!("Pending"));
        assert_eq!(volume["spec"]["persistentVolumeReclaimPolicy"], json!("Retain"));
        assert_eq!(volume["spec"]["volumeMode"], json!("Filesystem"));
        let claim = defaulted("PersistentVolumeClaim", json!({"spec": {"volumeMode": "Block"}}));
        assert_eq!(claim["spec"]["volumeMode"], json!("Block"));
        assert_eq!(claim["status"]["phase"], json!("Pending"));
        let class = defaulted("StorageClass", json!({"provisioner": "p"}));
        assert_eq!(class["reclaimPolicy"], json!("Delete"));
        assert_eq!(class["volumeBindingMode"], json!("Immediate"));
        let cron = defaulted("CronJob", json!({"spec": {"schedule": "* * * * *"}}));
        assert_eq!(cron["spec"]["concurrencyPolicy"], json!("Allow"));
        assert_eq!(cron["spec"]["suspend"], json!(false));
        let daemon = defaulted("DaemonSet", json!({"spec": {}}));
        assert_eq!(
            daemon["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        let hpa = defaulted("HorizontalPodAutoscaler", json!({"spec": {"maxReplicas": 3}}));
        assert_eq!(hpa["spec"]["minReplicas"], json!(1));
        assert_eq!(
            hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            json!(80)
        );
        let policy = defaulted(
            "NetworkPolicy",
            json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}}),
        );
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], json!("TCP"));
    }

    #[test]
    fn b5_limit_ranges_priority_levels_and_policies_get_kube_apiservers_defaults() {
        let range = defaulted(
            "LimitRange",
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2", "memory": "1Gi"},
                "default": {"cpu": "500m"}, "min": {"memory": "10Mi"}}, {"type": "Pod", "max": {"cpu": "4"}}]}}),
        );
        assert_eq!(
            range["spec"]["limits"][0]["default"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(
            range["spec"]["limits"][0]["defaultRequest"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(range["spec"]["limits"][1].get("default"), None);
        let level = defaulted(
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 16}}}}}),
        );
        assert_eq!(
            level["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 16, "handSize": 8, "queueLengthLimit": 50}}})
        );
        let policy = defaulted(
            "ValidatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": {"resourceRules": [{"resources": ["configmaps"]}]}}}),
        );
        assert_eq!(policy["spec"]["failurePolicy"], json!("Fail"));
        assert_eq!(
            policy["spec"]["matchConstraints"],
            json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "resourceRules": [{"resources": ["configmaps"], "scope": "*"}]})
        );
    }
}
