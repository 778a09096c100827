//! The corpus: scenarios of requests, watches and kubectl runs, read from `corpus/*.yaml`.
//!
//! A file names its area (what part of the API it covers) and its scenarios; each scenario runs in a
//! namespace of its own, `{ns}` in its text. A step is one of:
//!
//! ```yaml
//! - request: POST /api/v1/namespaces/{ns}/configmaps   # method and path (with query)
//!   body: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}   # sent as JSON; or
//!   raw: '{"data": {"x": true}}'                          # sent exactly as written
//!   headers: {Content-Type: application/merge-patch+json}
//!   capture: {rv: /metadata/resourceVersion}              # later text may say {rv}
//!   until: {status: 404}                                   # poll until so (or /pointer: value)
//! - request: GET /api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}
//!   watch: {events: 2}                                     # the first two events are the answer
//! - kubectl: [get, configmaps, -n, "{ns}"]                 # the kubectl on PATH; or
//!   version: "1.27"                                        # /usr/lib/google-cloud-sdk/bin/kubectl.1.27
//!   stdin: |                                               # for `apply -f -`
//!     ...
//!   compare: status-and-headers                            # for bodies no mask can tame
//! - python: |                                              # a script for the official Python
//!     from kubernetes import client, config                # client (the repository's .venv), with
//!     ...                                                  # KUBECONFIG set and NS the namespace;
//!                                                          # what it prints is the answer (JSON
//!                                                          # lines are compared as JSON)
//! - kube-rs: discovery                                     # what kube-rs's Discovery finds
//! ```
//!
//! Captured values are per server: each server's own resourceVersion is substituted in its requests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// One corpus file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusFile {
    /// The part of the API the file covers; divergences are counted by it.
    pub area: String,
    pub scenarios: Vec<Scenario>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique in the corpus; part of every divergence's key.
    pub name: String,
    pub steps: Vec<Step>,
    /// Filled in from the file.
    #[serde(skip)]
    pub area: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A name for the step in divergence keys; its position (from 1) otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `METHOD /path?query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<Watch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubectl: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "kube-rs")]
    pub kube_rs: Option<KubeRsCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
    /// What of the answer is compared: everything (the default), or `status-and-headers` for bodies
    /// that cannot be masked (protobuf).
    #[serde(default, skip_serializing_if = "Compared::is_everything")]
    pub compare: Compared,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compared {
    #[default]
    Everything,
    StatusAndHeaders,
}

impl Compared {
    fn is_everything(&self) -> bool {
        *self == Compared::Everything
    }
}

/// What a `kube-rs` step asks of kube-rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KubeRsCall {
    /// `kube::Discovery::run`: every group, version and resource it finds, with scope, verbs and
    /// subresources, as a controller built on kube-rs sees the server.
    Discovery,
}

/// Read a watch until this many events arrived (or the deadline passed).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Watch {
    pub events: usize,
}

/// Repeat a request until its answer has this status or this value at a JSON pointer: for what
/// controllers do in the background (garbage collection, namespace deletion).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Until {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// What a step does, checked once when the corpus is read.
pub enum Action<'a> {
    Request { method: &'a str, target: &'a str },
    Kubectl { args: &'a [String] },
    Python { script: &'a str },
    KubeRs { call: KubeRsCall },
}

impl Step {
    /// The step's one action; `None` when it names none or more than one.
    pub fn action(&self) -> Option<Action<'_>> {
        let named = [
            self.request.is_some(),
            self.kubectl.is_some(),
            self.python.is_some(),
            self.kube_rs.is_some(),
        ];
        if named.iter().filter(|n| **n).count() != 1 {
            return None;
        }
        if let Some(request) = &self.request {
            let (method, target) = request.split_once(' ')?;
            return Some(Action::Request {
                method,
                target: target.trim(),
            });
        }
        if let Some(args) = &self.kubectl {
            return Some(Action::Kubectl { args });
        }
        if let Some(script) = &self.python {
            return Some(Action::Python { script });
        }
        self.kube_rs.map(|call| Action::KubeRs { call })
    }
}

impl Scenario {
    /// The namespace the scenario runs in: its name with dots as dashes, the same on every run, so
    /// that divergence keys holding it (a Table row of the namespace) stay put as the corpus grows.
    pub fn namespace(&self) -> String {
        self.name.replace('.', "-")
    }

    /// The key of step `index` (from 0) in divergence keys.
    pub fn step_key(&self, index: usize) -> String {
        match &self.steps[index].id {
            Some(id) => format!("{}/{id}", self.name),
            None => format!("{}/{}", self.name, index + 1),
        }
    }
}

/// Every scenario of every `*.yaml` in `dir`, files in name order, names checked to be unique and each
/// step to be exactly one action.
pub fn load(dir: &Path) -> Result<Vec<Scenario>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::Read {
            path: dir.into(),
            source,
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    paths.sort();
    let mut scenarios = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        let file: CorpusFile = serde_yaml::from_str(&text).map_err(|source| Error::Parse {
            path: path.clone(),
            source,
        })?;
        for mut scenario in file.scenarios {
            scenario.area = file.area.clone();
            let invalid = |step: String, problem: &str| Error::Scenario {
                scenario: scenario.name.clone(),
                step,
                problem: problem.into(),
            };
            if !names.insert(scenario.name.clone()) {
                return Err(invalid("-".into(), "another scenario has this name"));
            }
            let namespace = scenario.namespace();
            let label = namespace.len() <= 63
                && namespace
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !namespace.starts_with('-')
                && !namespace.ends_with('-');
            if !label {
                return Err(invalid(
                    "-".into(),
                    "a scenario's name, dots as dashes, names its namespace: lower-case letters, \
                     digits and dashes, at most 63",
                ));
            }
            for (index, step) in scenario.steps.iter().enumerate() {
                if step.action().is_none() {
                    return Err(invalid(
                        scenario.step_key(index),
                        "a step is exactly one of `request: METHOD /path`, `kubectl: [args]`, \
                         `python: script` or `kube-rs: call`",
                    ));
                }
                if step.body.is_some() && step.raw.is_some() {
                    return Err(invalid(
                        scenario.step_key(index),
                        "`body` and `raw` exclude each other",
                    ));
                }
            }
            scenarios.push(scenario);
        }
    }
    Ok(scenarios)
}

/// `text` with every `{name}` of `vars` replaced by its value.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}
