//! The embedded server's modules stand in layers (see the crate's top-level doc): no module imports
//! one that imports it back, but a parent module and its own child; storage names no controller, no
//! layer above it and no kind; and a kind is named only in its home.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use apimachinery::resource::ResourceType;

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    testenv::import_loops::assert_none_beyond_a_parent_and_its_child("crates/apiserver/src");
}

/// Each line of code of the files under `folder` of src/ (comments and tests left out: tests may
/// write through the layers above and name any kind), with its file (from src/) and number.
fn code_under(folder: &str) -> Vec<(String, String)> {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut folders = vec![src.join(folder)];
    let mut files: Vec<PathBuf> = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder of src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut lines = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let file = path
            .strip_prefix(src)
            .expect("a file of src")
            .display()
            .to_string();
        for (number, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            lines.push((format!("{file}:{}", number + 1), code.to_owned()));
        }
    }
    lines
}

/// Storage's code: the files of `src/store` and of its folders.
fn storage_code() -> Vec<(String, String)> {
    code_under("store")
}

/// The string literals of a line of code.
fn literals(code: &str) -> impl Iterator<Item = &str> {
    code.split('"').skip(1).step_by(2)
}

/// Each name of a built-in kind, with the resource types it names: its resource (`pods`, `/pods`),
/// its kind (`Pod`) and, but for the core group, its group (`apps`, naming every kind of it).
fn kind_names() -> BTreeMap<String, Vec<ResourceType>> {
    let mut names: BTreeMap<String, Vec<ResourceType>> = BTreeMap::new();
    for rt in apimachinery::resource::builtins() {
        let mut own = vec![rt.plural.clone(), rt.kind.clone(), format!("/{}", rt.plural)];
        if !rt.group.is_empty() {
            own.push(rt.group.clone());
        }
        for name in own {
            names.entry(name).or_default().push(rt.clone());
        }
    }
    names
}

#[test]
fn storage_names_no_controller_and_no_layer_above_it() {
    for (place, code) in storage_code() {
        for above in [
            "emulated",
            "crate::flowcontrol",
            "strategy",
            "crate::admission",
            "crate::http",
        ] {
            assert!(!code.contains(above), "{place} names {above}: {code}");
        }
    }
}

/// No string in storage's code is a group, a resource or a kind the server serves: what differs by
/// kind is the strategy's, the hooks' or the API machinery's to say.
#[test]
fn storage_names_no_kind() {
    let names = kind_names();
    for (place, code) in storage_code() {
        for literal in literals(&code) {
            assert!(
                !names.contains_key(literal),
                "{place} names the kind {literal:?}: {code}"
            );
        }
    }
}

/// Which kinds a home holds.
enum Holds {
    /// Every kind: a registration table, or the controllers, each of its own kinds.
    Every,
    /// The kinds of an API group.
    Group(&'static str),
    /// Resources, by plural qualified with the group (`pods`, `poddisruptionbudgets.policy`).
    Resources(&'static [&'static str]),
}

impl Holds {
    fn holds(&self, rt: &ResourceType) -> bool {
        match self {
            Holds::Every => true,
            Holds::Group(group) => rt.group == *group,
            Holds::Resources(plurals) => plurals.contains(&rt.qualified_plural().as_str()),
        }
    }
}

/// The homes of kinds: a file or a folder of src/ (ending in `/`), what it holds, and why that is
/// its home. A place may be the home of several.
const HOMES: &[(&str, Holds, &str)] = &[
    (
        "kinds/",
        Holds::Every,
        "a module per kind, and the table that registers them",
    ),
    (
        "strategy/typed.rs",
        Holds::Every,
        "the table of the kinds decoded as their Go types",
    ),
    (
        "emulated/",
        Holds::Every,
        "kube-controller-manager's controllers, each of the kinds it controls",
    ),
    (
        "rbac/",
        Holds::Group("rbac.authorization.k8s.io"),
        "RBAC: its authorizer, escalation check, policy",
    ),
    (
        "flowcontrol/",
        Holds::Group("flowcontrol.apiserver.k8s.io"),
        "API Priority and Fairness",
    ),
    (
        "admission/",
        Holds::Group("admissionregistration.k8s.io"),
        "admission's own configuration: its webhooks and policies",
    ),
    (
        "http/handlers/reviews/",
        Holds::Group("authentication.k8s.io"),
        "the reviews, answered not stored",
    ),
    (
        "http/handlers/reviews/",
        Holds::Group("authorization.k8s.io"),
        "the reviews, answered not stored",
    ),
    (
        "http/handlers/namespaces/",
        Holds::Resources(&["namespaces"]),
        "a namespace's finalize",
    ),
    (
        "http/handlers/nodes.rs",
        Holds::Resources(&["nodes"]),
        "a node's proxy",
    ),
    (
        "http/handlers/services.rs",
        Holds::Resources(&["services", "endpoints"]),
        "a Service's proxy, which forwards to its Endpoints",
    ),
    (
        "http/handlers/pods/",
        Holds::Resources(&["pods", "bindings", "nodes", "poddisruptionbudgets.policy"]),
        "a pod's subresources: a binding to a node, an eviction its budgets allow, the kubelet's streams",
    ),
    (
        "http/handlers/serviceaccounts/",
        Holds::Resources(&["serviceaccounts", "pods", "secrets", "nodes"]),
        "a service account's token, bound to a pod, a secret or a node",
    ),
    (
        "http/handlers/serviceaccounts/",
        Holds::Group("authentication.k8s.io"),
        "a TokenRequest is of authentication.k8s.io",
    ),
];

/// Literals that name a kind outside its home but are no kind's to hold: (file, literal, why).
const NOT_A_KIND_IN: &[(&str, &str, &str)] = &[
    (
        "http/path.rs",
        "namespaces",
        "the URL grammar's segment (`/namespaces/{namespace}/...`), as kube-apiserver's request info parser names it",
    ),
    (
        "http/filters/impersonation.rs",
        "serviceaccounts",
        "the impersonation protocol's authorization of `Impersonate-User: system:serviceaccount:...`",
    ),
    (
        "http/filters/impersonation.rs",
        "authentication.k8s.io",
        "the impersonation protocol's authorization of impersonated uids and extras (`userextras`, `uids`)",
    ),
    (
        "http/handlers/scale.rs",
        "autoscaling",
        "the scale subresource's own kind, autoscaling/v1 Scale, whatever kind it scales",
    ),
    (
        "rbac/authorizer.rs",
        "ServiceAccount",
        "an RBAC subject's kind, a field value of RBAC's API",
    ),
    (
        "flowcontrol/classify.rs",
        "ServiceAccount",
        "a FlowSchema subject's kind, a field value of its API",
    ),
];

/// A kind is named only in its home: what is special about one kind is in its module, registered in
/// one table, and a file that routes, stores, admits, calls webhooks or filters names none.
#[test]
fn a_kind_is_named_only_in_its_home() {
    let names = kind_names();
    let mut strays = Vec::new();
    let mut exceptions_met = std::collections::BTreeSet::new();
    for (place, code) in code_under("") {
        let file = place.split(':').next().unwrap_or_default();
        let homes: Vec<&Holds> = HOMES
            .iter()
            .filter(|(home, _, _)| file == *home || (home.ends_with('/') && file.starts_with(home)))
            .map(|(_, holds, _)| holds)
            .collect();
        for literal in literals(&code) {
            let Some(named) = names.get(literal) else {
                continue;
            };
            let at_home = named.iter().any(|rt| homes.iter().any(|home| home.holds(rt)));
            let excepted = NOT_A_KIND_IN
                .iter()
                .position(|(except, name, _)| *except == file && *name == literal);
            if let (false, Some(exception)) = (at_home, excepted) {
                exceptions_met.insert(exception);
            }
            if !at_home && excepted.is_none() {
                strays.push(format!("{place} names {literal:?}: {}", code.trim()));
            }
        }
    }
    assert!(
        strays.is_empty(),
        "{} names of a kind outside its home (move what is special to a kind into its home, see HOMES):\n{}",
        strays.len(),
        strays.join("\n")
    );
    // An exception nothing needs any more would let the name back in unnoticed.
    for (index, (file, literal, _)) in NOT_A_KIND_IN.iter().enumerate() {
        assert!(
            exceptions_met.contains(&index),
            "{file} no longer names {literal:?}: drop it from NOT_A_KIND_IN"
        );
    }
}
