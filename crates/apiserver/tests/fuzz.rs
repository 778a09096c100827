//! A bounded fuzz test over HTTP : a few hundred generated requests (arbitrary and
//! mutated bodies, every patch type, selectors, odd query parameters and paths) against a running
//! server. Every response must be a well-formed Status or object with a code below 500: a panic in a
//! handler would drop the connection or answer 500. Afterwards the server still serves.
//!
//! Generated owner graphs and their deletions are in [`owner_graphs`].
//!
//! The cases come from proptest runners with a fixed seed, so that every run (CI's included) sends
//! the same requests. `FUZZ_SEED=random` draws a new seed, printed so that a failure can be replayed
//! with `FUZZ_SEED=<hex>`; `FUZZ_CASES` and `FUZZ_GRAPH_CASES` raise the counts for a longer local run.

mod common;
#[path = "fuzz/owner_graphs.rs"]
mod owner_graphs;

use std::time::Duration;

use futures::StreamExt;

use apiserver::{ApiServer, Config};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, api::PostParams};
use proptest::{
    prelude::*,
    strategy::ValueTree,
    test_runner::{RngAlgorithm, TestRng, TestRunner},
};
use serde_json::{Map, Value, json};

const DEFAULT_CASES: usize = 400;
/// How long a watch's stream is read before the client hangs up.
const WATCH_READ: Duration = Duration::from_millis(200);

const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "generateName",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "resourceVersion",
    "uid",
    "deletionTimestamp",
    "spec",
    "status",
    "data",
    "stringData",
    "binaryData",
    "template",
    "containers",
    "ports",
    "replicas",
    "selector",
    "table",
    "conditions",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "a",
    "",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-zA-Z0-9$/._-]{0,10}",
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        proptest::sample::select(
            &[
                "target",
                "web",
                "v1",
                "delete",
                "replace",
                "",
                "-",
                "ü",
                "2026-11-22T00:00:00Z"
            ][..]
        )
        .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The objects the requests aim at: a collection, a name, and a valid object to mutate.
fn targets() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "/api/v1/namespaces/default/configmaps",
            "target",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target", "labels": {"app": "web"}}, "data": {"k": "v"}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            "web",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}}),
        ),
        (
            "/apis/example.com/v1/namespaces/default/postgreswriters",
            "w1",
            json!({"apiVersion": "example.com/v1", "kind": "PostgresWriter", "metadata": {"name": "w1"},
                "spec": {"table": "students"}, "status": {"ready": true}}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            "s",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": "b"}, "data": {"c": "ZA=="}}),
        ),
        (
            "/api/v1/namespaces/default/services",
            "svc",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            "l",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            "e",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "Fuzz", "type": "Normal",
                "involvedObject": {"kind": "ConfigMap", "name": "target", "namespace": "default"}}),
        ),
        (
            "/api/v1/namespaces",
            "fuzz",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}}),
        ),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "postgreswriters.example.com",
            serde_json::from_str(include_str!("fixtures/crd.json")).unwrap(),
        ),
    ]
}

/// `object` with arbitrary values written over some of its fields.
fn mutated(object: Value) -> impl Strategy<Value = Value> {
    let pointer = proptest::sample::select(
        &[
            "/metadata/name",
            "/metadata/labels",
            "/metadata/labels/app",
            "/metadata/managedFields",
            "/metadata/ownerReferences",
            "/metadata/finalizers",
            "/metadata/resourceVersion",
            "/metadata",
            "/spec",
            "/spec/template/spec/containers",
            "/spec/template/spec/containers/0",
            "/spec/template/spec/containers/0/ports",
            "/spec/ports/0/port",
            "/spec/leaseDurationSeconds",
            "/spec/versions/0/schema/openAPIV3Schema",
            "/spec/names",
            "/data",
            "/data/k",
            "/stringData",
            "/status",
            "/kind",
            "/apiVersion",
        ][..],
    );
    proptest::collection::vec((pointer, json_value()), 0..3).prop_map(move |edits| {
        let mut object = object.clone();
        for (pointer, value) in edits {
            if let Some(slot) = object.pointer_mut(pointer) {
                *slot = value;
            }
        }
        object
    })
}

fn json_patch_document() -> impl Strategy<Value = Value> {
    let operation = (
        proptest::sample::select(&["add", "remove", "replace", "move", "copy", "test", "nope"][..]),
        proptest::sample::select(
            &[
                "/metadata/labels/x",
                "/data/k",
                "/spec/replicas",
                "/metadata/finalizers",
                "/metadata/finalizers/-",
                "/metadata/name",
                "/status",
                "/spec",
                "",
                "/",
                "~",
            ][..],
        ),
        json_value(),
    )
        .prop_map(|(op, path, value)| json!({"op": op, "path": path, "from": "/data", "value": value}));
    proptest::collection::vec(operation, 0..4).prop_map(Value::Array)
}

fn body(object: Value) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => mutated(object.clone()).prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        2 => json_value().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        2 => json_patch_document().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        1 => mutated(object).prop_map(|v| serde_yaml::to_string(&v).unwrap_or_default().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
        1 => Just(Vec::new()),
    ]
}

fn query() -> impl Strategy<Value = Vec<(String, String)>> {
    let any_text = prop_oneof![
        3 => proptest::sample::select(&["", "0", "1", "-1", "true", "All", "Strict", "Warn", "Ignore", "Foreground", "Orphan", "Background", "NotOlderThan", "Exact", "kubectl", "99999999999999999999"][..])
            .prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    let label_selector = prop_oneof![
        3 => "[a-z]{1,3}(=|==|!=| in | notin )?(\\([a-z,]{0,6}\\)|[a-z]{0,3})(,!?[a-z]{1,3})?",
        1 => any::<String>(),
    ];
    let field_selector = prop_oneof![
        3 => "(metadata\\.name|metadata\\.namespace|spec\\.x|reason|involvedObject\\.name)(=|==|!=)[a-z0-9]{0,5}",
        1 => any::<String>(),
    ];
    let parameter = prop_oneof![
        2 => label_selector.prop_map(|v| ("labelSelector".to_owned(), v)),
        2 => field_selector.prop_map(|v| ("fieldSelector".to_owned(), v)),
        4 => (
            proptest::sample::select(&["dryRun", "fieldManager", "fieldManager", "force", "fieldValidation", "propagationPolicy", "limit", "continue", "resourceVersion", "resourceVersionMatch", "gracePeriodSeconds", "orphanDependents"][..]),
            any_text,
        )
            .prop_map(|(k, v)| (k.to_owned(), v)),
    ];
    proptest::collection::vec(parameter, 0..4)
}

/// What a request does to its target; the content types follow what clients send for it.
#[derive(Debug, Clone, Copy)]
enum Operation {
    Get,
    List,
    Create,
    Replace,
    Patch,
    PatchStatus,
    Delete,
    DeleteCollection,
    OddPath,
    Watch,
}

const BODY_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json; charset=utf-8",
    "text/plain",
];
const PATCH_TYPES: &[&str] = &[
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+json",
    "application/vnd.kubernetes.protobuf",
];

#[derive(Debug, Clone)]
struct Case {
    method: &'static str,
    path: String,
    query: Vec<(String, String)>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

fn case() -> impl Strategy<Value = Case> {
    let operation = proptest::sample::select(vec![
        Operation::Get,
        Operation::List,
        Operation::Create,
        Operation::Create,
        Operation::Replace,
        Operation::Replace,
        Operation::Patch,
        Operation::Patch,
        Operation::Patch,
        Operation::Patch,
        Operation::PatchStatus,
        Operation::Delete,
        Operation::DeleteCollection,
        Operation::OddPath,
        Operation::Watch,
    ]);
    let target = proptest::sample::select(targets());
    (
        target,
        operation,
        query(),
        any::<prop::sample::Index>(),
        any::<bool>(),
        "[a-zA-Z0-9/._%~-]{0,16}",
    )
        .prop_flat_map(
            |((collection, name, object), operation, query, type_choice, no_type, odd)| {
                let item = format!("{collection}/{name}");
                let (method, path, types) = match operation {
                    Operation::Get => ("GET", item, BODY_TYPES),
                    Operation::List => ("GET", collection.to_owned(), BODY_TYPES),
                    Operation::Create => ("POST", collection.to_owned(), BODY_TYPES),
                    Operation::Replace => ("PUT", item, BODY_TYPES),
                    Operation::Patch => ("PATCH", item, PATCH_TYPES),
                    Operation::PatchStatus => ("PATCH", format!("{item}/status"), PATCH_TYPES),
                    Operation::Delete => ("DELETE", item, BODY_TYPES),
                    Operation::DeleteCollection => ("DELETE", collection.to_owned(), BODY_TYPES),
                    Operation::OddPath => ("GET", format!("{collection}/{odd}"), BODY_TYPES),
                    Operation::Watch => ("GET", collection.to_owned(), BODY_TYPES),
                };
                let mut query = query.clone();
                if let Operation::Watch = operation {
                    // Short watches: the stream is read for a moment, then dropped mid-flight.
                    query.push(("watch".into(), "true".into()));
                    query.push(("timeoutSeconds".into(), if no_type { "0" } else { "1" }.into()));
                    if type_choice.index(3) == 0 {
                        query.push(("allowWatchBookmarks".into(), "true".into()));
                        query.push(("sendInitialEvents".into(), "true".into()));
                        query.push(("resourceVersionMatch".into(), "NotOlderThan".into()));
                    }
                }
                let content_type = (!no_type).then(|| *type_choice.get(types));
                body(object).prop_map(move |body| Case {
                    method,
                    path: path.clone(),
                    query: query.clone(),
                    content_type,
                    body,
                })
            },
        )
}

/// Creates (or re-creates, after the fuzz deleted them) every target, so requests meet live objects.
async fn create_targets(client: &Client) {
    // A namespaces deletecollection removes `default` too (kube-apiserver would refuse: reported).
    let default = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    let default = ("/api/v1/namespaces", "default", default);
    // Reversed: the CRD and the namespaces come first.
    for (collection, name, object) in std::iter::once(default).chain(targets().into_iter().rev()) {
        let (status, body) = send(
            client,
            "POST",
            collection,
            Some("application/json"),
            serde_json::to_vec(&object).unwrap(),
        )
        .await
        .unwrap();
        if let Err(problem) = check(status, &body) {
            panic!("seeding {collection}/{name}: {problem}");
        }
        if name.contains('.') && status == 201 {
            // A new CRD is served a moment after it is created.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while send(
                client,
                "GET",
                "/apis/example.com/v1/namespaces/default/postgreswriters",
                None,
                vec![],
            )
            .await
            .unwrap()
            .0 != 200
            {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the CRD is served within 10 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Sends one request; `Err` when the connection broke instead of answering. A watch's stream is read
/// for at most `WATCH_READ`, then dropped; its complete lines come back as a JSON array of events.
async fn send(
    client: &Client,
    method: &str,
    path_and_query: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Result<(u16, Value), String> {
    let mut request = axum::http::Request::builder().method(method).uri(path_and_query);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let request = request
        .body(kube::client::Body::from(body))
        .map_err(|e| e.to_string())?;
    let response = client
        .send(request)
        .await
        .map_err(|e| format!("no response: {e}"))?;
    let status = response.status().as_u16();
    let watch = status == 200 && path_and_query.contains("watch=true");
    let mut chunks = axum::body::Body::new(response.into_body()).into_data_stream();
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now()
        + if watch {
            WATCH_READ
        } else {
            Duration::from_secs(10)
        };
    loop {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Ok(Some(Ok(chunk))) => bytes.extend_from_slice(&chunk),
            Ok(Some(Err(e))) => return Err(format!("the body broke off: {e}")),
            Ok(None) => break,
            Err(_) if watch => break,
            Err(_) => return Err("the body did not end within 10 s".into()),
        }
    }
    if watch {
        let complete = bytes.rsplitn(2, |b| *b == b'\n').nth(1).unwrap_or_default();
        let events = complete
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                serde_json::from_slice(line).unwrap_or_else(|_| Value::from(String::from_utf8_lossy(line)))
            })
            .collect();
        return Ok((
            status,
            json!({"kind": "WatchEvents", "events": Value::Array(events)}),
        ));
    }
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Ok((status, body))
}

/// What a well-behaved answer looks like: below 500, a JSON object with a kind, and a Status whose
/// code is the HTTP status.
fn check(status: u16, body: &Value) -> Result<(), String> {
    if status >= 500 {
        return Err(format!("server error {status}: {body}"));
    }
    let Some(kind) = body.get("kind").and_then(Value::as_str) else {
        return Err(format!("{status} without a JSON object with a kind: {body}"));
    };
    if kind == "Status"
        && body["code"]
            .as_u64()
            .is_some_and(|code| code != u64::from(status))
    {
        return Err(format!("Status code differs from HTTP {status}: {body}"));
    }
    for event in body["events"].as_array().into_iter().flatten() {
        let known = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];
        if !event["type"].as_str().is_some_and(|t| known.contains(&t)) || !event["object"].is_object() {
            return Err(format!("malformed watch event: {event}"));
        }
    }
    Ok(())
}

/// The seed every run uses unless `FUZZ_SEED` says otherwise.
const FIXED_SEED: [u8; 32] = *b"embedded apiserver fuzz seed 001";

/// The seed from `FUZZ_SEED` (64 hex digits, or `random`), [`FIXED_SEED`] without it; and its hex.
fn seed() -> ([u8; 32], String) {
    let seed = match std::env::var("FUZZ_SEED").as_deref() {
        Err(_) => FIXED_SEED,
        Ok("random") => rand::random(),
        Ok(hex) => {
            let mut seed = [0u8; 32];
            for (i, byte) in seed.iter_mut().enumerate() {
                *byte = hex
                    .get(2 * i..2 * i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .expect("FUZZ_SEED is 64 hex digits or `random`");
            }
            seed
        }
    };
    let hex = seed.iter().map(|b| format!("{b:02x}")).collect();
    (seed, hex)
}

fn cases_from_env(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_requests_get_well_formed_answers_and_the_server_keeps_serving() {
    let server = ApiServer::start(Config {
        max_body_bytes: 256 * 1024,
        history_capacity: 64,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = server.client();

    let (seed, hex) = seed();
    println!("FUZZ_SEED={hex}");
    let cases = cases_from_env("FUZZ_CASES", DEFAULT_CASES);
    let mut runner = TestRunner::new_with_rng(
        Default::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    );
    let strategy = case();
    let mut failures = Vec::new();
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    let mut watch_events = 0;
    for i in 0..cases {
        if i % 20 == 0 {
            create_targets(&client).await;
        }
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let query = serde_urlencoded::to_string(&case.query).unwrap_or_default();
        let uri = if query.is_empty() {
            case.path.clone()
        } else {
            format!("{}?{query}", case.path)
        };
        // A URI the HTTP library itself refuses never reaches the server.
        if uri.parse::<axum::http::Uri>().is_err() {
            continue;
        }
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            send(&client, case.method, &uri, case.content_type, case.body.clone()),
        )
        .await
        .unwrap_or_else(|_| Err("no answer within 10 s".into()));
        if let Ok((status, body)) = &answer {
            *by_status.entry(*status).or_default() += 1;
            watch_events += body["events"].as_array().map_or(0, Vec::len);
        }
        if let Err(problem) = answer.and_then(|(status, body)| check(status, &body)) {
            failures.push(format!(
                "case {i}: {} {uri} ({:?}) {}\n  -> {problem}",
                case.method,
                case.content_type,
                String::from_utf8_lossy(&case.body)
            ));
        }
    }
    println!("answers by HTTP status: {by_status:?}; watch events checked: {watch_events}");
    assert!(failures.is_empty(), "FUZZ_SEED={hex}\n{}", failures.join("\n"));
    // The generators reach past the parsers: some requests succeed, others are refused.
    let succeeded: usize = by_status.range(200..300).map(|(_, n)| n).sum();
    let refused: usize = by_status.range(400..500).map(|(_, n)| n).sum();
    assert!(succeeded >= cases / 20 && refused >= cases / 20, "{by_status:?}");

    // Still serving, and still consistent: a list answers and a new object can be created and read.
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.list(&Default::default())
        .await
        .expect("the server still lists");
    let created: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "after-fuzz"}, "data": {"k": "v"}})).unwrap();
    api.create(&PostParams::default(), &created)
        .await
        .expect("the server still creates");
    assert_eq!(api.get("after-fuzz").await.unwrap().data.unwrap()["k"], "v");
}
