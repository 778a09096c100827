//! The manager as operators of a cluster see it, on every tier, each test in a namespace of its own:
//! `/metrics` after real reconciles, and shutdown that finishes in-flight work and then exits at once.
//! `/readyz` through a database outage is in database_outage.rs, through a shutdown in drain.rs.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
    runtime::controller::Action,
};
use operator::{
    api::{postgres_writer::PostgresWriter, vote_config::VoteConfig, web_app::WebApp},
    controllers::vote_config,
    db::throwaway::ThrowawayPostgres,
    manager::run::GRACEFUL_SHUTDOWN_TIMEOUT,
    runtime::{self, Reconciler, Toolkit},
};
use serde_json::json;
use support::{Backend, EXIT_AFTER_SIGNAL, OperatorProcess, Scene, WEB_IMAGE, eventually, http_get};

const CONTROLLERS: [&str; 3] = ["postgres-writer", "vote-config", "web-app"];

fn vote_config_body(name: &str) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [
            {"id": "a", "label": "Cats", "color": "#FF6B6B"}, {"id": "b", "label": "Dogs", "color": "#4ECDC4"}
        ]}
    }))
    .expect("valid VoteConfig")
}

fn web_app_body(name: &str) -> WebApp {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": {"image": WEB_IMAGE, "replicas": 1}
    }))
    .expect("valid WebApp")
}

fn postgres_writer_body(name: &str) -> PostgresWriter {
    serde_json::from_value(json!({
        "apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name},
        "spec": {"table": "students", "name": name, "age": 30, "country": "chile"}
    }))
    .expect("valid PostgresWriter")
}

/// `operator run` in the scene's namespace with loopback metrics and probe servers on ports the
/// kernel picks.
fn operator_run(scene: &Scene, controllers: &str, env: &[(&str, &str)]) -> OperatorProcess {
    scene.operator(
        &[
            "run",
            "--controllers",
            controllers,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ],
        env,
    )
}

/// One sample of a text exposition: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the sample lines of a Prometheus / OpenMetrics text exposition, failing on any malformed line.
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no value: {line:?}"));
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("value is not a number: {line:?}"));
            let (name, labels) = match series.split_once('{') {
                None => (series, BTreeMap::new()),
                Some((name, rest)) => {
                    let inner = rest
                        .strip_suffix('}')
                        .unwrap_or_else(|| panic!("unclosed labels: {line:?}"));
                    (name, labels_of(inner, line))
                }
            };
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "metric name {name:?} in {line:?}"
            );
            Sample {
                name: name.to_owned(),
                labels,
                value,
            }
        })
        .collect()
}

/// `a="x",b="y"` (values may hold escaped quotes) into a map.
fn labels_of(inner: &str, line: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("label without a quoted value: {line:?}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| c)),
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("unterminated label value: {line:?}"),
            }
        };
        labels.insert(key.to_owned(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

fn value_of(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

async fn scrape(addr: std::net::SocketAddr) -> Option<support::HttpResponse> {
    http_get(addr, "/metrics").await.ok().filter(|r| r.status == 200)
}

async fn metrics_after_reconciles_use_controller_runtime_names_and_never_name_an_object(backend: Backend) {
    let scene = Scene::start(backend, "manager-metrics").await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let url = pg.url();
    let mut operator = operator_run(&scene, &CONTROLLERS.join(","), &[("DATABASE_URL", &url)]);
    let metrics = operator.bound_address("serving /metrics").await;

    let names = ["metrics-alpha", "metrics-beta"];
    let vote_configs: Api<VoteConfig> = scene.api();
    let web_apps: Api<WebApp> = scene.api();
    let writers: Api<PostgresWriter> = scene.api();
    for name in names {
        let pp = PostParams::default();
        vote_configs.create(&pp, &vote_config_body(name)).await.unwrap();
        web_apps.create(&pp, &web_app_body(name)).await.unwrap();
        writers.create(&pp, &postgres_writer_body(name)).await.unwrap();
    }
    let config_maps: Api<ConfigMap> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    eventually("every object reconciled", Duration::from_secs(60), || async {
        for name in names {
            config_maps.get_opt(&format!("{name}-config")).await.ok()??;
            deployments.get_opt(name).await.ok()??;
            let status = writers.get(name).await.ok()?.status?;
            status.conditions.iter().find(|c| c.is("Ready", "True"))?;
        }
        Some(())
    })
    .await;
    // A deletion, so that the rows-deleted counter moves too.
    writers
        .delete("metrics-beta", &DeleteParams::default())
        .await
        .unwrap();

    let response = eventually(
        "every controller's and the database's counters",
        Duration::from_secs(60),
        || async {
            let response = scrape(metrics).await?;
            let samples = samples(&response.body);
            for controller in CONTROLLERS {
                let success = value_of(
                    &samples,
                    "controller_runtime_reconcile_total",
                    &[("controller", controller), ("result", "success")],
                )?;
                (success > 0.0).then_some(())?;
            }
            (value_of(&samples, "postgres_writer_rows_written_total", &[])? >= 2.0).then_some(())?;
            (value_of(&samples, "postgres_writer_rows_deleted_total", &[])? >= 1.0).then_some(())?;
            Some(response)
        },
    )
    .await;

    // The exposition format.
    let content_type = response.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/openmetrics-text") || content_type.starts_with("text/plain"),
        "{content_type}"
    );
    assert!(
        response.body.ends_with("# EOF\n"),
        "an OpenMetrics exposition ends with # EOF"
    );
    let body = &response.body;
    let samples = samples(body);
    let types: BTreeMap<&str, &str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    for sample in &samples {
        let family = ["_total", "_bucket", "_sum", "_count", "_created"]
            .iter()
            .find_map(|suffix| sample.name.strip_suffix(suffix).filter(|f| types.contains_key(f)))
            .unwrap_or(&sample.name);
        assert!(types.contains_key(family), "{} has no # TYPE line", sample.name);
    }

    // controller-runtime's names, per controller.
    assert_eq!(types.get("controller_runtime_reconcile"), Some(&"counter"));
    assert_eq!(
        types.get("controller_runtime_reconcile_time_seconds"),
        Some(&"histogram")
    );
    assert_eq!(types.get("workqueue_depth"), Some(&"gauge"));
    assert_eq!(types.get("controller_runtime_active_workers"), Some(&"gauge"));
    for controller in CONTROLLERS {
        let of = [("controller", controller)];
        let count = value_of(&samples, "controller_runtime_reconcile_time_seconds_count", &of);
        assert!(
            count.is_some_and(|c| c > 0.0),
            "{controller}: reconcile time observed"
        );
        assert!(
            value_of(
                &samples,
                "controller_runtime_reconcile_time_seconds_bucket",
                &[("controller", controller), ("le", "+Inf")]
            )
            .is_some(),
            "{controller}: histogram buckets"
        );
        let depth = value_of(&samples, "workqueue_depth", &[("name", controller)]);
        assert!(depth.is_some_and(|d| d >= 0.0), "{controller}: workqueue_depth");
        let workers = value_of(&samples, "controller_runtime_active_workers", &of);
        assert!(
            workers.is_some_and(|w| (0.0..=64.0).contains(&w)),
            "{controller}: active workers"
        );
        assert_eq!(
            value_of(&samples, "controller_runtime_max_concurrent_reconciles", &of),
            Some(64.0),
            "{controller}: the default concurrency"
        );
    }

    // The database's.
    assert_eq!(
        types.get("postgres_writer_query_duration_seconds"),
        Some(&"histogram")
    );
    let statements = samples
        .iter()
        .filter(|s| s.name == "postgres_writer_query_duration_seconds_count")
        .map(|s| s.value)
        .sum::<f64>();
    assert!(statements > 0.0, "statement latency observed");
    assert!(
        value_of(
            &samples,
            "postgres_writer_pool_connections",
            &[("state", "in_use")]
        )
        .is_some(),
        "connections in use"
    );
    assert!(value_of(&samples, "postgres_writer_pool_max_connections", &[]).is_some_and(|m| m > 0.0));

    // Bounded cardinality: no label value names an object, alone or as namespace/name.
    let label_values: BTreeSet<&str> = samples
        .iter()
        .flat_map(|s| s.labels.values().map(String::as_str))
        .collect();
    for value in &label_values {
        assert!(
            !names.iter().any(|name| value.contains(name)),
            "label value {value:?} names an object"
        );
    }

    operator.signal("TERM");
    let status = operator.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );
}

async fn sigterm_exits_zero_once_the_reconciles_in_flight_finish(backend: Backend) {
    let scene = Scene::start(backend, "manager-sigterm").await;
    let mut operator = operator_run(&scene, "vote-config,web-app", &[]);
    operator
        .wait_for_log("controllers started", Duration::from_secs(60))
        .await;

    // More objects than workers, so that reconciles are running and waiting when the signal comes.
    let vote_configs: Api<VoteConfig> = scene.api();
    let names: Vec<String> = (0..24).map(|i| format!("term-{i:02}")).collect();
    for name in &names {
        vote_configs
            .create(&PostParams::default(), &vote_config_body(name))
            .await
            .unwrap();
    }
    let config_maps: Api<ConfigMap> = scene.api();
    eventually("the first ConfigMap", Duration::from_secs(30), || async {
        let list = config_maps.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|c| c.metadata.name.as_deref().is_some_and(|n| n.starts_with("term-")))
            .then_some(())
    })
    .await;

    // Exit 0 is a shutdown whose reconciles finished, not one cut short at the bound.
    operator.signal("TERM");
    let signalled = Instant::now();
    let status = operator.exit_within(EXIT_AFTER_SIGNAL).await;
    eprintln!("exited {:?} after SIGTERM: {status:?}", signalled.elapsed());
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.log_so_far()
    );

    // A reconcile that ran finished: whoever got a ConfigMap also got the status that reports it.
    for name in &names {
        let has_config_map = config_maps
            .get_opt(&format!("{name}-config"))
            .await
            .unwrap()
            .is_some();
        let reported = vote_configs
            .get(name)
            .await
            .unwrap()
            .status
            .and_then(|s| s.config_map_name)
            .is_some();
        assert_eq!(has_config_map, reported, "{name}: a reconcile stopped half-way");
    }
}

async fn a_shutdown_before_the_first_list_completes_stops_the_controller_at_once(backend: Backend) {
    // No CRDs: the VoteConfig list fails and retries, so the cache never fills, as in the moments after a
    // new leader starts its controllers.
    let plane = support::ControlPlane::start(backend)
        .await
        .expect("control plane starts");
    let client = plane.client();
    let (ctx, shutdown) = support::context(&client, Duration::from_secs(300));
    let readiness = ctx.readiness.clone();
    let controller = tokio::spawn(vote_config::run(ctx));
    eventually(
        "the controller waits for its cache",
        Duration::from_secs(10),
        || async {
            let failing = readiness.failing().await;
            failing
                .iter()
                .any(|f| f.contains("cache not synced"))
                .then_some(())
        },
    )
    .await;

    let _ = shutdown.send(true);
    // Within the bound a shutdown promises; without the cache's writer dropped it would never end.
    let stopped = tokio::time::timeout(GRACEFUL_SHUTDOWN_TIMEOUT, controller).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller ends cleanly: {stopped:?}"
    );
}

#[derive(Default)]
struct Progress {
    started: AtomicUsize,
    finished: AtomicUsize,
}

/// A controller of ConfigMaps whose every reconcile outlasts the shutdown request.
struct Slow(Arc<Progress>);

impl Reconciler for Slow {
    type Object = ConfigMap;
    const NAME: &'static str = "slow";

    async fn apply(&self, _: &ConfigMap, _: &Toolkit) -> operator::Result<Action> {
        self.0.started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(800)).await;
        self.0.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Action::await_change())
    }
}

async fn a_graceful_shutdown_lets_the_reconcile_in_flight_finish(backend: Backend) {
    let scene = Scene::start(backend, "manager-graceful").await;
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let progress = Arc::new(Progress::default());
    let controller = tokio::spawn(runtime::run(ctx, Slow(progress.clone())));

    let config_maps: Api<ConfigMap> = scene.api();
    let body: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "slow"}})).unwrap();
    config_maps.create(&PostParams::default(), &body).await.unwrap();
    eventually("the reconcile starts", Duration::from_secs(10), || async {
        (progress.started.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await;

    let _ = shutdown.send(true);
    assert!(
        matches!(
            tokio::time::timeout(GRACEFUL_SHUTDOWN_TIMEOUT, controller).await,
            Ok(Ok(Ok(())))
        ),
        "the controller ends once its reconcile has"
    );
    assert_eq!(
        progress.finished.load(Ordering::SeqCst),
        progress.started.load(Ordering::SeqCst),
        "every reconcile that started finished"
    );
}

testenv::every_tier!(
    metrics_after_reconciles_use_controller_runtime_names_and_never_name_an_object,
    sigterm_exits_zero_once_the_reconciles_in_flight_finish,
    a_graceful_shutdown_lets_the_reconcile_in_flight_finish,
);

// Not on the cluster tier: the test needs a control plane without our CRDs, and the shared cluster has
// them (every other test of the tier applies them).
testenv::each_control_plane!(a_shutdown_before_the_first_list_completes_stops_the_controller_at_once);
