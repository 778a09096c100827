//! A replica told to stop, as the kubelet and the API server see it: `operator run` with its webhooks
//! registered with the control plane gets SIGTERM while VoteConfigs are created through its defaulting
//! webhook (failurePolicy Fail: a webhook that does not answer refuses the write). `/readyz` turns 503
//! at once, so that the Service stops sending it connections; every write sent during the drain period
//! is still served; then the process exits 0, no earlier than the drain and within its bound.
//!
//! On the fresh tiers only (the webhook configurations are cluster-wide); the cluster tier plays a
//! rolling restart of the deployed manager in `deployed_rolling_restart.rs`.

mod support;

use std::time::{Duration, Instant};

use kube::{Api, api::PostParams};
use operator::api::vote_config::VoteConfig;
use serde_json::json;
use support::{Backend, EXIT_AFTER_SIGNAL, Scene, eventually, http_get, serving_operator};
use tokio::sync::watch;

/// The drain period the test asks for: long enough to send a number of writes through it.
const DRAIN: Duration = Duration::from_secs(4);
/// "At once": the first looks at `/readyz` after the signal, on a loaded machine.
const NOT_READY_WITHIN: Duration = Duration::from_secs(1);
/// Writes are sent until this long before the drain's end, so that each is answered within it.
const LAST_WRITE_BEFORE_END: Duration = Duration::from_secs(1);
/// Between two writes: five a second.
const WRITE_EVERY: Duration = Duration::from_millis(200);

fn vote_config(name: &str) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
    .expect("a VoteConfig")
}

/// A write through the defaulting webhook every [`WRITE_EVERY`] until `stop`: when each was sent, and
/// the refusal if it was refused.
fn send_writes(
    api: Api<VoteConfig>,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Vec<(Instant, Option<String>)>> {
    tokio::spawn(async move {
        let mut sent = Vec::new();
        for i in 0.. {
            if *stop.borrow() {
                break;
            }
            let at = Instant::now();
            let outcome = api
                .create(&PostParams::default(), &vote_config(&format!("drain-{i:03}")))
                .await;
            let refusal = match outcome {
                Ok(created) if created.spec.options.iter().all(|o| o.color.is_some()) => None,
                Ok(created) => Some(format!("stored without defaults: {:?}", created.spec.options)),
                Err(error) => Some(error.to_string()),
            };
            sent.push((at, refusal));
            let _ = tokio::time::timeout(WRITE_EVERY, stop.changed()).await;
        }
        sent
    })
}

async fn sigterm_fails_readiness_at_once_and_serves_the_webhooks_through_the_drain(backend: Backend) {
    let scene = Scene::start(backend, "drain").await;
    let drain = DRAIN.as_secs().to_string();
    let mut operator = serving_operator::start(
        &scene,
        "vote-config,web-app",
        &["--shutdown-drain-seconds", &drain],
        &[],
    )
    .await;
    let probes = operator.probes;
    eventually("/readyz 200", Duration::from_secs(30), || async {
        (http_get(probes, "/readyz").await.ok()?.status == 200).then_some(())
    })
    .await;
    let (stop_writing, stop) = watch::channel(false);
    let writes = send_writes(scene.api(), stop);
    let api: Api<VoteConfig> = scene.api();
    eventually(
        "writes served before the signal",
        Duration::from_secs(10),
        || async { (api.list(&Default::default()).await.ok()?.items.len() >= 3).then_some(()) },
    )
    .await;

    operator.process.signal("TERM");
    let signalled = Instant::now();
    let not_ready = eventually("/readyz 503 after SIGTERM", NOT_READY_WITHIN, || async {
        http_get(probes, "/readyz").await.ok().filter(|r| r.status == 503)
    })
    .await;
    println!("/readyz 503 {:?} after SIGTERM", signalled.elapsed());
    assert!(not_ready.body.contains("shutting down"), "{}", not_ready.body);

    // The drain: not ready on every look, while the writes go on.
    let writes_end = signalled + DRAIN - LAST_WRITE_BEFORE_END;
    while Instant::now() < writes_end {
        let readyz = http_get(probes, "/readyz")
            .await
            .expect("/readyz answers while draining");
        assert_eq!(
            readyz.status, 503,
            "not ready again while draining: {}",
            readyz.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop_writing.send(true);
    let sent = writes.await.expect("the writer ends");
    let during: Vec<&(Instant, Option<String>)> = sent.iter().filter(|(at, _)| *at >= signalled).collect();
    let refused: Vec<&String> = sent.iter().filter_map(|(_, refusal)| refusal.as_ref()).collect();
    println!(
        "{} writes through the webhooks, {} of them during the drain, {} refused",
        sent.len(),
        during.len(),
        refused.len()
    );
    assert!(
        during.len() >= 5,
        "writes were sent throughout the drain: {}",
        during.len()
    );
    assert!(
        refused.is_empty(),
        "no write refused while draining: {refused:?}\n{}",
        operator.process.log_so_far()
    );

    let status = operator.process.exit_within(DRAIN + EXIT_AFTER_SIGNAL).await;
    let exited = signalled.elapsed();
    println!("exited {exited:?} after SIGTERM: {status:?}");
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.process.log_so_far()
    );
    assert!(
        exited >= DRAIN,
        "the webhooks were served for the whole drain period: exited after {exited:?}"
    );
}

testenv::each_control_plane!(sigterm_fails_readiness_at_once_and_serves_the_webhooks_through_the_drain);
