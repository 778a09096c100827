//! What Ginkgo reports of each spec, read from its JSON report (`ginkgo --json-report`): the spec's
//! full name, whether it passed, and for a failure the message and where in the spec it failed.
//!
//! The JSON report rather than the JUnit one: it is Ginkgo's complete report (the JUnit writer
//! derives from it), and `serde_json` reads it, where JUnit would need an XML parser for one file.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::{Error, Result};

/// A spec as Ginkgo ran (or skipped) it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The full name: the container texts and the spec's own, joined by spaces, as `--focus` and
    /// `--skip` see it (without the suite's description in front).
    pub name: String,
    pub state: State,
    /// For a failure: the message, then the file and line where it happened.
    pub failure: Option<String>,
    pub run_time: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Passed,
    /// Left out by the selection (or pending).
    NotRun,
    /// Selected and did not pass: failed, timed out, panicked, aborted, interrupted, or skipped by
    /// the spec itself (`e2eskipper`: a spec that finds the server lacking something skips itself,
    /// which on the embedded server is a divergence like any failure). Ginkgo's name for the state.
    Failed(String),
}

/// One suite run of the report; a report holds one per suite, the e2e binary has one.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SuiteReport {
    #[serde(default)]
    spec_reports: Vec<SpecReport>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SpecReport {
    #[serde(default)]
    container_hierarchy_texts: Vec<String>,
    leaf_node_type: String,
    #[serde(default)]
    leaf_node_text: String,
    state: String,
    #[serde(default)]
    run_time: u64,
    failure: Option<Failure>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Failure {
    #[serde(default)]
    message: String,
    location: Option<Location>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Location {
    file_name: String,
    line_number: u64,
}

/// Every spec (`It`) of the report at `path`; the suite's set-up and report nodes are left out.
pub fn read(path: &Path) -> Result<Vec<Outcome>> {
    let text = std::fs::read(path).map_err(|source| Error::Read {
        path: path.into(),
        source,
    })?;
    parse(&text).map_err(|source| Error::Report {
        path: path.into(),
        source,
    })
}

fn parse(json: &[u8]) -> serde_json::Result<Vec<Outcome>> {
    let suites: Vec<SuiteReport> = serde_json::from_slice(json)?;
    Ok(suites
        .into_iter()
        .flat_map(|suite| suite.spec_reports)
        .filter(|spec| spec.leaf_node_type == "It")
        .map(|spec| {
            let name = spec
                .container_hierarchy_texts
                .iter()
                .chain(std::iter::once(&spec.leaf_node_text))
                .filter(|text| !text.is_empty())
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" ");
            let state = match spec.state.as_str() {
                "passed" => State::Passed,
                // Ginkgo records why a spec skipped itself as its failure; a spec left out has none.
                "skipped" if spec.failure.is_none() => State::NotRun,
                "pending" => State::NotRun,
                other => State::Failed(other.to_owned()),
            };
            let failure = spec.failure.map(|f| match f.location {
                Some(at) => format!("{} ({}:{})", f.message.trim(), at.file_name, at.line_number),
                None => f.message.trim().to_owned(),
            });
            Outcome {
                name,
                state,
                failure,
                run_time: Duration::from_nanos(spec.run_time),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_named_by_their_containers_and_failures_and_self_skips_say_why() {
        let json = br#"[{"SuitePath": "/x", "SpecReports": [
            {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed", "RunTime": 5},
            {"ContainerHierarchyTexts": ["[sig-api-machinery] Watchers", ""], "LeafNodeType": "It",
             "LeafNodeText": "should observe add events", "State": "passed", "RunTime": 2000000000},
            {"ContainerHierarchyTexts": ["[sig-api-machinery] Servers"], "LeafNodeType": "It",
             "LeafNodeText": "should answer [Conformance]", "State": "timedout", "RunTime": 7,
             "Failure": {"Message": "context deadline exceeded\n",
                         "Location": {"FileName": "apimachinery/x.go", "LineNumber": 42}}},
            {"ContainerHierarchyTexts": ["[sig-apps] Jobs"], "LeafNodeType": "It",
             "LeafNodeText": "run", "State": "skipped"},
            {"ContainerHierarchyTexts": ["[sig-api-machinery] Etcd"], "LeafNodeType": "It",
             "LeafNodeText": "recovers", "State": "skipped",
             "Failure": {"Message": "Only supported for providers [gce gke] (not skeleton)"}}
        ]}]"#;
        let outcomes = parse(json).unwrap();
        assert_eq!(outcomes.len(), 4);
        assert_eq!(
            outcomes[0].name,
            "[sig-api-machinery] Watchers should observe add events"
        );
        assert_eq!(outcomes[0].state, State::Passed);
        assert_eq!(outcomes[0].run_time, Duration::from_secs(2));
        assert_eq!(outcomes[1].state, State::Failed("timedout".into()));
        assert_eq!(
            outcomes[1].failure.as_deref(),
            Some("context deadline exceeded (apimachinery/x.go:42)")
        );
        assert_eq!(outcomes[2].state, State::NotRun);
        assert_eq!(outcomes[3].state, State::Failed("skipped".into()));
        assert_eq!(
            outcomes[3].failure.as_deref(),
            Some("Only supported for providers [gce gke] (not skeleton)")
        );
    }
}
