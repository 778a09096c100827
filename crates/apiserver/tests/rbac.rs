//! Authorization of every request by RBAC, compared with the real kube-apiserver: users hold what
//! their bindings grant and get kube-apiserver's 403 otherwise, the bootstrap roles (`view`, `edit`,
//! `cluster-admin`) grant what upstream's do, aggregated roles gather the rules of the roles labelled
//! for them, and no one grants through a role more than they hold.

mod common;

use common::request;
use kube::Client;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

async fn post(client: &Client, path: &str, body: Value) -> common::Answer {
    request(client, "POST", path, "application/json", body).await
}

async fn get(client: &Client, path: &str) -> common::Answer {
    request(client, "GET", path, "", Value::Null).await
}

/// Binds `user` to the ClusterRole `role`, in `namespace` (a RoleBinding) or cluster-wide.
async fn bind(admin: &Client, user: &str, role: &str, namespace: Option<&str>) {
    let binding = |kind: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": format!("{user}-{role}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    };
    let answer = match namespace {
        Some(namespace) => {
            post(
                admin,
                &format!("{RBAC}/namespaces/{namespace}/rolebindings"),
                binding("RoleBinding"),
            )
            .await
        }
        None => {
            post(
                admin,
                &format!("{RBAC}/clusterrolebindings"),
                binding("ClusterRoleBinding"),
            )
            .await
        }
    };
    assert_eq!(answer.status, 201, "{}", answer.body);
}

/// Waits until the aggregated ClusterRole `role` has gathered its rules: kube-controller-manager
/// aggregates them a moment after kube-apiserver creates the bootstrap roles.
async fn until_aggregated(admin: &Client, role: &str) {
    common::eventually(&format!("{role} to gather its rules"), || async {
        let role = get(admin, &format!("{RBAC}/clusterroles/{role}")).await;
        role.body["rules"]
            .as_array()
            .is_some_and(|rules| !rules.is_empty())
    })
    .await;
}

/// Asserts that `answer` is kube-apiserver's 403 with `message`.
fn assert_forbidden(answer: &common::Answer, message: &str) {
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert_eq!(answer.body["reason"], "Forbidden", "{}", answer.body);
    assert_eq!(answer.body["message"], message, "{}", answer.body);
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

async fn a_user_bound_to_view_reads_and_cannot_write(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let admin = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    assert_eq!(post(&admin, configmaps, config_map("settings")).await.status, 201);
    until_aggregated(&admin, "view").await;
    bind(&admin, "alice", "view", Some("default")).await;
    let alice = plane.add_user("alice", &["readers"]).expect("a user");

    let listed = get(&alice, configmaps).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body["items"][0]["metadata"]["name"], "settings");
    assert_eq!(get(&alice, &format!("{configmaps}/settings")).await.status, 200);

    let created = post(&alice, configmaps, config_map("mine")).await;
    assert_forbidden(
        &created,
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#,
    );
    assert_eq!(created.body["details"], json!({"kind": "configmaps"}));
    let deleted = request(
        &alice,
        "DELETE",
        &format!("{configmaps}/settings"),
        "",
        Value::Null,
    )
    .await;
    assert_forbidden(
        &deleted,
        r#"configmaps "settings" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "default""#,
    );
    assert_eq!(
        deleted.body["details"],
        json!({"name": "settings", "kind": "configmaps"})
    );
    // `view` grants no Secrets, and nothing outside the namespace it is bound in.
    assert_forbidden(
        &get(&alice, "/api/v1/namespaces/default/secrets").await,
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        &get(&alice, "/api/v1/namespaces/kube-system/configmaps").await,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system""#,
    );
}

async fn a_user_without_bindings_is_forbidden_all_but_discovery(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let bob = plane.add_user("bob", &[]).expect("a user");
    assert_forbidden(
        &get(&bob, "/apis/apps/v1/namespaces/default/deployments").await,
        r#"deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" in the namespace "default""#,
    );
    assert_forbidden(
        &get(&bob, "/api/v1/nodes").await,
        r#"nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope"#,
    );
    assert_forbidden(
        &get(&bob, "/api/v1/namespaces/default").await,
        r#"namespaces "default" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "default""#,
    );
    assert_forbidden(
        &request(
            &bob,
            "PUT",
            "/api/v1/namespaces/default/pods/p/status",
            "application/json",
            json!({}),
        )
        .await,
        r#"pods "p" is forbidden: User "bob" cannot update resource "pods/status" in API group "" in the namespace "default""#,
    );
    let metrics = get(&bob, "/metrics").await;
    assert_forbidden(&metrics, r#"forbidden: User "bob" cannot get path "/metrics""#);
    assert_eq!(metrics.body["details"], json!({}));
    // What the bootstrap roles grant every authenticated user: discovery, health, version, and
    // asking what they may do.
    for path in [
        "/api",
        "/apis",
        "/api/v1",
        "/apis/apps/v1",
        "/version",
        "/healthz",
        "/readyz",
        "/openapi/v2",
    ] {
        assert_eq!(get(&bob, path).await.status, 200, "{path}");
    }
    let review = post(
        &bob,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}}}),
    )
    .await;
    assert_eq!(review.status, 201, "{}", review.text);
    assert_eq!(review.body["status"]["allowed"], false, "{}", review.body);
}

async fn a_user_bound_to_cluster_admin_may_do_everything(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    bind(&plane.client(), "carol", "cluster-admin", None).await;
    let carol = plane.add_user("carol", &[]).expect("a user");
    assert_eq!(get(&carol, "/api/v1/nodes").await.status, 200);
    assert_eq!(get(&carol, "/metrics").await.status, 200);
    assert_eq!(
        post(&carol, "/api/v1/namespaces/default/configmaps", config_map("c"))
            .await
            .status,
        201
    );
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "carols"}});
    assert_eq!(post(&carol, "/api/v1/namespaces", namespace).await.status, 201);
    // Holding every right, she may grant any of them.
    bind(&carol, "dave", "edit", Some("carols")).await;
}

async fn the_edit_role_aggregates_a_crds_editor_role(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let admin = plane.client();
    let rule = json!({"apiGroups": ["example.com"], "resources": ["widgets"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]});
    let editor = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-editor",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
        "rules": [rule]});
    assert_eq!(
        post(&admin, &format!("{RBAC}/clusterroles"), editor).await.status,
        201
    );
    let holds = |role: &'static str| {
        let admin = admin.clone();
        let rule = rule.clone();
        async move {
            let role = get(&admin, &format!("{RBAC}/clusterroles/{role}")).await;
            role.body["rules"]
                .as_array()
                .is_some_and(|rules| rules.contains(&rule))
        }
    };
    common::eventually("edit to gather widget-editor's rules", || holds("edit")).await;
    // `admin` aggregates `edit`, so it gathers them too; `view` does not.
    common::eventually("admin to gather edit's rules", || holds("admin")).await;
    assert!(!holds("view").await);

    // The aggregated rules grant: a user bound to `edit` may list widgets.
    bind(&admin, "erin", "edit", Some("default")).await;
    let erin = plane.add_user("erin", &[]).expect("a user");
    let review = post(
        &erin,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "list",
                "group": "example.com", "resource": "widgets"}}}),
    )
    .await;
    assert_eq!(review.body["status"]["allowed"], true, "{}", review.body);

    // A label taken away takes the rules away.
    let unlabelled = request(
        &admin,
        "PATCH",
        &format!("{RBAC}/clusterroles/widget-editor"),
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-edit": null}}}),
    )
    .await;
    assert_eq!(unlabelled.status, 200, "{}", unlabelled.body);
    common::eventually("edit to drop widget-editor's rules", || {
        let holds = holds("edit");
        async move { !holds.await }
    })
    .await;
}

async fn a_user_grants_only_what_it_holds(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let admin = plane.client();
    until_aggregated(&admin, "edit").await;
    let roles = format!("{RBAC}/namespaces/default/roles");
    // frank may manage Roles and RoleBindings in `default`, and read pods there.
    let manager = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "role-manager"},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
            "verbs": ["create", "get", "update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]});
    assert_eq!(post(&admin, &roles, manager).await.status, 201);
    let binding = |name: &str, user: &str, kind: &str, role: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    };
    let rolebindings = format!("{RBAC}/namespaces/default/rolebindings");
    let granted = post(
        &admin,
        &rolebindings,
        binding("frank", "frank", "Role", "role-manager"),
    )
    .await;
    assert_eq!(granted.status, 201, "{}", granted.body);
    let frank = plane.add_user("frank", &["managers"]).expect("a user");

    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name}, "rules": rules})
    };
    let held = role(
        "pod-reader",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    );
    assert_eq!(post(&frank, &roles, held).await.status, 201);
    let more = role(
        "secret-deleter",
        json!([{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "delete"]}]),
    );
    assert_forbidden(
        &post(&frank, &roles, more).await,
        "roles.rbac.authorization.k8s.io \"secret-deleter\" is forbidden: user \"frank\" (groups=[\"managers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}",
    );
    // Binding a role whose rules frank holds is fine; binding `edit`, which holds more, is not.
    let reader = post(
        &frank,
        &rolebindings,
        binding("reader", "grace", "Role", "pod-reader"),
    )
    .await;
    assert_eq!(reader.status, 201, "{}", reader.body);
    let editor = post(
        &frank,
        &rolebindings,
        binding("editor", "grace", "ClusterRole", "edit"),
    )
    .await;
    assert_eq!(editor.status, 403, "{}", editor.text);
    let message = editor.body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"editor\" is forbidden: user \"frank\" (groups=[\"managers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{message}"
    );
    assert!(
        message.contains("\n{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"create\" \"delete\" \"deletecollection\" \"patch\" \"update\" \"get\" \"list\" \"watch\"]}\n"),
        "{message}"
    );
}

testenv::each_control_plane!(
    a_user_bound_to_view_reads_and_cannot_write,
    a_user_without_bindings_is_forbidden_all_but_discovery,
    a_user_bound_to_cluster_admin_may_do_everything,
    the_edit_role_aggregates_a_crds_editor_role,
    a_user_grants_only_what_it_holds,
);
