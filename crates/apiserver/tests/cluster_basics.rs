//! What every cluster has and clients count on, besides the kinds they create: the `kubernetes`
//! Service (B6), component statuses and Nodes (B7), the kubelet's pod endpoints (B8), APIServices
//! (B9) and certificate signing requests (B10). Each is compared with what the real kube-apiserver
//! answers.

mod common;

use std::time::Duration;

use common::{Answer, kubectl::Kubectl, request};
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
    // kube-apiserver's reconciler creates the Service a moment after it starts serving, within its
    // 10 s period.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let service = loop {
        let service = get(&client, KUBERNETES).await;
        if service.status == 200 || tokio::time::Instant::now() > deadline {
            break service;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
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

fn status_of(answer: &Answer) -> (u16, &str, &str) {
    (
        answer.status,
        answer.body["reason"].as_str().unwrap_or_default(),
        answer.body["message"].as_str().unwrap_or_default(),
    )
}

async fn component_statuses_are_listed_and_nodes_are_cordoned(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let statuses = get(&client, "/api/v1/componentstatuses").await;
    assert_eq!(statuses.status, 200, "{}", statuses.body);
    assert_eq!(statuses.body["kind"], "ComponentStatusList");
    assert!(
        statuses
            .warnings
            .iter()
            .any(|w| w.contains("v1 ComponentStatus is deprecated in v1.19+")),
        "{:?}",
        statuses.warnings
    );
    let items = statuses.body["items"].as_array().cloned().unwrap_or_default();
    assert!(!items.is_empty());
    for item in &items {
        assert_eq!(item["conditions"][0]["type"], "Healthy", "{item}");
    }
    let first = items[0]["metadata"]["name"].as_str().unwrap_or_default();
    let one = get(&client, &format!("/api/v1/componentstatuses/{first}")).await;
    assert_eq!((one.status, &one.body["kind"]), (200, &json!("ComponentStatus")));
    let write = request(
        &client,
        "POST",
        "/api/v1/componentstatuses",
        "application/json",
        json!({"metadata": {"name": "mine"}}),
    )
    .await;
    assert_eq!(write.status, 405, "{}", write.body);

    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}});
    let created = request(&client, "POST", "/api/v1/nodes", "application/json", node).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // Kept from pods until a kubelet reports it ready, with nothing reported yet.
    assert_eq!(
        created.body["spec"]["taints"],
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );
    assert_eq!(created.body["status"]["nodeInfo"]["kubeletVersion"], "");
    let kubectl = Kubectl::new(&plane);
    kubectl.ok(&["cordon", "worker-1"]).await;
    let cordoned = get(&client, "/api/v1/nodes/worker-1").await;
    assert_eq!(cordoned.body["spec"]["unschedulable"], true, "{}", cordoned.body);
    let printed = kubectl.ok(&["get", "nodes", "worker-1"]).await;
    let header: Vec<&str> = printed
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], "{printed}");
    assert!(printed.contains("Unknown,SchedulingDisabled"), "{printed}");
    kubectl.ok(&["uncordon", "worker-1"]).await;
    let status = get(&client, "/api/v1/nodes/worker-1/status").await;
    assert_eq!(status.status, 200);
    assert!(status.body["spec"]["unschedulable"].is_null(), "{}", status.body);
}

testenv::each_control_plane!(component_statuses_are_listed_and_nodes_are_cordoned);

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn pod_endpoints_answer_as_without_a_kubelet(backend: Backend) {
    let plane = common::without_a_node(backend).await;
    let client = plane.client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    let created = request(&client, "POST", PODS, "application/json", pod).await;
    assert_eq!(created.status, 201, "{}", created.body);

    // Not scheduled: no logs yet, nothing to connect to.
    assert_eq!(get(&client, &format!("{PODS}/web/log")).await.status, 204);
    let unassigned = "pod web does not have a host assigned";
    for sub in ["exec", "attach", "portforward"] {
        for method in ["GET", "POST"] {
            let answer = request(
                &client,
                method,
                &format!("{PODS}/web/{sub}"),
                "application/json",
                Value::Null,
            )
            .await;
            assert_eq!(
                status_of(&answer),
                (400, "BadRequest", unassigned),
                "{method} {sub}"
            );
        }
    }
    let proxied = get(&client, &format!("{PODS}/web/proxy/healthz")).await;
    assert_eq!(status_of(&proxied), (400, "BadRequest", "address not allowed"));
    let missing = get(&client, &format!("{PODS}/nope/exec")).await;
    assert_eq!(status_of(&missing), (404, "NotFound", "pods \"nope\" not found"));
    let posted = request(
        &client,
        "POST",
        &format!("{PODS}/web/log"),
        "application/json",
        Value::Null,
    )
    .await;
    assert_eq!(posted.status, 405);
    let kubectl = Kubectl::new(&plane);
    let exec = kubectl.run(&["exec", "web", "--", "ls"]).await;
    assert!(!exec.status.success());
    assert!(
        String::from_utf8_lossy(&exec.stderr).contains(unassigned),
        "{exec:?}"
    );

    // Ephemeral containers are the one thing their subresource writes.
    let debug = json!({"metadata": {"labels": {"app": "changed"}}, "spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "busybox", "targetContainerName": "web"}]}});
    let patched = request(
        &client,
        "PATCH",
        &format!("{PODS}/web/ephemeralcontainers"),
        "application/strategic-merge-patch+json",
        debug,
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let debugger = &patched.body["spec"]["ephemeralContainers"][0];
    assert_eq!(debugger["name"], "debugger");
    // Defaulted as every container is.
    assert_eq!(
        (
            &debugger["imagePullPolicy"],
            &debugger["terminationMessagePolicy"]
        ),
        (&json!("Always"), &json!("File"))
    );
    assert_eq!(patched.body["metadata"]["labels"], json!({"app": "web"}));
    let read = get(&client, &format!("{PODS}/web/ephemeralcontainers")).await;
    assert_eq!(read.body["spec"]["ephemeralContainers"][0]["image"], "busybox");

    // Bound to a node, as a scheduler binds: once.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}});
    assert_eq!(
        request(&client, "POST", "/api/v1/nodes", "application/json", node)
            .await
            .status,
        201
    );
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
        "target": {"kind": "Node", "name": "worker-1"}});
    let bound = request(
        &client,
        "POST",
        &format!("{PODS}/web/binding"),
        "application/json",
        binding.clone(),
    )
    .await;
    assert_eq!(bound.status, 201, "{}", bound.body);
    assert_eq!(
        get(&client, &format!("{PODS}/web")).await.body["spec"]["nodeName"],
        "worker-1"
    );
    let again = request(
        &client,
        "POST",
        &format!("{PODS}/web/binding"),
        "application/json",
        binding,
    )
    .await;
    assert_eq!(
        status_of(&again),
        (
            409,
            "Conflict",
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"worker-1\""
        )
    );
    // On a node without addresses, no kubelet can be reached.
    let exec = get(&client, &format!("{PODS}/web/exec")).await;
    assert_eq!(
        status_of(&exec),
        (500, "", "no preferred addresses found; known addresses: []")
    );
}

testenv::each_control_plane!(pod_endpoints_answer_as_without_a_kubelet);

async fn api_services_list_every_served_group_version(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let services = get(&client, "/apis/apiregistration.k8s.io/v1/apiservices").await;
    assert_eq!(services.status, 200, "{}", services.body);
    assert_eq!(services.body["kind"], "APIServiceList");
    let names: Vec<&str> = services.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for served in ["v1.", "v1.apps", "v1.certificates.k8s.io", "v1.discovery.k8s.io"] {
        assert!(names.contains(&served), "{served} in {names:?}");
    }
    assert!(!names.contains(&"v1.apiregistration.k8s.io"), "{names:?}");
    let apps = get(&client, "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps").await;
    assert_eq!(
        apps.body["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    let available = &apps.body["status"]["conditions"][0];
    assert_eq!(
        (&available["type"], &available["status"], &available["reason"]),
        (&json!("Available"), &json!("True"), &json!("Local"))
    );
    let core = get(&client, "/apis/apiregistration.k8s.io/v1/apiservices/v1.").await;
    assert!(core.body["spec"]["group"].is_null(), "{}", core.body);

    let groups = get(&client, "/apis").await;
    let group_names: Vec<&str> = groups.body["groups"]
        .as_array()
        .map(|groups| groups.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    for group in [
        "apiregistration.k8s.io",
        "certificates.k8s.io",
        "discovery.k8s.io",
    ] {
        assert!(group_names.contains(&group), "{group} in {group_names:?}");
    }
}

testenv::each_control_plane!(api_services_list_every_served_group_version);

const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// APIServices are stored objects: each has a uid and a resourceVersion, the write that registered it
/// is kube-apiserver's, a CRD's group version has one while the CRD is served, and a name that is not
/// `version.group` is refused.
async fn api_services_are_stored_and_follow_what_is_served(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let apps = get(&client, &format!("{API_SERVICES}/v1.apps")).await;
    assert!(apps.body["metadata"]["uid"].is_string(), "{}", apps.body);
    assert!(
        apps.body["metadata"]["resourceVersion"].is_string(),
        "{}",
        apps.body
    );
    assert_eq!(
        apps.body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(
        apps.body["metadata"]["managedFields"][0]["manager"],
        "kube-apiserver"
    );

    let group = "registered.cluster-basics.example.com";
    common::install_crd(
        &client,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("gadgets.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    )
    .await;
    let path = format!("{API_SERVICES}/v1.{group}");
    common::eventually("the CRD's APIService", || async {
        get(&client, &path).await.status == 200
    })
    .await;
    let registered = get(&client, &path).await;
    assert_eq!(
        registered.body["spec"],
        json!({"group": group, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        registered.body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );

    let crd = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}");
    let deleted = request(&client, "DELETE", &crd, "application/json", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    common::eventually("the CRD's APIService removed", || async {
        get(&client, &path).await.status == 404
    })
    .await;

    let misnamed = request(
        &client,
        "POST",
        API_SERVICES,
        "application/json",
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.elsewhere.example.com"},
            "spec": {"group": "other.example.com", "version": "v1", "groupPriorityMinimum": 100,
                "versionPriority": 10, "insecureSkipTLSVerify": true,
                "service": {"namespace": "default", "name": "other"}}}),
    )
    .await;
    assert_eq!(misnamed.status, 422, "{}", misnamed.body);
    assert_eq!(
        misnamed.body["details"]["causes"][0]["field"], "metadata.name",
        "{}",
        misnamed.body
    );
    assert!(
        misnamed.body["message"]
            .as_str()
            .is_some_and(|m| m.contains(r#"must be `spec.version+"."+spec.group`: "v1.other.example.com""#)),
        "{}",
        misnamed.body
    );
}

testenv::each_control_plane!(api_services_are_stored_and_follow_what_is_served);

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

async fn certificate_signing_requests_are_approved(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let mut csr = common::client_csr("alice");
    // Who asks is the server's to say, whatever the body claims.
    csr["spec"]["username"] = json!("someone-else");
    let created = request(&client, "POST", CSRS, "application/json", csr).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["spec"]["username"], "admin",
        "the requester is who sent it"
    );
    // The registry resets a CSR's spec and status on every write to it, so its create owns nothing,
    // and an object whose create owned nothing has no managedFields to record later writes in.
    assert_eq!(
        created.body["metadata"].get("managedFields"),
        None,
        "{}",
        created.body
    );

    // What `kubectl certificate approve` sends: the object with one more condition.
    let mut approved = created.body.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True",
        "reason": "KubectlApprove", "message": "This CSR was approved by kubectl certificate approve."}]});
    let written = request(
        &client,
        "PUT",
        &format!("{CSRS}/alice/approval"),
        "application/json",
        approved,
    )
    .await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(
        written.body["metadata"].get("managedFields"),
        None,
        "{}",
        written.body
    );
    let condition = &written.body["status"]["conditions"][0];
    assert_eq!(
        (&condition["type"], &condition["status"]),
        (&json!("Approved"), &json!("True"))
    );
    // Stamped by the server, as the approval carried no times.
    assert!(condition["lastUpdateTime"].is_string(), "{condition}");
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    let status = get(&client, &format!("{CSRS}/alice/status")).await;
    assert_eq!(status.body["status"]["conditions"][0]["reason"], "KubectlApprove");
    let printed = Kubectl::new(&plane).ok(&["get", "csr", "alice"]).await;
    assert!(printed.contains("Approved"), "{printed}");

    // What a create sets outside the reset fields is recorded as usual.
    let mut labelled = common::client_csr("bob");
    labelled["metadata"]["labels"] = json!({"team": "a"});
    let created = request(&client, "POST", CSRS, "application/json", labelled).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let entries = created.body["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(entries.len(), 1, "{}", created.body);
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
    );
}

testenv::each_control_plane!(certificate_signing_requests_are_approved);

/// The namespaces every cluster has were created by kube-apiserver, which their managedFields say;
/// a client's later change of one is recorded beside it.
async fn the_default_namespaces_record_kube_apiserver_and_later_writers(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let namespace = get(&client, &format!("/api/v1/namespaces/{name}")).await;
        let entries = &namespace.body["metadata"]["managedFields"];
        assert_eq!(
            (&entries[0]["manager"], &entries[0]["fieldsV1"]),
            (
                &json!("kube-apiserver"),
                &json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}})
            ),
            "{name}: {}",
            namespace.body
        );
    }
    let labelled = request(
        &client,
        "PATCH",
        "/api/v1/namespaces/kube-public?fieldManager=labeller",
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"team": "a"}}}),
    )
    .await;
    assert_eq!(labelled.status, 200, "{}", labelled.body);
    let managers: Vec<&str> = labelled.body["metadata"]["managedFields"]
        .as_array()
        .map(|entries| entries.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers, ["kube-apiserver", "labeller"], "{}", labelled.body);
}

testenv::each_control_plane!(the_default_namespaces_record_kube_apiserver_and_later_writers);

/// Every namespace gets a ServiceAccount `default` from the ServiceAccount controller (K4), which
/// makes it again when it is deleted. The real control plane runs all its controllers here.
async fn each_namespace_has_a_default_service_account(backend: Backend) {
    let plane = match backend {
        Backend::Real => ControlPlane::real(testenv::real::Controllers::All).await,
        _ => ControlPlane::start(backend).await,
    }
    .expect("control plane starts");
    let client = plane.client();
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "accounts"}});
    let created = request(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        namespace,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let account = "/api/v1/namespaces/accounts/serviceaccounts/default";
    // The controller makes it within a second; upstream's e2e framework waits two minutes for it.
    let appeared = |what: &'static str| {
        let client = client.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let answer = get(&client, account).await;
                if answer.status == 200 {
                    return answer.body;
                }
                assert!(tokio::time::Instant::now() < deadline, "{what}: {}", answer.text);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let first = appeared("the namespace's default ServiceAccount").await;
    assert_eq!(first["metadata"]["name"], "default");
    let deleted = request(&client, "DELETE", account, "", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let again = appeared("the default ServiceAccount made again").await;
    assert_ne!(again["metadata"]["uid"], first["metadata"]["uid"]);
    // The namespaces every cluster has have one too.
    let kube_system = get(&client, "/api/v1/namespaces/kube-system/serviceaccounts/default").await;
    assert_eq!(kube_system.status, 200, "{}", kube_system.text);
}

testenv::each_control_plane!(each_namespace_has_a_default_service_account);
