//! Service cluster IPs and node ports (B5): never one in use handed out again, whatever the write path,
//! and the same 422 as kube-apiserver when one in use is asked for. Each test runs on both servers;
//! the real one's range differs (10.0.0.0/24), so addresses are derived from the `kubernetes`
//! Service's, the first of either range.

mod common;

use std::net::Ipv4Addr;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const SERVICES: &str = "/api/v1/namespaces/default/services";

async fn send(client: &kube::Client, method: &str, path: &str, body: Value) -> Answer {
    let content_type = match method {
        "PATCH" => "application/merge-patch+json",
        _ => "application/json",
    };
    request(client, method, path, content_type, body).await
}

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["ports"] = json!([{"name": "http", "port": 80}]);
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn cluster_ip(answer: &Answer) -> Ipv4Addr {
    assert!(answer.status < 300, "{}", answer.text);
    answer.body["spec"]["clusterIP"]
        .as_str()
        .and_then(|ip| ip.parse().ok())
        .unwrap_or_else(|| panic!("a cluster IP: {}", answer.text))
}

/// The cause of a 422, as (field, message).
fn refusal(answer: &Answer) -> (u16, String, String) {
    let cause = &answer.body["details"]["causes"][0];
    (
        answer.status,
        cause["field"].as_str().unwrap_or_default().to_owned(),
        cause["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The address `n` places past the `kubernetes` Service's, in either range.
fn nearby(kubernetes: Ipv4Addr, n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(kubernetes) + n)
}

async fn no_cluster_ip_is_handed_out_twice(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let kubernetes = loop {
        let answer = send(&client, "GET", &format!("{SERVICES}/kubernetes"), Value::Null).await;
        if answer.status == 200 {
            break cluster_ip(&answer);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };

    // A WebApp's Service, the first Service applied on a fresh server: server-side apply creates it.
    let applied = request(
        &client,
        "PATCH",
        &format!("{SERVICES}/shop?fieldManager=webapp-controller&force=true"),
        "application/apply-patch+yaml",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
            "spec": {"selector": {"app": "shop"},
                "ports": [{"name": "http", "port": 80, "targetPort": 80}]}}),
    )
    .await;
    assert_eq!(applied.status, 201, "{}", applied.text);
    let shop = cluster_ip(&applied);
    assert_ne!(shop, kubernetes, "the kubernetes Service's address is reserved");
    // What comes with the address on a single-stack IPv4 cluster.
    let spec = &applied.body["spec"];
    assert_eq!(spec["clusterIPs"], json!([shop.to_string()]));
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    // Applied again, the address stays.
    let again = request(
        &client,
        "PATCH",
        &format!("{SERVICES}/shop?fieldManager=webapp-controller&force=true"),
        "application/apply-patch+yaml",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
            "spec": {"selector": {"app": "shop"},
                "ports": [{"name": "http", "port": 80, "targetPort": 80}]}}),
    )
    .await;
    assert_eq!(cluster_ip(&again), shop);

    let created = send(&client, "POST", SERVICES, service("web", json!({}))).await;
    let web = cluster_ip(&created);
    assert!(![kubernetes, shop].contains(&web), "{web} is in use");

    // Asking for an address in use is refused, the kubernetes Service's too.
    for taken in [kubernetes, shop] {
        let refused = send(
            &client,
            "POST",
            SERVICES,
            service("copy", json!({"clusterIP": taken.to_string()})),
        )
        .await;
        assert_eq!(
            refusal(&refused),
            (
                422,
                "spec.clusterIPs".to_owned(),
                format!(
                    "Invalid value: []string{{\"{taken}\"}}: failed to allocate IP {taken}: provided IP is already allocated"
                )
            ),
            "{}",
            refused.text
        );
    }

    // A dry run reserves nothing: the address it showed is still free for a real create. The
    // addresses asked for lie in the range's lower band (the first 16 of a /24), which
    // kube-apiserver keeps for Services that name their address and hands out to others only once
    // the upper band is full: none of the Services above can have been given them at random.
    let wanted = nearby(kubernetes, 10);
    let dry = send(
        &client,
        "POST",
        &format!("{SERVICES}?dryRun=All"),
        service("dry", json!({"clusterIP": wanted.to_string()})),
    )
    .await;
    assert_eq!(cluster_ip(&dry), wanted);
    let dry_auto = send(
        &client,
        "POST",
        &format!("{SERVICES}?dryRun=All"),
        service("dry", json!({})),
    )
    .await;
    assert!(![kubernetes, shop, web].contains(&cluster_ip(&dry_auto)));
    let fixed = send(
        &client,
        "POST",
        SERVICES,
        service("fixed", json!({"clusterIP": wanted.to_string()})),
    )
    .await;
    assert_eq!(cluster_ip(&fixed), wanted);

    // An update may not move the address, and an update giving one to an ExternalName Service
    // may not take one in use.
    let moved = send(
        &client,
        "PATCH",
        &format!("{SERVICES}/web"),
        json!({"spec": {"clusterIP": nearby(kubernetes, 11).to_string()}}),
    )
    .await;
    assert_eq!(
        refusal(&moved),
        (
            422,
            "spec.clusterIPs[0]".to_owned(),
            format!(
                "Invalid value: []string{{\"{}\"}}: may not change once set",
                nearby(kubernetes, 11)
            )
        ),
        "{}",
        moved.text
    );
    let external = send(
        &client,
        "POST",
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "outside"},
            "spec": {"type": "ExternalName", "externalName": "example.com"}}),
    )
    .await;
    assert_eq!(external.status, 201, "{}", external.text);
    assert!(
        external.body["spec"].get("clusterIP").is_none(),
        "{}",
        external.text
    );
    let onto_taken = send(
        &client,
        "PATCH",
        &format!("{SERVICES}/outside"),
        json!({"spec": {"type": "ClusterIP", "externalName": null, "clusterIP": wanted.to_string(),
            "ports": [{"name": "http", "port": 80}]}}),
    )
    .await;
    assert_eq!(refusal(&onto_taken).0, 422, "{}", onto_taken.text);
    assert!(
        refusal(&onto_taken)
            .2
            .ends_with("provided IP is already allocated")
    );
    let given = send(
        &client,
        "PATCH",
        &format!("{SERVICES}/outside"),
        json!({"spec": {"type": "ClusterIP", "externalName": null, "ports": [{"name": "http", "port": 80}]}}),
    )
    .await;
    let outside = cluster_ip(&given);
    assert!(
        ![kubernetes, shop, web, wanted].contains(&outside),
        "{outside} is in use"
    );

    // A deleted Service's address is free again.
    let deleted = send(&client, "DELETE", &format!("{SERVICES}/fixed"), Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    let reused = send(
        &client,
        "POST",
        SERVICES,
        service("reused", json!({"clusterIP": wanted.to_string()})),
    )
    .await;
    assert_eq!(cluster_ip(&reused), wanted);
}

async fn no_node_port_is_handed_out_twice(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let node_port = |answer: &Answer| {
        assert!(answer.status < 300, "{}", answer.text);
        answer.body["spec"]["ports"][0]["nodePort"]
            .as_u64()
            .unwrap_or_else(|| panic!("a node port: {}", answer.text))
    };
    let fixed = send(
        &client,
        "POST",
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "fixed"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}),
    )
    .await;
    assert_eq!(node_port(&fixed), 30080);
    let any = send(
        &client,
        "POST",
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "any"},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
    )
    .await;
    let allocated = node_port(&any);
    assert!(
        (30000..=32767).contains(&allocated) && allocated != 30080,
        "{allocated}"
    );
    let refused = send(
        &client,
        "POST",
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "copy"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}),
    )
    .await;
    assert_eq!(
        refusal(&refused),
        (
            422,
            "spec.ports[0].nodePort".to_owned(),
            "Invalid value: 30080: provided port is already allocated".to_owned()
        ),
        "{}",
        refused.text
    );
    // Back to ClusterIP, the Service lets its node port go, and another may take it.
    let plain = send(
        &client,
        "PATCH",
        &format!("{SERVICES}/fixed"),
        json!({"spec": {"type": "ClusterIP"}}),
    )
    .await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    assert!(
        plain.body["spec"]["ports"][0].get("nodePort").is_none(),
        "{}",
        plain.text
    );
    let taken_over = send(
        &client,
        "POST",
        SERVICES,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "copy"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}),
    )
    .await;
    assert_eq!(node_port(&taken_over), 30080);
}

testenv::each_control_plane!(
    no_cluster_ip_is_handed_out_twice,
    no_node_port_is_handed_out_twice
);
