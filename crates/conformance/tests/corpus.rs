//! The corpus played against the embedded and the real API server, side by side: every answer that
//! differs must be listed in `baseline.yaml` with its reason, and every listed one must still differ.
//! `CONFORMANCE_BLESS=1` rewrites the baseline (new entries get a placeholder the next run refuses)
//! and the figures in docs/conformance.md.

use std::path::Path;

use conformance::compare::{Divergence, compare};
use conformance::normalize::normalize;
use conformance::runner::{Target, repository};
use conformance::scenario::Compared;
use conformance::{baseline, report, scenario};
use futures::StreamExt;
use testenv::{Backend, ControlPlane};

/// Scenarios in flight at once: each runs in its own namespace, and cluster-scoped names in the corpus
/// are unique per scenario.
const IN_FLIGHT: usize = 4;

testenv::real_control_plane!(the_embedded_server_answers_the_corpus_as_the_real_one_does);

async fn the_embedded_server_answers_the_corpus_as_the_real_one_does(_: Backend) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenarios = scenario::load(&root.join("corpus")).expect("the corpus reads");
    // Both sides run the workload controllers and neither runs a node: the real control plane its
    // Deployment and ReplicaSet controllers beside the garbage collector and the namespace
    // controller (no scheduler, no kubelet), the embedded server with its simulated node off. So a
    // Deployment gets the same ReplicaSets, Pending Pods and status on each; before each step the
    // runner waits until the controllers are done (`Target::settle_workloads`).
    let (real, embedded) = tokio::join!(
        ControlPlane::real(testenv::real::Controllers::Workloads),
        ControlPlane::embedded(apiserver::Config {
            simulated_node: false,
            ..apiserver::Config::default()
        })
    );
    let (real, embedded) = (
        real.expect("the real control plane starts"),
        embedded.expect("the embedded server starts"),
    );
    let embedded = Target::new("embedded", &embedded).expect("a kubeconfig for the embedded server");
    let real = Target::new("real", &real).expect("a kubeconfig for the real server");

    let played: Vec<Vec<Divergence>> = futures::stream::iter(&scenarios)
        .map(|scenario| {
            let (embedded, real) = (&embedded, &real);
            async move {
                let namespace = scenario.namespace();
                let (e, r) = tokio::join!(
                    embedded.play(scenario, &namespace),
                    real.play(scenario, &namespace)
                );
                let (e, r) = (
                    e.expect("the scenario plays on the embedded server"),
                    r.expect("the scenario plays on the real server"),
                );
                e.iter()
                    .zip(&r)
                    .enumerate()
                    .flat_map(|(step, (e, r))| {
                        let (mut e, mut r) = (normalize(e), normalize(r));
                        if scenario.steps[step].compare == Compared::StatusAndHeaders {
                            e["body"] = serde_json::Value::Null;
                            r["body"] = serde_json::Value::Null;
                        }
                        compare(&scenario.step_key(step), &scenario.area, &e, &r)
                    })
                    .collect()
            }
        })
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    let divergences: Vec<Divergence> = played.into_iter().flatten().collect();

    let report = report::Report::new(&scenarios, divergences);
    let json = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-report.json");
    report.write_json(&json).expect("the report is written");

    let baseline_path = root.join("baseline.yaml");
    let docs_path = repository().join("docs/conformance.md");
    let mut accepted = baseline::load(&baseline_path).expect("the baseline reads");
    if std::env::var_os("CONFORMANCE_BLESS").is_some() {
        accepted = baseline::blessed(&accepted, &report.divergences);
        baseline::write(&baseline_path, &accepted).expect("the baseline is written");
    }
    let verdict = baseline::judge(&accepted, &report.divergences);
    println!("{}\nreport: {}", report.table(&verdict), json.display());

    let docs = std::fs::read_to_string(&docs_path).expect("docs/conformance.md reads");
    let kept = report::with_section(&docs, &report.docs_section(&accepted))
        .expect("docs/conformance.md has the markers");
    if std::env::var_os("CONFORMANCE_BLESS").is_some() {
        std::fs::write(&docs_path, &kept).expect("docs/conformance.md is written");
    }
    assert!(
        verdict.passes(),
        "the divergences differ from baseline.yaml (see above)"
    );
    assert_eq!(
        docs, kept,
        "docs/conformance.md is behind the run: run the test with CONFORMANCE_BLESS=1"
    );
}
