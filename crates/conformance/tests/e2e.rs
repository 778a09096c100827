//! The upstream e2e suite's sig-api-machinery specs, first on the real control plane, then (those
//! that passed there) on the embedded server. Every spec that fails on the embedded server must be in
//! `e2e/baseline.yaml` with the divergence, and every one listed there must still fail; every spec
//! selected must pass on the real control plane (`e2e/skips.yaml` lists, with reasons, those that
//! cannot).
//!
//! By default the quick run (`make test`): no `[Slow]` spec, no baselined spec on the embedded
//! server. `E2E_FULL=1` (`make conformance`) runs everything and checks the figures in
//! docs/conformance.md; `E2E_FOCUS=<regex>` runs only the specs whose names match. `E2E_BLESS=1`
//! rewrites the baseline (and, on a full run, the figures). See docs/conformance.md.

use std::path::Path;

use conformance::e2e::suite::Suite;
use conformance::e2e::tier::{Mode, Tier};
use conformance::e2e::{baseline, figures, skips::Skips, summary::Summary};
use conformance::runner::repository;
use testenv::Backend;

/// Ginkgo processes per run. The specs mostly wait (on watches, on the garbage collector, on polls
/// every two seconds), so more processes than cores shorten a run; `E2E_PROCS` overrides it.
const PROCESSES: usize = 4;

testenv::real_control_plane!(the_embedded_server_passes_the_upstream_e2e_specs_the_real_one_passes);

async fn the_embedded_server_passes_the_upstream_e2e_specs_the_real_one_passes(_: Backend) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let skips = Skips::load(&root.join("e2e/skips.yaml")).expect("e2e/skips.yaml reads");
    let baseline_path = root.join("e2e/baseline.yaml");
    let mut accepted = baseline::load(&baseline_path).expect("e2e/baseline.yaml reads");
    let suite = Suite::built().expect("the e2e suite is built");
    let release = suite.release().await.expect("e2e.test names its release");
    let mode = Mode::from_env();
    let processes = match std::env::var("E2E_PROCS") {
        Ok(n) => n.parse().expect("E2E_PROCS is a number of processes"),
        Err(_) => PROCESSES,
    };
    let tier = Tier {
        suite: &suite,
        skips: &skips,
        baseline: &accepted,
        processes,
        dir: Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e"),
    };
    let runs = tier.run(&mode).await.expect("the suite runs on both servers");
    println!(
        "{mode:?} run: {} s on the real control plane, {} s on the embedded server; Ginkgo's logs \
         and reports in {}",
        runs.real_took.as_secs(),
        runs.embedded_took.as_secs(),
        runs.dir.display()
    );

    let bless = std::env::var_os("E2E_BLESS").is_some();
    if bless {
        accepted = baseline::blessed(&accepted, &runs.embedded);
        baseline::write(&baseline_path, &accepted).expect("e2e/baseline.yaml is written");
    }
    let whole = !matches!(mode, Mode::Focused(_));
    let summary = Summary::new(&runs, &skips, &accepted, whole);
    println!("{}", summary.text());

    // The figures are those of a full run; a quick or focused one leaves the docs alone.
    let docs_path = repository().join("docs/conformance.md");
    let docs = std::fs::read_to_string(&docs_path).expect("docs/conformance.md reads");
    let kept = if mode == Mode::Full {
        let sig: Vec<&str> = runs
            .real
            .iter()
            .map(|o| o.name.as_str())
            .filter(|name| name.contains("[sig-api-machinery]"))
            .collect();
        let section = figures::docs_section(&release, &summary.figures, &skips.counts(sig), &accepted);
        figures::with_section(&docs, &section).expect("docs/conformance.md has the e2e markers")
    } else {
        docs.clone()
    };
    if bless && kept != docs {
        std::fs::write(&docs_path, &kept).expect("docs/conformance.md is written");
    }
    assert!(
        summary.passes(),
        "the e2e tier differs from e2e/skips.yaml and e2e/baseline.yaml (see above); \
         E2E_BLESS=1 rewrites the baseline to this run's failures"
    );
    // A blessing run has just written the figures it found.
    if !bless {
        assert_eq!(
            docs, kept,
            "docs/conformance.md is behind the run: run `E2E_BLESS=1 make conformance`"
        );
    }
}
