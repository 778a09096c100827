//! The subresources served by an endpoint of their own: a pod's binding, eviction, resize, ephemeral
//! containers and the kubelet's streams; a namespace's finalize; a service account's token; the
//! proxies. Each is declared beside its handler, in the module that serves it. `status` and `scale`
//! are served by the resource's own verbs. Those that write pass admission ([`ADMITTED`]); the
//! kubelet's streams and the proxies write nothing admission sees.

use apimachinery::resource::ResourceType;

use super::super::{
    namespaces::finalize,
    nodes,
    pods::{self, eviction, kubelet, resize},
    serviceaccounts::token,
    services,
    subresource::{Admitted, Subresource},
};

/// Those that write their object, or create one of their own, through admission.
const ADMITTED: &[&Admitted] = &[
    &pods::BINDING,
    &pods::EPHEMERAL_CONTAINERS,
    &eviction::ENDPOINT,
    &resize::ENDPOINT,
    &finalize::ENDPOINT,
    &token::ENDPOINT,
];

const ALL: &[&Subresource] = &[&kubelet::ENDPOINT, &services::PROXY, &nodes::PROXY];

/// The endpoint of subresource `name` of `rt`'s objects, if one serves it.
pub fn find(rt: &ResourceType, name: &str) -> Option<&'static Subresource> {
    if !rt.is_builtin() {
        return None;
    }
    ALL.iter()
        .copied()
        .find(|sub| sub.group == rt.group && sub.plural == rt.plural && sub.names.contains(&name))
}

/// The endpoint of subresource `name` of `rt`'s objects if it writes through admission.
pub fn find_admitted(rt: &ResourceType, name: &str) -> Option<&'static Admitted> {
    if !rt.is_builtin() {
        return None;
    }
    ADMITTED
        .iter()
        .copied()
        .find(|sub| sub.group == rt.group && sub.plural == rt.plural && sub.names.contains(&name))
}
