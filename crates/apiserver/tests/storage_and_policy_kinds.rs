//! The built-in kinds nothing acts on (volumes, quotas, autoscalers, networking, policies) are stored
//! and read back as kube-apiserver stores them, on both control planes: an autoscaler written as
//! `autoscaling/v1` reads as `autoscaling/v2` and back, and a ReplicationController scales through its
//! `scale` subresource.

mod common;

use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

async fn namespace(client: &kube::Client, name: &str) {
    let (status, body) = common::send(
        client,
        "POST",
        "/api/v1/namespaces",
        JSON,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

async fn an_autoscaler_reads_the_same_in_both_versions(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    namespace(&client, "hpa-versions").await;
    let v1 = "/apis/autoscaling/v1/namespaces/hpa-versions/horizontalpodautoscalers";
    let (status, created) = common::send(
        &client,
        "POST",
        v1,
        JSON,
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 4, "targetCPUUtilizationPercentage": 55}}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["spec"]["minReplicas"], 1);
    assert_eq!(
        created["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    let v2 = "/apis/autoscaling/v2/namespaces/hpa-versions/horizontalpodautoscalers/web";
    let (_, read) = common::send(&client, "GET", v2, JSON, Value::Null).await;
    assert_eq!(read["apiVersion"], "autoscaling/v2");
    assert_eq!(
        read["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 55}}}])
    );
    // A metric v1 cannot say is kept in its annotation, and survives a v1 update.
    let pods_metric = json!({"type": "Pods", "pods": {"metric": {"name": "rps"},
        "target": {"type": "AverageValue", "averageValue": "1k"}}});
    let mut metrics = read["spec"]["metrics"].as_array().cloned().unwrap_or_default();
    metrics.push(pods_metric.clone());
    let (status, _) = common::send(&client, "PATCH", v2, MERGE, json!({"spec": {"metrics": metrics}})).await;
    assert_eq!(status, 200);
    let (_, as_v1) = common::send(&client, "GET", &format!("{v1}/web"), JSON, Value::Null).await;
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 55);
    assert_eq!(
        as_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Pods","pods":{"metricName":"rps","targetAverageValue":"1k"}}]"#
    );
    let (status, updated) = common::send(&client, "PUT", &format!("{v1}/web"), JSON, as_v1).await;
    assert_eq!(status, 200, "{updated}");
    // Read back from v1, the metrics its annotation kept come first, then the CPU target.
    let (_, read) = common::send(&client, "GET", v2, JSON, Value::Null).await;
    assert_eq!(read["spec"]["metrics"][0], pods_metric);
    assert_eq!(read["spec"]["metrics"][1]["resource"]["name"], "cpu");
    assert_eq!(read["metadata"].get("annotations"), None);
}

testenv::each_control_plane!(an_autoscaler_reads_the_same_in_both_versions);

async fn a_replication_controller_scales_through_its_scale(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    namespace(&client, "rc-scale").await;
    let controllers = "/api/v1/namespaces/rc-scale/replicationcontrollers";
    let (status, created) = common::send(
        &client,
        "POST",
        controllers,
        JSON,
        json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(created["spec"]["replicas"], 1);
    let scale = format!("{controllers}/web/scale");
    let (status, patched) =
        common::send(&client, "PATCH", &scale, MERGE, json!({"spec": {"replicas": 3}})).await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["kind"], "Scale");
    assert_eq!(patched["spec"]["replicas"], 3);
    assert_eq!(patched["status"]["selector"], "app=web");
    let (_, read) = common::send(&client, "GET", &format!("{controllers}/web"), JSON, Value::Null).await;
    assert_eq!(read["spec"]["replicas"], 3);
}

testenv::each_control_plane!(a_replication_controller_scales_through_its_scale);

async fn claims_and_volumes_start_pending_with_their_defaults(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    namespace(&client, "claims").await;
    let (status, claim) = common::send(
        &client,
        "POST",
        "/api/v1/namespaces/claims/persistentvolumeclaims",
        JSON,
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(status, 201, "{claim}");
    assert_eq!(claim["status"]["phase"], "Pending");
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    let (status, listed) = common::send(
        &client,
        "GET",
        "/api/v1/namespaces/claims/persistentvolumeclaims/data/status",
        JSON,
        Value::Null,
    )
    .await;
    assert_eq!((status, &listed["metadata"]["name"]), (200, &json!("data")));
}

testenv::each_control_plane!(claims_and_volumes_start_pending_with_their_defaults);
