//! What is special about each kind, one module each, as kube-apiserver keeps a strategy per kind in
//! its registry: the fields the server sets on a create or an update, the checks that need the
//! store's state, its names and validation, what a `/status` write takes, when a deleted object
//! may go, and which objects may not be deleted at all. Every
//! kind with rules of its own is registered in [`KINDS`], by group and resource; the generic code
//! asks the table ([`of`]) and names no kind. A change for one kind goes in its module here.
//!
//! What controllers do about a kind (a namespace's teardown, a CRD's establishing) is theirs, in
//! `emulated/`.

mod admission_registration;
mod api_services;
mod apps;
mod certificate_signing_requests;
mod crds;
mod kind;
pub(crate) mod namespaces;
mod nodes;
pub(crate) mod pods;
mod rbac;
pub(crate) mod services;

pub(crate) use kind::Kind;

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use admission_registration::WebhookConfigurations;
use api_services::ApiServices;
use apps::{RolledOut, Workloads};
use certificate_signing_requests::CertificateSigningRequests;
use crds::CustomResourceDefinitions;
use namespaces::Namespaces;
use nodes::Nodes;
use pods::Pods;
use rbac::Rbac;
use services::Services;

use crate::{
    error::Error,
    store::{KindRules, Preparing},
};

/// The kinds with rules of their own: (group, resource, rules).
static KINDS: &[(&str, &str, &dyn Kind)] = &[
    ("", "namespaces", &Namespaces),
    ("", "nodes", &Nodes),
    ("", "pods", &Pods),
    ("", "services", &Services),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        &WebhookConfigurations,
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
    ("apps", "deployments", &RolledOut),
    ("apps", "replicasets", &RolledOut),
    ("apps", "statefulsets", &Workloads),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &CertificateSigningRequests,
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings", &Rbac),
    ("rbac.authorization.k8s.io", "clusterroles", &Rbac),
    ("rbac.authorization.k8s.io", "rolebindings", &Rbac),
    ("rbac.authorization.k8s.io", "roles", &Rbac),
];

/// The rules of `rt`'s kind, when it has any.
pub(crate) fn of(rt: &ResourceType) -> Option<&'static dyn Kind> {
    KINDS
        .iter()
        .find(|(group, plural, _)| rt.group == *group && rt.plural == *plural)
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
}
