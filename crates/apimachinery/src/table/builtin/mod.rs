//! The printers of the built-in kinds: the columns kube-apiserver's Table for each kind has, and the
//! cells it computes from an object. Column descriptions come from the API documentation of the field
//! a column shows, where it shows one.

mod access;
mod autoscaling;
mod cluster;
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

use serde_json::Value;

use super::ColumnDefinition;
use crate::openapi::definitions::{OBJECT_META, definitions};

/// Where a column's description comes from.
#[derive(Debug, Clone, Copy)]
pub enum Doc {
    /// The documentation of a field: (definition, property).
    Field(&'static str, &'static str),
    /// Its first paragraph, without the list of an enum's values.
    Summary(&'static str, &'static str),
    Text(&'static str),
}

/// One column of a built-in kind.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub column_type: &'static str,
    pub format: &'static str,
    pub priority: i64,
    pub doc: Doc,
}

/// A column of type string, shown by default.
pub const fn column(name: &'static str, doc: Doc) -> Column {
    Column {
        name,
        column_type: "string",
        format: "",
        priority: 0,
        doc,
    }
}

/// A column shown with `-o wide` only.
pub const fn wide(name: &'static str, doc: Doc) -> Column {
    Column {
        priority: 1,
        ..column(name, doc)
    }
}

pub const NAME: Column = Column {
    format: "name",
    ..column("Name", Doc::Field(OBJECT_META, "name"))
};
pub const AGE: Column = column("Age", Doc::Field(OBJECT_META, "creationTimestamp"));
pub const CONTAINERS: Column = wide(
    "Containers",
    Doc::Text("Names of each container in the template."),
);
pub const IMAGES: Column = wide(
    "Images",
    Doc::Text("Images referenced by each container in the template."),
);

/// A built-in kind's printer.
#[derive(Debug)]
pub struct BuiltInTable {
    pub columns: &'static [Column],
    /// Every cell of a row, wide ones included: kube-apiserver sends them all and kubectl hides the
    /// columns of priority above 0 unless asked for `-o wide`.
    pub cells: fn(&Value, jiff::Timestamp) -> Vec<Value>,
}

impl BuiltInTable {
    pub fn column_definitions(&self) -> Vec<ColumnDefinition> {
        self.columns
            .iter()
            .map(|c| ColumnDefinition {
                name: c.name.into(),
                column_type: c.column_type.into(),
                format: c.format.into(),
                description: describe(c.doc),
                priority: c.priority,
            })
            .collect()
    }
}

fn describe(doc: Doc) -> String {
    match doc {
        Doc::Field(definition, field) => definitions()
            .field_description(definition, field)
            .unwrap_or_default()
            .to_owned(),
        Doc::Summary(definition, field) => {
            let full = definitions()
                .field_description(definition, field)
                .unwrap_or_default();
            full.split("\n\n").next().unwrap_or_default().to_owned()
        }
        Doc::Text(text) => text.to_owned(),
    }
}

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
