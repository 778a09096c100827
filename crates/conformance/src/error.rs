//! The one error type of the conformance runner: what stops a run, as opposed to a difference between
//! servers, which is a result.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid corpus or baseline file: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("scenario {scenario}, step {step}: {problem}")]
    Scenario {
        scenario: String,
        step: String,
        problem: String,
    },
    #[error("{path} is not a valid Ginkgo JSON report: {source}")]
    Report {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{file}: `{pattern}` is not a valid regular expression: {source}")]
    Pattern {
        file: PathBuf,
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error(
        "{dir} has no e2e.test and ginkgo: build them with `make e2e` (bash testenv/e2e/build.sh), \
         or point E2E_BIN_DIR at where they are"
    )]
    E2eNotBuilt { dir: PathBuf },
    #[error("running the e2e suite: {0}")]
    E2eRun(String),
    #[error("starting a control plane: {0}")]
    ControlPlane(#[from] testenv::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
