//! Every built-in resource type the server serves: its group, version, kind, scope, short names,
//! verbs, subresources' presence and field selectors, as kube-apiserver 1.33 registers them.

use super::{ALL_VERBS, Origin, ResourceType, ScalePaths};

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
