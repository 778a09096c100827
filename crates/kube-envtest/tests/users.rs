//! Users other than the administrator ([`Environment::add_user`]), authorized by RBAC as
//! kube-apiserver authorizes them: what a binding grants and nothing more, refusals with
//! kube-apiserver's 403 message, a CRD's editor role aggregated into `edit`, the administrator
//! (`system:masters`) allowed everything, RBAC switched off where a test asks, and
//! OwnerReferencesPermissionEnforcement switched on where a test asks.

use k8s_openapi::api::{
    core::v1::{ConfigMap, Namespace, Secret},
    rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleBinding},
};
use kube::{
    Api, CustomResource,
    api::{DeleteParams, ListParams, PostParams},
};
use kube_envtest::{Authorization, Environment, Error};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    pub size: u32,
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn widget(name: &str) -> Widget {
    Widget::new(name, WidgetSpec { size: 1 })
}

/// Binds `user` to the ClusterRole `role` in the namespace `default`.
async fn bind_in_default(admin: &kube::Client, user: &str, role: &str) {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{user}-{role}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<RoleBinding>::default_namespaced(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// The Status of a refused request: 403 Forbidden with `message`.
fn assert_forbidden<T: std::fmt::Debug>(result: kube::Result<T>, message: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert_eq!(status.reason, "Forbidden", "{status:?}");
            assert_eq!(status.message, message);
        }
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn a_user_bound_to_view_reads_and_is_refused_writes() {
    let env = Environment::start().await.unwrap();
    let admin_config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());
    admin_config_maps
        .create(&PostParams::default(), &config_map("settings"))
        .await
        .unwrap();
    bind_in_default(&env.client(), "alice", "view").await;
    let alice = env.add_user("alice", &["readers"]).unwrap();

    let config_maps: Api<ConfigMap> = Api::default_namespaced(alice.clone());
    let listed = config_maps.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        config_maps.get("settings").await.unwrap().data,
        config_map("settings").data
    );
    assert_forbidden(
        config_maps
            .create(&PostParams::default(), &config_map("mine"))
            .await,
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        config_maps.delete("settings", &DeleteParams::default()).await,
        r#"configmaps "settings" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "default""#,
    );
    // `view` reads no Secrets, and grants nothing outside the namespace it is bound in.
    assert_forbidden(
        Api::<Secret>::default_namespaced(alice.clone())
            .list(&ListParams::default())
            .await,
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        Api::<ConfigMap>::namespaced(alice, "kube-system")
            .list(&ListParams::default())
            .await,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system""#,
    );
    // Nothing was written on her behalf.
    assert_eq!(
        admin_config_maps
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn a_user_without_a_binding_is_refused() {
    let env = Environment::start().await.unwrap();
    let bob = env.add_user("bob", &[]).unwrap();
    assert_forbidden(
        Api::<ConfigMap>::default_namespaced(bob.clone())
            .list(&ListParams::default())
            .await,
        r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        Api::<Namespace>::all(bob.clone()).get("default").await,
        r#"namespaces "default" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "default""#,
    );
    // Discovery is everyone's, as kube-apiserver's bootstrap roles grant it.
    assert!(!bob.list_api_groups().await.unwrap().groups.is_empty());
}

#[tokio::test]
async fn a_crds_editor_role_aggregated_into_edit_lets_an_editor_write_its_objects() {
    let env = Environment::builder().crd_for::<Widget>().start().await.unwrap();
    let admin = env.client();
    bind_in_default(&admin, "erin", "edit").await;
    let erin = env.add_user("erin", &[]).unwrap();
    let widgets: Api<Widget> = Api::default_namespaced(erin.clone());
    // `edit` knows nothing of a CRD's kind until a role is aggregated into it.
    assert_forbidden(
        widgets.create(&PostParams::default(), &widget("first")).await,
        r#"widgets.example.com is forbidden: User "erin" cannot create resource "widgets" in API group "example.com" in the namespace "default""#,
    );

    // As kubebuilder scaffolds it (config/rbac/widget_editor_role.yaml), labelled for `edit`.
    let rule: PolicyRule = serde_json::from_value(json!({
        "apiGroups": ["example.com"], "resources": ["widgets"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    }))
    .unwrap();
    let editor: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "widget-editor-role",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
        "rules": [rule],
    }))
    .unwrap();
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    roles.create(&PostParams::default(), &editor).await.unwrap();
    // Aggregated by the time the create returned: no controller to wait for.
    let edit = roles.get("edit").await.unwrap();
    assert!(
        edit.rules.unwrap_or_default().contains(&rule),
        "edit gathered widget-editor-role's rule"
    );
    let view = roles.get("view").await.unwrap();
    assert!(!view.rules.unwrap_or_default().contains(&rule));

    let created = widgets
        .create(&PostParams::default(), &widget("first"))
        .await
        .unwrap();
    assert_eq!(created.spec.size, 1);
    widgets.delete("first", &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn the_administrator_may_do_everything() {
    let env = Environment::builder().crd_for::<Widget>().start().await.unwrap();
    let admin = env.client();
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": "anywhere"}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    Api::<Secret>::namespaced(admin.clone(), "anywhere")
        .list(&ListParams::default())
        .await
        .unwrap();
    Api::<Widget>::namespaced(admin.clone(), "anywhere")
        .create(&PostParams::default(), &widget("w"))
        .await
        .unwrap();
    // Granting `cluster-admin` needs every right, which the administrator holds.
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "carol-cluster-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let carol = env.add_user("carol", &[]).unwrap();
    Api::<Secret>::namespaced(carol, "anywhere")
        .list(&ListParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn with_authorization_off_every_user_may_do_everything() {
    let env = Environment::builder()
        .authorization(Authorization::AlwaysAllow)
        .start()
        .await
        .unwrap();
    let nobody = env.add_user("nobody", &[]).unwrap();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(nobody);
    config_maps
        .create(&PostParams::default(), &config_map("written"))
        .await
        .unwrap();
    assert_eq!(
        Api::<ConfigMap>::default_namespaced(env.client())
            .get("written")
            .await
            .unwrap()
            .data,
        config_map("written").data
    );
}

#[tokio::test]
async fn a_server_without_authentication_has_no_users() {
    let env = Environment::builder().plain_http().start().await.unwrap();
    assert!(matches!(env.add_user("alice", &[]), Err(Error::NoUsers)));
}

/// A ConfigMap owned by the ConfigMap `owner`, which blocks the owner's deletion in the foreground.
fn config_map_blocking(name: &str, owner: &ConfigMap) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": owner.metadata.name, "uid": owner.metadata.uid,
                "blockOwnerDeletion": true,
            }],
        },
    }))
    .unwrap()
}

/// A user who may create and read ConfigMaps in `default` (the ClusterRole `edit` grants no
/// `configmaps/finalizers`), and the owner their ConfigMap will name.
async fn editor_and_owner(env: &Environment) -> (Api<ConfigMap>, ConfigMap) {
    bind_in_default(&env.client(), "carol", "edit").await;
    let owner = Api::<ConfigMap>::default_namespaced(env.client())
        .create(&PostParams::default(), &config_map("owner"))
        .await
        .unwrap();
    let carol = env.add_user("carol", &[]).unwrap();
    (Api::default_namespaced(carol), owner)
}

#[tokio::test]
async fn with_owner_reference_permissions_blocking_an_owners_deletion_takes_its_finalizers() {
    let env = Environment::builder()
        .owner_reference_permissions(true)
        .start()
        .await
        .unwrap();
    let (config_maps, owner) = editor_and_owner(&env).await;
    match config_maps
        .create(&PostParams::default(), &config_map_blocking("dependent", &owner))
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert!(
                status.message.contains(
                    "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
                ),
                "{status:?}"
            );
        }
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
    // Granted the owner's finalizers, the same user may block its deletion.
    let finalizers: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "configmap-finalizers"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps/finalizers"], "verbs": ["update"]}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(env.client())
        .create(&PostParams::default(), &finalizers)
        .await
        .unwrap();
    bind_in_default(&env.client(), "carol", "configmap-finalizers").await;
    config_maps
        .create(&PostParams::default(), &config_map_blocking("dependent", &owner))
        .await
        .unwrap();
}

#[tokio::test]
async fn without_owner_reference_permissions_an_editor_may_block_an_owners_deletion() {
    let env = Environment::start().await.unwrap();
    let (config_maps, owner) = editor_and_owner(&env).await;
    let created = config_maps
        .create(&PostParams::default(), &config_map_blocking("dependent", &owner))
        .await
        .unwrap();
    let references = created.metadata.owner_references.unwrap();
    assert_eq!(references[0].block_owner_deletion, Some(true));
}
