//! The Event recorder against each control plane: a burst far larger than what is written at once
//! loses no Event, repeats are counted in their Event's series, and a backlog too small for a burst
//! drops the excess and counts every Event it drops.

mod support;

use std::{collections::HashMap, time::Duration};

use k8s_openapi::api::{core::v1::ObjectReference, events::v1::Event};
use kube::{Api, api::ListParams};
use operator::runtime::{
    events::{EventRecorder, EventType},
    metrics::Metrics,
};
use support::{Backend, ControlPlane};

/// How long a burst's Events may take to be written: kube-apiserver with etcd on a loaded machine
/// takes a few hundred writes a second.
const WRITTEN_WITHIN: Duration = Duration::from_secs(180);

/// A ConfigMap the Events are about (it need not exist: the API server does not check).
fn regarding(i: usize) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some(format!("cm-{i:05}")),
        namespace: Some("default".into()),
        uid: Some(format!("00000000-0000-0000-0000-{i:012}")),
        ..ObjectReference::default()
    }
}

fn publish(recorder: &EventRecorder, i: usize) {
    recorder.publish(
        "burst",
        regarding(i),
        EventType::Normal,
        "Written",
        format!("row default/cm-{i:05} written to students"),
    );
}

/// How many times each object's Events were reported (a series counts its repeats), by object name.
async fn reported(client: &kube::Client) -> (usize, HashMap<String, i32>) {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let listed = events
        .list(&ListParams::default())
        .await
        .expect("events list")
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("burst"))
        .collect::<Vec<_>>();
    let mut times = HashMap::new();
    for event in &listed {
        let name = event
            .regarding
            .as_ref()
            .and_then(|r| r.name.clone())
            .unwrap_or_default();
        *times.entry(name).or_default() += event.series.as_ref().map_or(1, |s| s.count);
    }
    (listed.len(), times)
}

fn dropped(metrics: &Metrics) -> u64 {
    metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with("controller_events_dropped_total{controller=\"burst\"}"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

async fn a_burst_of_events_is_recorded_to_the_last_one(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let metrics = Metrics::new();
    let recorder = EventRecorder::start(client.clone(), &metrics, 16 << 20);
    // Far more than the writers take at once, and more than a recorder that queued 4,096 Events held.
    let burst = 5_000;
    for i in 0..burst {
        publish(&recorder, i);
    }
    // Every tenth object reports twice more, some of it while its first Event is still being written.
    for _ in 0..2 {
        for i in (0..burst).step_by(10) {
            publish(&recorder, i);
        }
    }
    tokio::time::timeout(WRITTEN_WITHIN, recorder.idle())
        .await
        .expect("every Event is written in time");

    let (events, times) = reported(&client).await;
    assert_eq!(events, burst, "one Event per object");
    let wrong: Vec<(String, i32)> = (0..burst)
        .map(|i| {
            let name = format!("cm-{i:05}");
            let expected = if i % 10 == 0 { 3 } else { 1 };
            let seen = times.get(&name).copied().unwrap_or(0);
            (name, seen - expected)
        })
        .filter(|(_, off)| *off != 0)
        .collect();
    assert_eq!(wrong, [], "objects whose count is off (by how much)");
    assert_eq!(dropped(&metrics), 0);
}

async fn a_backlog_too_small_for_a_burst_drops_the_excess_and_counts_every_drop(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let metrics = Metrics::new();
    // Room for a few dozen waiting Events.
    let recorder = EventRecorder::start(client.clone(), &metrics, 32 << 10);
    let burst = 500;
    for i in 0..burst {
        publish(&recorder, i);
    }
    tokio::time::timeout(WRITTEN_WITHIN, recorder.idle())
        .await
        .expect("the Events kept are written in time");
    let (events, _) = reported(&client).await;
    let dropped = dropped(&metrics) as usize;
    assert!(dropped > 0, "{events} Events written, none dropped");
    assert_eq!(
        events + dropped,
        burst,
        "every Event is either written or counted as dropped"
    );
}

testenv::each_control_plane!(
    a_burst_of_events_is_recorded_to_the_last_one,
    a_backlog_too_small_for_a_burst_drops_the_excess_and_counts_every_drop,
);
