//! Deleting owners never takes the server down, whatever the owner graph (L5): an object owning
//! itself, cycles, and a chain of 10,000 links, each deletion answered within a deadline and leaving
//! what the real garbage collector would. Generated graphs are in `fuzz.rs`.

mod common;

use std::time::{Duration, Instant};

use common::owner_graph::{self, Built, Graph, Model, Policy, Scope};
use kube::Client;

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
