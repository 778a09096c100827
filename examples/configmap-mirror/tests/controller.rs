//! The controller against a real API server (the embedded one, in this process, through kube-envtest):
//! what a user of ConfigMapMirror sees, from create to delete.

use std::time::Duration;

use configmap_mirror::{ConfigMapMirror, ConfigMapMirrorSpec, Phase};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    runtime::wait::{Condition, await_condition, conditions},
};
use kube_envtest::Environment;
use serde_json::json;
use tokio::task::JoinHandle;

/// The controller acts on watch events, within milliseconds; the deadline is far above that so that
/// only a controller that does not converge fails, not a loaded machine.
const CONVERGES_WITHIN: Duration = Duration::from_secs(20);

/// A server with the CRD installed and the controller running against it; both stop when dropped.
struct Running {
    env: Environment,
    controller: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

impl Running {
    async fn start() -> Running {
        let env = Environment::builder()
            .crd_for::<ConfigMapMirror>()
            .start()
            .await
            .expect("the server starts with the ConfigMapMirror CRD established");
        let controller = tokio::spawn(configmap_mirror::run(env.client()));
        Running { env, controller }
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::default_namespaced(self.env.client())
    }

    fn mirrors(&self) -> Api<ConfigMapMirror> {
        Api::default_namespaced(self.env.client())
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some(name.to_owned());
    config_map.data = Some(
        data.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    config_map
}

fn mirror(name: &str, source: &str) -> ConfigMapMirror {
    ConfigMapMirror::new(
        name,
        ConfigMapMirrorSpec {
            source: source.to_owned(),
        },
    )
}

/// Watches `name` until `condition` holds, and returns the object then; fails the test after
/// [`CONVERGES_WITHIN`], saying what was awaited.
async fn wait_until<K>(api: &Api<K>, name: &str, what: &str, condition: impl Condition<K>) -> Option<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(CONVERGES_WITHIN, await_condition(api.clone(), name, condition))
        .await
        .unwrap_or_else(|_| panic!("{name}: {what} within {CONVERGES_WITHIN:?}"))
        .unwrap_or_else(|e| panic!("{name}: watching for {what}: {e}"))
}

fn in_phase(phase: Phase) -> impl Condition<ConfigMapMirror> {
    move |mirror: Option<&ConfigMapMirror>| {
        mirror
            .and_then(|m| m.status.as_ref())
            .is_some_and(|s| s.phase == phase)
    }
}

async fn synced(running: &Running, name: &str) -> ConfigMapMirror {
    wait_until(&running.mirrors(), name, "status Synced", in_phase(Phase::Synced))
        .await
        .expect("the mirror exists")
}

#[tokio::test]
async fn the_copy_holds_the_source_data_and_the_status_says_synced() {
    let running = Running::start().await;
    let post = PostParams::default();
    let source = config_map("settings", &[("color", "blue"), ("size", "L")]);
    running.config_maps().create(&post, &source).await.unwrap();
    let created = running
        .mirrors()
        .create(&post, &mirror("copy", "settings"))
        .await
        .unwrap();

    let status = synced(&running, "copy").await.status.unwrap();
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.keys, 2);
    let copy = running.config_maps().get("copy").await.unwrap();
    assert_eq!(copy.data, source.data);
    let owner = &copy.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("ConfigMapMirror", created.uid().unwrap().as_str())
    );
}

#[tokio::test]
async fn a_change_to_the_source_reaches_the_copy() {
    let running = Running::start().await;
    let post = PostParams::default();
    running
        .config_maps()
        .create(&post, &config_map("settings", &[("color", "blue")]))
        .await
        .unwrap();
    running
        .mirrors()
        .create(&post, &mirror("copy", "settings"))
        .await
        .unwrap();
    synced(&running, "copy").await;

    let change = Patch::Merge(json!({"data": {"color": "green"}}));
    running
        .config_maps()
        .patch("settings", &PatchParams::default(), &change)
        .await
        .unwrap();

    wait_until(
        &running.config_maps(),
        "copy",
        "color green",
        |copy: Option<&ConfigMap>| {
            copy.and_then(|c| c.data.as_ref())
                .and_then(|d| d.get("color"))
                .map(String::as_str)
                == Some("green")
        },
    )
    .await;
}

#[tokio::test]
async fn a_missing_source_is_reported_and_copied_once_it_appears() {
    let running = Running::start().await;
    let post = PostParams::default();
    running
        .mirrors()
        .create(&post, &mirror("copy", "later"))
        .await
        .unwrap();

    let missing = wait_until(
        &running.mirrors(),
        "copy",
        "status SourceMissing",
        in_phase(Phase::SourceMissing),
    )
    .await
    .and_then(|m| m.status)
    .unwrap();
    assert!(
        missing.message.contains("ConfigMap later does not exist"),
        "{}",
        missing.message
    );
    assert_eq!(running.config_maps().get_opt("copy").await.unwrap(), None);

    running
        .config_maps()
        .create(&post, &config_map("later", &[("ready", "yes")]))
        .await
        .unwrap();
    synced(&running, "copy").await;
    let copy = running.config_maps().get("copy").await.unwrap();
    assert_eq!(copy.data.unwrap()["ready"], "yes");
}

#[tokio::test]
async fn a_config_map_that_is_not_the_mirrors_is_never_taken_over() {
    let running = Running::start().await;
    let post = PostParams::default();
    running
        .config_maps()
        .create(&post, &config_map("settings", &[("color", "blue")]))
        .await
        .unwrap();
    running
        .config_maps()
        .create(&post, &config_map("copy", &[("mine", "keep")]))
        .await
        .unwrap();
    running
        .mirrors()
        .create(&post, &mirror("copy", "settings"))
        .await
        .unwrap();

    wait_until(
        &running.mirrors(),
        "copy",
        "status CopyNotOwned",
        in_phase(Phase::CopyNotOwned),
    )
    .await;
    let untouched = running.config_maps().get("copy").await.unwrap();
    assert_eq!(untouched.data, config_map("copy", &[("mine", "keep")]).data);
    assert!(untouched.owner_references().is_empty());
}

#[tokio::test]
async fn deleting_the_mirror_deletes_its_copy() {
    let running = Running::start().await;
    let post = PostParams::default();
    running
        .config_maps()
        .create(&post, &config_map("settings", &[("color", "blue")]))
        .await
        .unwrap();
    running
        .mirrors()
        .create(&post, &mirror("copy", "settings"))
        .await
        .unwrap();
    synced(&running, "copy").await;
    let copy_uid = running.config_maps().get("copy").await.unwrap().uid().unwrap();

    running
        .mirrors()
        .delete("copy", &DeleteParams::default())
        .await
        .unwrap();

    wait_until(
        &running.config_maps(),
        "copy",
        "the copy deleted",
        conditions::is_deleted(&copy_uid),
    )
    .await;
    assert!(
        running.config_maps().get_opt("settings").await.unwrap().is_some(),
        "the source stays"
    );
}
