//! Which children are ours: a child is ours only when it names the owner as its controller, by uid.
//! Anything else of the same name (someone else's, or a deleted owner's the garbage collector has not
//! reached yet) is never taken over: applying to it would merge our controller reference into it, and
//! deleting the owner would then collect an object the user made.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt, runtime::watcher};

/// The label every child of ours carries, its value the name of the controller that made it
/// (`vote-config`, `web-app`): Kubernetes' recommended label for the tool that manages an object. Each
/// controller watches only the objects carrying it with its own name ([`children_of`]), so its caches
/// hold its children, never the cluster's other Deployments, Services, Pods or ConfigMaps, whatever
/// labels those carry. It selects what the watches see; what is ours is still decided by the owner
/// reference ([`controlled_by`]), so a stranger's object given the label is cached, never taken over.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// The [`MANAGED_BY`] label of the children controller `controller` makes.
pub fn managed_by(controller: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY.to_owned(), controller.to_owned())])
}

/// The watch of the children (and, for WebApp, the pods) that controller `controller` made.
pub fn children_of(controller: &str) -> watcher::Config {
    watcher::Config::default().labels(&format!("{MANAGED_BY}={controller}"))
}

/// The owner references a child of `owner` carries: `owner` as its controller, also holding the owner's
/// foreground deletion until the child is gone, as controller-runtime's SetControllerReference does.
/// None before the owner has a uid.
pub fn controller_reference<K: Resource<DynamicType = ()>>(owner: &K) -> Option<Vec<OwnerReference>> {
    let reference = owner.controller_owner_ref(&())?;
    Some(vec![OwnerReference {
        block_owner_deletion: Some(true),
        ..reference
    }])
}

/// Whether `child` names `owner` as its controller.
pub fn controlled_by(child: &impl Resource, owner: &impl Resource) -> bool {
    let Some(uid) = owner.meta().uid.as_deref() else {
        return false;
    };
    child
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The Ready message of an owner whose child's name is taken: what is in the way and what to do.
pub fn not_owned_message(child_kind: &str, child_name: &str, owner_kind: &str) -> String {
    format!(
        "{child_kind} {child_name} exists and is not owned by this {owner_kind}; \
         delete or rename that {child_kind}, or give the {owner_kind} another name"
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::OwnerReference};

    use super::*;

    fn config_map(owner_uid: &str, controller: Option<bool>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.owner_references = Some(vec![OwnerReference {
            uid: owner_uid.into(),
            controller,
            ..Default::default()
        }]);
        cm
    }

    #[test]
    fn only_a_controller_reference_with_the_owners_uid_makes_a_child_ours() {
        let mut owner = ConfigMap::default();
        owner.metadata.uid = Some("uid-1".into());
        assert!(controlled_by(&config_map("uid-1", Some(true)), &owner));
        assert!(
            !controlled_by(&config_map("uid-1", None), &owner),
            "an owner, not the controller"
        );
        assert!(
            !controlled_by(&config_map("uid-0", Some(true)), &owner),
            "an earlier owner of the name"
        );
        assert!(!controlled_by(&ConfigMap::default(), &owner), "someone else's");
        assert!(
            !controlled_by(&config_map("", Some(true)), &ConfigMap::default()),
            "no uid yet"
        );
    }

    #[test]
    fn a_controllers_watch_selects_the_managed_by_label_with_its_name() {
        assert_eq!(
            children_of("web-app").label_selector.as_deref(),
            Some("app.kubernetes.io/managed-by=web-app")
        );
        assert_eq!(managed_by("web-app")[MANAGED_BY], "web-app");
    }

    #[test]
    fn a_childs_reference_names_its_owner_as_controller_and_blocks_its_foreground_deletion() {
        let mut owner = ConfigMap::default();
        assert_eq!(controller_reference(&owner), None, "no uid yet");
        owner.metadata.name = Some("pets".into());
        owner.metadata.uid = Some("uid-1".into());
        let reference = controller_reference(&owner).unwrap();
        assert_eq!(
            reference,
            [OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "pets".into(),
                uid: "uid-1".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
        let mut child = ConfigMap::default();
        child.metadata.owner_references = Some(reference);
        assert!(controlled_by(&child, &owner));
    }
}
