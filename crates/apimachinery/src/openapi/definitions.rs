//! The OpenAPI definitions of every built-in kind, generated once from k8s-openapi's `schemars`
//! implementations, keyed by their Kubernetes definition names (`io.k8s.api.apps.v1.Deployment`).

use std::sync::OnceLock;

use k8s_openapi::{
    api::{
        admissionregistration::v1 as admissionregistration, apps::v1 as apps,
        authentication::v1 as authentication, authorization::v1 as authorization,
        autoscaling::v1 as autoscaling, autoscaling::v2 as autoscaling_v2, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
        networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions,
    apimachinery::pkg::apis::meta::v1 as meta,
    kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration,
    schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings},
};
use serde_json::{Map, Value};

/// `ObjectMeta`'s definition name, whose field documentation names and ages many columns.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// One built-in kind and the name of its definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltInKind {
    /// The API group; empty for the core group.
    pub group: &'static str,
    /// `v1`, `v2` ...
    pub version: &'static str,
    /// `Deployment`.
    pub kind: &'static str,
    /// Its definition's name, `io.k8s.api.apps.v1.Deployment`.
    pub definition: String,
}

/// The generated definitions and which kind each top-level one describes.
#[derive(Debug)]
pub struct Definitions {
    /// Every definition, the kinds' and those they refer to, by name; OpenAPI v3 schemas.
    pub schemas: Map<String, Value>,
    /// The built-in kinds, each with the name of its definition in `schemas`.
    pub kinds: Vec<BuiltInKind>,
}

fn add<T: JsonSchema>(
    generator: &mut SchemaGenerator,
    kinds: &mut Vec<BuiltInKind>,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
) {
    generator.subschema_for::<T>();
    // k8s-openapi names every definition after its Kubernetes name.
    kinds.push(BuiltInKind {
        group,
        version,
        kind,
        definition: T::schema_name().into_owned(),
    });
}

fn generate() -> Definitions {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let mut kinds = Vec::new();
    let g = &mut generator;
    let k = &mut kinds;
    add::<core::Namespace>(g, k, "", "v1", "Namespace");
    add::<core::ConfigMap>(g, k, "", "v1", "ConfigMap");
    add::<core::Secret>(g, k, "", "v1", "Secret");
    add::<core::Service>(g, k, "", "v1", "Service");
    add::<core::Event>(g, k, "", "v1", "Event");
    add::<core::Pod>(g, k, "", "v1", "Pod");
    add::<core::ServiceAccount>(g, k, "", "v1", "ServiceAccount");
    add::<core::Endpoints>(g, k, "", "v1", "Endpoints");
    add::<core::Node>(g, k, "", "v1", "Node");
    add::<core::ComponentStatus>(g, k, "", "v1", "ComponentStatus");
    add::<core::Binding>(g, k, "", "v1", "Binding");
    add::<discovery::EndpointSlice>(g, k, "discovery.k8s.io", "v1", "EndpointSlice");
    add::<apiregistration::APIService>(g, k, "apiregistration.k8s.io", "v1", "APIService");
    add::<certificates::CertificateSigningRequest>(
        g,
        k,
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
    );
    add::<authentication::TokenRequest>(g, k, "authentication.k8s.io", "v1", "TokenRequest");
    add::<apps::Deployment>(g, k, "apps", "v1", "Deployment");
    add::<apps::StatefulSet>(g, k, "apps", "v1", "StatefulSet");
    add::<apps::ReplicaSet>(g, k, "apps", "v1", "ReplicaSet");
    add::<coordination::Lease>(g, k, "coordination.k8s.io", "v1", "Lease");
    add::<events::Event>(g, k, "events.k8s.io", "v1", "Event");
    add::<apiextensions::CustomResourceDefinition>(
        g,
        k,
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    );
    let admission = "admissionregistration.k8s.io";
    add::<admissionregistration::MutatingWebhookConfiguration>(
        g,
        k,
        admission,
        "v1",
        "MutatingWebhookConfiguration",
    );
    add::<admissionregistration::ValidatingWebhookConfiguration>(
        g,
        k,
        admission,
        "v1",
        "ValidatingWebhookConfiguration",
    );
    add::<rbac::Role>(g, k, "rbac.authorization.k8s.io", "v1", "Role");
    add::<rbac::RoleBinding>(g, k, "rbac.authorization.k8s.io", "v1", "RoleBinding");
    add::<rbac::ClusterRole>(g, k, "rbac.authorization.k8s.io", "v1", "ClusterRole");
    add::<rbac::ClusterRoleBinding>(g, k, "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding");
    add::<batch::Job>(g, k, "batch", "v1", "Job");
    add::<authorization::SelfSubjectAccessReview>(
        g,
        k,
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
    );
    add::<authorization::SelfSubjectRulesReview>(
        g,
        k,
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
    );
    add::<authentication::SelfSubjectReview>(g, k, "authentication.k8s.io", "v1", "SelfSubjectReview");
    add::<authentication::TokenReview>(g, k, "authentication.k8s.io", "v1", "TokenReview");
    add::<authorization::SubjectAccessReview>(g, k, "authorization.k8s.io", "v1", "SubjectAccessReview");
    add::<authorization::LocalSubjectAccessReview>(
        g,
        k,
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
    );
    add::<autoscaling::Scale>(g, k, "autoscaling", "v1", "Scale");
    add_volumes_and_policies(g, k);
    // What every group version's operations answer or take besides its kinds.
    add::<meta::Status>(g, k, "", "v1", "Status");
    add::<meta::DeleteOptions>(g, k, "", "v1", "DeleteOptions");
    add::<meta::APIResourceList>(g, k, "", "v1", "APIResourceList");
    let schemas = generator.take_definitions(true);
    Definitions { schemas, kinds }
}

/// The kinds of storage, quotas, autoscaling, networking, scheduling, flow control and admission
/// policies.
fn add_volumes_and_policies(g: &mut SchemaGenerator, k: &mut Vec<BuiltInKind>) {
    add::<core::LimitRange>(g, k, "", "v1", "LimitRange");
    add::<core::PersistentVolumeClaim>(g, k, "", "v1", "PersistentVolumeClaim");
    add::<core::PersistentVolume>(g, k, "", "v1", "PersistentVolume");
    add::<core::PodTemplate>(g, k, "", "v1", "PodTemplate");
    add::<core::ReplicationController>(g, k, "", "v1", "ReplicationController");
    add::<core::ResourceQuota>(g, k, "", "v1", "ResourceQuota");
    add::<apps::ControllerRevision>(g, k, "apps", "v1", "ControllerRevision");
    add::<apps::DaemonSet>(g, k, "apps", "v1", "DaemonSet");
    let hpa = "HorizontalPodAutoscaler";
    add::<autoscaling_v2::HorizontalPodAutoscaler>(g, k, "autoscaling", "v2", hpa);
    add::<autoscaling::HorizontalPodAutoscaler>(g, k, "autoscaling", "v1", hpa);
    add::<batch::CronJob>(g, k, "batch", "v1", "CronJob");
    let flow = "flowcontrol.apiserver.k8s.io";
    add::<flowcontrol::FlowSchema>(g, k, flow, "v1", "FlowSchema");
    add::<flowcontrol::PriorityLevelConfiguration>(g, k, flow, "v1", "PriorityLevelConfiguration");
    let net = "networking.k8s.io";
    add::<networking::IngressClass>(g, k, net, "v1", "IngressClass");
    add::<networking::Ingress>(g, k, net, "v1", "Ingress");
    add::<networking::IPAddress>(g, k, net, "v1", "IPAddress");
    add::<networking::NetworkPolicy>(g, k, net, "v1", "NetworkPolicy");
    add::<networking::ServiceCIDR>(g, k, net, "v1", "ServiceCIDR");
    add::<node::RuntimeClass>(g, k, "node.k8s.io", "v1", "RuntimeClass");
    add::<policy::PodDisruptionBudget>(g, k, "policy", "v1", "PodDisruptionBudget");
    add::<scheduling::PriorityClass>(g, k, "scheduling.k8s.io", "v1", "PriorityClass");
    let sto = "storage.k8s.io";
    add::<storage::CSIDriver>(g, k, sto, "v1", "CSIDriver");
    add::<storage::CSINode>(g, k, sto, "v1", "CSINode");
    add::<storage::CSIStorageCapacity>(g, k, sto, "v1", "CSIStorageCapacity");
    add::<storage::StorageClass>(g, k, sto, "v1", "StorageClass");
    add::<storage::VolumeAttachment>(g, k, sto, "v1", "VolumeAttachment");
    let admission = "admissionregistration.k8s.io";
    add::<admissionregistration::ValidatingAdmissionPolicy>(
        g,
        k,
        admission,
        "v1",
        "ValidatingAdmissionPolicy",
    );
    add::<admissionregistration::ValidatingAdmissionPolicyBinding>(
        g,
        k,
        admission,
        "v1",
        "ValidatingAdmissionPolicyBinding",
    );
}

/// Every built-in definition, generated on first use.
pub fn definitions() -> &'static Definitions {
    static DEFINITIONS: OnceLock<Definitions> = OnceLock::new();
    DEFINITIONS.get_or_init(generate)
}

impl Definitions {
    /// The definition name of a built-in kind.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&BuiltInKind> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
    }

    /// The documentation of `field` in `definition`, as the API documents it.
    pub fn field_description(&self, definition: &str, field: &str) -> Option<&str> {
        self.schemas
            .get(definition)?
            .get("properties")?
            .get(field)?
            .get("description")?
            .as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_definitions_carry_the_api_documentation() {
        let definitions = definitions();
        let deployment = definitions.kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(deployment.definition, "io.k8s.api.apps.v1.Deployment");
        let spec = definitions.schemas["io.k8s.api.apps.v1.DeploymentSpec"].clone();
        assert_eq!(spec["properties"]["replicas"]["type"], "integer");
        assert!(
            definitions
                .field_description(OBJECT_META, "name")
                .unwrap()
                .starts_with("Name must be unique within a namespace.")
        );
        // Referenced types are defined too, and a reference with siblings is wrapped as OpenAPI 3.0
        // requires, as kube-apiserver publishes it.
        let metadata = &definitions.schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["metadata"];
        assert_eq!(
            metadata["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(definitions.schemas.contains_key(OBJECT_META));
    }
}
