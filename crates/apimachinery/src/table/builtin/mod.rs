//! The printers of the built-in kinds: the columns kube-apiserver's Table for each kind has, and the
//! cells it computes from an object. Column descriptions come from the API documentation of the field
//! a column shows, where it shows one.

mod access;
mod autoscaling;
mod cluster;
mod columns;
mod config;
mod controllers;
mod events;
mod fields;
mod flowcontrol;
mod network;
mod networking;
mod pod;
mod policy;
mod storage;
mod workloads;

pub use columns::{AGE, BuiltInTable, CONTAINERS, Column, Doc, IMAGES, NAME, column, wide};

/// The printer of a built-in kind, or `None` for kinds printed with Name and Created At.
pub fn table(group: &str, kind: &str) -> Option<&'static BuiltInTable> {
    Some(match (group, kind) {
        ("", "Namespace") => &config::NAMESPACE,
        ("", "ConfigMap") => &config::CONFIG_MAP,
        ("", "Secret") => &config::SECRET,
        ("", "ServiceAccount") => &config::SERVICE_ACCOUNT,
        ("coordination.k8s.io", "Lease") => &config::LEASE,
        ("", "Service") => &network::SERVICE,
        ("", "Node") => &cluster::NODE,
        ("", "ComponentStatus") => &cluster::COMPONENT_STATUS,
        ("", "Endpoints") => &cluster::ENDPOINTS,
        ("discovery.k8s.io", "EndpointSlice") => &cluster::ENDPOINT_SLICE,
        ("apiregistration.k8s.io", "APIService") => &cluster::API_SERVICE,
        ("certificates.k8s.io", "CertificateSigningRequest") => &cluster::CERTIFICATE_SIGNING_REQUEST,
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => &cluster::WEBHOOK_CONFIGURATION,
        ("", "Pod") => &pod::POD,
        ("", "Event") => &events::CORE_EVENT,
        ("events.k8s.io", "Event") => &events::EVENT,
        ("apps", "Deployment") => &workloads::DEPLOYMENT,
        ("apps", "ReplicaSet") => &workloads::REPLICA_SET,
        ("apps", "StatefulSet") => &workloads::STATEFUL_SET,
        ("batch", "Job") => &workloads::JOB,
        ("apps", "DaemonSet") => &controllers::DAEMON_SET,
        ("", "ReplicationController") => &controllers::REPLICATION_CONTROLLER,
        ("batch", "CronJob") => &controllers::CRON_JOB,
        ("", "PodTemplate") => &controllers::POD_TEMPLATE,
        ("apps", "ControllerRevision") => &controllers::CONTROLLER_REVISION,
        ("autoscaling", "HorizontalPodAutoscaler") => &autoscaling::HORIZONTAL_POD_AUTOSCALER,
        ("", "PersistentVolume") => &storage::PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &storage::PERSISTENT_VOLUME_CLAIM,
        ("storage.k8s.io", "StorageClass") => &storage::STORAGE_CLASS_TABLE,
        ("storage.k8s.io", "CSIDriver") => &storage::CSI_DRIVER,
        ("storage.k8s.io", "CSINode") => &storage::CSI_NODE,
        ("storage.k8s.io", "VolumeAttachment") => &storage::VOLUME_ATTACHMENT,
        ("networking.k8s.io", "Ingress") => &networking::INGRESS,
        ("networking.k8s.io", "IngressClass") => &networking::INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &networking::NETWORK_POLICY,
        ("networking.k8s.io", "ServiceCIDR") => &networking::SERVICE_CIDR,
        ("networking.k8s.io", "IPAddress") => &networking::IP_ADDRESS,
        ("", "ResourceQuota") => &policy::RESOURCE_QUOTA,
        ("policy", "PodDisruptionBudget") => &policy::POD_DISRUPTION_BUDGET,
        ("scheduling.k8s.io", "PriorityClass") => &policy::PRIORITY_CLASS_TABLE,
        ("node.k8s.io", "RuntimeClass") => &policy::RUNTIME_CLASS,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => &policy::VALIDATING_ADMISSION_POLICY,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            &policy::VALIDATING_ADMISSION_POLICY_BINDING
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => &flowcontrol::FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            &flowcontrol::PRIORITY_LEVEL_CONFIGURATION
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => &access::ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => &access::CLUSTER_ROLE_BINDING,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_descriptions_come_from_the_api_documentation() {
        let service = table("", "Service").unwrap().column_definitions();
        let kind = service.iter().find(|c| c.name == "Type").unwrap();
        assert!(
            kind.description
                .starts_with("type determines how the Service is exposed.")
        );
        assert!(
            !kind.description.contains("Possible enum values"),
            "{}",
            kind.description
        );
        let config_maps = table("", "ConfigMap").unwrap().column_definitions();
        assert!(
            config_maps[1]
                .description
                .starts_with("Data contains the configuration data.")
        );
        assert!(config_maps.iter().all(|c| !c.description.is_empty()));
    }
}
