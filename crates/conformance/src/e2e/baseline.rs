//! The specs that pass on the real control plane and are known to fail on the embedded server
//! (`e2e/baseline.yaml`): spec name → the divergence that makes it fail.
//!
//! A run passes when what fails on the embedded server is exactly what the baseline lists, of the
//! specs it ran: a new failure fails it, and so does a listed spec that now passes (the fix shrinks the
//! baseline). A listed name that is no spec of the suite, or one the skips keep from running, fails
//! it too, so that the list cannot rot. `E2E_BLESS=1` rewrites it to what a run found, keeping
//! reasons and marking new entries with a placeholder the next run refuses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::e2e::outcome::{Outcome, State};
use crate::{Error, Result};

/// What a bless writes for a failure nobody has explained yet; a run refuses it.
pub const UNEXPLAINED: &str = "TODO: say which divergence of the embedded server makes this spec fail";

/// spec name → reason.
pub type Baseline = BTreeMap<String, String>;

/// One entry of the file: a list of these reads better than a map, whose keys (spec names, often
/// longer than a line) YAML writers turn into `? key` blocks.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    spec: String,
    reason: String,
}

pub fn load(path: &Path) -> Result<Baseline> {
    if !path.exists() {
        return Ok(Baseline::new());
    }
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.into(),
        source,
    })?;
    let entries: Option<Vec<Entry>> = serde_yaml::from_str(&text).map_err(|source| Error::Parse {
        path: path.into(),
        source,
    })?;
    Ok(entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.spec, e.reason))
        .collect())
}

pub fn write(path: &Path, baseline: &Baseline) -> Result<()> {
    let entries: Vec<Entry> = baseline
        .iter()
        .map(|(spec, reason)| Entry {
            spec: spec.clone(),
            reason: reason.clone(),
        })
        .collect();
    let yaml = if entries.is_empty() {
        "[]\n".to_owned()
    } else {
        serde_yaml::to_string(&entries).map_err(|source| Error::Parse {
            path: path.into(),
            source,
        })?
    };
    let text = format!(
        "# Upstream e2e specs that pass on the real control plane and fail on the embedded server, each\n\
         # with the divergence that makes it fail. See docs/conformance.md.\n{yaml}"
    );
    std::fs::write(path, text).map_err(|source| Error::Write {
        path: path.into(),
        source,
    })
}

/// How a run on the embedded server stands against the baseline.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Failed, not listed: name and failure.
    pub new: Vec<(String, String)>,
    /// Listed, passed.
    pub fixed: Vec<String>,
    /// Listed with no reason or the placeholder, and still failing.
    pub unexplained: Vec<String>,
    /// Listed, but no spec of the suite has that name.
    pub unknown: Vec<String>,
    /// Listed, but skipped by the skips file, so never run.
    pub skipped: Vec<String>,
}

impl Verdict {
    pub fn passes(&self) -> bool {
        self.new.is_empty()
            && self.fixed.is_empty()
            && self.unexplained.is_empty()
            && self.unknown.is_empty()
            && self.skipped.is_empty()
    }
}

/// Judges `embedded` (the outcomes of the specs run on the embedded server) against `baseline`.
/// `suite` names every spec of the suite, `skipped` those the skips file keeps from running.
pub fn judge(
    baseline: &Baseline,
    embedded: &[Outcome],
    suite: &BTreeSet<&str>,
    skipped: &BTreeSet<&str>,
) -> Verdict {
    let mut verdict = Verdict::default();
    for outcome in embedded {
        let listed = baseline.get(&outcome.name);
        match (&outcome.state, listed) {
            (State::Failed(state), None) => verdict.new.push((
                outcome.name.clone(),
                outcome.failure.clone().unwrap_or_else(|| state.clone()),
            )),
            (State::Failed(_), Some(reason)) if is_unexplained(reason) => {
                verdict.unexplained.push(outcome.name.clone())
            }
            (State::Passed, Some(_)) => verdict.fixed.push(outcome.name.clone()),
            _ => {}
        }
    }
    for name in baseline.keys() {
        if !suite.contains(name.as_str()) {
            verdict.unknown.push(name.clone());
        } else if skipped.contains(name.as_str()) {
            verdict.skipped.push(name.clone());
        }
    }
    verdict
}

fn is_unexplained(reason: &str) -> bool {
    reason.trim().is_empty() || reason == UNEXPLAINED
}

/// The baseline that accepts exactly the failures in `embedded`: reasons kept for what was listed,
/// the placeholder for the rest. Entries for specs this run did not judge stay as they are.
pub fn blessed(baseline: &Baseline, embedded: &[Outcome]) -> Baseline {
    let mut out = baseline.clone();
    for outcome in embedded {
        match outcome.state {
            State::Failed(_) => {
                out.entry(outcome.name.clone())
                    .or_insert_with(|| UNEXPLAINED.to_owned());
            }
            State::Passed => {
                out.remove(&outcome.name);
            }
            State::NotRun => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn outcome(name: &str, state: State) -> Outcome {
        Outcome {
            name: name.into(),
            failure: matches!(state, State::Failed(_)).then(|| format!("{name} broke")),
            state,
            run_time: Duration::ZERO,
        }
    }

    fn failed() -> State {
        State::Failed("failed".into())
    }

    #[test]
    fn new_fixed_unexplained_unknown_and_skipped_entries_each_fail_a_run() {
        let baseline = Baseline::from(
            [
                (
                    "a",
                    "the embedded server answers 404 where the real one answers 405",
                ),
                ("b", "the watch ends early"),
                ("c", UNEXPLAINED),
                ("gone", "renamed upstream"),
                ("slow", "skipped since"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        let run = [
            outcome("a", failed()),
            outcome("b", State::Passed),
            outcome("c", failed()),
            outcome("d", failed()),
            outcome("e", State::Passed),
        ];
        let suite = BTreeSet::from(["a", "b", "c", "d", "e", "slow"]);
        let verdict = judge(&baseline, &run, &suite, &BTreeSet::from(["slow"]));
        assert_eq!(verdict.new, [("d".to_owned(), "d broke".to_owned())]);
        assert_eq!(verdict.fixed, ["b"]);
        assert_eq!(verdict.unexplained, ["c"]);
        assert_eq!(verdict.unknown, ["gone"]);
        assert_eq!(verdict.skipped, ["slow"]);
        assert!(!verdict.passes());

        let explained = Baseline::from([("a".to_owned(), "the watch ends early".to_owned())]);
        assert!(judge(&explained, &run[..1], &suite, &BTreeSet::new()).passes());
    }

    #[test]
    fn the_file_is_written_as_a_list_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baseline.yaml");
        let baseline = Baseline::from([(
            "[sig-api-machinery] a spec whose name is longer than a line of YAML would like it to be, as they often are".to_owned(),
            "the watch ends early".to_owned(),
        )]);
        write(&path, &baseline).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("- spec: '[sig-api-machinery] a spec"), "{text}");
        assert_eq!(load(&path).unwrap(), baseline);
        write(&path, &Baseline::new()).unwrap();
        assert!(load(&path).unwrap().is_empty());
    }

    #[test]
    fn a_bless_keeps_reasons_drops_what_passes_and_marks_new_failures() {
        let baseline: Baseline =
            serde_yaml::from_str("a: the watch ends early\nb: fixed since\nc: not run this time\n").unwrap();
        let out = blessed(
            &baseline,
            &[
                outcome("a", failed()),
                outcome("b", State::Passed),
                outcome("d", failed()),
            ],
        );
        assert_eq!(out["a"], "the watch ends early");
        assert!(!out.contains_key("b"));
        assert_eq!(out["c"], "not run this time");
        assert_eq!(out["d"], UNEXPLAINED);
    }
}
