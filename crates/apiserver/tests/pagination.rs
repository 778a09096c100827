//! Paginated lists (W4) as kube-rs pages them: every page shows the collection as it stood at the
//! first page, whatever is created, changed or deleted between pages; each test runs on the
//! embedded server and on the real kube-apiserver.

mod common;

use std::collections::BTreeMap;

use common::config_map;
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, ObjectList, Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{Backend, ControlPlane};

/// A Secret named `name` whose `v` is `value`. Secrets, because nothing else writes them in a new
/// cluster's `default` namespace (the real controller manager adds a ConfigMap to each namespace).
fn secret(name: &str, value: &str) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some(name.to_owned());
    secret.data = Some(BTreeMap::from([(
        "v".to_owned(),
        ByteString(value.as_bytes().to_vec()),
    )]));
    secret
}

/// What a test reads of each listed object: its name and its `v`.
trait Listed {
    fn name_and_value(&self) -> (String, String);
}

impl Listed for Secret {
    fn name_and_value(&self) -> (String, String) {
        let value = self.data.as_ref().and_then(|d| d.get("v"));
        let value = value.map(|v| String::from_utf8_lossy(&v.0).into_owned());
        (
            self.metadata.name.clone().unwrap_or_default(),
            value.unwrap_or_default(),
        )
    }
}

impl Listed for ConfigMap {
    fn name_and_value(&self) -> (String, String) {
        let value = self.data.as_ref().and_then(|d| d.get("v")).cloned();
        (
            self.metadata.name.clone().unwrap_or_default(),
            value.unwrap_or_default(),
        )
    }
}

/// The names and `v` of the objects of every page from `first` on, and the resourceVersion each
/// page carries.
async fn rest_of_the_list<K>(
    api: &Api<K>,
    params: &ListParams,
    first: ObjectList<K>,
) -> (Vec<(String, String)>, Vec<String>)
where
    K: Listed + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut seen = Vec::new();
    let mut versions = Vec::new();
    let mut page = first;
    loop {
        seen.extend(page.items.iter().map(Listed::name_and_value));
        versions.push(page.metadata.resource_version.clone().unwrap_or_default());
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(token) => {
                page = api
                    .list(&params.clone().continue_token(&token))
                    .await
                    .expect("the next page")
            }
            None => return (seen, versions),
        }
    }
}

async fn every_page_shows_the_list_as_it_was_at_the_first(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let api: Api<Secret> = Api::default_namespaced(plane.client());
    for i in 0..10 {
        let created = secret(&format!("cm-{i:02}"), "before");
        api.create(&PostParams::default(), &created)
            .await
            .expect("created");
    }
    let params = ListParams::default().limit(3);
    let first = api.list(&params).await.expect("a first page");
    assert_eq!(first.metadata.remaining_item_count, Some(7));

    // Between the pages: one object not yet served changes, one goes, one comes, and one already
    // served goes too.
    let patch = Patch::Merge(json!({"stringData": {"v": "after"}}));
    api.patch("cm-05", &PatchParams::default(), &patch)
        .await
        .expect("patched");
    api.delete("cm-07", &DeleteParams::default())
        .await
        .expect("deleted");
    api.delete("cm-01", &DeleteParams::default())
        .await
        .expect("deleted");
    let late = secret("cm-04a", "late");
    api.create(&PostParams::default(), &late).await.expect("created");

    let (seen, versions) = rest_of_the_list(&api, &params, first).await;
    let expected: Vec<(String, String)> = (0..10)
        .map(|i| (format!("cm-{i:02}"), "before".to_owned()))
        .collect();
    assert_eq!(seen, expected, "the pages show the list of the first page");
    assert_eq!(versions.len(), 4, "{versions:?}");
    assert!(
        versions.iter().all(|v| *v == versions[0]),
        "one resourceVersion: {versions:?}"
    );

    // A new list sees the changes.
    let (now, _) = rest_of_the_list(&api, &params, api.list(&params).await.expect("a list")).await;
    let now: BTreeMap<String, String> = now.into_iter().collect();
    assert_eq!(now.len(), 9);
    assert_eq!(now.get("cm-05").map(String::as_str), Some("after"));
    assert!(!now.contains_key("cm-07") && !now.contains_key("cm-01"));
    assert_eq!(now.get("cm-04a").map(String::as_str), Some("late"));
}

async fn pages_with_a_selector_hold_only_what_it_selects(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let api: Api<ConfigMap> = Api::default_namespaced(plane.client());
    for i in 0..12 {
        let mut cm = config_map(&format!("cm-{i:02}"), json!({"v": "x"}));
        let parity = if i % 3 == 0 { "picked" } else { "other" };
        cm.metadata.labels = Some(BTreeMap::from([("kind".to_owned(), parity.to_owned())]));
        api.create(&PostParams::default(), &cm).await.expect("created");
    }
    let params = ListParams::default().labels("kind=picked").limit(2);
    let first = api.list(&params).await.expect("a first page");
    assert_eq!(
        first.metadata.remaining_item_count, None,
        "not counted under a selector"
    );
    let (seen, _) = rest_of_the_list(&api, &params, first).await;
    let names: Vec<String> = seen.into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["cm-00", "cm-03", "cm-06", "cm-09"]);
}

/// A continue token the server did not hand out is refused with 400, in kube-apiserver's words, which
/// quote what Go's decoders made of it.
async fn a_made_up_continue_token_is_refused_as_kube_apiserver_words_it(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    for (token, why) in [
        (
            "garbage",
            "invalid character '\\u0081' looking for beginning of value",
        ),
        ("ab!d", "illegal base64 data at input byte 2"),
    ] {
        let refused = common::request(
            &client,
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?limit=2&continue={token}"),
            "",
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(
            (refused.status, &refused.body["reason"], &refused.body["message"]),
            (
                400,
                &json!("BadRequest"),
                &json!(format!(
                    "invalid continue token: continue key is not valid: {why}"
                ))
            ),
            "{token}"
        );
    }
}

testenv::each_control_plane!(
    a_made_up_continue_token_is_refused_as_kube_apiserver_words_it,
    every_page_shows_the_list_as_it_was_at_the_first,
    pages_with_a_selector_hold_only_what_it_selects,
);
