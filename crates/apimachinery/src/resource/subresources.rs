//! The subresources each resource type serves (`status`, `scale`, a pod's `exec`, ...), as discovery
//! lists them.

use super::ResourceType;

/// A subresource as discovery describes it: its name, the kind it answers with and its verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// The path segment after the object's name: `status`, `scale`, `log` ...
    pub name: &'static str,
    /// `None`: the kind of the resource itself.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    /// The verbs it serves, as discovery lists them.
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
