//! Bad input never crashes the server or corrupts state, concurrent writers and watchers never deadlock
//! and every watcher sees every event in order, and kube-rs discovery and watchers work.

mod common;

use std::time::Duration;

use apiserver::{ApiServer, Config};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Discovery,
    api::{PostParams, WatchEvent, WatchParams},
    runtime::{WatchStreamExt, watcher},
};

#[tokio::test]
async fn bad_input_gets_a_status_error_with_the_right_code_and_changes_nothing() {
    let server = ApiServer::start(Config {
        max_body_bytes: 64 * 1024,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = server.client();
    let cms = "/api/v1/namespaces/default/configmaps";
    // (method, path, content type, body, expected code, expected reason)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "POST",
            cms,
            Some("application/json"),
            b"{not json".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms,
            Some("application/json"),
            b"[1,2]".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms,
            Some("application/yaml"),
            b"a: [".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms,
            Some("application/vnd.kubernetes.protobuf"),
            b"k8s\0garbage".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms,
            Some("text/plain"),
            b"hello".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (
            "POST",
            cms,
            None,
            br#"{"metadata":{"name":"Bad_Name"}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            "POST",
            cms,
            None,
            vec![b' '; 100 * 1024],
            413,
            "RequestEntityTooLarge",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/widgets",
            None,
            vec![],
            404,
            "NotFound",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20b",
            None,
            vec![],
            400,
            "BadRequest",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?fieldSelector=spec.x%3D1",
            None,
            vec![],
            400,
            "BadRequest",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/missing",
            Some("application/merge-patch+json"),
            b"{}".to_vec(),
            404,
            "NotFound",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            Some("text/plain"),
            b"{}".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
    ];
    for (method, path, content_type, body, code, reason) in cases {
        let (status, body) =
            common::send_bytes(&client, method, path, content_type.unwrap_or(""), body).await;
        assert_eq!(status, code, "{method} {path}: {body}");
        assert_eq!(
            (
                body["kind"].as_str(),
                body["reason"].as_str(),
                body["code"].as_u64()
            ),
            (Some("Status"), Some(reason), Some(code as u64)),
            "{method} {path}"
        );
    }
    // A group nothing serves is not an API at all: like kube-apiserver's mux, a plain-text 404.
    let answer = common::request_bytes(&client, "GET", "/apis/nope.example.com/v1/widgets", "", vec![]).await;
    assert_eq!(
        (answer.status, answer.text.as_str()),
        (404, "404 page not found\n")
    );
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(
        api.list(&Default::default()).await.unwrap().items.is_empty(),
        "nothing half-written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn w12_eight_writers_and_fifty_watchers_see_every_event_in_order() {
    const WRITERS: usize = 8;
    const PER_WRITER: usize = 25;
    let server = ApiServer::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let start = server.store().current_resource_version().to_string();
    let mut watchers = Vec::new();
    for _ in 0..50 {
        let stream = api
            .watch(&WatchParams::default().timeout(60), &start)
            .await
            .unwrap()
            .boxed();
        watchers.push(tokio::spawn(async move {
            let mut stream = stream;
            let mut versions = Vec::new();
            while versions.len() < WRITERS * PER_WRITER {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(cm))) => {
                        versions.push(cm.metadata.resource_version.unwrap().parse::<u64>().unwrap())
                    }
                    Ok(Some(_)) => {}
                    other => panic!("watch ended early: {other:?}"),
                }
            }
            versions
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(format!("w{w}-{i}"));
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        }));
    }
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(60), writer)
            .await
            .expect("writers finish")
            .unwrap();
    }
    let mut first: Option<Vec<u64>> = None;
    for watcher in watchers {
        let versions = tokio::time::timeout(Duration::from_secs(60), watcher)
            .await
            .expect("watchers finish")
            .unwrap();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "resourceVersion order");
        match &first {
            None => first = Some(versions),
            Some(expected) => assert_eq!(&versions, expected, "every watcher sees the same events"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn d3_d6_discovery_finds_built_ins_and_custom_resources_both_ways() {
    let server = ApiServer::start(Config::default()).await.unwrap();
    let client = server.client();
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(client.clone());
    let crd = serde_json::from_str(include_str!("fixtures/crd.json")).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    for discovery in [
        Discovery::new(client.clone()).run().await.unwrap(),
        Discovery::new(client.clone()).run_aggregated().await.unwrap(),
    ] {
        let (resource, caps) = discovery
            .resolve_gvk(&kube::core::GroupVersionKind::gvk(
                "example.com",
                "v1",
                "PostgresWriter",
            ))
            .expect("the CRD's kind is discovered");
        assert_eq!(resource.plural, "postgreswriters");
        assert!(
            caps.subresources
                .iter()
                .any(|(sub, _)| sub.plural == "postgreswriters/status" || sub.plural == "status"),
            "{:?}",
            caps.subresources
        );
        assert!(
            discovery
                .resolve_gvk(&kube::core::GroupVersionKind::gvk("apps", "v1", "Deployment"))
                .is_some()
        );
    }
}

/// `step` within 30 s, or a failure naming it (rather than a hang until the harness's limit).
async fn bounded<T>(what: &str, step: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), step)
        .await
        .unwrap_or_else(|_| panic!("{what} took over 30 s"))
}

#[tokio::test(flavor = "multi_thread")]
async fn w6_w9_watcher_lists_then_watches_and_relists_after_the_history_expires() {
    let server = ApiServer::start(Config {
        history_capacity: 8,
        ..Config::default()
    })
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("first".into());
    bounded("creating first", api.create(&PostParams::default(), &cm))
        .await
        .unwrap();
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut saw_init_done = false;
    while !saw_init_done {
        match tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("events")
            .unwrap()
        {
            Some(watcher::Event::InitDone) => saw_init_done = true,
            Some(_) => {}
            None => panic!("watcher ended"),
        }
    }
    cm.metadata.name = Some("second".into());
    bounded("creating second", api.create(&PostParams::default(), &cm))
        .await
        .unwrap();
    let applied = loop {
        match tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("events")
            .unwrap()
        {
            Some(watcher::Event::Apply(cm)) => break cm,
            Some(_) => {}
            None => panic!("watcher ended"),
        }
    };
    assert_eq!(applied.metadata.name.as_deref(), Some("second"));
    // A store built from the same stream keeps up (reflector). Backed off, as a watcher that outlives
    // its server must be: without a back-off, each retry fails at once once the runtime shuts down, and
    // the task spins without yielding, holding up the runtime's shutdown at the end of the test.
    let (reader, writer) = kube::runtime::reflector::store();
    let reflected = kube::runtime::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects()
        .boxed();
    let reflecting = tokio::spawn(reflected.for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .expect("store ready")
        .unwrap();
    assert_eq!(reader.state().len(), 2);
    reflecting.abort();
}
