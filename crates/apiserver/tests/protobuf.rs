//! The protobuf form of the built-in kinds (P1-P3 of docs/apiserver-requirements.md), which kubectl's
//! generator commands and every typed client-go client send, on both control planes: what kubectl
//! creates and prints, what a protobuf-first Accept header gets back, and what bad bodies get.

mod common;

use std::path::Path;

use apimachinery::protobuf;
use common::kubectl::{Kubectl, fixture, release};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf, application/json";

/// What one request got: status, Content-Type and the body's bytes.
struct Raw {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> Raw {
    let mut request = axum::http::Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        request = request.header("content-type", content_type);
    }
    request = request.header("accept", accept);
    let response = client
        .send(request.body(kube::client::Body::from(body)).expect("a request"))
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
        .await
        .expect("a whole body");
    Raw {
        status,
        content_type,
        body: body.to_vec(),
    }
}

fn parsed(output: &str) -> Value {
    serde_json::from_str(output).unwrap_or_else(|e| panic!("not JSON ({e}):\n{output}"))
}

/// Runs one generator command with `-o json` and reads the object back with `get -o json`.
async fn create_and_get(kubectl: &Kubectl, create: &[&str], get: &[&str]) -> (Value, Value) {
    let mut args = vec!["create"];
    args.extend_from_slice(create);
    args.extend_from_slice(&["-o", "json"]);
    let printed = parsed(&kubectl.ok(&args).await);
    let mut args = vec!["get"];
    args.extend_from_slice(get);
    args.extend_from_slice(&["-o", "json"]);
    let got = parsed(&kubectl.ok(&args).await);
    (printed, got)
}

/// What a controller of the real cluster may change between the create and the get.
fn settled(mut object: Value) -> Value {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
        metadata.remove("generation");
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

async fn generators_with(plane: &ControlPlane, binary: &Path, suffix: &str) {
    let kubectl = Kubectl::with_binary(plane, binary);
    let ns = format!("made-{suffix}");
    let (printed, got) = create_and_get(&kubectl, &["namespace", &ns], &["namespace", &ns]).await;
    assert_eq!(printed["metadata"]["name"], ns.as_str());
    assert_eq!(printed["status"]["phase"], "Active", "{printed}");
    assert_eq!(settled(printed), settled(got));

    let (printed, got) = create_and_get(
        &kubectl,
        &["configmap", "made", "--from-literal=a=b", "-n", &ns],
        &["configmap", "made", "-n", &ns],
    )
    .await;
    assert_eq!(printed["data"], json!({"a": "b"}));
    assert!(printed["metadata"]["uid"].is_string(), "{printed}");
    assert_eq!(printed, got, "what create printed is what is stored");

    let (printed, got) = create_and_get(
        &kubectl,
        &["secret", "generic", "s", "--from-literal=p=x", "-n", &ns],
        &["secret", "s", "-n", &ns],
    )
    .await;
    assert_eq!(printed["data"], json!({"p": "eA=="}));
    assert_eq!(printed["type"], "Opaque");
    assert_eq!(printed, got);

    let (printed, got) = create_and_get(
        &kubectl,
        &["deployment", "web", "--image=nginx", "-n", &ns],
        &["deployment", "web", "-n", &ns],
    )
    .await;
    assert_eq!(printed["spec"]["replicas"], 1, "{printed}");
    let container = &printed["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx");
    assert_eq!(container["name"], "nginx");
    assert_eq!(
        container["resources"],
        json!({}),
        "Go prints the empty struct: {printed}"
    );
    assert_eq!(
        printed["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert!(printed["metadata"].get("generateName").is_none(), "{printed}");
    assert_eq!(printed["metadata"]["generation"], 1, "{printed}");
    assert_eq!(settled(printed), settled(got));

    let (printed, got) = create_and_get(
        &kubectl,
        &["service", "clusterip", "web", "--tcp=80:8080", "-n", &ns],
        &["service", "web", "-n", &ns],
    )
    .await;
    assert_eq!(
        printed["spec"]["ports"][0],
        json!({"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}),
        "{printed}"
    );
    assert!(printed["spec"]["clusterIP"].is_string(), "{printed}");
    assert_eq!(settled(printed), settled(got));

    let (printed, got) = create_and_get(
        &kubectl,
        &["role", "reader", "--verb=get,list", "--resource=pods", "-n", &ns],
        &["role", "reader", "-n", &ns],
    )
    .await;
    assert_eq!(
        printed["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
        "{printed}"
    );
    assert_eq!(printed, got);
}

async fn p1_kubectl_generators_create_what_they_print(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    generators_with(&plane, Path::new(common::kubectl::DEFAULT), "current").await;
    generators_with(&plane, &release("1.27"), "old").await;
}

async fn p1_kubectl_reviews_and_approvals(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let kubectl = Kubectl::new(&plane);
    assert_eq!(
        kubectl.ok(&["auth", "can-i", "create", "pods"]).await.trim(),
        "yes"
    );
    let whoami = parsed(&kubectl.ok(&["auth", "whoami", "-o", "json"]).await);
    let user = whoami["status"]["userInfo"]["username"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!user.is_empty(), "{whoami}");
    let table = kubectl.ok(&["auth", "whoami"]).await;
    assert!(table.contains(&user), "{table}");

    let csr_fixture = std::fs::read_to_string(fixture("tables/objects.yaml")).expect("fixture");
    let request_pem = csr_fixture
        .lines()
        .find_map(|line| line.trim().strip_prefix("request: "))
        .expect("the fixture's CSR");
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": request_pem, "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"]}});
    let path = kubectl.manifest("csr.json", &csr.to_string());
    kubectl.ok(&["create", "-f", &path]).await;
    let approved = kubectl.ok(&["certificate", "approve", "alice"]).await;
    assert!(approved.contains("approved"), "{approved}");
    let csr = parsed(&kubectl.ok(&["get", "csr", "alice", "-o", "json"]).await);
    let conditions = csr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Approved" && c["status"] == "True"),
        "{csr}"
    );
}

async fn p2_bad_protobuf_bodies_are_refused(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for body in [b"k8s\0garbage".to_vec(), b"{\"not\": \"protobuf\"}".to_vec()] {
        let answer = send(
            &client,
            "POST",
            configmaps,
            protobuf::MEDIA_TYPE,
            "application/json",
            body,
        )
        .await;
        assert_eq!(answer.status, 400);
        let status: Value = serde_json::from_slice(&answer.body).expect("a JSON Status");
        assert_eq!(status["reason"], "BadRequest");
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("the object provided is unrecognized (must be of type ConfigMap): "),
            "{message}"
        );
    }
    let listed = send(&client, "GET", configmaps, "", "application/json", Vec::new()).await;
    let listed: Value = serde_json::from_slice(&listed.body).expect("a list");
    let names: Vec<&Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| &i["metadata"]["name"])
        .collect();
    assert!(
        !names.contains(&&json!("garbage")),
        "nothing was stored: {names:?}"
    );
}

testenv::each_control_plane!(
    p1_kubectl_generators_create_what_they_print,
    p1_kubectl_reviews_and_approvals,
    p2_bad_protobuf_bodies_are_refused,
);
