//! Built-in objects decoded against their k8s-openapi types before they are stored, as kube-apiserver
//! decodes every body into its Go struct: a value of the wrong type (`data: {x: true}` in a ConfigMap)
//! is 400 BadRequest, and a field the type does not have is an unknown field, for `fieldValidation`.
//!
//! Go's decoder names the Go struct that declares the field in its message
//! (`DeploymentSpec.spec.replicas`); the Rust types carry no such names, so the struct is found in
//! the protobuf descriptors of the Go types, whose messages bear their names. The kind stands for it
//! where the path leaves them.

use k8s_openapi::{
    Resource,
    api::{
        admissionregistration, apps, autoscaling, batch, certificates, coordination, core, discovery,
        flowcontrol, networking, node, policy, rbac, scheduling, storage,
    },
    apiextensions_apiserver::pkg::apis::apiextensions,
    kube_aggregator::pkg::apis::apiregistration,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use apimachinery::resource::ResourceType;

/// Why a built-in object cannot be decoded into its type.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// Go's words for it: `json: cannot unmarshal bool into Go struct field ConfigMap.data of type string`.
    WrongType(String),
}

/// What decoding `object` found: `Err` for a value of the wrong type; otherwise the fields its type
/// does not have (`spec.foo`, `spec.containers[0].bar`), which are removed from it, as Go's decoder
/// drops them. Kinds without a type here pass unchecked.
pub fn check(rt: &ResourceType, object: &mut Value) -> Result<Vec<String>, Problem> {
    macro_rules! by_kind {
        ($($group:literal, $kind:literal => $type:ty;)*) => {
            match (rt.group.as_str(), rt.kind.as_str()) {
                $(($group, $kind) => decode::<$type>(&rt.kind, object),)*
                _ => Ok(Vec::new()),
            }
        };
    }
    by_kind! {
        "", "ConfigMap" => core::v1::ConfigMap;
        "", "Secret" => core::v1::Secret;
        "", "Namespace" => core::v1::Namespace;
        "", "Service" => core::v1::Service;
        "", "Event" => core::v1::Event;
        "", "Pod" => core::v1::Pod;
        "", "ServiceAccount" => core::v1::ServiceAccount;
        "", "Endpoints" => core::v1::Endpoints;
        "", "Node" => core::v1::Node;
        "", "LimitRange" => core::v1::LimitRange;
        "", "PersistentVolumeClaim" => core::v1::PersistentVolumeClaim;
        "", "PersistentVolume" => core::v1::PersistentVolume;
        "", "PodTemplate" => core::v1::PodTemplate;
        "", "ReplicationController" => core::v1::ReplicationController;
        "", "ResourceQuota" => core::v1::ResourceQuota;
        "apps", "ControllerRevision" => apps::v1::ControllerRevision;
        // Both versions are checked as stored: autoscaling/v1's objects are converted first.
        "autoscaling", "HorizontalPodAutoscaler" => autoscaling::v2::HorizontalPodAutoscaler;
        "batch", "CronJob" => batch::v1::CronJob;
        "flowcontrol.apiserver.k8s.io", "FlowSchema" => flowcontrol::v1::FlowSchema;
        "flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration" => flowcontrol::v1::PriorityLevelConfiguration;
        "networking.k8s.io", "IngressClass" => networking::v1::IngressClass;
        "networking.k8s.io", "Ingress" => networking::v1::Ingress;
        "networking.k8s.io", "IPAddress" => networking::v1::IPAddress;
        "networking.k8s.io", "NetworkPolicy" => networking::v1::NetworkPolicy;
        "networking.k8s.io", "ServiceCIDR" => networking::v1::ServiceCIDR;
        "node.k8s.io", "RuntimeClass" => node::v1::RuntimeClass;
        "policy", "PodDisruptionBudget" => policy::v1::PodDisruptionBudget;
        "scheduling.k8s.io", "PriorityClass" => scheduling::v1::PriorityClass;
        "storage.k8s.io", "CSIDriver" => storage::v1::CSIDriver;
        "storage.k8s.io", "CSINode" => storage::v1::CSINode;
        "storage.k8s.io", "CSIStorageCapacity" => storage::v1::CSIStorageCapacity;
        "storage.k8s.io", "StorageClass" => storage::v1::StorageClass;
        "storage.k8s.io", "VolumeAttachment" => storage::v1::VolumeAttachment;
        "admissionregistration.k8s.io", "ValidatingAdmissionPolicy" => admissionregistration::v1::ValidatingAdmissionPolicy;
        "admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding" => admissionregistration::v1::ValidatingAdmissionPolicyBinding;
        "discovery.k8s.io", "EndpointSlice" => discovery::v1::EndpointSlice;
        "apiregistration.k8s.io", "APIService" => apiregistration::v1::APIService;
        "certificates.k8s.io", "CertificateSigningRequest" => certificates::v1::CertificateSigningRequest;
        "apps", "Deployment" => apps::v1::Deployment;
        "apps", "StatefulSet" => apps::v1::StatefulSet;
        "apps", "ReplicaSet" => apps::v1::ReplicaSet;
        "apps", "DaemonSet" => apps::v1::DaemonSet;
        "batch", "Job" => batch::v1::Job;
        "coordination.k8s.io", "Lease" => coordination::v1::Lease;
        "admissionregistration.k8s.io", "MutatingWebhookConfiguration" => admissionregistration::v1::MutatingWebhookConfiguration;
        "admissionregistration.k8s.io", "ValidatingWebhookConfiguration" => admissionregistration::v1::ValidatingWebhookConfiguration;
        "rbac.authorization.k8s.io", "Role" => rbac::v1::Role;
        "rbac.authorization.k8s.io", "RoleBinding" => rbac::v1::RoleBinding;
        "rbac.authorization.k8s.io", "ClusterRole" => rbac::v1::ClusterRole;
        "rbac.authorization.k8s.io", "ClusterRoleBinding" => rbac::v1::ClusterRoleBinding;
        "apiextensions.k8s.io", "CustomResourceDefinition" => apiextensions::v1::CustomResourceDefinition;
    }
}

fn decode<T: DeserializeOwned + serde::Serialize + Resource>(
    kind: &str,
    object: &mut Value,
) -> Result<Vec<String>, Problem> {
    // Go leaves a field alone for a null, where serde wants the type, and reads a quantity from a
    // number too; and the stored form may lack the type meta the k8s-openapi decoders insist on.
    let mut probe = without_nulls(object, false);
    if let Some(map) = probe.as_object_mut() {
        map.insert("apiVersion".into(), T::API_VERSION.into());
        map.insert("kind".into(), T::KIND.into());
    }
    // Decoded from text, so that an error has a position to name the field by.
    let text = probe.to_string();
    let typed = match serde_json::from_str::<T>(&text) {
        Ok(typed) => typed,
        Err(error) => {
            let message = error.to_string();
            // A missing required field is for validation to answer (422), as in Go, which has none.
            if message.starts_with("missing field") {
                return Ok(Vec::new());
            }
            return Err(Problem::WrongType(go_message(
                T::API_VERSION,
                kind,
                &message,
                &text,
                error.column(),
            )));
        }
    };
    let Ok(round_trip) = serde_json::to_value(&typed) else {
        return Ok(Vec::new());
    };
    let mut unknown = Vec::new();
    drop_unknown_fields(object, &round_trip, "", &mut unknown);
    Ok(unknown)
}

/// Maps of quantities, and quantities: Go's `resource.Quantity` reads `cpu: 1` as well as `cpu: "1"`.
const QUANTITY_MAPS: &[&str] = &[
    "limits",
    "requests",
    "hard",
    "used",
    "capacity",
    "allocatable",
    "overhead",
    // A LimitRange's bounds, a CSIStorageCapacity's limit, an autoscaler's metric targets.
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
    "maximumVolumeSize",
    "averageValue",
];

fn without_nulls(value: &Value, quantities: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let quantities = QUANTITY_MAPS.contains(&k.as_str());
                    (k.clone(), without_nulls(v, quantities))
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| without_nulls(v, false)).collect()),
        Value::Number(number) if quantities => Value::String(number.to_string()),
        other => other.clone(),
    }
}

/// Removes from `sent` the fields that did not survive decoding into the type and encoding back
/// (`kept`), and lists them. Nulls stay: decoding skipped them.
fn drop_unknown_fields(sent: &mut Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(sent), Value::Object(kept)) => {
            sent.retain(|key, value| {
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match kept.get(key) {
                    Some(kept) => {
                        drop_unknown_fields(value, kept, &field, out);
                        true
                    }
                    None if value.is_null() => true,
                    None => {
                        out.push(field);
                        false
                    }
                }
            });
        }
        (Value::Array(sent), Value::Array(kept)) => {
            for (i, (sent, kept)) in sent.iter_mut().zip(kept).enumerate() {
                drop_unknown_fields(sent, kept, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// serde's `invalid type: boolean `true`, expected a string` in Go's words.
fn go_message(api_version: &str, kind: &str, serde_message: &str, text: &str, column: usize) -> String {
    let field = field_at(text, column.saturating_sub(1));
    // Go names the struct that declares the field, its path from the root after it.
    let path: Vec<&str> = field.split('.').collect();
    let owner =
        apimachinery::protobuf::declaring_struct(api_version, kind, &path).unwrap_or_else(|| kind.to_owned());
    let kind = owner.as_str();
    let got = serde_message
        .strip_prefix("invalid type: ")
        .or_else(|| serde_message.strip_prefix("invalid value: "))
        .unwrap_or(serde_message);
    let (got, expected) = got.split_once(", expected ").unwrap_or((got, ""));
    let expected = expected.split(" at line ").next().unwrap_or(expected);
    let json_type = match got.split_whitespace().next().unwrap_or("") {
        "boolean" => "bool",
        "integer" | "floating" => "number",
        "string" => "string",
        "map" => "object",
        "sequence" => "array",
        other => other,
    };
    let go_type = match expected {
        "a string" | "string" => "string",
        "a boolean" | "bool" => "bool",
        "i32" => "int32",
        "i64" => "int64",
        "f64" => "float64",
        "a sequence" => "array",
        "a map" => "map[string]string",
        other => other,
    };
    if go_type.is_empty() {
        return format!("json: cannot unmarshal {json_type} into Go struct field {kind}.{field}");
    }
    format!("json: cannot unmarshal {json_type} into Go struct field {kind}.{field} of type {go_type}")
}

/// Fields whose values are maps with keys of the user's choosing: Go names the field, not the key.
const MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "data",
    "binaryData",
    "stringData",
    "nodeSelector",
    "matchLabels",
    "limits",
    "requests",
];

/// The dotted field path (no array indices, as Go writes it) of the value at byte `offset` of the
/// compact JSON `text`.
fn field_at(text: &str, offset: usize) -> String {
    enum Frame {
        Object { key: Option<String>, expect_key: bool },
        Array,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && i < offset {
        match bytes[i] {
            b'{' => stack.push(Frame::Object {
                key: None,
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object {
                    key,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    let raw = text.get(start..i.min(bytes.len())).unwrap_or_default();
                    *key =
                        Some(serde_json::from_str(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_owned()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut fields: Vec<&str> = stack
        .iter()
        .filter_map(|frame| match frame {
            Frame::Object { key, .. } => key.as_deref(),
            Frame::Array => None,
        })
        .collect();
    if fields.len() >= 2 && MAP_FIELDS.contains(&fields[fields.len() - 2]) {
        fields.pop();
    }
    fields.join(".")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rt(group: &str, kind: &str) -> ResourceType {
        apimachinery::resource::builtins()
            .into_iter()
            .find(|rt| rt.group == group && rt.kind == kind)
            .expect("a built-in")
    }

    #[test]
    fn a_boolean_in_config_map_data_is_named_as_go_names_it() {
        let mut object = json!({"metadata": {"name": "c"}, "data": {"x": true}});
        assert_eq!(
            check(&rt("", "ConfigMap"), &mut object),
            Err(Problem::WrongType(
                "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string".into()
            ))
        );
    }

    #[test]
    fn a_string_for_a_number_names_the_declaring_struct_and_the_field_path() {
        let mut object = json!({"metadata": {"name": "d"}, "spec": {"replicas": "three"}});
        assert_eq!(
            check(&rt("apps", "Deployment"), &mut object),
            Err(Problem::WrongType(
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
                    .into()
            ))
        );
        let mut object = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": 5}]}}}});
        assert_eq!(
            check(&rt("apps", "Deployment"), &mut object),
            Err(Problem::WrongType(
                "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.image of type string"
                    .into()
            ))
        );
    }

    #[test]
    fn fields_the_type_lacks_are_listed_and_dropped_and_nulls_and_missing_fields_pass() {
        let mut object = json!({"metadata": {"name": "d", "labels": null, "bogus": 1},
            "spec": {"foo": 1, "replicas": null, "template": {"spec": {"containers": [{"name": "a", "bar": 2,
                "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}});
        assert_eq!(
            check(&rt("apps", "Deployment"), &mut object),
            Ok(vec![
                "metadata.bogus".to_owned(),
                "spec.foo".to_owned(),
                "spec.template.spec.containers[0].bar".to_owned()
            ])
        );
        assert_eq!(
            object,
            json!({"metadata": {"name": "d", "labels": null}, "spec": {"replicas": null,
                "template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}})
        );
        let valid =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        assert_eq!(check(&rt("", "ConfigMap"), &mut valid.clone()), Ok(vec![]));
    }
}
