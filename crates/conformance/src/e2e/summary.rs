//! What a run of the tier found, from the two runs' outcomes: the figures, the specs that did not
//! pass on the real control plane, and the verdict against the baseline.
//!
//! Every spec the tier selects must pass on the real control plane: one that does not belongs in the
//! skips file with the reason, so the set judged on the embedded server is the same from run to run
//! and the figures in the docs hold.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::e2e::baseline::{self, Baseline, Verdict};
use crate::e2e::figures::Figures;
use crate::e2e::outcome::{Outcome, State};
use crate::e2e::skips::Skips;
use crate::e2e::tier::Runs;

/// How a spec of sig-api-machinery shows itself in its name.
const SIG_TAG: &str = "[sig-api-machinery]";

pub struct Summary {
    pub figures: Figures,
    /// Selected, and did not pass on the real control plane: name and failure.
    pub failed_on_real: Vec<(String, String)>,
    /// Passed on the real control plane, expected to pass on the embedded server, never run there.
    pub not_run_on_embedded: Vec<String>,
    /// Baselined specs the quick run leaves out on the embedded server.
    pub baselined_left_out: usize,
    pub verdict: Verdict,
    /// Skip entries that match no spec of the SIG (checked on whole runs only).
    pub unused_skips: Vec<String>,
    pub unexplained_skips: Vec<String>,
}

impl Summary {
    /// `real` and `embedded` are the outcomes of the two runs (those not selected `NotRun`); `whole`
    /// says whether the run selected the whole SIG rather than a focus.
    pub fn new(runs: &Runs, skips: &Skips, baseline: &Baseline, whole: bool) -> Summary {
        let (real, embedded) = (&runs.real, &runs.embedded);
        let in_sig = |o: &&Outcome| o.name.contains(SIG_TAG);
        let sig: Vec<&str> = real.iter().filter(in_sig).map(|o| o.name.as_str()).collect();
        let skipped: BTreeSet<&str> = sig
            .iter()
            .copied()
            .filter(|name| skips.skipping(name).is_some())
            .collect();
        let ran = |o: &&Outcome| o.state != State::NotRun;
        let real_run: Vec<&Outcome> = real.iter().filter(in_sig).filter(ran).collect();
        let embedded_run: Vec<Outcome> = embedded.iter().filter(in_sig).filter(ran).cloned().collect();
        let passed = |run: &[&Outcome]| run.iter().filter(|o| o.state == State::Passed).count();
        let failed_on_real = real_run
            .iter()
            .filter(|o| o.state != State::Passed)
            .map(|o| (o.name.clone(), failure(o)))
            .collect();
        let verdict = baseline::judge(baseline, &embedded_run, &sig.iter().copied().collect(), &skipped);
        let embedded_refs: Vec<&Outcome> = embedded_run.iter().collect();
        Summary {
            figures: Figures {
                in_suite: sig.len(),
                skipped: skipped.len(),
                run_on_real: real_run.len(),
                passed_on_real: passed(&real_run),
                run_on_embedded: embedded_run.len(),
                passed_on_embedded: passed(&embedded_refs),
                baselined: embedded_run
                    .iter()
                    .filter(|o| o.state != State::Passed && baseline.contains_key(&o.name))
                    .count(),
            },
            failed_on_real,
            not_run_on_embedded: runs.not_run_on_embedded.clone(),
            baselined_left_out: runs.baselined_left_out,
            verdict,
            unused_skips: if whole {
                skips.unused(&sig).iter().map(|s| s.pattern.clone()).collect()
            } else {
                Vec::new()
            },
            unexplained_skips: skips.unexplained().iter().map(|s| s.pattern.clone()).collect(),
        }
    }

    pub fn passes(&self) -> bool {
        self.failed_on_real.is_empty()
            && self.not_run_on_embedded.is_empty()
            && self.verdict.passes()
            && self.unused_skips.is_empty()
            && self.unexplained_skips.is_empty()
    }

    /// The figures and every problem, each with what to do about it.
    pub fn text(&self) -> String {
        let f = &self.figures;
        let mut out = format!(
            "sig-api-machinery specs: {} in the suite, {} skipped; real control plane: {} run, {} passed; \
             embedded server: {} run, {} passed, {} failing as the baseline lists\n",
            f.in_suite,
            f.skipped,
            f.run_on_real,
            f.passed_on_real,
            f.run_on_embedded,
            f.passed_on_embedded,
            f.baselined
        );
        if self.baselined_left_out > 0 {
            let _ = writeln!(
                out,
                "{} baselined specs left out on the embedded server (the quick run; E2E_FULL=1 runs them)",
                self.baselined_left_out
            );
        }
        let mut section = |title: &str, lines: Vec<String>| {
            if !lines.is_empty() {
                let _ = writeln!(out, "\n{title}");
                for line in lines {
                    let _ = writeln!(out, "  {line}");
                }
            }
        };
        let with_failure = |list: &[(String, String)]| {
            list.iter()
                .map(|(name, why)| format!("{name}\n      {}", shorten(why)))
                .collect()
        };
        section(
            "FAILED ON THE REAL CONTROL PLANE (the real one is the judge: list the spec in e2e/skips.yaml \
             with the reason it cannot pass here, or fix the harness):",
            with_failure(&self.failed_on_real),
        );
        section(
            "NOT RUN ON THE EMBEDDED SERVER (the run was cut short: see its ginkgo.log):",
            self.not_run_on_embedded.clone(),
        );
        section(
            "NEW FAILURES ON THE EMBEDDED SERVER (passed on the real control plane; fix the server, or list \
             the spec in e2e/baseline.yaml with the divergence):",
            with_failure(&self.verdict.new),
        );
        section(
            "FIXED (passes on the embedded server now: remove it from e2e/baseline.yaml, or run with \
             E2E_BLESS=1):",
            self.verdict.fixed.clone(),
        );
        section(
            "UNEXPLAINED (give the divergence in e2e/baseline.yaml):",
            self.verdict.unexplained.clone(),
        );
        section(
            "NO SUCH SPEC (in e2e/baseline.yaml, but the suite has no spec of that name):",
            self.verdict.unknown.clone(),
        );
        section(
            "SKIPPED BUT BASELINED (e2e/skips.yaml keeps it from running: remove it from e2e/baseline.yaml):",
            self.verdict.skipped.clone(),
        );
        section(
            "UNUSED SKIPS (in e2e/skips.yaml, matching no spec of sig-api-machinery):",
            self.unused_skips.clone(),
        );
        section(
            "SKIPS WITHOUT A REASON (e2e/skips.yaml):",
            self.unexplained_skips.clone(),
        );
        out
    }
}

fn failure(outcome: &Outcome) -> String {
    match (&outcome.state, &outcome.failure) {
        (_, Some(failure)) => failure.clone(),
        (State::Failed(state), None) => state.clone(),
        (state, None) => format!("{state:?}"),
    }
}

/// A failure message cut to a few lines: the full one is in Ginkgo's log.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 600;
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > LIMIT {
        format!("{}…", one_line.chars().take(LIMIT).collect::<String>())
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn outcome(name: &str, state: State) -> Outcome {
        Outcome {
            name: format!("{SIG_TAG} {name}"),
            failure: matches!(state, State::Failed(_)).then(|| format!("{name} broke")),
            state,
            run_time: Duration::ZERO,
        }
    }

    fn skips(yaml: &str) -> Skips {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skips.yaml");
        std::fs::write(&path, yaml).unwrap();
        Skips::load(&path).unwrap()
    }

    #[test]
    fn counts_come_from_both_runs_and_a_spec_failing_on_the_real_one_fails_the_tier() {
        let failed = || State::Failed("failed".into());
        let real = [
            outcome("a", State::Passed),
            outcome("b", State::Passed),
            outcome("c", failed()),
            outcome("webhook", State::NotRun),
            Outcome {
                name: "[sig-apps] other".into(),
                state: State::Passed,
                failure: None,
                run_time: Duration::ZERO,
            },
        ];
        let embedded = [outcome("a", State::Passed), outcome("b", failed())];
        let skips = skips("- pattern: webhook\n  reason: needs a pod serving it\n");
        let baseline = Baseline::from([(format!("{SIG_TAG} b"), "the watch ends early".to_owned())]);
        let runs = Runs {
            real: real.to_vec(),
            real_took: Duration::ZERO,
            embedded: embedded.to_vec(),
            embedded_took: Duration::ZERO,
            not_run_on_embedded: vec![format!("{SIG_TAG} e")],
            baselined_left_out: 0,
            dir: "/nowhere".into(),
        };
        let summary = Summary::new(&runs, &skips, &baseline, true);
        assert_eq!(
            summary.figures,
            Figures {
                in_suite: 4,
                skipped: 1,
                run_on_real: 3,
                passed_on_real: 2,
                run_on_embedded: 2,
                passed_on_embedded: 1,
                baselined: 1,
            }
        );
        assert_eq!(
            summary.failed_on_real,
            [(format!("{SIG_TAG} c"), "c broke".to_owned())]
        );
        assert!(summary.verdict.passes());
        assert!(!summary.passes());
        let text = summary.text();
        assert!(text.contains("FAILED ON THE REAL CONTROL PLANE"), "{text}");
        assert!(text.contains("NOT RUN ON THE EMBEDDED SERVER"), "{text}");
    }
}
