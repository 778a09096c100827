//! Built-in objects come back as kube-apiserver prints its Go types, whichever way the Kubernetes
//! types were built in (from the Go modules, or from the committed snapshot as `scripts/no-go-build.sh`
//! builds this test): the fields Go always prints are there, as on a real cluster.

use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, PostParams},
};
use kube_envtest::Environment;
use serde_json::{Value, json};

#[tokio::test]
async fn a_deployment_comes_back_with_the_fields_go_prints_and_the_defaults() {
    let env = Environment::start().await.unwrap();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let deployments: Api<DynamicObject> = Api::default_namespaced_with(env.client(), &resource);
    let sent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap();

    let stored = deployments.create(&PostParams::default(), &sent).await.unwrap();

    let spec = &stored.data["spec"];
    let template = &spec["template"];
    // Non-pointer structs without omitempty: Go prints them even when empty, a zero time as null.
    assert_eq!(
        template["metadata"].get("creationTimestamp"),
        Some(&Value::Null),
        "{template}"
    );
    let container = &template["spec"]["containers"][0];
    assert_eq!(container.get("resources"), Some(&json!({})), "{container}");
    // Defaults kube-apiserver applies to the kind.
    assert_eq!(spec["strategy"]["type"], "RollingUpdate", "{spec}");
    assert_eq!(spec["revisionHistoryLimit"], 10, "{spec}");
    assert_eq!(
        container["terminationMessagePath"], "/dev/termination-log",
        "{container}"
    );
    assert_eq!(template["spec"]["restartPolicy"], "Always", "{template}");
}
