//! The protobuf form of the built-in kinds (D9, D12 and D13 of docs/apiserver-requirements.md), which kubectl's
//! generator commands and every typed client-go client send, on both control planes: what kubectl
//! creates and prints, what a protobuf-first Accept header gets back, and what bad bodies get.

mod common;

use std::path::Path;

use apimachinery::protobuf;
use common::{
    Answer, client_csr, exchange,
    kubectl::{Kubectl, release},
};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf, application/json";

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
        // The Deployment controller numbers the revision it rolled out, possibly before the GET.
        if let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove("deployment.kubernetes.io/revision");
            if annotations.is_empty() {
                metadata.remove("annotations");
            }
        }
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

async fn d9_kubectl_generators_create_what_they_print(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    generators_with(&plane, Path::new(common::kubectl::DEFAULT), "current").await;
    generators_with(&plane, &release("1.27"), "old").await;
}

async fn d9_kubectl_reviews_and_approvals(backend: Backend) {
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

    let csr = client_csr("alice");
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

async fn d9_bad_protobuf_bodies_are_refused(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for body in [b"k8s\0garbage".to_vec(), b"{\"not\": \"protobuf\"}".to_vec()] {
        let answer = exchange(
            &client,
            "POST",
            configmaps,
            protobuf::MEDIA_TYPE,
            "application/json",
            body,
        )
        .await;
        assert_eq!(answer.status, 400);
        let status: Value = serde_json::from_slice(&answer.bytes).expect("a JSON Status");
        assert_eq!(status["reason"], "BadRequest");
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("the object provided is unrecognized (must be of type ConfigMap): "),
            "{message}"
        );
    }
    let listed = exchange(&client, "GET", configmaps, "", "application/json", Vec::new()).await;
    let listed: Value = serde_json::from_slice(&listed.bytes).expect("a list");
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

fn decoded(raw: &Answer, kind: &str) -> Value {
    assert_eq!(raw.content_type, protobuf::MEDIA_TYPE, "status {}", raw.status);
    protobuf::decode(&raw.bytes, "v1", kind).unwrap_or_else(|e| panic!("{kind} does not decode: {e}"))
}

async fn d12_protobuf_first_gets_protobuf(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let made = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made", "labels": {"pick": "me"}},
        "data": {"a": "b"}});
    let body = protobuf::encode(&made).expect("encodes");
    let created = exchange(
        &client,
        "POST",
        configmaps,
        protobuf::MEDIA_TYPE,
        PROTOBUF_FIRST,
        body,
    )
    .await;
    assert_eq!(created.status, 201);
    let created = decoded(&created, "ConfigMap");
    assert_eq!(created["data"], json!({"a": "b"}));

    let got = exchange(
        &client,
        "GET",
        &format!("{configmaps}/made"),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!(got.status, 200);
    let got = decoded(&got, "ConfigMap");
    assert_eq!(got, created, "{got}");
    assert_eq!(got["kind"], "ConfigMap");

    let listed = exchange(
        &client,
        "GET",
        &format!("{configmaps}?labelSelector=pick%3Dme"),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!(listed.status, 200);
    let listed = decoded(&listed, "ConfigMapList");
    assert_eq!(listed["kind"], "ConfigMapList");
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["items"][0]["metadata"]["uid"], got["metadata"]["uid"]);

    let missing = exchange(
        &client,
        "GET",
        &format!("{configmaps}/nope"),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!(missing.status, 404);
    let missing = decoded(&missing, "Status");
    assert_eq!(missing["reason"], "NotFound");
    assert_eq!(missing["code"], 404);
    assert_eq!(missing["message"], "configmaps \"nope\" not found");

    // A watch from the create on: the ADDED event of the ConfigMap, then the end of the timeout.
    let since = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion");
    let rv: u64 = since.parse().expect("a number");
    let watched = exchange(
        &client,
        "GET",
        &format!(
            "{configmaps}?watch=true&timeoutSeconds=2&labelSelector=pick%3Dme&resourceVersion={}",
            rv - 1
        ),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!(watched.status, 200);
    assert_eq!(watched.content_type, protobuf::WATCH_MEDIA_TYPE);
    let (event, used) = protobuf::read_watch_frame(&watched.bytes)
        .expect("a frame decodes")
        .expect("a whole frame");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "made");
    assert_eq!(event["object"]["kind"], "ConfigMap");
    assert_eq!(used, watched.bytes.len(), "one event");

    // Delete options in protobuf, as typed client-go clients send them: a precondition that does not
    // hold keeps the object, and says so in a protobuf Status.
    let made = format!("{configmaps}/made");
    let delete_made = |options: Value| {
        let body = protobuf::encode(&options).expect("encodes");
        exchange(
            &client,
            "DELETE",
            &made,
            protobuf::MEDIA_TYPE,
            PROTOBUF_FIRST,
            body,
        )
    };
    let kept = delete_made(json!({"apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {"uid": "not-this-one"}}))
    .await;
    assert_eq!(kept.status, 409);
    let kept = decoded(&kept, "Status");
    assert_eq!(kept["reason"], "Conflict", "{kept}");
    let deleted = delete_made(json!({"apiVersion": "v1", "kind": "DeleteOptions"})).await;
    assert_eq!(deleted.status, 200);
    let deleted = decoded(&deleted, "Status");
    assert_eq!(deleted["status"], "Success", "{deleted}");

    // Tables stay JSON.
    let table = exchange(&client, "GET", configmaps, "",
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
        Vec::new()).await;
    assert_eq!(table.content_type, "application/json");
}

const WEBAPPS: &str = "/apis/example.com/v1/namespaces/default/webapps";

async fn webapps(client: &kube::Client) {
    common::install_crd(
        client,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "webapps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp", "listKind": "WebAppList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    common::discovered(client, "example.com", "v1", "webapps").await;
}

async fn d13_custom_resources_stay_json(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    webapps(&client).await;
    let app = json!({"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": "w"}});
    let created = exchange(
        &client,
        "POST",
        WEBAPPS,
        "application/json",
        PROTOBUF_FIRST,
        app.to_string().into_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.content_type, "application/json",
        "JSON after protobuf is acceptable"
    );
    let got = exchange(
        &client,
        "GET",
        &format!("{WEBAPPS}/w"),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!((got.status, got.content_type.as_str()), (200, "application/json"));
    let watched = exchange(
        &client,
        "GET",
        &format!("{WEBAPPS}?watch=true&timeoutSeconds=1"),
        "",
        PROTOBUF_FIRST,
        Vec::new(),
    )
    .await;
    assert_eq!(watched.content_type, "application/json");
    assert!(String::from_utf8_lossy(&watched.bytes).contains("\"ADDED\""));

    let only = exchange(
        &client,
        "GET",
        &format!("{WEBAPPS}/w"),
        "",
        protobuf::MEDIA_TYPE,
        Vec::new(),
    )
    .await;
    assert_eq!(only.status, 406);
    let status = decoded(&only, "Status");
    assert_eq!(status["reason"], "NotAcceptable");
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

/// An Accept header naming nothing the server answers in is refused with 406 before anything is read:
/// for the built-in kinds in the words of kube-apiserver's router, which compares media types as
/// written (so `application/*` is refused too); for custom resources in the words of the CRD handler,
/// which matches media ranges. What clients send is served.
async fn d12_a_media_type_nothing_produces_is_not_acceptable(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    webapps(&client).await;
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let get = |path: String, accept: &'static str| {
        let client = client.clone();
        async move { exchange(&client, "GET", &path, "", accept, Vec::new()).await }
    };
    let produced = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for (path, accept, message) in [
        (
            configmaps.to_owned(),
            "text/html",
            format!(
                "406: Not Acceptable\n\nAvailable representations: {produced}, \
                 application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
            ),
        ),
        (
            format!("{configmaps}/missing"),
            "text/html",
            format!("406: Not Acceptable\n\nAvailable representations: {produced}"),
        ),
        (
            configmaps.to_owned(),
            "application/*",
            format!(
                "406: Not Acceptable\n\nAvailable representations: {produced}, \
                 application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
            ),
        ),
    ] {
        let refused = get(path.clone(), accept).await;
        assert_eq!(
            refused.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": "NotAcceptable", "details": {}, "code": 406}),
            "{path} {accept}"
        );
    }
    let refused = get(WEBAPPS.to_owned(), "text/html").await;
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("only the following media types are accepted: {produced}"),
            "reason": "NotAcceptable", "code": 406})
    );
    for accept in [
        "*/*",
        "application/json, */*",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    ] {
        for path in [configmaps, WEBAPPS] {
            let served = get(path.to_owned(), accept).await;
            assert_eq!(served.status, 200, "{path} {accept}: {}", served.text);
        }
    }
    assert_eq!(get(WEBAPPS.to_owned(), "application/*").await.status, 200);
    assert_eq!(get(configmaps.to_owned(), PROTOBUF_FIRST).await.status, 200);
}

/// A custom resource sent as protobuf is never stored. The embedded server answers 415; kube-apiserver
/// 1.33 fails the request without an answer (it recovers from a panic in its handler and drops the
/// connection), so on the real tier the test asserts only that the request did not succeed.
async fn d13_custom_resource_bodies_in_protobuf_are_refused(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    webapps(&client).await;
    // An envelope naming the WebApp kind around its JSON: what a client would have to invent.
    let raw = br#"{"apiVersion":"example.com/v1","kind":"WebApp","metadata":{"name":"sent"}}"#;
    let mut type_meta = vec![0x0a, 14];
    type_meta.extend(b"example.com/v1");
    type_meta.extend([0x12, 6]);
    type_meta.extend(b"WebApp");
    let mut body = protobuf::MAGIC.to_vec();
    body.extend([0x0a, type_meta.len() as u8]);
    body.extend(type_meta);
    body.extend([0x12, raw.len() as u8]);
    body.extend(raw);
    let mut request = axum::http::Request::post(WEBAPPS)
        .header("content-type", protobuf::MEDIA_TYPE)
        .header("accept", "application/json");
    request = request.header("user-agent", "protobuf-test");
    let answer = client
        .send(request.body(kube::client::Body::from(body)).expect("a request"))
        .await;
    match backend {
        Backend::Embedded => {
            let response = answer.expect("an answer");
            assert_eq!(response.status().as_u16(), 415);
            let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
                .await
                .expect("a body");
            let status: Value = serde_json::from_slice(&bytes).expect("a Status");
            assert_eq!(status["reason"], "UnsupportedMediaType");
            assert_eq!(
                status["message"],
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
            );
        }
        Backend::Real | Backend::Cluster => {
            if let Ok(response) = answer {
                assert!(!response.status().is_success(), "{}", response.status());
            }
        }
    }
    let got = exchange(
        &client,
        "GET",
        &format!("{WEBAPPS}/sent"),
        "",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(got.status, 404, "nothing was stored");
}

testenv::each_control_plane!(
    d9_kubectl_generators_create_what_they_print,
    d9_kubectl_reviews_and_approvals,
    d9_bad_protobuf_bodies_are_refused,
    d12_protobuf_first_gets_protobuf,
    d12_a_media_type_nothing_produces_is_not_acceptable,
    d13_custom_resources_stay_json,
    d13_custom_resource_bodies_in_protobuf_are_refused,
);
