//! What every cluster has and clients count on, besides the kinds they create: the `kubernetes`
//! Service (B6), component statuses and Nodes (B7), the kubelet's pod endpoints (B8), APIServices
//! (B9), certificate signing requests (B10) and service account tokens (B11). Each is compared with
//! what the real kube-apiserver answers.

mod common;

use std::time::Duration;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const KUBERNETES: &str = "/api/v1/namespaces/default/services/kubernetes";

async fn get(client: &kube::Client, path: &str) -> Answer {
    request(client, "GET", path, "application/json", Value::Null).await
}

/// The port a control plane's URL names.
fn port_of(plane: &ControlPlane) -> u16 {
    let url = plane.url();
    url.rsplit(':')
        .next()
        .and_then(|port| port.trim_end_matches('/').parse().ok())
        .expect("the URL names a port")
}

async fn the_kubernetes_service_points_at_the_server_and_comes_back(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let service = get(&client, KUBERNETES).await;
    assert_eq!(service.status, 200, "{}", service.body);
    let spec = &service.body["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(
        spec["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port_of(&plane)}])
    );
    assert!(
        spec["clusterIP"].as_str().is_some_and(|ip| ip.ends_with(".1")),
        "{spec}"
    );
    assert_eq!(
        service.body["metadata"]["labels"],
        json!({"component": "apiserver", "provider": "kubernetes"})
    );

    let deleted = request(&client, "DELETE", KUBERNETES, "application/json", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    // kube-apiserver's reconciler puts the Service back within its 10 s period.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let again = get(&client, KUBERNETES).await;
        if again.status == 200 {
            assert_ne!(again.body["metadata"]["uid"], service.body["metadata"]["uid"]);
            assert_eq!(again.body["spec"]["ports"], spec["ports"]);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the kubernetes Service did not come back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

testenv::each_control_plane!(the_kubernetes_service_points_at_the_server_and_comes_back);
