//! One run of the tier: the selected specs on the real control plane, then, of those that passed
//! there, the ones expected to pass on the embedded server in one Ginkgo run, and the baselined ones
//! (known to fail there) each in a run of its own with a bound.
//!
//! Why the baselined specs run apart: a spec that fails on the embedded server often waits out its
//! whole timeout first (minutes for the Job of a CronJob no controller schedules), and some wait
//! without any (a ValidatingAdmissionPolicy's type checking that never comes), which would hold a
//! Ginkgo process until the run's own limit and starve the rest. Alone, each is cut at its bound and
//! counts as still failing.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use testenv::{Backend, ControlPlane, real::Controllers};

use crate::Result;
use crate::e2e::baseline::Baseline;
use crate::e2e::outcome::{Outcome, State};
use crate::e2e::skips::Skips;
use crate::e2e::suite::{SIG_API_MACHINERY, SLOW, Selection, Suite};

/// How long a run of many specs may take before Ginkgo stops it: well past what one takes on a
/// loaded 2-core machine (docs/conformance.md has the figures).
const RUN_LIMIT: Duration = Duration::from_secs(25 * 60);

/// The least a baselined spec gets on the embedded server before it is cut and counted as still
/// failing; a spec that took longer on the real control plane gets twice its time there.
const BASELINED_SPEC_LIMIT: Duration = Duration::from_secs(5 * 60);

/// A spec and its number among those run apart (the name of its run's directory).
type Numbered<'a> = (usize, &'a Outcome);

/// Which specs a run covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `make test`: no `[Slow]` spec, and no baselined spec on the embedded server. Catches every
    /// spec that newly fails there, in minutes.
    Quick,
    /// `make conformance` (`E2E_FULL=1`): every spec not skipped; a baselined spec that passes now
    /// fails the run, and the figures in the docs are checked.
    Full,
    /// `E2E_FOCUS=<regex>`: the specs whose names match, slow and baselined ones included.
    Focused(String),
}

impl Mode {
    /// From `E2E_FOCUS` (first) and `E2E_FULL`.
    pub fn from_env() -> Mode {
        match std::env::var("E2E_FOCUS") {
            Ok(focus) if !focus.is_empty() => Mode::Focused(focus),
            _ if std::env::var_os("E2E_FULL").is_some() => Mode::Full,
            _ => Mode::Quick,
        }
    }

    fn focus(&self) -> Option<&str> {
        match self {
            Mode::Focused(focus) => Some(focus),
            _ => None,
        }
    }
}

/// What a run produced.
pub struct Runs {
    /// Every spec of the suite as the real control plane's run left it.
    pub real: Vec<Outcome>,
    pub real_took: Duration,
    /// The specs run on the embedded server.
    pub embedded: Vec<Outcome>,
    pub embedded_took: Duration,
    /// Passed on the real control plane, expected to pass on the embedded one, and not run there
    /// (the run was cut short): each is a failure of the tier.
    pub not_run_on_embedded: Vec<String>,
    /// Baselined specs the quick run leaves out on the embedded server.
    pub baselined_left_out: usize,
    /// Where each run's files are.
    pub dir: PathBuf,
}

pub struct Tier<'a> {
    pub suite: &'a Suite,
    pub skips: &'a Skips,
    pub baseline: &'a Baseline,
    /// Ginkgo processes for a run of many specs, and baselined specs run at once.
    pub processes: usize,
    pub dir: PathBuf,
}

impl Tier<'_> {
    pub async fn run(&self, mode: &Mode) -> Result<Runs> {
        let real_plane = ControlPlane::real(Controllers::All).await?;
        let mut selection = Selection::labelled(SIG_API_MACHINERY, mode.focus(), self.skips);
        if *mode == Mode::Quick {
            selection = selection.without(SLOW);
        }
        let real = self
            .suite
            .run(
                &real_plane,
                &selection,
                self.processes,
                RUN_LIMIT,
                &self.dir.join("real"),
            )
            .await?;
        drop(real_plane);

        let passed: Vec<&Outcome> = real
            .outcomes
            .iter()
            .filter(|o| o.state == State::Passed)
            .collect();
        let (baselined, expected): (Vec<&Outcome>, Vec<&Outcome>) =
            passed.iter().partition(|o| self.baseline.contains_key(&o.name));
        let baselined_left_out = if *mode == Mode::Quick { baselined.len() } else { 0 };

        let started = Instant::now();
        let embedded_plane = ControlPlane::start(Backend::Embedded).await?;
        let mut embedded = Vec::new();
        let mut not_run_on_embedded = Vec::new();
        if !expected.is_empty() {
            let run = self
                .suite
                .run(
                    &embedded_plane,
                    &Selection::exactly(expected.iter().map(|o| o.name.as_str())),
                    self.processes,
                    RUN_LIMIT,
                    &self.dir.join("embedded"),
                )
                .await?;
            let names: BTreeSet<&str> = expected.iter().map(|o| o.name.as_str()).collect();
            for outcome in run.outcomes {
                if !names.contains(outcome.name.as_str()) {
                    continue;
                }
                match outcome.state {
                    State::NotRun => not_run_on_embedded.push(outcome.name),
                    _ => embedded.push(outcome),
                }
            }
        }
        if baselined_left_out == 0 {
            embedded.extend(self.run_baselined(&embedded_plane, &baselined).await?);
        }
        drop(embedded_plane);
        Ok(Runs {
            real: real.outcomes,
            real_took: real.took,
            embedded,
            embedded_took: started.elapsed(),
            not_run_on_embedded,
            baselined_left_out,
            dir: self.dir.clone(),
        })
    }

    /// Each baselined spec alone on the embedded server, `processes` at a time, `[Serial]` ones after
    /// the others and one by one.
    async fn run_baselined(&self, plane: &ControlPlane, specs: &[&Outcome]) -> Result<Vec<Outcome>> {
        let (serial, parallel): (Vec<Numbered>, Vec<Numbered>) = specs
            .iter()
            .copied()
            .enumerate()
            .partition(|(_, o)| o.name.contains("[Serial]"));
        let mut outcomes = Vec::new();
        let mut runs = futures::stream::iter(parallel)
            .map(|(i, spec)| self.run_baselined_spec(plane, i, spec))
            .buffer_unordered(self.processes);
        while let Some(outcome) = runs.next().await {
            outcomes.push(outcome?);
        }
        for (i, spec) in serial {
            outcomes.push(self.run_baselined_spec(plane, i, spec).await?);
        }
        Ok(outcomes)
    }

    /// The baselined `spec` alone, cut at its bound; its files in `embedded-baselined/<i>`.
    async fn run_baselined_spec(&self, plane: &ControlPlane, i: usize, spec: &Outcome) -> Result<Outcome> {
        let limit = BASELINED_SPEC_LIMIT.max(spec.run_time * 2);
        let dir = self.dir.join("embedded-baselined").join(i.to_string());
        let run = self
            .suite
            .run(plane, &Selection::exactly([spec.name.as_str()]), 1, limit, &dir)
            .await?;
        // Cut at its bound, a spec is reported interrupted, or not at all: either way still failing.
        Ok(match run.outcomes.into_iter().find(|o| o.name == spec.name) {
            Some(outcome) if outcome.state != State::NotRun => outcome,
            _ => Outcome {
                name: spec.name.clone(),
                state: State::Failed("timedout".into()),
                failure: Some(format!("cut after {} s", limit.as_secs())),
                run_time: limit,
            },
        })
    }
}
