//! The operations a resource type offers, as both OpenAPI documents list them: a collection path
//! (list, create) and an item path (get, replace, patch, delete), each with the query parameters
//! clients look for (kubectl checks `fieldValidation` before it leaves validation to the server).

use crate::resource::ResourceType;

/// One HTTP operation on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// `get`, `post`, `put`, `patch`, `delete`.
    pub method: &'static str,
    /// `x-kubernetes-action`: `list`, `post`, `get`, `put`, `patch`, `delete`.
    pub action: &'static str,
    /// The query parameters it takes (`dryRun`, `fieldManager` ...).
    pub query: &'static [&'static str],
    /// Takes the object (or a patch of it) as its body.
    pub body: bool,
}

const WRITE: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];

/// Patches as the server accepts them. Strategic merge is left out on purpose: a client that sees it
/// computes the patch from the published schema, which carries no merge keys; without it kubectl
/// computes strategic merge patches from its compiled-in types, as the merge keys require.
pub const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// A path and its operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathItem {
    /// `/apis/apps/v1/namespaces/{namespace}/deployments/{name}`.
    pub path: String,
    /// `namespace`, `name`: the path's parameters.
    pub parameters: Vec<&'static str>,
    /// The operations served on the path.
    pub operations: Vec<Operation>,
}

/// The paths of `rt`, limited to the verbs it serves.
pub fn paths(rt: &ResourceType) -> Vec<PathItem> {
    let serves = |verb: &str| rt.verbs.iter().any(|v| v == verb);
    let prefix = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let (collection, mut parameters) = if rt.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural),
            vec!["namespace"],
        )
    } else {
        (format!("{prefix}/{}", rt.plural), Vec::new())
    };
    let op = |method, action, query, body| Operation {
        method,
        action,
        query,
        body,
    };
    let mut collection_ops = Vec::new();
    if serves("list") {
        collection_ops.push(op("get", "list", &[] as &[&str], false));
    }
    if serves("create") {
        collection_ops.push(op("post", "post", WRITE, true));
    }
    let mut item_ops = Vec::new();
    if serves("get") {
        item_ops.push(op("get", "get", &[], false));
    }
    if serves("update") {
        item_ops.push(op("put", "put", WRITE, true));
    }
    if serves("patch") {
        item_ops.push(op("patch", "patch", PATCH, true));
    }
    if serves("delete") {
        item_ops.push(op("delete", "delete", &["dryRun"], false));
    }
    let mut items = vec![PathItem {
        path: collection.clone(),
        parameters: parameters.clone(),
        operations: collection_ops,
    }];
    if !item_ops.is_empty() {
        parameters.push("name");
        items.push(PathItem {
            path: format!("{collection}/{{name}}"),
            parameters,
            operations: item_ops,
        });
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtins;

    #[test]
    fn d7_reviews_are_only_created_and_kinds_have_both_paths() {
        let types = builtins();
        let find = |plural: &str| types.iter().find(|rt| rt.plural == plural).unwrap();
        let reviews = paths(find("selfsubjectaccessreviews"));
        assert_eq!(reviews.len(), 1);
        assert_eq!(reviews[0].operations.len(), 1);
        let config_maps = paths(find("configmaps"));
        assert_eq!(
            config_maps[1].path,
            "/api/v1/namespaces/{namespace}/configmaps/{name}"
        );
        assert_eq!(config_maps[1].parameters, ["namespace", "name"]);
        let patch = config_maps[1]
            .operations
            .iter()
            .find(|o| o.method == "patch")
            .unwrap();
        assert!(patch.query.contains(&"fieldValidation"));
    }
}
