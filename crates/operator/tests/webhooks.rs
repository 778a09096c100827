//! The operator's webhooks as the API server calls them: VoteConfig conversion between v1alpha1 and
//! v1 (read through kubectl in both versions), defaulting, PostgresWriter validation against the
//! database, what each failurePolicy does with the webhook down, the CEL rules' messages, and the
//! upgrade from the v1alpha1-only CRD. kube-envtest's `WebhookInstallOptions` wires the webhooks from
//! `config/crd` and `config/webhook` (see support/webhooks.rs).

mod support;

use std::{path::Path, time::Duration};

use k8s_openapi::{
    api::core::v1::ConfigMap, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
};
use operator::{
    api::{postgres_writer::PostgresWriter, vote_config::VoteConfig},
    controllers::vote_config,
    db::{DatabaseConfig, RowStore, throwaway::ThrowawayPostgres},
    runtime::metrics::Metrics,
    webhook::{CONVERSION_PATH, MUTATE_VOTE_CONFIG_PATH, validation::TableCheck},
};
use serde_json::{Value, json};
use support::{
    Backend, eventually,
    webhooks::{self, Plane, Registered},
};

const LIMIT: Duration = Duration::from_secs(30);

fn vote_config(name: &str, spec: Value) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec
    }))
    .expect("valid VoteConfig")
}

/// `kubectl get <resource> <name> -o json` against `plane`.
fn kubectl_get(kubeconfig: &Path, resource: &str, name: &str) -> Value {
    let output = support::kubectl(
        kubeconfig,
        &["get", resource, name, "-n", "default", "-o", "json"],
    );
    serde_json::from_str(&output).expect("kubectl prints JSON")
}

fn write_kubeconfig(plane: &Plane) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&path);
    (dir, path)
}

/// The message of the API error `result` must be.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn vote_configs_read_the_same_in_both_versions(backend: Backend) {
    let (plane, hooks) = webhooks::start(backend, Registered::ConversionOnly, None).await;
    let client = plane.client();
    let (_home, kubeconfig) = write_kubeconfig(&plane);
    let api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");

    // Made as v1, read as v1alpha1: the question rides in an annotation.
    let spec = json!({"question": "Which pet?", "options": [
        {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]});
    api.create(&PostParams::default(), &vote_config("pets", spec.clone()))
        .await
        .unwrap();
    let old = kubectl_get(
        &kubeconfig,
        "voteconfigs.v1alpha1.voting.schoolofdevops.com",
        "pets",
    );
    assert_eq!(old["apiVersion"], "voting.schoolofdevops.com/v1alpha1");
    assert_eq!(
        old["metadata"]["annotations"]["voting.schoolofdevops.com/question"],
        "Which pet?"
    );
    assert_eq!(old["spec"], json!({"options": spec["options"]}));

    // Changed through v1alpha1: the question is still there in v1.
    support::kubectl(
        &kubeconfig,
        &[
            "label",
            "voteconfigs.v1alpha1.voting.schoolofdevops.com",
            "pets",
            "-n",
            "default",
            "team=pets",
        ],
    );
    let new = kubectl_get(&kubeconfig, "voteconfigs.v1.voting.schoolofdevops.com", "pets");
    assert_eq!(new["spec"], spec, "nothing lost through v1alpha1");
    assert_eq!(new["metadata"]["labels"]["team"], "pets");
    assert!(new["metadata"].get("annotations").is_none(), "{new}");

    // Made as v1alpha1, read as v1.
    let manifest = plane_file(
        &kubeconfig,
        "polls.yaml",
        "apiVersion: voting.schoolofdevops.com/v1alpha1\nkind: VoteConfig\nmetadata: {name: polls, namespace: default}\n\
         spec:\n  options:\n  - {id: a, label: Tabs, color: \"#FF6B6B\"}\n  - {id: b, label: Spaces, color: \"#4ECDC4\"}\n",
    );
    support::kubectl(&kubeconfig, &["apply", "-f", &manifest]);
    let polls = api.get("polls").await.unwrap();
    assert_eq!(polls.spec.question, None);
    assert_eq!(
        polls
            .spec
            .options
            .iter()
            .map(|o| o.label.as_str())
            .collect::<Vec<_>>(),
        ["Tabs", "Spaces"]
    );
    assert!(
        hooks.requests(CONVERSION_PATH, 200) >= 3.0,
        "{}",
        hooks.metrics.encode()
    );
    assert!(
        hooks
            .metrics
            .encode()
            .contains("controller_runtime_webhook_latency_seconds_count{webhook=\"/convert\"}"),
        "latency is recorded per webhook"
    );
}

/// Writes `text` into a file beside `kubeconfig`, returning its path.
fn plane_file(kubeconfig: &Path, name: &str, text: &str) -> String {
    let path = kubeconfig.with_file_name(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn defaulting_gives_each_option_a_color_no_other_option_uses(backend: Backend) {
    let (plane, hooks) = webhooks::start(backend, Registered::Admission, None).await;
    let client = plane.client();
    let api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let body = vote_config(
        "pets",
        json!({"options": [
            {"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs", "color": "#E6194B"}, {"id": "c", "label": "Birds"}]}),
    );
    // Dry runs until the API server calls the new configuration; the webhook has no side effects, so
    // it is called for them too.
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    eventually(
        "the defaulting webhook to be called",
        webhooks::REGISTERED_WITHIN,
        || async {
            let admitted = api.create(&dry_run, &body).await.ok()?;
            admitted.spec.options[0].color.is_some().then_some(())
        },
    )
    .await;
    assert!(
        api.get_opt("pets").await.unwrap().is_none(),
        "a dry run stores nothing"
    );
    let created = api.create(&PostParams::default(), &body).await.unwrap();
    let colors: Vec<Option<&str>> = created.spec.options.iter().map(|o| o.color.as_deref()).collect();
    assert_eq!(colors, [Some("#3CB44B"), Some("#E6194B"), Some("#4363D8")]);
    assert!(hooks.requests(MUTATE_VOTE_CONFIG_PATH, 200) >= 2.0);
}

/// PostgreSQL with a table `students` PostgresWriter can write and a table `grades` it cannot (its
/// `age` is text).
async fn database() -> (ThrowawayPostgres, TableCheck) {
    let pg = ThrowawayPostgres::start().await.expect("PostgreSQL starts");
    let sql = support::postgres_writer::connect(&pg).await;
    sql.batch_execute(
        "CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL); \
         CREATE TABLE grades (id text PRIMARY KEY, name text NOT NULL, age text NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL);",
    )
    .await
    .unwrap();
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    let store = RowStore::new(pool, Metrics::new().database);
    (
        pg,
        TableCheck {
            store,
            auto_create: false,
        },
    )
}

async fn admission_refuses_a_table_that_cannot_hold_rows_and_each_policy_decides_when_down(backend: Backend) {
    let (_pg, tables) = database().await;
    let (plane, hooks) = webhooks::start(backend, Registered::Admission, Some(tables)).await;
    let client = plane.client();
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), "default");
    let bad = support::postgres_writer::writer("ada", "grades", "Ada", 36, "UK");

    let refused = eventually(
        "the validating webhook to be called",
        webhooks::REGISTERED_WITHIN,
        || async {
            match writers.create(&PostParams::default(), &bad).await {
                Err(kube::Error::Api(status)) => Some(status.message),
                Ok(_) => {
                    let _ = writers.delete("ada", &Default::default()).await;
                    None
                }
                Err(_) => None,
            }
        },
    )
    .await;
    assert_eq!(
        refused,
        "admission webhook \"vpostgreswriter-v1.demo.yash.com\" denied the request: spec.table: table grades \
         cannot hold PostgresWriter rows (column age is text, expected integer): alter the table or name \
         another one"
    );
    let good = support::postgres_writer::writer("alan", "students", "Alan", 41, "UK");
    writers
        .create(&PostParams::default(), &good)
        .await
        .expect("a good table is admitted");
    assert!(hooks.readiness.failing().await.is_empty());

    // The webhook down: PostgresWriter (Ignore) is admitted, the controller checks the table later;
    // VoteConfig (Fail) is refused rather than stored without its defaults.
    hooks.server.stop();
    eventually("readiness to notice", LIMIT, || async {
        (hooks.readiness.failing().await == ["webhook: not answering"]).then_some(())
    })
    .await;
    writers
        .create(&PostParams::default(), &bad)
        .await
        .expect("failurePolicy Ignore admits without the webhook");
    let vote_configs: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let refused = refusal(
        vote_configs
            .create(
                &PostParams::default(),
                &vote_config(
                    "pets",
                    json!({"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}),
                ),
            )
            .await,
    );
    assert!(
        refused.starts_with(
            "Internal error occurred: failed calling webhook \"mvoteconfig-v1.voting.schoolofdevops.com\": "
        ),
        "{refused}"
    );
}

async fn cel_rules_refuse_with_their_messages(backend: Backend) {
    let (_plane, client) = support::cluster(backend).await;
    let api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let twins = vote_config(
        "twins",
        json!({"options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Cats", "color": "#4ECDC4"}]}),
    );
    assert_eq!(
        refusal(api.create(&PostParams::default(), &twins).await),
        "VoteConfig.voting.schoolofdevops.com \"twins\" is invalid: spec.options: Invalid value: \"array\": \
         two options have the same label: voters could not tell them apart"
    );
    let same_color = vote_config(
        "lookalikes",
        json!({"options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#ff6b6b"}]}),
    );
    assert_eq!(
        refusal(api.create(&PostParams::default(), &same_color).await),
        "VoteConfig.voting.schoolofdevops.com \"lookalikes\" is invalid: spec.options: Invalid value: \"array\": \
         two options have the same color: voters could not tell them apart"
    );

    let asked = vote_config(
        "pets",
        json!({"question": "Which pet?", "options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]}),
    );
    api.create(&PostParams::default(), &asked).await.unwrap();
    let change = |question: Value| Patch::Merge(json!({"spec": {"question": question}}));
    let expected = "VoteConfig.voting.schoolofdevops.com \"pets\" is invalid: spec: Invalid value: \"object\": \
                    spec.question cannot change once set: the votes cast so far answered it; create another \
                    VoteConfig to ask another question";
    for question in [json!("Which animal?"), Value::Null] {
        assert_eq!(
            refusal(
                api.patch("pets", &PatchParams::default(), &change(question))
                    .await
            ),
            expected
        );
    }
    // Other changes stay possible.
    api.patch(
        "pets",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "c", "label": "Birds", "color": "#123456"}]}})),
    )
    .await
    .expect("options may change under a fixed question");
}

/// What the v1alpha1 operator left behind: its ConfigMap for the VoteConfig.
fn config_map_of_the_old_operator(owner: &DynamicObject) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "pets-config", "namespace": "default",
            "labels": {"app.kubernetes.io/managed-by": "vote-config"},
            "ownerReferences": [{
                "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig", "name": "pets",
                "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": true
            }]
        },
        "data": {"options.txt": "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"}
    }))
    .unwrap()
}

async fn vote_configs_made_before_v1_survive_the_upgrade(backend: Backend) {
    let plane = Plane::start(backend).await;
    let client = plane.client();
    let (_home, kubeconfig) = write_kubeconfig(&plane);

    // Before: the v1alpha1-only CRD, a VoteConfig, and the ConfigMap the operator of then made.
    let old_crd: CustomResourceDefinition =
        serde_yaml::from_str(include_str!("fixtures/voteconfigs-v1alpha1-only.yaml")).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &old_crd).await.unwrap();
    let v1alpha1 = ApiResource {
        group: "voting.schoolofdevops.com".into(),
        version: "v1alpha1".into(),
        api_version: "voting.schoolofdevops.com/v1alpha1".into(),
        kind: "VoteConfig".into(),
        plural: "voteconfigs".into(),
    };
    let old_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &v1alpha1);
    let old_object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"name": "pets", "namespace": "default"},
        "spec": {"options": [{"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}]}
    }))
    .unwrap();
    let created = eventually("the v1alpha1 resource to be served", LIMIT, || async {
        old_api.create(&PostParams::default(), &old_object).await.ok()
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let before = config_maps
        .create(&PostParams::default(), &config_map_of_the_old_operator(&created))
        .await
        .unwrap();

    // The upgrade: the webhooks first, then the CRD with v1 stored, then the controller.
    let _hooks = webhooks::install(&client, Registered::Admission, None).await;
    let (ctx, shutdown) = support::context(&client, Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, vote_config::run);
    let api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let synced = eventually("the old VoteConfig to be Ready under v1", LIMIT, || async {
        let vc = api.get("pets").await.ok()?;
        let status = vc.status.clone()?;
        status
            .conditions
            .iter()
            .any(|c| c.is("Ready", "True"))
            .then_some(vc)
    })
    .await;
    assert_eq!(synced.metadata.uid, created.metadata.uid);
    assert_eq!(synced.spec.options.len(), 2);
    let after = config_maps.get("pets-config").await.unwrap();
    assert_eq!(after.metadata.uid, before.metadata.uid, "the same ConfigMap");
    assert_eq!(after.data, before.data, "the voters see what they saw");

    // The migration: every object rewritten as v1, then v1alpha1 dropped from storedVersions.
    let stored =
        |crd: CustomResourceDefinition| crd.status.and_then(|s| s.stored_versions).unwrap_or_default();
    assert_eq!(
        stored(crds.get("voteconfigs.voting.schoolofdevops.com").await.unwrap()),
        ["v1alpha1", "v1"]
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_operator"))
        .arg("migrate-storage")
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        printed.contains(
            "voteconfigs.voting.schoolofdevops.com: 1 objects rewritten as v1; storedVersions was v1alpha1,v1, is now v1"
        ),
        "{printed}"
    );
    assert_eq!(
        stored(crds.get("voteconfigs.voting.schoolofdevops.com").await.unwrap()),
        ["v1"]
    );
    let old_view = kubectl_get(
        &kubeconfig,
        "voteconfigs.v1alpha1.voting.schoolofdevops.com",
        "pets",
    );
    assert_eq!(
        old_view["spec"], old_object.data["spec"],
        "still readable as v1alpha1, unchanged"
    );
    assert_eq!(config_maps.get("pets-config").await.unwrap().data, before.data);
    running.stop().await;
}

testenv::each_control_plane!(
    vote_configs_read_the_same_in_both_versions,
    defaulting_gives_each_option_a_color_no_other_option_uses,
    admission_refuses_a_table_that_cannot_hold_rows_and_each_policy_decides_when_down,
    cel_rules_refuse_with_their_messages,
    vote_configs_made_before_v1_survive_the_upgrade,
);
