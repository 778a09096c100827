//! kube-rs 5 against the embedded API server over real HTTP: the fidelity points that
//! controllers and test suites lean on beyond plain CRUD: streaming lists (W10, check 25), selector
//! enter/leave (W11), deletecollection (C10), dryRun (C8), foreground deletion (L5), CRD deletion (L6),
//! Event series through the Recorder (B2, check 24) and ownership moving on update (P4).

mod common;

use std::time::Duration;

use common::{api_error, eventually, start};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::{
    api::{core::v1::ConfigMap, events::v1::Event as EventV1},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Resource,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        events::{Event, EventType, Recorder, Reporter},
        watcher,
    },
};
use serde_json::{Value, json};

fn config_map(name: &str, labels: Value) -> ConfigMap {
    let mut config_map = common::config_map(name, json!({"k": "v"}));
    config_map.metadata.labels = serde_json::from_value(labels).expect("labels");
    config_map
}

/// The next watch event within five seconds.
async fn next_event<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a watch event within 5 s")
        .expect("the stream is open")
        .expect("a well-formed event")
}

async fn install_crd(client: &Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = serde_json::from_str(include_str!("fixtures/crd.json")).expect("CRD parses");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "PostgresWriter");
    Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "postgreswriters"),
    )
}

fn writer(name: &str, finalizers: &[&str]) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name, "finalizers": finalizers}, "spec": {"table": "students"}}))
    .expect("valid object")
}

/// A server with the `WatchList` feature gate on, which streaming lists need.
async fn start_with_watch_list() -> (apiserver::ApiServer, kube::Client) {
    let server = apiserver::ApiServer::start(apiserver::Config {
        watch_list: true,
        ..Default::default()
    })
    .await
    .expect("server starts");
    let client = server.client();
    (server, client)
}

#[tokio::test]
async fn w10_check_25_streaming_lists_end_the_initial_events_with_an_annotated_bookmark() {
    let (_server, client) = start_with_watch_list().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &config_map(name, json!({})))
            .await
            .unwrap();
    }

    // The raw protocol: ADDED for each object, then a BOOKMARK carrying the initial-events-end annotation.
    let mut stream = api
        .watch(&WatchParams::streaming_lists(), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = Vec::new();
    loop {
        match next_event(&mut stream).await {
            WatchEvent::Added(cm) => added.push(cm.metadata.name.unwrap()),
            WatchEvent::Bookmark(bookmark) => {
                assert_eq!(
                    bookmark
                        .metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected event before the bookmark: {other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["a", "b"]);

    // kube-runtime's streaming-list watcher reaches InitDone and then sees live changes.
    let mut events = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("watcher event within 5 s")
            .expect("watcher ok")
            .expect("stream open");
        match event {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event during the initial list: {other:?}"),
        }
    }
    initial.sort();
    assert_eq!(initial, ["a", "b"]);
    api.create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .expect("live event within 5 s")
        .unwrap()
        .unwrap();
    assert!(matches!(event, watcher::Event::Apply(cm) if cm.metadata.name.as_deref() == Some("c")));
}

#[tokio::test]
async fn w10_streaming_lists_are_refused_without_the_watch_list_gate_as_kube_apiserver_1_33_does() {
    let (_server, client) = start().await;
    let answer = common::request(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        "",
        Value::Null,
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.text);
    assert_eq!(
        answer.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    assert_eq!(answer.body["details"]["group"], "meta.k8s.io");
    assert_eq!(answer.body["details"]["kind"], "ListOptions");
}

#[tokio::test]
async fn w10_initial_events_without_bookmarks_end_without_the_annotated_bookmark() {
    let (_server, client) = start_with_watch_list().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &config_map("a", json!({})))
        .await
        .unwrap();
    let answer = common::request(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
        "",
        Value::Null,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let kinds: Vec<String> = answer
        .text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|event| {
            format!(
                "{} {}",
                event["type"].as_str().unwrap_or_default(),
                event["object"]["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(kinds, ["ADDED a"], "no BOOKMARK for a client that takes none");
    // And a resourceVersionMatch without sendInitialEvents is refused, as kube-apiserver refuses it.
    let answer = common::request(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersionMatch=NotOlderThan",
        "",
        Value::Null,
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.text);
    assert_eq!(
        answer.body["details"]["causes"][0]["message"],
        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
    );
}

#[tokio::test]
async fn w5_a_watch_from_a_malformed_resource_version_fails_with_go_parse_error_as_a_500() {
    let (_server, client) = start().await;
    // (as sent in the query, as the server reads it, why strconv refuses it)
    for (sent, version, refused) in [
        ("abc", "abc", "invalid syntax"),
        ("%2B5", "+5", "invalid syntax"),
        (
            "99999999999999999999",
            "99999999999999999999",
            "value out of range",
        ),
    ] {
        let answer = common::request(
            &client,
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={sent}"),
            "",
            Value::Null,
        )
        .await;
        assert_eq!(answer.status, 500, "{version}: {}", answer.text);
        let quoted = format!("{version:?}");
        assert_eq!(
            answer.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
                "message": format!("resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {refused}")}),
            "no reason, as kube-apiserver answers an error it has no Status for"
        );
    }
}

#[tokio::test]
async fn w11_a_selector_watch_sees_objects_enter_and_leave_it() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let created = api
        .create(&PostParams::default(), &config_map("moving", json!({})))
        .await
        .unwrap();
    let since = created.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("tier=web"), &since)
        .await
        .unwrap()
        .boxed();

    let label = |value: Value| Patch::Merge(json!({"metadata": {"labels": {"tier": value}}}));
    api.patch("moving", &PatchParams::default(), &label(json!("web")))
        .await
        .unwrap();
    assert!(
        matches!(next_event(&mut stream).await, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("moving"))
    );
    api.patch(
        "moving",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(next_event(&mut stream).await, WatchEvent::Modified(cm) if cm.data.as_ref().unwrap()["k"] == "changed")
    );
    api.patch("moving", &PatchParams::default(), &label(json!("db")))
        .await
        .unwrap();
    // Leaving the selector is a DELETED event carrying the object as it is now.
    assert!(
        matches!(next_event(&mut stream).await, WatchEvent::Deleted(cm) if cm.metadata.labels.as_ref().unwrap()["tier"] == "db")
    );
    // Changes outside the selector are not sent: the next event is the object coming back.
    api.patch(
        "moving",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "unseen"}})),
    )
    .await
    .unwrap();
    api.patch("moving", &PatchParams::default(), &label(json!("web")))
        .await
        .unwrap();
    assert!(
        matches!(next_event(&mut stream).await, WatchEvent::Added(cm) if cm.data.as_ref().unwrap()["k"] == "unseen")
    );
}

#[tokio::test]
async fn c10_deletecollection_deletes_exactly_what_the_selector_matches() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for (name, group) in [("a1", "a"), ("a2", "a"), ("b1", "b")] {
        api.create(&PostParams::default(), &config_map(name, json!({"group": group})))
            .await
            .unwrap();
    }
    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels("group=a"))
        .await
        .unwrap();
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, ["b1"]);
}

#[tokio::test]
async fn c8_dry_run_answers_as_a_write_would_and_persists_nothing() {
    let (server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let dry_post = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let before = server.store().current_resource_version();

    let answered = api
        .create(&dry_post, &config_map("ghost", json!({})))
        .await
        .unwrap();
    assert_eq!(answered.metadata.name.as_deref(), Some("ghost"));
    assert_eq!(api_error(api.get("ghost").await.unwrap_err()).code, 404);
    // Invalid input is still refused under dryRun.
    let invalid = api
        .create(&dry_post, &config_map("Not_A_Name", json!({})))
        .await
        .unwrap_err();
    assert_eq!(api_error(invalid).code, 422);
    assert_eq!(
        server.store().current_resource_version(),
        before,
        "nothing was written"
    );

    api.create(&PostParams::default(), &config_map("real", json!({})))
        .await
        .unwrap();
    let written = server.store().current_resource_version();
    let patched = api
        .patch(
            "real",
            &PatchParams::default().dry_run(),
            &Patch::Merge(json!({"data": {"k": "dry"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "dry");
    api.delete("real", &DeleteParams::default().dry_run())
        .await
        .unwrap();
    let stored = api.get("real").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "v");
    assert_eq!(
        server.store().current_resource_version(),
        written,
        "nothing was written"
    );
}

#[tokio::test]
async fn l5_foreground_deletion_removes_the_owner_only_after_its_dependents() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let owner = api
        .create(&PostParams::default(), &config_map("owner", json!({})))
        .await
        .unwrap();
    let mut dependent = config_map("dependent", json!({}));
    let mut reference = owner.controller_owner_ref(&()).unwrap();
    reference.block_owner_deletion = Some(true);
    dependent.metadata.owner_references = Some(vec![reference]);
    // The dependent's own finalizer holds it, and so the owner, until it is removed.
    dependent.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &dependent).await.unwrap();

    api.delete("owner", &DeleteParams::foreground()).await.unwrap();
    let deleting = api.get("owner").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.finalizers.unwrap(), ["foregroundDeletion"]);
    eventually("the dependent to be marked for deletion", || async {
        api.get("dependent")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    assert!(
        api.get("owner").await.is_ok(),
        "the owner waits for its dependent"
    );

    api.patch(
        "dependent",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("owner and dependent to be gone", || async {
        api.get_opt("owner").await.unwrap().is_none() && api.get_opt("dependent").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn l6_deleting_a_crd_deletes_its_resources_then_stops_serving_them() {
    let (server, client) = start().await;
    let writers = install_crd(&client).await;
    writers
        .create(&PostParams::default(), &writer("free", &[]))
        .await
        .unwrap();
    writers
        .create(&PostParams::default(), &writer("held", &["example.com/hold"]))
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("postgreswriters.example.com", &DeleteParams::default())
        .await
        .unwrap();

    // The CRD waits, terminating, while a resource's finalizer holds; the others are gone already.
    eventually("the unheld resource to go", || async {
        writers.get_opt("free").await.unwrap().is_none()
    })
    .await;
    let terminating = crds.get("postgreswriters.example.com").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert!(
        writers
            .get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    writers
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the CRD to go", || async {
        crds.get_opt("postgreswriters.example.com")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let gone = writers.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error(gone).code, 404, "the endpoint is no longer served");
    let discovery = client
        .request_text(
            axum::http::Request::get(format!("{}/apis", server.url()))
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(!discovery.contains("example.com"), "{discovery}");
}

#[tokio::test]
async fn b2_check_24_the_recorder_counts_a_repeated_event_as_a_series() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let subject = api
        .create(&PostParams::default(), &config_map("noisy", json!({})))
        .await
        .unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "fidelity-test".into(),
            instance: None,
        },
    );
    let event = Event {
        type_: EventType::Warning,
        reason: "Flapping".into(),
        note: Some("it happened again".into()),
        action: "Check".into(),
        secondary: None,
    };
    let reference = subject.object_ref(&());
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();

    let events: Api<EventV1> = Api::default_namespaced(client.clone());
    let listed = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1, "one Event with a series, not two Events");
    assert_eq!(listed[0].series.as_ref().map(|s| s.count), Some(2));
    // The same Event through core/v1, as kubectl describe reads it.
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client);
    let core_events = core
        .list(&ListParams::default().fields("involvedObject.name=noisy"))
        .await
        .unwrap()
        .items;
    assert_eq!(core_events.len(), 1);
    assert_eq!(core_events[0].reason.as_deref(), Some("Flapping"));
    assert_eq!(core_events[0].message.as_deref(), Some("it happened again"));
}

#[tokio::test]
async fn p4_a_field_changed_by_an_update_is_owned_by_its_writer_and_an_apply_conflicts() {
    let (_server, client) = start().await;
    let writers = install_crd(&client).await;
    let applied = json!({"apiVersion": "example.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": "owned"}, "spec": {"table": "students"}});
    writers
        .patch("owned", &PatchParams::apply("kubectl"), &Patch::Apply(&applied))
        .await
        .unwrap();
    let edited = writers
        .patch(
            "owned",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"spec": {"table": "teachers"}})),
        )
        .await
        .unwrap();
    let managers: Vec<(String, String)> = edited
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|e| (e.manager.unwrap(), e.operation.unwrap()))
        .collect();
    assert!(
        managers.contains(&("kubectl-edit".into(), "Update".into())),
        "{managers:?}"
    );

    // Re-applying the old value would silently undo the edit: it conflicts instead, until forced.
    let conflict = writers
        .patch("owned", &PatchParams::apply("kubectl"), &Patch::Apply(&applied))
        .await
        .unwrap_err();
    let status = api_error(conflict);
    assert_eq!(status.code, 409);
    assert!(status.message.contains("kubectl-edit"), "{}", status.message);
    let forced = writers
        .patch(
            "owned",
            &PatchParams::apply("kubectl").force(),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["table"], "students");
}

#[tokio::test]
async fn b5_services_and_deployments_get_the_defaults_controllers_diff_against() {
    use k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
    let (_server, client) = start().await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let service: Service = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}))
    .unwrap();
    let created = services.create(&PostParams::default(), &service).await.unwrap();
    let spec = created.spec.unwrap();
    let ip = spec.cluster_ip.clone().unwrap();
    assert!(ip.starts_with("10.96."), "allocated from the service range: {ip}");
    assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80))
    );
    // clusterIP is immutable once allocated.
    let moved = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterIP": "10.96.99.99"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(moved).code, 422);

    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let deployment: Deployment = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}))
    .unwrap();
    let spec = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.unwrap();
    let quarter = Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(
        "25%".into(),
    ));
    assert_eq!(
        (rolling.max_surge, rolling.max_unavailable),
        (quarter.clone(), quarter)
    );
}

#[tokio::test]
async fn b3_lease_micro_times_round_trip_verbatim_and_a_stale_update_conflicts() {
    use k8s_openapi::api::coordination::v1::Lease;
    let (server, client) = start().await;
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let body: Lease = serde_json::from_value(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
        "acquireTime": "2026-11-23T01:02:03.456789Z", "renewTime": "2026-11-23T01:02:03.456789Z"}}))
    .unwrap();
    let created = leases.create(&PostParams::default(), &body).await.unwrap();
    // Read raw, not through k8s-openapi, which would re-format the time itself.
    let request = axum::http::Request::get(format!(
        "{}/apis/coordination.k8s.io/v1/namespaces/default/leases/leader",
        server.url()
    ))
    .body(Vec::new())
    .unwrap();
    let raw: Value = serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap();
    assert_eq!(raw["spec"]["renewTime"], "2026-11-23T01:02:03.456789Z");
    assert_eq!(raw["spec"]["acquireTime"], "2026-11-23T01:02:03.456789Z");
    assert_eq!(
        api_error(leases.create(&PostParams::default(), &body).await.unwrap_err()).code,
        409,
        "a second candidate creating the Lease loses the race"
    );

    let mut renewed = created.clone();
    renewed.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases
        .replace("leader", &PostParams::default(), &renewed)
        .await
        .unwrap();
    // The same stale copy again: its resourceVersion is now old.
    let stale = leases
        .replace("leader", &PostParams::default(), &renewed)
        .await
        .unwrap_err();
    assert_eq!(api_error(stale).code, 409);
}

#[tokio::test]
async fn b4_immutable_config_maps_refuse_changes_to_their_data() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut frozen = config_map("frozen", json!({}));
    frozen.immutable = Some(true);
    api.create(&PostParams::default(), &frozen).await.unwrap();
    let changed = api
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(changed).code, 422);
    assert_eq!(api.get("frozen").await.unwrap().data.unwrap()["k"], "v");
}

#[tokio::test]
async fn l5_a_dependent_written_after_its_owner_is_gone_is_collected() {
    let (_server, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let owner = api
        .create(&PostParams::default(), &config_map("late-owner", json!({})))
        .await
        .unwrap();
    api.delete("late-owner", &DeleteParams::default()).await.unwrap();
    // A controller acting on a stale cache writes a child of the deleted owner.
    let mut late = config_map("late-child", json!({}));
    late.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
    api.create(&PostParams::default(), &late).await.unwrap();
    eventually("the orphaned child to be collected", || async {
        api.get_opt("late-child").await.unwrap().is_none()
    })
    .await;
    // A child of an owner of a type the server does not serve is left alone: nothing can be known.
    let mut unknown = config_map("unknown-owner-child", json!({}));
    unknown.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({"apiVersion": "nowhere.example.com/v1", "kind": "Ghost",
            "name": "g", "uid": "00000000-0000-0000-0000-000000000000"}))
        .unwrap(),
    ]);
    api.create(&PostParams::default(), &unknown).await.unwrap();
    assert!(api.get_opt("unknown-owner-child").await.unwrap().is_some());
}

#[tokio::test]
async fn l3_the_default_and_system_namespaces_cannot_be_deleted() {
    use k8s_openapi::api::core::v1::Namespace;
    let (_server, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client);
    for name in ["default", "kube-system", "kube-public"] {
        let refused = namespaces
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_err();
        assert_eq!(api_error(refused).code, 403, "{name}");
        assert!(
            namespaces
                .get(name)
                .await
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_none()
        );
    }
}
