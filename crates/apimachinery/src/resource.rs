//! What a resource type is: the facts discovery, routing, validation and tables need about a kind.

use std::sync::Arc;

use serde_json::Value;

use crate::{FieldCause, schema::StructuralSchema, table::PrinterColumn};

/// Where a resource type comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    /// Served because of the CustomResourceDefinition with this name.
    Crd {
        name: String,
    },
}

/// One served resource (one group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The version objects are stored at (a CRD's storage version), which names the storage version
    /// hash discovery publishes.
    pub storage_version: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource (C7).
    pub status_subresource: bool,
    /// Has a `/scale` subresource: where the replicas and the selector are.
    pub scale: Option<ScalePaths>,
    /// Verbs served on the main resource (`create`, `delete`, `deletecollection`, `get`, `list`,
    /// `patch`, `update`, `watch`).
    pub verbs: Vec<String>,
    /// CRDs only: validation, defaulting and pruning (V2, V3).
    pub schema: Option<Arc<StructuralSchema>>,
    /// CRDs only: the printer columns besides Name (T1), their `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// CRDs only: the raw `openAPIV3Schema`, for OpenAPI documents (D8).
    pub openapi_schema: Option<Value>,
    /// Field selector labels allowed besides `metadata.name`/`metadata.namespace` (W2).
    pub field_labels: Vec<String>,
    pub origin: Origin,
}

/// Where a kind keeps what its `/scale` subresource (`autoscaling/v1` Scale) shows, as JSON paths
/// (`.spec.replicas`), the way a CRD's `subresources.scale` names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    /// A CRD's `labelSelectorPath`, a string in the object; `None` for the built-ins, whose selector
    /// is `spec.selector`.
    pub label_selector: Option<String>,
    /// The built-in's `spec.selector` is a plain map of labels (a ReplicationController's), not a
    /// `LabelSelector`.
    pub selector_is_label_map: bool,
}

impl ScalePaths {
    fn builtin(plural: &str) -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
            selector_is_label_map: plural == "replicationcontrollers",
        }
    }
}

impl ResourceType {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for core), as in Status messages: `postgreswriters.demo.yash.com "w1" not found`.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn is_builtin(&self) -> bool {
        self.origin == Origin::BuiltIn
    }
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct BuiltIn {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
    field_labels: &'static [&'static str],
    /// Create is the one verb (reviews).
    create_only: bool,
    /// Get and list are the only verbs.
    read_only: bool,
}

const fn builtin(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
) -> BuiltIn {
    BuiltIn {
        group,
        version,
        kind,
        plural,
        namespaced: true,
        short_names: &[],
        status: false,
        field_labels: &[],
        create_only: false,
        read_only: false,
    }
}

const fn review(group: &'static str, kind: &'static str, plural: &'static str) -> BuiltIn {
    BuiltIn {
        namespaced: false,
        create_only: true,
        ..builtin(group, "v1", kind, plural)
    }
}

/// A subresource as discovery describes it: its name, the kind it answers with and its verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    pub name: &'static str,
    /// `None`: the kind of the resource itself.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
}

const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];
const CONNECT: &[&str] = &["create", "get"];
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];

const fn sub(name: &'static str, kind: &'static str, verbs: &'static [&'static str]) -> Subresource {
    Subresource {
        name,
        kind: Some(("", "v1", kind)),
        verbs,
    }
}

/// Every subresource `rt` serves, by name: status and scale where the type has them, and the ones
/// built-in kinds have besides (the kubelet's pod endpoints, evictions and resizes, the node and service
/// proxies, a namespace's finalize, a service account's tokens, a CSR's approval).
pub fn subresources(rt: &ResourceType) -> Vec<Subresource> {
    let mut found = Vec::new();
    if rt.status_subresource {
        found.push(Subresource {
            name: "status",
            kind: None,
            verbs: GET_PATCH_UPDATE,
        });
    }
    if rt.scale.is_some() {
        found.push(Subresource {
            name: "scale",
            kind: Some(("autoscaling", "v1", "Scale")),
            verbs: GET_PATCH_UPDATE,
        });
    }
    if rt.is_builtin() {
        found.extend(match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "pods") => vec![
                sub("attach", "PodAttachOptions", CONNECT),
                sub("binding", "Binding", &["create"]),
                Subresource {
                    name: "ephemeralcontainers",
                    kind: None,
                    verbs: GET_PATCH_UPDATE,
                },
                Subresource {
                    name: "eviction",
                    kind: Some(("policy", "v1", "Eviction")),
                    verbs: &["create"],
                },
                sub("exec", "PodExecOptions", CONNECT),
                Subresource {
                    name: "log",
                    kind: None,
                    verbs: &["get"],
                },
                sub("portforward", "PodPortForwardOptions", CONNECT),
                sub("proxy", "PodProxyOptions", PROXY),
                Subresource {
                    name: "resize",
                    kind: None,
                    verbs: GET_PATCH_UPDATE,
                },
            ],
            ("", "namespaces") => vec![Subresource {
                name: "finalize",
                kind: None,
                verbs: &["update"],
            }],
            ("", "nodes") => vec![sub("proxy", "NodeProxyOptions", PROXY)],
            ("", "services") => vec![sub("proxy", "ServiceProxyOptions", PROXY)],
            ("", "serviceaccounts") => vec![Subresource {
                name: "token",
                kind: Some(("authentication.k8s.io", "v1", "TokenRequest")),
                verbs: &["create"],
            }],
            ("certificates.k8s.io", "certificatesigningrequests") => vec![Subresource {
                name: "approval",
                kind: None,
                verbs: GET_PATCH_UPDATE,
            }],
            _ => Vec::new(),
        });
    }
    found.sort_by_key(|s| s.name);
    found
}

/// The review kinds: created to ask the API server something, answered, never stored.
pub fn is_review(rt: &ResourceType) -> bool {
    rt.is_builtin() && rt.verbs == ["create"]
}

const CORE_EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

const EVENTS_V1_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "reason",
    "reportingController",
    "type",
];

/// Every built-in resource type the server serves (B1).
pub fn builtins() -> Vec<ResourceType> {
    let table = [
        BuiltIn {
            namespaced: false,
            short_names: &["ns"],
            status: true,
            ..builtin("", "v1", "Namespace", "namespaces")
        },
        BuiltIn {
            short_names: &["cm"],
            ..builtin("", "v1", "ConfigMap", "configmaps")
        },
        builtin("", "v1", "Secret", "secrets"),
        BuiltIn {
            short_names: &["svc"],
            status: true,
            ..builtin("", "v1", "Service", "services")
        },
        BuiltIn {
            short_names: &["ev"],
            field_labels: CORE_EVENT_FIELDS,
            ..builtin("", "v1", "Event", "events")
        },
        BuiltIn {
            short_names: &["po"],
            status: true,
            ..builtin("", "v1", "Pod", "pods")
        },
        BuiltIn {
            short_names: &["sa"],
            ..builtin("", "v1", "ServiceAccount", "serviceaccounts")
        },
        BuiltIn {
            short_names: &["ep"],
            ..builtin("", "v1", "Endpoints", "endpoints")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["no"],
            status: true,
            field_labels: &["spec.unschedulable"],
            ..builtin("", "v1", "Node", "nodes")
        },
        // Answered from what the server knows of itself, never stored: get and list only.
        BuiltIn {
            namespaced: false,
            short_names: &["cs"],
            read_only: true,
            ..builtin("", "v1", "ComponentStatus", "componentstatuses")
        },
        builtin("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin("apiregistration.k8s.io", "v1", "APIService", "apiservices")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["csr"],
            status: true,
            ..builtin(
                "certificates.k8s.io",
                "v1",
                "CertificateSigningRequest",
                "certificatesigningrequests",
            )
        },
        BuiltIn {
            short_names: &["deploy"],
            status: true,
            ..builtin("apps", "v1", "Deployment", "deployments")
        },
        BuiltIn {
            short_names: &["sts"],
            status: true,
            ..builtin("apps", "v1", "StatefulSet", "statefulsets")
        },
        BuiltIn {
            short_names: &["rs"],
            status: true,
            ..builtin("apps", "v1", "ReplicaSet", "replicasets")
        },
        builtin("coordination.k8s.io", "v1", "Lease", "leases"),
        BuiltIn {
            short_names: &["ev"],
            field_labels: EVENTS_V1_FIELDS,
            ..builtin("events.k8s.io", "v1", "Event", "events")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["crd", "crds"],
            status: true,
            ..builtin(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
            )
        },
        BuiltIn {
            namespaced: false,
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
            )
        },
        BuiltIn {
            namespaced: false,
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            )
        },
        builtin("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        BuiltIn {
            namespaced: false,
            ..builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles")
        },
        BuiltIn {
            namespaced: false,
            ..builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
            )
        },
        BuiltIn {
            status: true,
            ..builtin("batch", "v1", "Job", "jobs")
        },
        BuiltIn {
            short_names: &["cj"],
            status: true,
            ..builtin("batch", "v1", "CronJob", "cronjobs")
        },
        BuiltIn {
            short_names: &["limits"],
            ..builtin("", "v1", "LimitRange", "limitranges")
        },
        BuiltIn {
            short_names: &["pvc"],
            status: true,
            ..builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["pv"],
            status: true,
            ..builtin("", "v1", "PersistentVolume", "persistentvolumes")
        },
        builtin("", "v1", "PodTemplate", "podtemplates"),
        BuiltIn {
            short_names: &["rc"],
            status: true,
            field_labels: &["status.replicas"],
            ..builtin("", "v1", "ReplicationController", "replicationcontrollers")
        },
        BuiltIn {
            short_names: &["quota"],
            status: true,
            ..builtin("", "v1", "ResourceQuota", "resourcequotas")
        },
        builtin("apps", "v1", "ControllerRevision", "controllerrevisions"),
        BuiltIn {
            short_names: &["ds"],
            status: true,
            ..builtin("apps", "v1", "DaemonSet", "daemonsets")
        },
        // One kind in two versions, stored at v2, the version discovery prefers (listed first).
        BuiltIn {
            short_names: &["hpa"],
            status: true,
            ..builtin(
                "autoscaling",
                "v2",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
            )
        },
        BuiltIn {
            short_names: &["hpa"],
            status: true,
            ..builtin(
                "autoscaling",
                "v1",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
            )
        },
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas")
        },
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin(
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "PriorityLevelConfiguration",
                "prioritylevelconfigurations",
            )
        },
        BuiltIn {
            namespaced: false,
            ..builtin("networking.k8s.io", "v1", "IngressClass", "ingressclasses")
        },
        BuiltIn {
            short_names: &["ing"],
            status: true,
            ..builtin("networking.k8s.io", "v1", "Ingress", "ingresses")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["ip"],
            ..builtin("networking.k8s.io", "v1", "IPAddress", "ipaddresses")
        },
        BuiltIn {
            short_names: &["netpol"],
            ..builtin("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies")
        },
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs")
        },
        BuiltIn {
            namespaced: false,
            ..builtin("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses")
        },
        BuiltIn {
            short_names: &["pdb"],
            status: true,
            ..builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
        },
        BuiltIn {
            namespaced: false,
            short_names: &["pc"],
            ..builtin("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses")
        },
        BuiltIn {
            namespaced: false,
            ..builtin("storage.k8s.io", "v1", "CSIDriver", "csidrivers")
        },
        BuiltIn {
            namespaced: false,
            ..builtin("storage.k8s.io", "v1", "CSINode", "csinodes")
        },
        builtin(
            "storage.k8s.io",
            "v1",
            "CSIStorageCapacity",
            "csistoragecapacities",
        ),
        BuiltIn {
            namespaced: false,
            short_names: &["sc"],
            ..builtin("storage.k8s.io", "v1", "StorageClass", "storageclasses")
        },
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments")
        },
        BuiltIn {
            namespaced: false,
            status: true,
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingAdmissionPolicy",
                "validatingadmissionpolicies",
            )
        },
        BuiltIn {
            namespaced: false,
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingAdmissionPolicyBinding",
                "validatingadmissionpolicybindings",
            )
        },
        // Reviews are asked, not stored: create is their one verb. These answer about the asker.
        review(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
        ),
        review("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews"),
        // And about others: whose a token is, what a user may do.
        review("authentication.k8s.io", "TokenReview", "tokenreviews"),
        review(
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
        ),
        BuiltIn {
            namespaced: true,
            ..review(
                "authorization.k8s.io",
                "LocalSubjectAccessReview",
                "localsubjectaccessreviews",
            )
        },
        // A pod's binding to a node, created in the pod's namespace (as `pods/binding` is).
        BuiltIn {
            namespaced: true,
            ..review("", "Binding", "bindings")
        },
    ];
    table
        .into_iter()
        .map(|b| ResourceType {
            group: b.group.to_owned(),
            version: b.version.to_owned(),
            kind: b.kind.to_owned(),
            // kube-apiserver still encodes CRDs, IP addresses and service CIDRs as v1beta1 in etcd, and
            // every HorizontalPodAutoscaler as v2, which their hashes say.
            storage_version: match b.plural {
                "customresourcedefinitions" | "ipaddresses" | "servicecidrs" => "v1beta1".to_owned(),
                "horizontalpodautoscalers" => "v2".to_owned(),
                _ => b.version.to_owned(),
            },
            plural: b.plural.to_owned(),
            singular: b.kind.to_lowercase(),
            namespaced: b.namespaced,
            short_names: b.short_names.iter().map(|s| (*s).to_owned()).collect(),
            categories: match b.plural {
                "pods"
                | "services"
                | "deployments"
                | "statefulsets"
                | "replicasets"
                | "daemonsets"
                | "replicationcontrollers"
                | "jobs"
                | "cronjobs"
                | "horizontalpodautoscalers" => vec!["all".to_owned()],
                "customresourcedefinitions"
                | "apiservices"
                | "mutatingwebhookconfigurations"
                | "validatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings" => vec!["api-extensions".to_owned()],
                _ => Vec::new(),
            },
            status_subresource: b.status,
            scale: matches!(
                b.plural,
                "deployments" | "statefulsets" | "replicasets" | "replicationcontrollers"
            )
            .then(|| ScalePaths::builtin(b.plural)),
            // The real server has no deletecollection on namespaces.
            verbs: ALL_VERBS
                .iter()
                .filter(|v| !b.create_only || **v == "create")
                .filter(|v| !b.read_only || matches!(**v, "get" | "list"))
                .filter(|v| b.plural != "namespaces" || **v != "deletecollection")
                .map(|v| (*v).to_owned())
                .collect(),
            schema: None,
            openapi_schema: None,
            printer_columns: Vec::new(),
            field_labels: b.field_labels.iter().map(|s| (*s).to_owned()).collect(),
            origin: Origin::BuiltIn,
        })
        .collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The resource types a CustomResourceDefinition serves (one per served version). The CRD must already
/// have passed [`crate::schema::validate_crd`].
pub fn from_crd(crd: &Value) -> Result<Vec<ResourceType>, Vec<FieldCause>> {
    let text = |pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let kind = text("/spec/names/kind");
    let singular = Some(text("/spec/names/singular"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| kind.to_lowercase());
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let mut types = Vec::new();
    for (index, version) in versions.iter().enumerate() {
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let raw_schema = version.pointer("/schema/openAPIV3Schema").cloned();
        let schema = match &raw_schema {
            Some(raw) => Some(Arc::new(StructuralSchema::compile(raw).map_err(|causes| {
                causes
                    .into_iter()
                    .map(|mut c| {
                        let prefix = format!("spec.versions[{index}].schema.openAPIV3Schema");
                        c.field = if c.field.is_empty() {
                            prefix
                        } else {
                            format!("{prefix}.{}", c.field)
                        };
                        c
                    })
                    .collect::<Vec<_>>()
            })?)),
            None => None,
        };
        let printer_columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: c
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        column_type: c
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("string")
                            .to_owned(),
                        format: c
                            .get("format")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        description: c
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: c
                            .get("jsonPath")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        types.push(ResourceType {
            group: text("/spec/group"),
            version: version
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            kind: kind.clone(),
            storage_version: storage_version.clone(),
            plural: text("/spec/names/plural"),
            singular: singular.clone(),
            namespaced: text("/spec/scope") != "Cluster",
            short_names: strings(crd.pointer("/spec/names/shortNames")),
            categories: strings(crd.pointer("/spec/names/categories")),
            status_subresource: version.pointer("/subresources/status").is_some(),
            scale: version.pointer("/subresources/scale").map(|scale| {
                let path = |key: &str| scale.get(key).and_then(Value::as_str).map(str::to_owned);
                ScalePaths {
                    spec_replicas: path("specReplicasPath").unwrap_or_default(),
                    status_replicas: path("statusReplicasPath").unwrap_or_default(),
                    label_selector: path("labelSelectorPath"),
                    selector_is_label_map: false,
                }
            }),
            verbs: ALL_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            schema,
            openapi_schema: raw_schema,
            printer_columns,
            // A CRD's selectable fields are the field labels its objects may be selected by.
            field_labels: version
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|path| path.trim_start_matches('.').to_owned())
                .collect(),
            origin: Origin::Crd {
                name: text("/metadata/name"),
            },
        });
    }
    Ok(types)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn find<'a>(types: &'a [ResourceType], group: &str, plural: &str) -> &'a ResourceType {
        types
            .iter()
            .find(|rt| rt.group == group && rt.plural == plural)
            .unwrap()
    }

    #[test]
    fn b1_builtins_have_kubectl_short_names_scopes_and_status() {
        let types = builtins();
        let ns = find(&types, "", "namespaces");
        assert!(!ns.namespaced && ns.short_names == ["ns"]);
        assert!(!ns.verbs.contains(&"deletecollection".to_owned()));
        let deploy = find(&types, "apps", "deployments");
        assert_eq!(deploy.api_version(), "apps/v1");
        assert!(deploy.status_subresource && deploy.categories == ["all"]);
        assert_eq!(deploy.verbs.len(), 8);
        let crd = find(&types, "apiextensions.k8s.io", "customresourcedefinitions");
        assert!(!crd.namespaced && crd.short_names == ["crd", "crds"]);
        assert_eq!(
            crd.qualified_plural(),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
        assert!(!find(&types, "rbac.authorization.k8s.io", "clusterrolebindings").namespaced);
        assert!(find(&types, "coordination.k8s.io", "leases").namespaced);
        assert_eq!(find(&types, "", "configmaps").list_kind(), "ConfigMapList");
    }

    #[test]
    fn b1_the_other_built_ins_have_kube_apiservers_scope_names_and_subresources() {
        let types = builtins();
        let controllers = find(&types, "", "replicationcontrollers");
        assert_eq!(controllers.short_names, ["rc"]);
        assert_eq!(controllers.categories, ["all"]);
        assert!(controllers.status_subresource);
        assert!(
            controllers
                .scale
                .as_ref()
                .is_some_and(|s| s.selector_is_label_map)
        );
        assert_eq!(controllers.field_labels, ["status.replicas"]);
        let volumes = find(&types, "", "persistentvolumes");
        assert!(!volumes.namespaced && volumes.status_subresource && volumes.short_names == ["pv"]);
        let autoscalers: Vec<&ResourceType> = types
            .iter()
            .filter(|rt| rt.plural == "horizontalpodautoscalers")
            .collect();
        assert_eq!(autoscalers.len(), 2);
        assert!(
            autoscalers
                .iter()
                .all(|rt| rt.storage_version == "v2" && rt.categories == ["all"])
        );
        assert_eq!(
            find(&types, "networking.k8s.io", "servicecidrs").storage_version,
            "v1beta1"
        );
        let policies = find(
            &types,
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
        );
        assert_eq!(policies.categories, ["api-extensions"]);
        assert!(find(&types, "storage.k8s.io", "csistoragecapacities").namespaced);
        assert!(find(&types, "apps", "daemonsets").scale.is_none());
    }

    #[test]
    fn w2_event_field_labels_for_both_event_groups() {
        let types = builtins();
        let core = find(&types, "", "events");
        assert!(core.field_labels.contains(&"involvedObject.uid".to_owned()));
        assert!(core.field_labels.contains(&"reason".to_owned()));
        let events = find(&types, "events.k8s.io", "events");
        assert!(events.field_labels.contains(&"regarding.name".to_owned()));
        assert!(events.field_labels.contains(&"reportingController".to_owned()));
    }

    fn crd() -> Value {
        json!({
            "metadata": {"name": "postgreswriters.demo.yash.com"},
            "spec": {
                "group": "demo.yash.com",
                "scope": "Namespaced",
                "names": {"kind": "PostgresWriter", "plural": "postgreswriters", "shortNames": ["pw"],
                          "categories": ["all"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "additionalPrinterColumns": [
                         {"name": "Table", "type": "string", "jsonPath": ".spec.table", "priority": 1}
                     ],
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "properties": {"spec": {"type": "object", "properties": {"table": {"type": "string"}}}}}}},
                    {"name": "v1alpha1", "served": false, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": true, "storage": false, "scale": null,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
                ]
            }
        })
    }

    #[test]
    fn crd_serves_one_resource_type_per_served_version() {
        let types = from_crd(&crd()).unwrap();
        let versions: Vec<&str> = types.iter().map(|rt| rt.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v2"]);
        let v1 = &types[0];
        assert_eq!(v1.api_version(), "demo.yash.com/v1");
        assert_eq!(
            v1.singular, "postgreswriter",
            "singular defaults to the lowercase kind"
        );
        assert!(v1.namespaced && v1.status_subresource && !types[1].status_subresource);
        assert_eq!(v1.short_names, ["pw"]);
        assert_eq!(v1.categories, ["all"]);
        assert_eq!(v1.printer_columns[0].name, "Table");
        assert_eq!(v1.printer_columns[0].json_path, ".spec.table");
        assert_eq!(v1.printer_columns[0].priority, 1);
        assert!(v1.schema.is_some());
        assert_eq!(v1.openapi_schema.as_ref().unwrap()["type"], "object");
        assert_eq!(
            v1.origin,
            Origin::Crd {
                name: "postgreswriters.demo.yash.com".into()
            }
        );
        assert!(!v1.is_builtin());
    }

    #[test]
    fn cluster_scoped_crd_is_not_namespaced() {
        let mut crd = crd();
        crd["spec"]["scope"] = json!("Cluster");
        crd["spec"]["names"]["singular"] = json!("pwriter");
        let types = from_crd(&crd).unwrap();
        assert!(!types[0].namespaced);
        assert_eq!(types[0].singular, "pwriter");
    }
}
