//! Generated owner graphs (L5): objects in two namespaces and at cluster scope, owning themselves,
//! each other in cycles, or each the next in chains of up to 10,000 links; then deleted one after
//! another with random propagation policies, over HTTP. Every deletion must be answered within a
//! deadline, leave what the real garbage collector would (see `common::owner_graph::Model`), and the
//! server must still answer `/version` at the end.

use std::time::{Duration, Instant};

use proptest::{
    prelude::*,
    strategy::ValueTree,
    test_runner::{RngAlgorithm, TestRng, TestRunner},
};

use crate::common::{
    self,
    owner_graph::{self, Graph, Model, Policy, Scope},
};

const DEFAULT_CASES: usize = 40;
/// How long one deletion, with everything it sets in motion, may take.
const DELETION_DEADLINE: Duration = Duration::from_secs(30);
/// The most objects in a generated graph other than a chain.
const MAX_GRAPH: usize = 12;

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        3 => Just(Scope::Namespace(0)),
        2 => Just(Scope::Namespace(1)),
        1 => Just(Scope::Cluster),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        Just(Policy::Background),
        Just(Policy::Foreground),
        Just(Policy::Orphan),
    ]
}

/// Up to `MAX_GRAPH` objects, each naming up to three owners among them (itself included).
fn small_graph() -> impl Strategy<Value = Graph> {
    (1..=MAX_GRAPH).prop_flat_map(|len| {
        let owners = proptest::collection::vec((0..len, any::<bool>()), 0..=3).prop_map(|mut owners| {
            owners.sort_by_key(|&(owner, _)| owner);
            owners.dedup_by_key(|&mut (owner, _)| owner);
            owners
        });
        (
            proptest::collection::vec(scope(), len),
            proptest::collection::vec(owners, len),
        )
            .prop_map(|(scopes, owners)| Graph { scopes, owners })
    })
}

/// A chain, mostly short; now and then up to 10,000 links; sometimes closed into a cycle.
fn chain() -> impl Strategy<Value = Graph> {
    let len = prop_oneof![8 => 1..=40usize, 1 => 40..=10_000usize];
    (len, any::<bool>(), any::<bool>())
        .prop_map(|(len, blocking, closed)| Graph::chain(len, blocking, closed))
}

#[derive(Debug, Clone)]
struct Scenario {
    graph: Graph,
    deletions: Vec<(usize, Policy)>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    prop_oneof![3 => small_graph(), 1 => chain()].prop_flat_map(|graph| {
        let len = graph.len();
        let deletions = proptest::collection::vec((0..len, policy()), 1..=4);
        (Just(graph), deletions).prop_map(|(graph, deletions)| Scenario { graph, deletions })
    })
}

/// A scenario in a line, the graph in full when it is small enough to read.
fn describe(scenario: &Scenario) -> String {
    let graph = &scenario.graph;
    if graph.len() > MAX_GRAPH {
        return format!(
            "chain of {} (first owners {:?}), deletions {:?}",
            graph.len(),
            graph.owners[0],
            scenario.deletions
        );
    }
    format!(
        "scopes {:?}, owners {:?}, deletions {:?}",
        graph.scopes, graph.owners, scenario.deletions
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_owner_graphs_are_collected_as_kubernetes_would_and_the_server_keeps_serving() {
    let (_server, client) = common::start_plain().await;
    owner_graph::create_namespaces(&client).await;
    let (seed, hex) = super::seed();
    println!("FUZZ_SEED={hex}");
    let cases = super::cases_from_env("FUZZ_GRAPH_CASES", DEFAULT_CASES);
    let mut runner = TestRunner::new_with_rng(
        Default::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    );
    let strategy = scenario();
    let started = Instant::now();
    let mut objects = 0;
    let mut largest = 0;
    for case in 0..cases {
        let scenario = strategy.new_tree(&mut runner).expect("a scenario").current();
        let context = || format!("FUZZ_SEED={hex} case {case}: {}", describe(&scenario));
        objects += scenario.graph.len();
        largest = largest.max(scenario.graph.len());
        let built = owner_graph::build(&client, &format!("case-{case}"), &scenario.graph).await;
        let mut model = Model::new(&scenario.graph);
        if let Err(problem) = model.matches(&built.observe(&client).await) {
            panic!("{}\n  after the owners were written: {problem}", context());
        }
        for &(index, policy) in &scenario.deletions {
            let existed = model.delete(index, policy);
            let status = tokio::time::timeout(DELETION_DEADLINE, built.delete(&client, index, policy))
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "{}\n  deleting {index} took over {DELETION_DEADLINE:?}",
                        context()
                    )
                });
            let expected = if existed { 200 } else { 404 };
            assert_eq!(status, expected, "{}\n  deleting {index} ({policy:?})", context());
            if let Err(problem) = model.matches(&built.observe(&client).await) {
                panic!("{}\n  after deleting {index} ({policy:?}): {problem}", context());
            }
        }
        assert!(
            owner_graph::serves_version(&client).await,
            "{}\n  /version no longer answers",
            context()
        );
    }
    println!(
        "{cases} owner graphs, {objects} objects (at most {largest} in one), in {:?}",
        started.elapsed()
    );
}
