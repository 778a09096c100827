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
        "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => default_template(object),
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
}
