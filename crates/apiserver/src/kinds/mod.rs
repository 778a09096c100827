//! What is special about each kind, one module each, as kube-apiserver keeps a strategy per kind in
//! its registry: the fields the server sets on a create or an update, the checks that need the
//! store's state, when a deleted object may go, and which objects may not be deleted at all. Every
//! kind with rules of its own is registered in [`KINDS`], by group and resource; the generic code
//! asks the table ([`of`]) and names no kind. A change for one kind goes in its module here.
//!
//! What controllers do about a kind (a namespace's teardown, a CRD's establishing) is theirs, in
//! `emulated/`.

mod api_services;
mod certificate_signing_requests;
mod crds;
mod kind;
pub(crate) mod namespaces;
mod nodes;
mod pods;
pub(crate) mod services;

pub(crate) use kind::Kind;

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use crate::{
    error::Error,
    store::{KindStrategy, State},
};

/// The kinds with rules of their own: (group, resource, rules).
static KINDS: &[(&str, &str, &dyn Kind)] = &[
    ("", "namespaces", &namespaces::Namespaces),
    ("", "nodes", &nodes::Nodes),
    ("", "pods", &pods::Pods),
    ("", "services", &services::Services),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &crds::CustomResourceDefinitions,
    ),
    (
        "apiregistration.k8s.io",
        "apiservices",
        &api_services::ApiServices,
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &certificate_signing_requests::CertificateSigningRequests,
    ),
];

/// The rules of `rt`'s kind, when it has any.
pub(crate) fn of(rt: &ResourceType) -> Option<&'static dyn Kind> {
    KINDS
        .iter()
        .find(|(group, plural, _)| rt.group == *group && rt.plural == *plural)
        .map(|(_, _, kind)| *kind)
}

/// The table as the store's strategy.
#[derive(Debug, Default)]
pub(crate) struct Strategies;

impl KindStrategy for Strategies {
    fn prepare(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: Option<&Value>,
        object: &mut Value,
        subresource: Option<&str>,
    ) -> Result<(), Vec<FieldCause>> {
        of(rt).map_or(Ok(()), |kind| kind.prepare(state, rt, old, object, subresource))
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
