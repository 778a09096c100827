//! Deleting owners never takes the server down, whatever the owner graph (L5): an object owning
//! itself, cycles, and a chain of 10,000 links, each deletion answered within a deadline and leaving
//! what the real garbage collector would. Generated graphs are in `fuzz.rs`. What the collector's own
//! writes leave of an object (references, finalizers, managedFields, generation) is compared with
//! kube-controller-manager's on both control planes.

mod common;

use std::time::{Duration, Instant};

use common::{
    Answer,
    owner_graph::{self, Built, Graph, Model, Policy, Scope},
    request,
};
use kube::Client;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

/// How long one deletion, with everything it sets in motion, may take.
const DELETION_DEADLINE: Duration = Duration::from_secs(30);

async fn delete_within_deadline(client: &Client, built: &Built, index: usize, policy: Policy) -> u16 {
    tokio::time::timeout(DELETION_DEADLINE, built.delete(client, index, policy))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "deleting {} ({policy:?}) took over {DELETION_DEADLINE:?}",
                built.name(index)
            )
        })
}

async fn assert_collected_as_modelled(client: &Client, built: &Built, model: &Model) {
    let observed = built.observe(client).await;
    if let Err(problem) = model.matches(&observed) {
        panic!("{problem}");
    }
    assert!(
        owner_graph::serves_version(client).await,
        "the server still answers /version"
    );
}

fn self_owned() -> Graph {
    Graph {
        scopes: vec![Scope::Namespace(0)],
        owners: vec![vec![(0, true)]],
    }
}

#[tokio::test]
async fn a_self_owned_config_map_deleted_in_the_foreground_goes_and_the_server_keeps_serving() {
    let (_server, client) = common::start().await;
    owner_graph::create_namespaces(&client).await;
    let built = owner_graph::build(&client, "self", &self_owned()).await;
    assert_eq!(
        built.observe(&client).await.len(),
        1,
        "owning itself keeps it alive"
    );

    assert_eq!(
        delete_within_deadline(&client, &built, 0, Policy::Foreground).await,
        200
    );
    let mut model = Model::new(&self_owned());
    model.delete(0, Policy::Foreground);
    assert_collected_as_modelled(&client, &built, &model).await;
}

#[tokio::test]
async fn a_self_owned_object_goes_with_every_propagation_policy() {
    let (_server, client) = common::start().await;
    owner_graph::create_namespaces(&client).await;
    for (i, policy) in [Policy::Background, Policy::Orphan, Policy::Foreground]
        .into_iter()
        .enumerate()
    {
        let mut graph = self_owned();
        // A cluster-scoped owner too: a namespaced dependent reaches it from any namespace.
        graph.scopes.push(Scope::Cluster);
        graph.owners.push(vec![(1, false)]);
        graph.owners[0].push((1, true));
        let built = owner_graph::build(&client, &format!("self-{i}"), &graph).await;
        assert_eq!(
            delete_within_deadline(&client, &built, 0, policy).await,
            200,
            "{policy:?}"
        );
        let mut model = Model::new(&graph);
        model.delete(0, policy);
        assert!(model.is_alive(1), "the cluster-scoped owner stays");
        assert_collected_as_modelled(&client, &built, &model).await;
    }
}

#[tokio::test]
async fn a_foreground_deletion_of_an_owner_cycle_deletes_every_member() {
    let (_server, client) = common::start().await;
    owner_graph::create_namespaces(&client).await;
    for len in [2, 3, 7] {
        for blocking in [true, false] {
            let graph = Graph::chain(len, blocking, true);
            let built = owner_graph::build(&client, &format!("cycle-{len}-{blocking}"), &graph).await;
            let mut model = Model::new(&graph);
            assert_eq!(built.observe(&client).await.len(), len, "a cycle holds itself");
            assert_eq!(
                delete_within_deadline(&client, &built, len / 2, Policy::Foreground).await,
                200
            );
            model.delete(len / 2, Policy::Foreground);
            assert!((0..len).all(|i| !model.is_alive(i)));
            assert_collected_as_modelled(&client, &built, &model).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_10000_owners_is_collected_in_the_background() {
    const LINKS: usize = 10_000;
    let (_server, client) = common::start_plain().await;
    owner_graph::create_namespaces(&client).await;
    let graph = Graph::chain(LINKS, true, false);
    let started = Instant::now();
    let built = owner_graph::build(&client, "chain", &graph).await;
    println!("built {LINKS} links in {:?}", started.elapsed());
    assert_eq!(built.observe(&client).await.len(), LINKS);

    let started = Instant::now();
    assert_eq!(
        delete_within_deadline(&client, &built, 0, Policy::Background).await,
        200
    );
    println!("deleted {LINKS} links in {:?}", started.elapsed());
    let mut model = Model::new(&graph);
    model.delete(0, Policy::Background);
    assert_collected_as_modelled(&client, &built, &model).await;
}

/// What the collector leaves of the objects it writes, as kube-controller-manager's collector leaves
/// them through kube-apiserver: an orphaned dependent loses its reference and nothing else, an owner
/// deleted in the foreground loses the `foregroundDeletion` finalizer once its dependents are gone
/// and keeps the others; the resourceVersion moves, the generation stays, and managedFields no longer
/// give anyone the fields that went.
async fn the_collectors_writes_leave_what_kube_controller_manager_leaves(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();

    let owner = created(&client, CONFIG_MAPS, config_map("orphaning-owner", json!([]))).await;
    let dependent = created(&client, POLICIES, network_policy("orphaned", &owner)).await;
    let path = format!("{CONFIG_MAPS}/orphaning-owner");
    let deleted = delete_propagating(&client, &path, "Orphan").await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let orphaned = settled(&client, &format!("{POLICIES}/orphaned"), |policy| {
        policy.pointer("/metadata/ownerReferences").is_none()
    })
    .await;
    assert!(!orphaned.is_null(), "the orphaned dependent stays");
    assert_eq!(orphaned["spec"], dependent["spec"]);
    assert_eq!(
        orphaned["metadata"]["generation"],
        dependent["metadata"]["generation"]
    );
    assert_ne!(
        orphaned["metadata"]["resourceVersion"],
        dependent["metadata"]["resourceVersion"]
    );
    assert_eq!(
        managers(&orphaned),
        json!([{"manager": "test-writer", "operation": "Update", "fieldsV1": {"f:spec": {"f:policyTypes": {}}}}]),
        "the reference is no longer the creator's, and the collector owns nothing"
    );
    // Waits for the owner to go, the orphan finalizer taken away.
    settled(&client, &path, |_| false).await;

    let kept = json!(["example.com/kept"]);
    let owner = created(&client, CONFIG_MAPS, config_map("waiting-owner", kept.clone())).await;
    created(&client, POLICIES, network_policy("blocking", &owner)).await;
    let path = format!("{CONFIG_MAPS}/waiting-owner");
    let marked = delete_propagating(&client, &path, "Foreground").await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    assert_eq!(
        marked.body["metadata"]["finalizers"],
        json!(["example.com/kept", "foregroundDeletion"])
    );
    let released = settled(&client, &path, |owner| owner["metadata"]["finalizers"] == kept).await;
    let gone = request(&client, "GET", &format!("{POLICIES}/blocking"), "", Value::Null).await;
    assert_eq!(
        gone.status, 404,
        "the blocking dependent went first: {}",
        gone.body
    );
    assert_eq!(
        released["metadata"]["deletionTimestamp"],
        marked.body["metadata"]["deletionTimestamp"]
    );
    assert_ne!(
        released["metadata"]["resourceVersion"],
        marked.body["metadata"]["resourceVersion"]
    );
    assert_eq!(
        released.pointer("/metadata/generation"),
        None,
        "ConfigMaps count no generation"
    );
    assert_eq!(
        managers(&released),
        managers(&owner),
        "nobody owned the finalizer that went"
    );

    let unfinalized = request(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(unfinalized.status, 200, "{}", unfinalized.body);
    let gone = request(&client, "GET", &path, "", Value::Null).await;
    assert_eq!(
        gone.status, 404,
        "the owner goes with its last finalizer: {}",
        gone.body
    );
}

testenv::each_control_plane!(the_collectors_writes_leave_what_kube_controller_manager_leaves);

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const POLICIES: &str = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";

/// A NetworkPolicy (a kind that counts its generation, with no controller of its own) owned by
/// `owner`, which its deletion waits for.
fn network_policy(name: &str, owner: &Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": name, "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"podSelector": {}}})
}

fn config_map(name: &str, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "finalizers": finalizers}})
}

/// Who manages what of `object`: its managedFields entries without their times.
fn managers(object: &Value) -> Value {
    let entries = object["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .map(|entry| json!({"manager": entry["manager"], "operation": entry["operation"], "fieldsV1": entry["fieldsV1"]}))
        .collect()
}

/// Creates `body` at `path` under the field manager `test-writer`; the object as created.
/// A DELETE of `path` with `propagationPolicy` in its body, as kubectl's `--cascade` sends it.
async fn delete_propagating(client: &Client, path: &str, policy: &str) -> Answer {
    let options = json!({"propagationPolicy": policy});
    request(client, "DELETE", path, "application/json", options).await
}

async fn created(client: &Client, path: &str, body: Value) -> Value {
    let path = format!("{path}?fieldManager=test-writer");
    let answer = request(client, "POST", &path, "application/json", body).await;
    assert_eq!(answer.status, 201, "POST {path}: {}", answer.body);
    answer.body
}

/// The object at `path` once `done` holds of it (`Null` once it is gone), within the deletion deadline.
async fn settled(client: &Client, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DELETION_DEADLINE;
    loop {
        let answer = request(client, "GET", path, "", Value::Null).await;
        match answer.status {
            200 if done(&answer.body) => return answer.body,
            404 => return Value::Null,
            _ => {}
        }
        assert!(Instant::now() < deadline, "{path} never settles: {}", answer.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
