//! What a request path names (C1): a discovery document, or a resource with its namespace, name and
//! subresource.

/// A resource request's path, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Version,
    /// `/healthz`, `/livez` or `/readyz`, or one of their checks (`/healthz/etcd`).
    Health {
        endpoint: String,
        check: Option<String>,
    },
    CoreVersions,
    GroupList,
    /// `/apis/<group>`: one group's versions.
    Group(String),
    ResourceList {
        group: String,
        version: String,
    },
    /// `/metrics`: Prometheus' text format.
    Metrics,
    OpenApiV2,
    OpenApiIndex,
    OpenApiDocument {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
    NotFound,
}

pub fn route(path: &str) -> Route {
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["metrics"] => Route::Metrics,
        [endpoint @ ("healthz" | "livez" | "readyz"), check @ ..] => Route::Health {
            endpoint: (*endpoint).into(),
            check: (!check.is_empty()).then(|| check.join("/")),
        },
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::GroupList,
        ["apis", group] => Route::Group((*group).into()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", "api", version] => Route::OpenApiDocument {
            group: String::new(),
            version: (*version).into(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApiDocument {
            group: (*group).into(),
            version: (*version).into(),
        },
        ["api", version] => Route::ResourceList {
            group: String::new(),
            version: (*version).into(),
        },
        ["apis", group, version] => Route::ResourceList {
            group: (*group).into(),
            version: (*version).into(),
        },
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::NotFound,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let namespaced =
        rest.len() >= 3 && rest[0] == "namespaces" && !(rest.len() == 3 && is_namespace_subresource(rest[2]));
    let (namespace, rest) = if namespaced {
        (Some(rest[1].to_owned()), &rest[2..])
    } else {
        (None, rest)
    };
    let path = |plural: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.to_owned(),
            version: version.to_owned(),
            namespace: namespace.clone(),
            plural: plural.to_owned(),
            name: name.map(str::to_owned),
            subresource: sub.map(str::to_owned),
        })
    };
    match rest {
        [plural] => path(plural, None, None),
        [plural, name] => path(plural, Some(name), None),
        [plural, name, sub] => path(plural, Some(name), Some(sub)),
        // A proxy forwards the rest of the path to the pod, Service or node.
        [plural, name, "proxy", ..] => path(plural, Some(name), Some("proxy")),
        _ => Route::NotFound,
    }
}

fn is_namespace_subresource(segment: &str) -> bool {
    matches!(segment, "status" | "finalize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource_path(path: &str) -> ResourcePath {
        match route(path) {
            Route::Resource(p) => p,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn c1_routes_core_group_namespaced_cluster_wide_and_status() {
        let p = resource_path("/api/v1/namespaces/default/configmaps/c1");
        assert_eq!(
            (
                p.group.as_str(),
                p.namespace.as_deref(),
                p.plural.as_str(),
                p.name.as_deref()
            ),
            ("", Some("default"), "configmaps", Some("c1"))
        );
        let p = resource_path("/apis/demo.yash.com/v1/namespaces/ns/postgreswriters/w1/status");
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let p = resource_path("/apis/demo.yash.com/v1/postgreswriters");
        assert_eq!((p.namespace, p.name), (None, None));
        let p = resource_path("/api/v1/namespaces/ns1");
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref()),
            ("namespaces", Some("ns1"))
        );
        let p = resource_path("/api/v1/namespaces/ns1/status");
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.subresource.as_deref()),
            ("namespaces", Some("ns1"), Some("status"))
        );
        assert_eq!(
            route("/apis/apps/v1"),
            Route::ResourceList {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(route("/apis/apps/"), Route::Group("apps".into()));
        assert_eq!(route("/nope"), Route::NotFound);
    }
}
