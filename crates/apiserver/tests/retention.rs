//! What the server forgets, and when: the watch history is bounded in bytes as well as in count (W6),
//! so a burst of large objects cannot hold the server's memory, and a `continue` token that needs a
//! part of it already forgotten is expired (W4).

mod common;

use std::collections::BTreeMap;

use apiserver::{ApiServer, Config};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ListParams, PostParams, WatchEvent, WatchParams},
};

/// Large enough for a dozen of the ConfigMaps below, far below their total.
const KEPT_BYTES: usize = 16 * 1024;

async fn server() -> (ApiServer, Api<ConfigMap>) {
    let server = ApiServer::start(Config {
        history_bytes: KEPT_BYTES,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let api = Api::namespaced(server.client(), "default");
    (server, api)
}

/// Creates `count` ConfigMaps of about 1 KiB each; returns the resourceVersion of the last one.
async fn create_kilobyte_config_maps(api: &Api<ConfigMap>, prefix: &str, count: usize) -> String {
    let mut last = String::new();
    for i in 0..count {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("{prefix}-{i}"));
        cm.data = Some(BTreeMap::from([("blob".to_owned(), "x".repeat(1024))]));
        let created = api.create(&PostParams::default(), &cm).await.expect("created");
        last = created.metadata.resource_version.unwrap_or_default();
    }
    last
}

async fn first_event(api: &Api<ConfigMap>, since: &str) -> WatchEvent<ConfigMap> {
    let stream = api
        .watch(&WatchParams::default().timeout(5), since)
        .await
        .expect("the watch starts");
    let mut stream = stream.boxed();
    tokio::time::timeout(std::time::Duration::from_secs(10), stream.try_next())
        .await
        .expect("an event within the watch's timeout")
        .expect("a readable event")
        .expect("an event")
}

#[tokio::test(flavor = "multi_thread")]
async fn w6_a_watch_resumed_from_before_the_kept_bytes_is_told_410_gone() {
    let (_server, api) = server().await;
    let before = create_kilobyte_config_maps(&api, "early", 1).await;
    let latest = create_kilobyte_config_maps(&api, "burst", 40).await;
    match first_event(&api, &before).await {
        WatchEvent::Error(status) => assert_eq!(status.code, 410, "{status:?}"),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    // The recent past is still there.
    let one_before: u64 = latest.parse::<u64>().expect("a number") - 1;
    match first_event(&api, &one_before.to_string()).await {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("burst-39")),
        other => panic!("expected the last creation, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn w4_a_continue_token_older_than_the_kept_history_of_a_changed_list_is_expired() {
    let (_server, api) = server().await;
    create_kilobyte_config_maps(&api, "cm", 12).await;
    let params = ListParams::default().limit(4);
    let first = api.list(&params).await.expect("a first page");
    let token = first.metadata.continue_.clone().expect("more pages");
    // Other writes alone do not age the token: the list itself has not changed since.
    let other: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(api.clone().into_client(), "default");
    for i in 0..40 {
        let mut secret = k8s_openapi::api::core::v1::Secret::default();
        secret.metadata.name = Some(format!("s-{i}"));
        secret.string_data = Some(BTreeMap::from([("blob".to_owned(), "x".repeat(1024))]));
        other
            .create(&PostParams::default(), &secret)
            .await
            .expect("created");
    }
    let second = api
        .list(&params.clone().continue_token(&token))
        .await
        .expect("the unchanged list still pages");
    assert_eq!(second.items.len(), 4);
    assert_eq!(second.metadata.resource_version, first.metadata.resource_version);
    // Once the list changes and the history no longer reaches back to the token, it is expired.
    create_kilobyte_config_maps(&api, "burst", 20).await;
    let expired = common::api_error(
        api.list(&params.clone().continue_token(&token))
            .await
            .expect_err("the token is too old"),
    );
    assert_eq!(expired.code, 410, "{expired:?}");
    assert!(
        expired.message.contains("too old to display a consistent list"),
        "{expired:?}"
    );
}
