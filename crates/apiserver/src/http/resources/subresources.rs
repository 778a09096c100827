//! The subresources served by an endpoint of their own: a pod's binding, eviction, resize, ephemeral
//! containers and the kubelet's streams; a namespace's finalize; a service account's token; the
//! proxies. Each is declared beside its handler, in the module that serves it. `status` and `scale`
//! are served by the resource's own verbs.

use apimachinery::resource::ResourceType;

use super::super::{
    eviction, kubelet, namespace_finalize, pod_resize, pods, proxies, service_account_tokens,
    subresource::Subresource,
};

const ALL: &[&Subresource] = &[
    &pods::BINDING,
    &pods::EPHEMERAL_CONTAINERS,
    &eviction::ENDPOINT,
    &pod_resize::ENDPOINT,
    &kubelet::ENDPOINT,
    &namespace_finalize::ENDPOINT,
    &service_account_tokens::ENDPOINT,
    &proxies::SERVICES,
    &proxies::NODES,
];

/// The endpoint of subresource `name` of `rt`'s objects, if one serves it.
pub fn find(rt: &ResourceType, name: &str) -> Option<&'static Subresource> {
    if !rt.is_builtin() {
        return None;
    }
    ALL.iter()
        .copied()
        .find(|sub| sub.group == rt.group && sub.plural == rt.plural && sub.names.contains(&name))
}
