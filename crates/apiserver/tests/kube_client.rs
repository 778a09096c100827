//! kube-rs 5 against the embedded API server over real HTTP: CRUD, Status errors, CRDs, status
//! subresource, finalizers, garbage collection, Deployments.

mod common;

use common::{api_error, eventually, start};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace},
};
use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};

pub const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "postgreswriters.example.com"},
  "spec": {
    "group": "example.com",
    "scope": "Namespaced",
    "names": {"plural": "postgreswriters", "singular": "postgreswriter", "kind": "PostgresWriter", "shortNames": ["pgw"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "additionalPrinterColumns": [{"name": "Table", "type": "string", "jsonPath": ".spec.table"}],
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {
          "spec": {"type": "object", "required": ["table"], "properties": {
            "table": {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$", "maxLength": 63},
            "replicas": {"type": "integer", "minimum": 1, "default": 1}
          }},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
      }}
    }]
  }
}"#;

async fn install_crd(client: &Client) -> Api<DynamicObject> {
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_str(CRD).expect("CRD parses"),
    )
    .await
    .expect("CRD created");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "PostgresWriter");
    Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "postgreswriters"),
    )
}

fn writer(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "PostgresWriter", "metadata": {"name": name}, "spec": spec}))
        .expect("valid object")
}

#[tokio::test]
async fn c2_c5_config_map_crud_with_one_global_resource_version() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api
        .create(
            &PostParams::default(),
            &common::config_map("c1", json!({"a": "1"})),
        )
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 36, "uid is a UUID");
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1: u64 = created
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();

    let fetched = api.get("c1").await.unwrap();
    assert_eq!(fetched.data.unwrap()["a"], "1");

    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}})),
        )
        .await
        .unwrap();
    let rv2: u64 = patched
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1, "every write bumps the global resourceVersion");

    // A PUT with the stale resourceVersion is a conflict (C5).
    let mut stale = created.clone();
    stale.data = Some([("a".to_owned(), "9".to_owned())].into());
    let conflict = api_error(
        api.replace("c1", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert!(
        conflict.message.contains("the object has been modified"),
        "{}",
        conflict.message
    );

    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(
        list.metadata
            .resource_version
            .is_some_and(|rv| rv.parse::<u64>().unwrap() >= rv2),
        "W1"
    );

    api.delete("c1", &DeleteParams::default()).await.unwrap();
    let gone = api_error(api.get("c1").await.unwrap_err());
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(gone.message, "configmaps \"c1\" not found");

    let again = api
        .create(&PostParams::default(), &common::config_map("c1", json!({})))
        .await
        .unwrap();
    let exists = api_error(
        api.create(&PostParams::default(), &common::config_map("c1", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((exists.code, exists.reason.as_str()), (409, "AlreadyExists"));
    assert_ne!(
        again.metadata.uid.unwrap(),
        uid,
        "a recreated object is a new object"
    );
}

#[tokio::test]
async fn l3_default_namespaces_exist_and_missing_namespaces_are_not_found() {
    let (_server, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = namespaces.get(name).await.unwrap();
        assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
        assert_eq!(ns.metadata.labels.unwrap()["kubernetes.io/metadata.name"], name);
    }
    let api: Api<ConfigMap> = Api::namespaced(client, "nope");
    let error = api_error(
        api.create(&PostParams::default(), &common::config_map("c", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, 404);
    assert_eq!(error.message, "namespaces \"nope\" not found");
}

#[tokio::test]
async fn v1_v3_c4_c7_custom_resources_are_validated_defaulted_and_have_a_status_subresource() {
    let (_server, client) = start().await;
    let api = install_crd(&client).await;

    let created = api
        .create(
            &PostParams::default(),
            &writer("w1", json!({"table": "students"})),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["replicas"], 1, "default applied (V3)");
    assert_eq!(created.metadata.generation, Some(1));

    let invalid = api_error(
        api.create(
            &PostParams::default(),
            &writer("w2", json!({"table": "Bad-Name", "replicas": 0})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
    assert!(
        invalid
            .message
            .starts_with("PostgresWriter.example.com \"w2\" is invalid"),
        "{}",
        invalid.message
    );
    assert!(invalid.message.contains("spec.table"), "{}", invalid.message);
    assert!(invalid.message.contains("spec.replicas"), "{}", invalid.message);
    let missing = api_error(
        api.create(&PostParams::default(), &writer("w3", json!({})))
            .await
            .unwrap_err(),
    );
    assert!(
        missing.message.contains("spec.table: Required value"),
        "{}",
        missing.message
    );

    // Status changes leave generation and spec alone; spec changes bump generation (C4, C7).
    let status = api
        .patch_status(
            "w1",
            &PatchParams::apply("tester").force(),
            &Patch::Apply(json!({
                "apiVersion": "example.com/v1", "kind": "PostgresWriter", "status": {"phase": "Ready"}
            })),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["phase"], "Ready");
    assert_eq!(status.metadata.generation, Some(1));
    let updated = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"table": "pupils"}, "status": {"phase": "Ignored"}})),
        )
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    assert_eq!(
        updated.data["status"]["phase"], "Ready",
        "the main endpoint cannot change status"
    );
}

#[tokio::test]
async fn l1_l2_finalizers_hold_deletion_until_removed() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = common::config_map("held", json!({}));
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();
    let deleting = api.delete("held", &DeleteParams::default()).await.unwrap();
    let object = deleting
        .left()
        .expect("object returned while finalizers are pending");
    assert!(object.metadata.deletion_timestamp.is_some());
    let refused = api_error(
        api.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "x/y"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(refused.code, 422, "no new finalizers once deleting (L2)");
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers"}])).unwrap(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(api_error(api.get("held").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn l5_deleting_an_owner_collects_its_dependents() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &common::config_map("owner", json!({})))
        .await
        .unwrap();
    let mut dependent = common::config_map("dependent", json!({}));
    dependent.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    api.create(&PostParams::default(), &dependent).await.unwrap();
    let mut survivor = common::config_map("orphan", json!({}));
    survivor.metadata.owner_references = dependent.metadata.owner_references.clone();
    api.create(&PostParams::default(), &survivor).await.unwrap();

    // Orphan first on a second owner-less path: strip references, keep the object.
    api.delete("owner", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        api_error(api.get("dependent").await.unwrap_err()).code,
        404,
        "background propagation"
    );
    assert_eq!(api_error(api.get("orphan").await.unwrap_err()).code, 404);

    let owner = api
        .create(&PostParams::default(), &common::config_map("owner2", json!({})))
        .await
        .unwrap();
    let mut kept = common::config_map("kept", json!({}));
    let mut reference = dependent.metadata.owner_references.clone().unwrap();
    reference[0].uid = owner.metadata.uid.unwrap();
    reference[0].name = "owner2".into();
    kept.metadata.owner_references = Some(reference);
    api.create(&PostParams::default(), &kept).await.unwrap();
    let answer = api
        .delete(
            "owner2",
            &DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // As kube-apiserver answers it: the owner marked deleting behind the orphan finalizer, which the
    // garbage collector removes, with the owner, once the dependents are released.
    let marked = answer.left().expect("the marked owner, not a Status");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.finalizers, Some(vec!["orphan".to_owned()]));
    common::eventually("the orphaning owner gone", || async {
        api.get_opt("owner2").await.unwrap().is_none()
    })
    .await;
    let kept = api.get("kept").await.unwrap();
    assert!(
        kept.metadata.owner_references.unwrap_or_default().is_empty(),
        "orphaned dependents lose the reference"
    );
}

#[tokio::test]
async fn k1_deployments_become_ready_unless_annotated_never_ready() {
    let (_server, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let deployment = |name: &str, annotations: Value| -> Deployment {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
        }))
        .unwrap()
    };
    api.create(&PostParams::default(), &deployment("ready", json!({})))
        .await
        .unwrap();
    let status = api.get("ready").await.unwrap().status.unwrap();
    assert_eq!(
        (
            status.ready_replicas,
            status.available_replicas,
            status.observed_generation
        ),
        (Some(3), Some(3), Some(1))
    );
    api.create(
        &PostParams::default(),
        &deployment("stuck", json!({"apiserver.dev/never-ready": "true"})),
    )
    .await
    .unwrap();
    let status = api.get("stuck").await.unwrap().status.unwrap();
    assert_eq!(status.ready_replicas.unwrap_or(0), 0);
    let defaulted = api.get("ready").await.unwrap().spec.unwrap();
    assert_eq!(defaulted.revision_history_limit, Some(10), "B5 defaults");
}

#[tokio::test]
async fn l4_namespace_deletion_removes_its_contents() {
    let (_server, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "t"}})).unwrap(),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "t");
    api.create(&PostParams::default(), &common::config_map("c", json!({})))
        .await
        .unwrap();
    namespaces.delete("t", &DeleteParams::default()).await.unwrap();
    eventually("namespace t to go", || async {
        namespaces.get_opt("t").await.unwrap().is_none()
    })
    .await;
    assert_eq!(api_error(api.get("c").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn l4_a_terminating_namespace_has_a_deletion_time_and_no_grace_period() {
    let (_server, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "held"}})).unwrap(),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "held");
    let mut kept = common::config_map("kept", json!({}));
    kept.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &kept).await.unwrap();
    let terminating = namespaces
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("the namespace stays while its content is held");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.metadata.deletion_grace_period_seconds, None,
        "the namespace registry sets no grace period, unlike a finalized object's deletion"
    );
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    // Nothing new may be created in it meanwhile, and the refusal says why, as NamespaceLifecycle does.
    let refused = api_error(
        api.create(&PostParams::default(), &common::config_map("late", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace held because it is being terminated"
    );
    let cause = refused
        .details
        .and_then(|d| d.causes.into_iter().next())
        .expect("a cause");
    assert_eq!(
        (
            cause.reason.as_str(),
            cause.field.as_str(),
            cause.message.as_str()
        ),
        (
            "NamespaceTerminating",
            "metadata.namespace",
            "namespace held is being terminated"
        )
    );
    api.patch(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("namespace held to go", || async {
        namespaces.get_opt("held").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn b4_p3_secrets_merge_string_data_and_strategic_patches_merge_containers_by_name() {
    let (_server, client) = start().await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "default");
    let secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}))
            .unwrap();
    let created = secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(created.data.unwrap()["password"].0, b"hunter2");
    assert!(created.string_data.is_none());

    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "sidecar", "image": "busybox"}]}}}
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
    let patched = deployments
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let containers = patched.spec.unwrap().template.spec.unwrap().containers;
    let images: Vec<(String, Option<String>)> = containers.into_iter().map(|c| (c.name, c.image)).collect();
    assert_eq!(
        images,
        [
            ("web".into(), Some("nginx:1.27".into())),
            ("sidecar".into(), Some("busybox".into()))
        ]
    );
}
