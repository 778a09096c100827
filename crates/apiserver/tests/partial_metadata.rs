//! Metadata-only reads (`PartialObjectMetadata`), which kube-rs's `metadata_watcher` and client-go's
//! metadata informers make, on both control planes: a get, a list and a watch answer with each
//! object's metadata alone, so a controller watching children pays for their metadata, not their data.

mod common;

use common::{Answer, exchange};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const ONE: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

async fn get(client: &kube::Client, path: &str, accept: &str) -> Answer {
    let answer = exchange(client, "GET", path, "", accept, Vec::new()).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer
}

fn assert_metadata_only(object: &Value) {
    assert_eq!(object["kind"], "PartialObjectMetadata", "{object}");
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1", "{object}");
    assert_eq!(object["metadata"]["name"], "settings", "{object}");
    assert!(object.get("data").is_none(), "no data: {object}");
}

async fn gets_lists_and_watches_answer_with_metadata_alone(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    for namespace in ["metadata-only", "metadata-empty"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let created = exchange(
            &client,
            "POST",
            "/api/v1/namespaces",
            "application/json",
            "",
            body.to_string().into_bytes(),
        )
        .await;
        assert_eq!(created.status, 201, "{}", created.text);
    }
    let config_maps = "/api/v1/namespaces/metadata-only/configmaps";
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "labels": {"app": "shop"}},
        "data": {"secret-ish": "a large value"}});
    let created = exchange(
        &client,
        "POST",
        config_maps,
        "application/json",
        "",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);

    let one = get(&client, &format!("{config_maps}/settings"), ONE).await;
    assert_metadata_only(&one.body);
    assert_eq!(one.body["metadata"]["labels"], json!({"app": "shop"}));

    let list = get(&client, config_maps, LIST).await;
    assert_eq!(list.body["kind"], "PartialObjectMetadataList", "{}", list.text);
    assert_eq!(list.body["apiVersion"], "meta.k8s.io/v1", "{}", list.text);
    assert!(
        list.body["metadata"]["resourceVersion"].is_string(),
        "{}",
        list.text
    );
    let items = list.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{}", list.text);
    assert_metadata_only(&items[0]);
    let empty = get(&client, "/api/v1/namespaces/metadata-empty/configmaps", LIST).await;
    assert_eq!(
        empty.body["items"],
        Value::Null,
        "no items is null: {}",
        empty.text
    );

    // A watch that the server ends after a second: the object that exists comes as ADDED.
    let watch = get(&client, &format!("{config_maps}?watch=1&timeoutSeconds=1"), ONE).await;
    let events: Vec<Value> = watch
        .text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON event"))
        .collect();
    assert_eq!(events.len(), 1, "{}", watch.text);
    assert_eq!(events[0]["type"], "ADDED");
    assert_metadata_only(&events[0]["object"]);
}

testenv::each_control_plane!(gets_lists_and_watches_answer_with_metadata_alone);
