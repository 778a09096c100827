//! The conformance corpus's recorded scenario (`crates/conformance/corpus/recorded-operators.yaml`) is
//! what the operators really send. This test drives everything the operators do, as the RBAC test
//! does: `operator install`'s CRDs, the three controllers through their whole lifecycle (with the
//! orphan sweep), leader election between two replicas of the binary, and `operator uninstall`,
//! against the embedded API server recording its traffic (`apiserver::Audit::Traffic`). It turns the
//! traffic into corpus steps (`conformance::recording`), which the corpus test plays against both
//! servers.
//!
//! `CONFORMANCE_RECORD=1` writes the recording into the corpus. Without it, the test fails when the
//! operators now send a kind of request (method, resource, subresource, Content-Type) the recording
//! lacks: a change to what they send must come with a new recording.

mod support;

use std::{collections::BTreeSet, path::Path, time::Duration};

use apiserver::{ApiServer, Audit, Config};
use conformance::{
    recording,
    scenario::{CorpusFile, Scenario},
};
use operator::{
    controllers::{
        postgres_writer::{self, Settings},
        vote_config, web_app,
    },
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
    manager::crds,
};
use support::lifecycles::{
    leader_election, postgres_writer_lifecycle, vote_config_lifecycle, web_app_lifecycle,
};

/// Where the lifecycles run; the recording names it `{ns}`.
const NAMESPACE: &str = "default";

const HEADER: &str = "\
# Recorded, not written: every request the operators in this repository sent to an embedded API server
# while `operator install` installed the CRDs, the three controllers went through their whole lifecycle,
# two replicas took turns on the leader-election Lease and `operator uninstall` removed the CRDs.
# Regenerate with `CONFORMANCE_RECORD=1 cargo nextest run -p operator --test recorded_traffic`; how
# traffic becomes steps is explained in crates/conformance/src/recording.rs.
";

fn corpus_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/recorded-operators.yaml")
}

/// The kinds of request of `file`, lists left out: whether a list across namespaces is recorded
/// depends on whether its answer showed an object yet (see `conformance::recording`), so a list may
/// be in one recording and not in the next.
fn shapes(file: &CorpusFile) -> BTreeSet<String> {
    file.scenarios
        .iter()
        .flat_map(|s| &s.steps)
        .filter_map(recording::shape)
        .filter(|shape| !shape.starts_with("GET ") || shape.contains("<name>"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_recorded_corpus_holds_every_kind_of_request_the_operators_send() {
    let server = ApiServer::start(Config {
        audit: Audit::Traffic,
        ..Config::default()
    })
    .await
    .expect("API server starts");
    let client = server.client();
    crds::install(&client, operator::api::crds())
        .await
        .expect("operator install");
    support::wait_established(&client).await;

    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    let settings = Settings {
        orphan_sweep: true,
        ..Settings::default()
    };
    let resync = Duration::from_secs(2);
    let (ctx, stop) = support::context(&client, resync);
    let writers = support::spawn(ctx, stop, move |ctx| postgres_writer::run(ctx, pool, settings));
    let (ctx, stop) = support::context(&client, resync);
    let vote_configs = support::spawn(ctx, stop, vote_config::run);
    let (ctx, stop) = support::context(&client, resync);
    let web_apps = support::spawn(ctx, stop, web_app::run);
    tokio::join!(
        vote_config_lifecycle(&client),
        web_app_lifecycle(&client),
        postgres_writer_lifecycle(&client),
    );
    for running in [writers, vote_configs, web_apps] {
        running.stop().await;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    leader_election(&kubeconfig, NAMESPACE, &client).await;
    crds::uninstall(&client).await.expect("operator uninstall");

    let recorded = CorpusFile {
        area: "operators, recorded".into(),
        scenarios: vec![Scenario {
            name: "recorded-operators".into(),
            steps: recording::steps(&server.audit(), NAMESPACE),
            area: String::new(),
        }],
    };
    if std::env::var_os("CONFORMANCE_RECORD").is_some() {
        let yaml = serde_yaml::to_string(&recorded).expect("the recording serializes");
        std::fs::write(corpus_file(), format!("{HEADER}{yaml}")).expect("the recording is written");
        return;
    }
    let committed: CorpusFile =
        serde_yaml::from_str(&std::fs::read_to_string(corpus_file()).expect("the recorded corpus reads"))
            .expect("the recorded corpus parses");
    let missing: Vec<String> = shapes(&recorded)
        .difference(&shapes(&committed))
        .cloned()
        .collect();
    assert!(
        missing.is_empty(),
        "the operators now send requests the recorded corpus lacks; record it again with \
         CONFORMANCE_RECORD=1:\n  {}",
        missing.join("\n  ")
    );
}
