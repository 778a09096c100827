//! What is special about each kind, one module each, as kube-apiserver keeps a strategy per kind in
//! its registry: the fields the server sets on a create or an update, the checks that need the
//! store's state, its names and validation, what a `/status` write takes, when a deleted object
//! may go, and which objects may not be deleted at all; and the facts of its registry the routing
//! asks (whether `metadata.generation` counts, what a DELETE answers and orphans, a deprecation, a
//! computed list, which subresources write the status). Every kind with rules of its own is
//! registered in [`KINDS`], by group and resource; the generic code asks the table ([`of`],
//! [`named`]) and names no kind. What another layer needs of one particular kind is a function of
//! that kind's module: a Namespace for admission's selectors ([`namespaces::stored`]), where a
//! Service is dialled ([`services::dial`]), whether a ServiceAccount still exists, a CRD for its
//! conversion webhook, an `events.k8s.io` Event's managedFields. A change for one kind goes in its
//! module here.
//!
//! What controllers do about a kind (a namespace's teardown, a CRD's establishing) is theirs, in
//! `emulated/`.

mod admission_registration;
mod api_services;
mod apps;
mod bindings;
mod certificate_signing_requests;
mod component_statuses;
pub(crate) mod crds;
mod csi_drivers;
mod endpoint_slices;
mod endpoints;
pub(crate) mod events;
mod kind;
mod metadata_maps;
pub(crate) mod namespaces;
mod nodes;
pub(crate) mod pods;
mod priority_classes;
mod rbac;
mod registry_flags;
mod replication_controllers;
pub(crate) mod service_accounts;
pub(crate) mod services;

pub(crate) use kind::Kind;

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use admission_registration::WebhookConfigurations;
use api_services::ApiServices;
use apps::{DEPLOYMENTS, REPLICA_SETS, Workloads};
use bindings::Bindings;
use certificate_signing_requests::CertificateSigningRequests;
use component_statuses::ComponentStatuses;
use crds::CustomResourceDefinitions;
use csi_drivers::CsiDrivers;
use endpoint_slices::EndpointSlices;
use endpoints::Endpoints;
use events::Events;
use namespaces::Namespaces;
use nodes::Nodes;
use pods::Pods;
use priority_classes::PriorityClasses;
use rbac::Rbac;
use registry_flags::{
    RETURNS_DELETED_OBJECT, TRACKS_GENERATION, TRACKS_GENERATION_AND_RETURNS_DELETED_OBJECT,
};
use replication_controllers::ReplicationControllers;
use services::Services;

use crate::{
    error::Error,
    store::{KindRules, Preparing},
};

/// The kinds with rules of their own: (group, resource, rules).
static KINDS: &[(&str, &str, &dyn Kind)] = &[
    ("", "bindings", &Bindings),
    ("", "componentstatuses", &ComponentStatuses),
    ("", "endpoints", &Endpoints),
    ("", "events", &Events),
    ("", "namespaces", &Namespaces),
    ("", "nodes", &Nodes),
    ("", "persistentvolumeclaims", &RETURNS_DELETED_OBJECT),
    ("", "persistentvolumes", &RETURNS_DELETED_OBJECT),
    ("", "pods", &Pods),
    ("", "podtemplates", &TRACKS_GENERATION_AND_RETURNS_DELETED_OBJECT),
    ("", "replicationcontrollers", &ReplicationControllers),
    ("", "resourcequotas", &RETURNS_DELETED_OBJECT),
    ("", "serviceaccounts", &RETURNS_DELETED_OBJECT),
    ("", "services", &Services),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        &WebhookConfigurations,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        &TRACKS_GENERATION,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        &TRACKS_GENERATION,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        &WebhookConfigurations,
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &CustomResourceDefinitions,
    ),
    ("apiregistration.k8s.io", "apiservices", &ApiServices),
    ("apps", "daemonsets", &Workloads),
    ("apps", "deployments", &DEPLOYMENTS),
    ("apps", "replicasets", &REPLICA_SETS),
    ("apps", "statefulsets", &Workloads),
    ("batch", "cronjobs", &TRACKS_GENERATION),
    ("batch", "jobs", &TRACKS_GENERATION),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &CertificateSigningRequests,
    ),
    ("discovery.k8s.io", "endpointslices", &EndpointSlices),
    ("events.k8s.io", "events", &Events),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", &TRACKS_GENERATION),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        &TRACKS_GENERATION,
    ),
    ("networking.k8s.io", "ingressclasses", &TRACKS_GENERATION),
    ("networking.k8s.io", "ingresses", &TRACKS_GENERATION),
    ("networking.k8s.io", "networkpolicies", &TRACKS_GENERATION),
    ("policy", "poddisruptionbudgets", &TRACKS_GENERATION),
    ("rbac.authorization.k8s.io", "clusterrolebindings", &Rbac),
    ("rbac.authorization.k8s.io", "clusterroles", &Rbac),
    ("rbac.authorization.k8s.io", "rolebindings", &Rbac),
    ("rbac.authorization.k8s.io", "roles", &Rbac),
    ("scheduling.k8s.io", "priorityclasses", &PriorityClasses),
    ("storage.k8s.io", "csidrivers", &CsiDrivers),
    ("storage.k8s.io", "csinodes", &RETURNS_DELETED_OBJECT),
    ("storage.k8s.io", "storageclasses", &RETURNS_DELETED_OBJECT),
    ("storage.k8s.io", "volumeattachments", &RETURNS_DELETED_OBJECT),
];

/// The rules of `rt`'s kind, when it has any.
pub(crate) fn of(rt: &ResourceType) -> Option<&'static dyn Kind> {
    named(&rt.group, &rt.plural)
}

/// The rules of the kind served as `plural` in `group`, when it has any: for what asks before the
/// resource is resolved (a request's path).
pub(crate) fn named(group: &str, plural: &str) -> Option<&'static dyn Kind> {
    KINDS
        .iter()
        .find(|(registered_group, registered_plural, _)| {
            *registered_group == group && *registered_plural == plural
        })
        .map(|(_, _, kind)| *kind)
}

/// The table, as the store asks it for a kind's rules.
#[derive(Debug, Default)]
pub(crate) struct Table;

impl KindRules for Table {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        of(write.rt).map_or(Ok(()), |kind| kind.prepare(write))
    }

    fn may_go(&self, rt: &ResourceType, object: &Value) -> bool {
        of(rt).is_none_or(|kind| kind.may_go(object))
    }

    fn check_deletable(&self, rt: &ResourceType, name: &str) -> Result<(), Error> {
        of(rt).map_or(Ok(()), |kind| kind.check_deletable(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each (group, resource) has one entry: a second would never be found.
    #[test]
    fn each_kind_is_registered_once() {
        let mut keys: Vec<(&str, &str)> = KINDS.iter().map(|(group, plural, _)| (*group, *plural)).collect();
        keys.sort();
        let before = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), before);
    }

    /// An entry for a resource no one serves, or misspelt, would never be asked.
    #[test]
    fn each_registered_kind_is_a_served_built_in() {
        let builtins = apimachinery::resource::builtins();
        for (group, plural, _) in KINDS {
            assert!(
                builtins
                    .iter()
                    .any(|rt| rt.group == *group && rt.plural == *plural),
                "{plural} in {group:?} is not served"
            );
        }
    }

    /// The built-ins whose kind answers yes to `property`, as `plural.group`.
    fn builtins_where(property: fn(&dyn Kind) -> bool) -> Vec<String> {
        let mut plurals: Vec<String> = apimachinery::resource::builtins()
            .iter()
            .filter(|rt| of(rt).is_some_and(property))
            .map(|rt| rt.qualified_plural())
            .collect();
        plurals.sort();
        plurals.dedup();
        plurals
    }

    /// As kube-apiserver's registries set `metadata.generation` on a create: every kind of `apps`
    /// but ControllerRevisions, of `apiextensions.k8s.io`, `batch`, `flowcontrol.apiserver.k8s.io`,
    /// `policy` and `scheduling.k8s.io`, the admission configurations, and a few of the other
    /// groups.
    #[test]
    fn the_built_ins_that_count_generations() {
        assert_eq!(
            builtins_where(|kind| kind.tracks_generation()),
            [
                "cronjobs.batch",
                "customresourcedefinitions.apiextensions.k8s.io",
                "daemonsets.apps",
                "deployments.apps",
                "endpointslices.discovery.k8s.io",
                "flowschemas.flowcontrol.apiserver.k8s.io",
                "ingressclasses.networking.k8s.io",
                "ingresses.networking.k8s.io",
                "jobs.batch",
                "mutatingwebhookconfigurations.admissionregistration.k8s.io",
                "networkpolicies.networking.k8s.io",
                "poddisruptionbudgets.policy",
                "pods",
                "podtemplates",
                "priorityclasses.scheduling.k8s.io",
                "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
                "replicasets.apps",
                "replicationcontrollers",
                "statefulsets.apps",
                "validatingadmissionpolicies.admissionregistration.k8s.io",
                "validatingadmissionpolicybindings.admissionregistration.k8s.io",
                "validatingwebhookconfigurations.admissionregistration.k8s.io",
            ]
        );
    }

    /// Which updates count a generation where that is not a change of the spec alike for every
    /// kind: the webhooks of a configuration, none of a PriorityClass's, and a CSIDriver's spec
    /// although its create sets none.
    #[test]
    fn what_an_update_counts_is_the_kinds() {
        let counts = |group: &str, plural: &str, old: Value, new: Value| {
            named(group, plural).is_some_and(|kind| kind.counts_generation(&old, &new))
        };
        let respec = || {
            (
                serde_json::json!({"spec": {"a": 1}}),
                serde_json::json!({"spec": {"a": 2}}),
            )
        };
        let (old, new) = respec();
        assert!(counts("batch", "jobs", old, new));
        let (old, new) = respec();
        assert!(!counts("scheduling.k8s.io", "priorityclasses", old, new));
        let (old, new) = respec();
        assert!(counts("storage.k8s.io", "csidrivers", old, new));
        assert!(named("storage.k8s.io", "csidrivers").is_some_and(|kind| !kind.tracks_generation()));
        let (old, new) = respec();
        assert!(!counts("", "configmaps", old, new));
        let webhooks =
            |timeout: u8| serde_json::json!({"webhooks": [{"name": "a", "timeoutSeconds": timeout}]});
        let plural = "validatingwebhookconfigurations";
        assert!(counts(
            "admissionregistration.k8s.io",
            plural,
            webhooks(5),
            webhooks(6)
        ));
        assert!(!counts(
            "admissionregistration.k8s.io",
            plural,
            webhooks(5),
            webhooks(5)
        ));
    }

    #[test]
    fn the_built_ins_whose_delete_answers_the_object() {
        assert_eq!(
            builtins_where(|kind| kind.returns_deleted_object()),
            [
                "csidrivers.storage.k8s.io",
                "csinodes.storage.k8s.io",
                "namespaces",
                "persistentvolumeclaims",
                "persistentvolumes",
                "pods",
                "podtemplates",
                "resourcequotas",
                "serviceaccounts",
                "services",
                "storageclasses.storage.k8s.io",
                "volumeattachments.storage.k8s.io",
            ]
        );
    }

    #[test]
    fn only_replication_controllers_orphan_by_default() {
        assert_eq!(
            builtins_where(|kind| kind.orphans_dependents_by_default()),
            ["replicationcontrollers"]
        );
    }

    #[test]
    fn deprecations_name_the_version() {
        let warning =
            |plural: &str, version: &str| named("", plural).and_then(|kind| kind.deprecation(version));
        assert_eq!(
            warning("componentstatuses", "v1"),
            Some("v1 ComponentStatus is deprecated in v1.19+")
        );
        assert!(warning("endpoints", "v1").is_some_and(|w| w.contains("EndpointSlice")));
        assert_eq!(warning("endpoints", "v2"), None);
        assert_eq!(warning("pods", "v1"), None);
    }

    #[test]
    fn component_statuses_are_computed_and_nothing_else_is() {
        let names: Vec<String> = named("", "componentstatuses")
            .and_then(|kind| kind.computed_objects())
            .unwrap_or_default()
            .iter()
            .map(|object| apimachinery::meta::name(object).to_owned())
            .collect();
        assert_eq!(names, ["controller-manager", "scheduler", "storage"]);
        assert_eq!(
            builtins_where(|kind| kind.computed_objects().is_some()),
            ["componentstatuses"]
        );
    }

    #[test]
    fn an_approval_writes_a_csr_status_alone() {
        let csr = named("certificates.k8s.io", "certificatesigningrequests");
        assert!(csr.is_some_and(|kind| kind.status_subresources().contains(&"approval")));
        assert!(named("", "pods").is_some_and(|kind| kind.status_subresources().is_empty()));
    }

    #[test]
    fn a_namespace_alone_is_its_own_namespace() {
        assert_eq!(builtins_where(|kind| kind.is_its_own_namespace()), ["namespaces"]);
    }

    #[test]
    fn events_alone_take_either_api_version() {
        assert_eq!(
            builtins_where(|kind| kind.takes_either_api_version()),
            ["events", "events.events.k8s.io"]
        );
    }

    #[test]
    fn a_pod_status_alone_skips_the_owner_reference_check() {
        assert_eq!(
            builtins_where(|kind| kind.status_skips_owner_reference_check()),
            ["pods"]
        );
    }

    #[test]
    fn a_binding_alone_binds_pods() {
        assert_eq!(builtins_where(|kind| kind.binds_pods()), ["bindings"]);
    }
}
