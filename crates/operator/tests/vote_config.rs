//! VoteConfig on every tier, each test in a namespace of its own.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use operator::{api::vote_config::VoteConfig, controllers::vote_config};
use serde_json::{Value, json};
use support::{Backend, Scene, eventually};

const LIMIT: Duration = Duration::from_secs(15);

fn vote_config_body(name: &str, options: Value) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name}, "spec": {"options": options}
    }))
    .expect("valid VoteConfig")
}

fn pets() -> Value {
    json!([{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}])
}

async fn options_txt(config_maps: &Api<ConfigMap>, name: &str) -> Option<String> {
    config_maps
        .get_opt(name)
        .await
        .ok()??
        .data?
        .get("options.txt")
        .cloned()
}

fn ready(vc: &VoteConfig) -> Option<String> {
    let c = vc
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| &*c.type_ == "Ready")?;
    Some(format!("{}/{}", c.status, c.reason))
}

async fn config_map_follows_the_options_is_repaired_and_goes_with_the_vote_config(backend: Backend) {
    let scene = Scene::start(backend, "vc-follows").await;
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, vote_config::run);
    let api: Api<VoteConfig> = scene.api();
    let config_maps: Api<ConfigMap> = scene.api();

    let created = api
        .create(&PostParams::default(), &vote_config_body("pets", pets()))
        .await
        .unwrap();
    eventually("the ConfigMap", LIMIT, || async {
        (options_txt(&config_maps, "pets-config").await.as_deref()
            == Some("a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"))
        .then_some(())
    })
    .await;
    let cm = config_maps.get("pets-config").await.unwrap();
    let owner = &cm.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.uid.as_str(), owner.controller),
        (created.metadata.uid.as_deref().unwrap(), Some(true))
    );
    let synced = eventually("Ready status", LIMIT, || async {
        let vc = api.get("pets").await.ok()?;
        (ready(&vc).as_deref() == Some("True/Synced")).then_some(vc)
    })
    .await;
    let status = synced.status.clone().unwrap();
    assert_eq!(
        (status.config_map_name.as_deref(), status.option_count),
        (Some("pets-config"), Some(2))
    );

    // A converged reconcile writes nothing: a change elsewhere triggers no new write.
    let cm_rv = config_maps
        .get("pets-config")
        .await
        .unwrap()
        .metadata
        .resource_version;
    let before = running.reconciles();
    api.patch(
        "pets",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touch": "1"}}})),
    )
    .await
    .unwrap();
    eventually("a reconcile of the label change", LIMIT, || async {
        (running.reconciles() > before).then_some(())
    })
    .await;
    assert_eq!(
        config_maps
            .get("pets-config")
            .await
            .unwrap()
            .metadata
            .resource_version,
        cm_rv
    );
    assert_eq!(
        api.get("pets").await.unwrap().status,
        synced.status,
        "no status write, lastUpdated unchanged"
    );

    // Update: the ConfigMap follows and lastUpdated moves... only if the content changed.
    let more = json!([{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "c", "label": "Birds", "color": "#123456"}]);
    api.patch(
        "pets",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"options": more}})),
    )
    .await
    .unwrap();
    eventually("the updated ConfigMap", LIMIT, || async {
        (options_txt(&config_maps, "pets-config").await.as_deref()
            == Some("a:Cats:#FF6B6B\nc:Birds:#123456\n"))
        .then_some(())
    })
    .await;

    // Hand edits and deletes are repaired (the controller watches the ConfigMaps it owns).
    config_maps
        .patch(
            "pets-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"options.txt": "hacked"}})),
        )
        .await
        .unwrap();
    eventually("the edit to be repaired", LIMIT, || async {
        (options_txt(&config_maps, "pets-config").await.as_deref()
            == Some("a:Cats:#FF6B6B\nc:Birds:#123456\n"))
        .then_some(())
    })
    .await;
    config_maps
        .delete("pets-config", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted ConfigMap to come back", LIMIT, || async {
        options_txt(&config_maps, "pets-config").await.map(|_| ())
    })
    .await;

    // Deletion: the ConfigMap goes by garbage collection.
    api.delete("pets", &DeleteParams::default()).await.unwrap();
    support::until_gone(
        &config_maps,
        "pets-config",
        "the ConfigMap to be collected",
        support::COLLECTED_WITHIN,
    )
    .await;
    // A deleted object leaves nothing waiting in the work queue.
    eventually("an empty work queue", LIMIT, || async {
        (running.workqueue_depth("vote-config") == Some(0.0)).then_some(())
    })
    .await;
    running.stop().await;
}

async fn a_config_map_owned_by_someone_else_is_never_taken_over(backend: Backend) {
    let scene = Scene::start(backend, "vc-not-owned").await;
    let config_maps: Api<ConfigMap> = scene.api();
    let theirs: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "pets-config"}, "data": {"options.txt": "mine"}}))
            .unwrap();
    config_maps.create(&PostParams::default(), &theirs).await.unwrap();
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, vote_config::run);
    let api: Api<VoteConfig> = scene.api();
    api.create(&PostParams::default(), &vote_config_body("pets", pets()))
        .await
        .unwrap();
    let vc = eventually("the not-owned condition", LIMIT, || async {
        let vc = api.get("pets").await.ok()?;
        (ready(&vc).as_deref() == Some("False/ConfigMapNotOwned")).then_some(vc)
    })
    .await;
    assert!(vc.status.unwrap().conditions[0].message.contains("not owned"));
    assert_eq!(
        options_txt(&config_maps, "pets-config").await.as_deref(),
        Some("mine")
    );
    // Events are published off the reconcile's path: an Event says so, soon.
    let events: Api<k8s_openapi::api::core::v1::Event> = scene.api();
    eventually("a ConfigMapNotOwned Event", LIMIT, || async {
        let listed = events.list(&Default::default()).await.ok()?;
        listed
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("ConfigMapNotOwned"))
            .then_some(())
    })
    .await;
    running.stop().await;
}

async fn invalid_options_are_rejected_with_field_paths(backend: Backend) {
    let scene = Scene::start(backend, "vc-invalid").await;
    let api: Api<VoteConfig> = scene.api();
    let cases = [
        (
            json!([{"id": "a", "label": "Cats", "color": "#FF6B6B"}]),
            "spec.options",
        ),
        (
            json!([{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "a", "label": "Dogs", "color": "#4ECDC4"}]),
            "Duplicate value",
        ),
        (
            json!([{"id": "a", "label": "Cats", "color": "red"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]),
            "spec.options[0].color",
        ),
        (
            json!([{"id": "ab", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]),
            "spec.options[0].id",
        ),
        // A colon or a line break in a label would split its options.txt line.
        (
            json!([{"id": "a", "label": "Cats: the best", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]),
            "spec.options[0].label",
        ),
        (
            json!([{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs\nBirds", "color": "#4ECDC4"}]),
            "spec.options[1].label",
        ),
        (
            json!([{"id": "a", "label": "Cats\r", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]),
            "spec.options[0].label",
        ),
    ];
    for (options, expected) in cases {
        let error = api
            .create(&PostParams::default(), &vote_config_body("bad", options))
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("expected a Status error")
        };
        assert_eq!(status.code, 422);
        assert!(
            status.message.contains(expected),
            "{expected}: {}",
            status.message
        );
    }
}

/// The resync interval of the drift tests: short, so that several resyncs pass quickly.
const RESYNC: Duration = Duration::from_secs(1);

async fn a_key_added_by_hand_stays_and_resyncs_neither_write_nor_report_while_ours_is_repaired(
    backend: Backend,
) {
    let scene = Scene::start(backend, "vc-added-by-hand").await;
    let (client, namespace) = (&scene.client, scene.namespace.as_str());
    let (ctx, shutdown) = scene.context(RESYNC);
    let running = support::spawn(ctx, shutdown, vote_config::run);
    let api: Api<VoteConfig> = scene.api();
    let config_maps: Api<ConfigMap> = scene.api();
    api.create(&PostParams::default(), &vote_config_body("pets", pets()))
        .await
        .unwrap();
    eventually("Synced and its creation reported", LIMIT, || async {
        let synced = ready(&api.get("pets").await.ok()?).as_deref() == Some("True/Synced");
        let created = support::times_reported(client, namespace, "pets", "Created")
            .await
            .ok()?;
        (synced && created == 1).then_some(())
    })
    .await;
    let kubeconfig = scene.kubeconfig();

    // Someone adds a key, under a field manager of their own.
    let before = running.reconciles();
    let version = support::kubectl(
        &kubeconfig,
        &[
            "patch",
            "configmap",
            "pets-config",
            "-n",
            namespace,
            "--type",
            "merge",
            "--field-manager",
            "someone-else",
            "-p",
            r#"{"data":{"extra":"x"}}"#,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
    );
    // The change's own reconcile and at least two resyncs.
    eventually("three reconciles", LIMIT + 3 * RESYNC, || async {
        (running.reconciles() >= before + 3).then_some(())
    })
    .await;
    let live = config_maps.get("pets-config").await.unwrap();
    assert_eq!(
        live.metadata.resource_version.as_deref(),
        Some(version.as_str()),
        "no write since the hand edit"
    );
    let data = live.data.unwrap();
    assert_eq!(
        (data["options.txt"].as_str(), data["extra"].as_str()),
        ("a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n", "x"),
        "our key as it was, theirs kept"
    );
    assert_eq!(
        support::times_reported(client, namespace, "pets", "Updated")
            .await
            .unwrap(),
        0,
        "no update reported"
    );

    // A hand edit of our key is repaired, and theirs still stays.
    support::kubectl(
        &kubeconfig,
        &[
            "patch",
            "configmap",
            "pets-config",
            "-n",
            namespace,
            "--type",
            "merge",
            "--field-manager",
            "someone-else",
            "-p",
            r#"{"data":{"options.txt":"hacked"}}"#,
        ],
    );
    eventually("our key repaired and the repair reported", LIMIT, || async {
        let data = config_maps.get("pets-config").await.ok()?.data?;
        let updated = support::times_reported(client, namespace, "pets", "Updated")
            .await
            .ok()?;
        (data.get("options.txt")?.as_str() == "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"
            && data.get("extra")?.as_str() == "x"
            && updated == 1)
            .then_some(())
    })
    .await;
    running.stop().await;
}

/// The longest a failing object waits between retries (the back-off's cap, in docs/operators.md).
const LONGEST_RETRY: Duration = Duration::from_secs(30);

async fn churn_leaves_nothing_queued_and_no_back_off_behind(backend: Backend) {
    let scene = Scene::start(backend, "vc-churn").await;
    let api: Api<VoteConfig> = scene.api();
    let config_maps: Api<ConfigMap> = scene.api();
    // Objects that fail until they are deleted: each one's ConfigMap, its own, was made immutable by
    // hand with other options, so applying the options is refused and retried with back-off.
    let stuck = ["stuck-0", "stuck-1", "stuck-2"];
    for name in stuck {
        let created = api
            .create(&PostParams::default(), &vote_config_body(name, pets()))
            .await
            .unwrap();
        let frozen: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-config"), "ownerReferences": [{
                "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig", "name": name,
                "uid": created.metadata.uid.unwrap(), "controller": true
            }]},
            "immutable": true, "data": {"options.txt": "frozen"}
        }))
        .unwrap();
        config_maps.create(&PostParams::default(), &frozen).await.unwrap();
    }
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, vote_config::run);
    eventually("the stuck objects backing off", LIMIT, || async {
        (running.backoff_objects("vote-config") == Some(stuck.len() as f64)).then_some(())
    })
    .await;

    // Churn: many VoteConfigs created and deleted at once, most before their first reconcile.
    let churn = (0..60).map(|i| {
        let api = api.clone();
        async move {
            let name = format!("churn-{i:02}");
            api.create(&PostParams::default(), &vote_config_body(&name, pets()))
                .await
                .unwrap();
            api.delete(&name, &DeleteParams::default()).await.unwrap();
        }
    });
    futures::future::join_all(churn).await;
    for name in stuck {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    // A watch delivers changes in order: once an object created after all of that is reconciled, the
    // controller has seen every creation and deletion before it.
    api.create(&PostParams::default(), &vote_config_body("last", pets()))
        .await
        .unwrap();
    eventually("the last object reconciled", LIMIT, || async {
        (ready(&api.get("last").await.ok()?).as_deref() == Some("True/Synced")).then_some(())
    })
    .await;
    // A deleted object's retry, if one was due, is at most the longest back-off away.
    eventually(
        "an empty work queue and no back-off left",
        LONGEST_RETRY + LIMIT,
        || async {
            let depth = running.workqueue_depth("vote-config")?;
            let backoff = running.backoff_objects("vote-config")?;
            (depth == 0.0 && backoff == 0.0).then_some(())
        },
    )
    .await;
    running.stop().await;
}

testenv::every_tier!(
    churn_leaves_nothing_queued_and_no_back_off_behind,
    a_key_added_by_hand_stays_and_resyncs_neither_write_nor_report_while_ours_is_repaired,
    config_map_follows_the_options_is_repaired_and_goes_with_the_vote_config,
    a_config_map_owned_by_someone_else_is_never_taken_over,
    invalid_options_are_rejected_with_field_paths,
);
