//! `kubectl get` of the built-in kinds prints the columns and cells kube-apiserver's Tables have, on
//! both control planes: one expectation per kind, which each tier must meet. Ages and creation times
//! are masked (`*`), and so are allocated cluster IPs (`<ip>`): the two tiers allocate from different
//! ranges.

mod common;

use common::kubectl::{Kubectl, fixture};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

/// (what to get, every column as `-o wide` prints it, the columns only `-o wide` shows).
const KINDS: &[(&str, &str, &[&str])] = &[
    ("namespaces tables", "NAME|STATUS|AGE\ntables|Active|*", &[]),
    ("configmaps settings", "NAME|DATA|AGE\nsettings|3|*", &[]),
    (
        "secrets opaque login",
        "NAME|TYPE|DATA|AGE\nopaque|Opaque|1|*\nlogin|kubernetes.io/basic-auth|2|*",
        &[],
    ),
    ("serviceaccounts robot", "NAME|SECRETS|AGE\nrobot|1|*", &[]),
    (
        "services web nodes headless elsewhere",
        "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE|SELECTOR\n\
         web|ClusterIP|<ip>|<none>|80/TCP,53/UDP|*|app=web,tier=front\n\
         nodes|NodePort|<ip>|192.0.2.10|443:30443/TCP|*|<none>\n\
         headless|ClusterIP|None|<none>|5432/TCP|*|<none>\n\
         elsewhere|ExternalName|<none>|db.example.com|<none>|*|<none>",
        &["SELECTOR"],
    ),
    (
        "events.v1. web.1",
        "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME\n\
         9d|Warning|BackOff|pod/runner|spec.containers{app}|kubelet, node-1|Back-off restarting failed container|10d|4|web.1",
        &["SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"],
    ),
    (
        "events.v1.events.k8s.io web.2",
        "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME\n\
         2d|Normal|ScalingReplicaSet|deployment/web||deployment-controller, controller-0|Scaled up|3d|5|web.2",
        &["SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"],
    ),
    (
        "pods runner",
        "NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES\n\
         runner|0/2|Pending|0|*|<none>|<none>|<none>|0/1",
        &["IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
    ),
    (
        "deployments web",
        "NAME|READY|UP-TO-DATE|AVAILABLE|AGE|CONTAINERS|IMAGES|SELECTOR\n\
         web|0/2|2|0|*|web,log|nginx,busybox|app=web,tier in (edge,front)",
        &["CONTAINERS", "IMAGES", "SELECTOR"],
    ),
    (
        "replicasets cache",
        "NAME|DESIRED|CURRENT|READY|AGE|CONTAINERS|IMAGES|SELECTOR\ncache|3|3|0|*|redis|redis|app=cache",
        &["CONTAINERS", "IMAGES", "SELECTOR"],
    ),
    (
        "statefulsets db",
        "NAME|READY|AGE|CONTAINERS|IMAGES\ndb|1/1|*|postgres|postgres",
        &["CONTAINERS", "IMAGES"],
    ),
    (
        "jobs migrate",
        "NAME|STATUS|COMPLETIONS|DURATION|AGE|CONTAINERS|IMAGES|SELECTOR\n\
         migrate|Running|0/1 of 2||*|migrate|busybox|job=migrate",
        &["CONTAINERS", "IMAGES", "SELECTOR"],
    ),
    ("leases leader", "NAME|HOLDER|AGE\nleader|operator-0|*", &[]),
    ("roles reader", "NAME|CREATED AT\nreader|*", &[]),
    (
        "rolebindings readers",
        "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS\nreaders|Role/reader|*|ann, bob|devs|tables/robot",
        &["USERS", "GROUPS", "SERVICEACCOUNTS"],
    ),
    (
        "clusterroles tables-viewer",
        "NAME|CREATED AT\ntables-viewer|*",
        &[],
    ),
    (
        "clusterrolebindings tables-viewers",
        "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS\ntables-viewers|ClusterRole/tables-viewer|*||auditors|",
        &["USERS", "GROUPS", "SERVICEACCOUNTS"],
    ),
    (
        "nodes tables-node",
        "NAME|STATUS|ROLES|AGE|VERSION|INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME\n\
         tables-node|Ready,SchedulingDisabled|control-plane,worker|*|v1.33.13|10.0.0.5|<none>|Debian GNU/Linux 12 (bookworm)|6.1.0|containerd://1.7.0",
        &[
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME",
        ],
    ),
    (
        "endpoints web",
        "NAME|ENDPOINTS|AGE\nweb|10.1.0.1:80,10.1.0.2:80,10.1.0.1:53 + 1 more...|*",
        &[],
    ),
    (
        "endpointslices web-1",
        "NAME|ADDRESSTYPE|PORTS|ENDPOINTS|AGE\nweb-1|IPv4|80|10.1.0.1,10.1.0.2|*",
        &[],
    ),
    (
        "certificatesigningrequests tables-user",
        "NAME|AGE|SIGNERNAME|REQUESTOR|REQUESTEDDURATION|CONDITION\n\
         tables-user|*|kubernetes.io/kube-apiserver-client|admin|24h|Approved",
        &[],
    ),
    (
        "apiservices v1.apps",
        "NAME|SERVICE|AVAILABLE|AGE\nv1.apps|Local|True|*",
        &[],
    ),
    (
        "customresourcedefinitions postgreswriters.example.com",
        "NAME|CREATED AT\npostgreswriters.example.com|*",
        &[],
    ),
];

/// Columns whose cells change from run to run.
const MASKED: &[&str] = &["AGE", "CREATED AT"];

/// kubectl's output as `|`-separated cells, cut where the header's columns start (kubectl aligns every
/// cell under its header; a cell may hold single spaces, a header at most one between two words).
fn cells(output: &str) -> String {
    let mut lines = output.lines();
    let header = lines.next().unwrap_or_default();
    let mut starts = Vec::new();
    let mut previous = ' ';
    let mut spaces = 2;
    for (i, c) in header.char_indices() {
        if c != ' ' && previous == ' ' && spaces >= 2 {
            starts.push(i);
        }
        spaces = if c == ' ' { spaces + 1 } else { 0 };
        previous = c;
    }
    let split = |line: &str| -> Vec<String> {
        starts
            .iter()
            .enumerate()
            .map(|(i, start)| {
                let end = starts.get(i + 1).copied().unwrap_or(line.len()).min(line.len());
                line.get((*start).min(end)..end)
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            })
            .collect()
    };
    let names = split(header);
    let mut rendered = vec![names.join("|")];
    for line in lines {
        let row: Vec<String> = split(line)
            .into_iter()
            .zip(&names)
            .map(|(cell, name)| {
                if MASKED.contains(&name.as_str()) {
                    "*".into()
                } else if name == "CLUSTER-IP" && cell.parse::<std::net::IpAddr>().is_ok() {
                    "<ip>".into()
                } else {
                    cell
                }
            })
            .collect();
        rendered.push(row.join("|"));
    }
    rendered.join("\n")
}

/// The expected wide table without the columns only `-o wide` shows.
fn narrow(wide: &str, wide_only: &[&str]) -> String {
    let mut lines = wide.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('|').collect();
    let keep: Vec<bool> = header.iter().map(|h| !wide_only.contains(h)).collect();
    std::iter::once(wide.lines().next().unwrap_or_default())
        .chain(lines)
        .map(|line| {
            line.split('|')
                .zip(&keep)
                .filter(|(_, keep)| **keep)
                .map(|(cell, _)| cell)
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Events whose times lie whole days back, so that their humanised ages are the same on every run.
fn events_manifest() -> String {
    let now = jiff::Timestamp::now();
    let days_ago = |days: i64, format: &str| {
        (now - jiff::SignedDuration::from_hours(24 * days))
            .strftime(format)
            .to_string()
    };
    let seconds = |days| days_ago(days, "%Y-%m-%dT%H:%M:%SZ");
    let micros = |days| days_ago(days, "%Y-%m-%dT%H:%M:%S.%6fZ");
    format!(
        "apiVersion: v1\nkind: Event\nmetadata: {{name: web.1, namespace: tables}}\ntype: Warning\nreason: BackOff\n\
         message: \"  Back-off restarting failed container  \"\n\
         involvedObject: {{kind: Pod, name: runner, namespace: tables, fieldPath: \"spec.containers{{app}}\"}}\n\
         source: {{component: kubelet, host: node-1}}\ncount: 4\n\
         firstTimestamp: \"{}\"\nlastTimestamp: \"{}\"\n---\n\
         apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {{name: web.2, namespace: tables}}\ntype: Normal\n\
         reason: ScalingReplicaSet\nnote: Scaled up\naction: Scale\n\
         regarding: {{kind: Deployment, name: web, namespace: tables}}\n\
         reportingController: deployment-controller\nreportingInstance: controller-0\n\
         eventTime: \"{}\"\nseries: {{count: 5, lastObservedTime: \"{}\"}}\n",
        seconds(10),
        seconds(9),
        micros(3),
        micros(2),
    )
}

async fn kubectl_get_prints_the_columns_and_cells_of_kube_apiserver(backend: Backend) {
    // The workload controllers run and no node does: the Deployment and the ReplicaSet get Pods that
    // stay Pending.
    let plane = match backend {
        Backend::Real => ControlPlane::real(testenv::real::Controllers::Workloads).await,
        Backend::Cluster => panic!("the cluster tier has a node"),
        Backend::Embedded => {
            ControlPlane::embedded(apiserver::Config {
                simulated_node: false,
                ..apiserver::Config::default()
            })
            .await
        }
    }
    .expect("control plane starts");
    let kubectl = Kubectl::new(&plane);
    kubectl
        .ok(&["apply", "-f", &fixture("tables/objects.yaml")])
        .await;
    kubectl.ok(&["apply", "-f", &fixture("crd.yaml")]).await;
    kubectl
        .ok(&[
            "apply",
            "-f",
            &kubectl.manifest("events.yaml", &events_manifest()),
        ])
        .await;
    // The workload controllers made their Pods (at once on the embedded server, soon on the real one).
    for (what, path, count) in [
        ("deployment/web", "{.status.updatedReplicas}", "2"),
        ("replicaset/cache", "{.status.replicas}", "3"),
    ] {
        let condition = format!("--for=jsonpath={path}={count}");
        kubectl
            .ok(&["wait", "-n", "tables", what, &condition, "--timeout=60s"])
            .await;
    }
    // As a finished rollout reports it: no StatefulSet controller runs.
    for (kind, status) in [(
        "statefulset/db",
        r#"{"status":{"replicas":1,"readyReplicas":1,"currentReplicas":1,"updatedReplicas":1}}"#,
    )] {
        kubectl
            .ok(&[
                "patch",
                "-n",
                "tables",
                kind,
                "--subresource=status",
                "--type=merge",
                "-p",
                status,
            ])
            .await;
    }
    // A node as its kubelet reports it, then cordoned; a request approved.
    let node_status = r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ready"}],
        "addresses":[{"type":"InternalIP","address":"10.0.0.5"}],
        "nodeInfo":{"architecture":"amd64","bootID":"b","containerRuntimeVersion":"containerd://1.7.0",
        "kernelVersion":"6.1.0","kubeProxyVersion":"","kubeletVersion":"v1.33.13","machineID":"m",
        "operatingSystem":"linux","osImage":"Debian GNU/Linux 12 (bookworm)","systemUUID":"u"}}}"#;
    kubectl
        .ok(&[
            "patch",
            "node/tables-node",
            "--subresource=status",
            "--type=merge",
            "-p",
            node_status,
        ])
        .await;
    kubectl.ok(&["cordon", "tables-node"]).await;
    // As `kubectl certificate approve` writes it (which sends it as protobuf, docs/control-planes.md).
    let approved = r#"{"status":{"conditions":[{"type":"Approved","status":"True","reason":"KubectlApprove","message":"approved"}]}}"#;
    kubectl
        .ok(&[
            "patch",
            "csr/tables-user",
            "--subresource=approval",
            "--type=merge",
            "-p",
            approved,
        ])
        .await;
    for (what, wide, wide_only) in KINDS {
        let mut args: Vec<&str> = vec!["get", "-n", "tables"];
        args.extend(what.split(' '));
        let printed = kubectl.ok(&args).await;
        assert_eq!(
            cells(&printed),
            narrow(wide, wide_only),
            "kubectl get {what}:\n{printed}"
        );
        args.extend(["-o", "wide"]);
        let printed = kubectl.ok(&args).await;
        assert_eq!(cells(&printed), *wide, "kubectl get {what} -o wide:\n{printed}");
    }
}

testenv::each_control_plane!(kubectl_get_prints_the_columns_and_cells_of_kube_apiserver);

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The collection path of every resource a server lists, read from its discovery documents.
async fn listed_collections(client: &kube::Client) -> Vec<String> {
    let mut paths = Vec::new();
    let mut group_versions = vec!["/api/v1".to_owned()];
    let (_, groups) = common::send(client, "GET", "/apis", "application/json", Value::Null).await;
    for group in groups["groups"].as_array().cloned().unwrap_or_default() {
        group_versions.push(format!(
            "/apis/{}",
            group["preferredVersion"]["groupVersion"].as_str().unwrap_or("")
        ));
    }
    for group_version in group_versions {
        let (_, list) = common::send(client, "GET", &group_version, "application/json", Value::Null).await;
        for resource in list["resources"].as_array().cloned().unwrap_or_default() {
            let listed = resource["verbs"]
                .as_array()
                .is_some_and(|verbs| verbs.contains(&json!("list")));
            let name = resource["name"].as_str().unwrap_or_default();
            if listed && !name.contains('/') {
                paths.push(format!("{group_version}/{name}"));
            }
        }
    }
    paths
}

async fn table_columns(client: &kube::Client, path: &str) -> Value {
    let request = axum::http::Request::builder()
        .uri(path)
        .header("accept", TABLE)
        .body(Vec::new())
        .expect("a request");
    let table: Value = client
        .request(request)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    table["columnDefinitions"].clone()
}

/// Every resource the embedded server lists has the Table columns of kube-apiserver: names, types,
/// formats, priorities and descriptions alike.
async fn table_column_definitions_are_kube_apiservers(backend: Backend) {
    let real = ControlPlane::start(backend).await.expect("control plane starts");
    let embedded = ControlPlane::start(Backend::Embedded)
        .await
        .expect("embedded server starts");
    let (real, embedded) = (real.client(), embedded.client());
    let crd: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("crd.json")).expect("the CRD fixture"))
            .expect("the CRD fixture is JSON");
    for client in [&real, &embedded] {
        common::install_crd(client, crd.clone()).await;
    }
    let collections = listed_collections(&embedded).await;
    assert!(
        collections.contains(&"/apis/example.com/v1/postgreswriters".to_owned()) && collections.len() > 15,
        "{collections:?}"
    );
    for path in collections {
        let expected = table_columns(&real, &path).await;
        assert_eq!(table_columns(&embedded, &path).await, expected, "{path}");
    }
}

testenv::real_control_plane!(table_column_definitions_are_kube_apiservers);

/// `includeObject` decides what a row carries of its object: its metadata (the default), nothing, or
/// all of it; anything else is refused.
async fn rows_carry_what_include_object_asks_for(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let created = common::request(
        &client,
        "POST",
        configmaps,
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rows"}, "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let table = |query: &'static str| {
        let client = client.clone();
        async move {
            common::exchange(
                &client,
                "GET",
                &format!("{configmaps}{query}"),
                "",
                TABLE,
                Vec::new(),
            )
            .await
        }
    };
    let row_object = |answer: &common::Answer| answer.body["rows"][0]["object"].clone();
    let metadata = table("?fieldSelector=metadata.name%3Drows").await;
    assert_eq!(
        row_object(&metadata)["kind"],
        "PartialObjectMetadata",
        "{}",
        metadata.body
    );
    let none = table("?fieldSelector=metadata.name%3Drows&includeObject=None").await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert_eq!(
        none.body["rows"][0].get("object"),
        Some(&Value::Null),
        "{}",
        none.body
    );
    let one = table("/rows?includeObject=None").await;
    assert_eq!(row_object(&one), Value::Null, "{}", one.body);
    let whole = table("?fieldSelector=metadata.name%3Drows&includeObject=Object").await;
    assert_eq!(
        (&row_object(&whole)["kind"], &row_object(&whole)["data"]),
        (&json!("ConfigMap"), &json!({"k": "v"})),
        "{}",
        whole.body
    );
    let refused = table("?includeObject=Bogus").await;
    assert_eq!(
        (refused.status, &refused.body["reason"], &refused.body["message"]),
        (
            400,
            &json!("BadRequest"),
            &json!(
                "Unable to convert to Table as requested: includeObject: Invalid value: \"Bogus\": must be \
                 'Metadata', 'Object', 'None', or empty"
            )
        )
    );
}

testenv::each_control_plane!(rows_carry_what_include_object_asks_for);
