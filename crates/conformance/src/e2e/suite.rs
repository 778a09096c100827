//! Runs the upstream e2e binary against one control plane: `ginkgo run` on a few processes, a
//! kubeconfig for the control plane, a selection of specs, and the JSON report read back.
//!
//! `testenv/e2e/build.sh` builds `e2e.test` and `ginkgo` into `target/e2e/bin` (or `E2E_BIN_DIR`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use testenv::ControlPlane;

use crate::e2e::outcome::{self, Outcome};
use crate::e2e::skips::Skips;
use crate::runner::repository;
use crate::{Error, Result};

/// The description our main gives the suite: Ginkgo matches `--focus` and `--skip` against it and
/// the spec's name, joined by a space.
const SUITE_DESCRIPTION: &str = "Kubernetes e2e suite";

/// The kubectl of the suite's release, where the machine has one (Google Cloud SDK's builds); the
/// `kubectl` on PATH otherwise. Some specs run kubectl (explain, create) and read its output.
const KUBECTL_OF_THE_RELEASE: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";

/// The flags every run passes to `e2e.test`, besides the kubeconfig, and why.
const E2E_FLAGS: [&str; 2] = [
    // No cloud: the provider the framework falls back to, named so that it does not warn.
    "--provider=skeleton",
    // The framework waits, in every spec's namespace, for the ServiceAccount `default` and the
    // ConfigMap `kube-root-ca.crt` that kube-controller-manager's service-account and root-CA
    // publisher controllers make. Pods need them; the specs run here start none that run. The
    // embedded server runs neither controller, so with the wait every spec would fail there before
    // its first step, hiding what the specs test.
    "--e2e-verify-service-account=false",
];

/// The built e2e binaries.
pub struct Suite {
    e2e_test: PathBuf,
    ginkgo: PathBuf,
}

/// The Ginkgo label of sig-api-machinery's specs (`framework.SIGDescribe` labels each spec with its
/// SIG, and also writes it into the name as `[sig-api-machinery]`).
pub const SIG_API_MACHINERY: &str = "sig-api-machinery";

/// What the quick run (`make test`, CI) leaves out and the full one (`make conformance`) runs: the
/// specs upstream labels `[Slow]`, which take minutes each (the one of sig-api-machinery waits for
/// etcd's compaction, about eight minutes).
pub const SLOW: &str = r"\[Slow\]";

/// Which specs a run selects: those with `label`, matching `focus` and none of `skip`.
#[derive(Debug, Clone)]
pub struct Selection {
    label: Option<String>,
    focus: Option<String>,
    skip: Vec<String>,
}

impl Selection {
    /// The specs labelled `label` that match `focus` (all of them without one) and that no entry of
    /// `skips` skips.
    pub fn labelled(label: &str, focus: Option<&str>, skips: &Skips) -> Selection {
        Selection {
            label: Some(label.to_owned()),
            focus: focus.map(str::to_owned),
            skip: skips.entries().map(|skip| skip.pattern.clone()).collect(),
        }
    }

    /// This selection without the specs matching `pattern` as well.
    pub fn without(mut self, pattern: &str) -> Selection {
        self.skip.push(pattern.to_owned());
        self
    }

    /// Exactly the specs named.
    pub fn exactly<'a>(names: impl IntoIterator<Item = &'a str>) -> Selection {
        let names: Vec<String> = names.into_iter().map(regex::escape).collect();
        Selection {
            label: None,
            focus: Some(format!(
                "^{} (?:{})$",
                regex::escape(SUITE_DESCRIPTION),
                names.join("|")
            )),
            skip: Vec::new(),
        }
    }
}

/// What one run produced.
pub struct Run {
    /// Every spec of the suite; those the selection left out are `NotRun`.
    pub outcomes: Vec<Outcome>,
    pub took: Duration,
    /// Ginkgo's output: each failure in full, with the spec's steps and log.
    pub log: PathBuf,
}

impl Suite {
    /// The binaries in `E2E_BIN_DIR`, or in `target/e2e/bin`.
    pub fn built() -> Result<Suite> {
        let dir = match std::env::var_os("E2E_BIN_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => repository().join("target/e2e/bin"),
        };
        let suite = Suite {
            e2e_test: dir.join("e2e.test"),
            ginkgo: dir.join("ginkgo"),
        };
        if suite.e2e_test.is_file() && suite.ginkgo.is_file() {
            Ok(suite)
        } else {
            Err(Error::E2eNotBuilt { dir })
        }
    }

    /// The release the suite was built from, as it reports it (`e2e.test --version`).
    pub async fn release(&self) -> Result<String> {
        let output = tokio::process::Command::new(&self.e2e_test)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| Error::E2eRun(format!("{} --version: {e}", self.e2e_test.display())))?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() && version.starts_with('v') {
            Ok(version)
        } else {
            Err(Error::E2eRun(format!(
                "{} --version answered {version:?} ({})",
                self.e2e_test.display(),
                output.status
            )))
        }
    }

    /// Runs `selection` against `plane` on `processes` Ginkgo processes, for at most `limit`;
    /// everything it writes (kubeconfig, report, log, kubectl's cache) goes into `dir`, emptied of a
    /// previous run's files first.
    pub async fn run(
        &self,
        plane: &ControlPlane,
        selection: &Selection,
        processes: usize,
        limit: Duration,
        dir: &Path,
    ) -> Result<Run> {
        let io = |what: &str, source| Error::Write {
            path: dir.join(what),
            source,
        };
        let _ = std::fs::remove_dir_all(dir);
        let home = dir.join("home");
        std::fs::create_dir_all(&home).map_err(|e| io("home", e))?;
        let kubeconfig = dir.join("kubeconfig");
        plane.write_kubeconfig(&kubeconfig)?;
        let report = dir.join("report.json");
        let _ = std::fs::remove_file(&report);
        let log = dir.join("ginkgo.log");
        let output = std::fs::File::create(&log).map_err(|e| io("ginkgo.log", e))?;
        let errors = output.try_clone().map_err(|e| io("ginkgo.log", e))?;

        let kubectl = if Path::new(KUBECTL_OF_THE_RELEASE).is_file() {
            KUBECTL_OF_THE_RELEASE
        } else {
            "kubectl"
        };
        let mut command = tokio::process::Command::new(&self.ginkgo);
        command
            .arg("run")
            .arg(format!("--procs={processes}"))
            .arg("--no-color")
            // Ginkgo's own limit for the whole run; the default (an hour) is not ours to keep.
            .arg(format!("--timeout={}s", limit.as_secs()))
            .arg(format!("--json-report={}", report.display()))
            .arg("--silence-skips");
        if let Some(label) = &selection.label {
            command.arg(format!("--label-filter={label}"));
        }
        if let Some(focus) = &selection.focus {
            command.arg(format!("--focus={focus}"));
        }
        for skip in &selection.skip {
            command.arg(format!("--skip={skip}"));
        }
        command
            .arg(&self.e2e_test)
            .arg("--")
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--kubectl-path={kubectl}"))
            .args(E2E_FLAGS)
            .current_dir(dir)
            // kubectl keeps its discovery cache under HOME: one per run, never another server's.
            .env("HOME", &home)
            .env("KUBECONFIG", &kubeconfig)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .kill_on_drop(true);
        let started = Instant::now();
        let status = command
            .status()
            .await
            .map_err(|e| Error::E2eRun(format!("starting {}: {e}", self.ginkgo.display())))?;
        let took = started.elapsed();
        // Failed specs make ginkgo exit non-zero: only a missing report means the run itself failed.
        if !report.is_file() {
            return Err(Error::E2eRun(format!(
                "ginkgo exited with {status} and wrote no report; its output is in {}",
                log.display()
            )));
        }
        Ok(Run {
            outcomes: outcome::read(&report)?,
            took,
            log,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_selection_matches_the_named_specs_only() {
        let selection = Selection::exactly([
            "[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]",
            "[sig-api-machinery] Servers with support for Table transformation should return a 406 for a backend which does not implement metadata [Conformance]",
        ]);
        let focus = regex::Regex::new(selection.focus.as_deref().unwrap()).unwrap();
        let text = |name: &str| format!("{SUITE_DESCRIPTION} {name}");
        assert!(focus.is_match(&text(
            "[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]"
        )));
        assert!(!focus.is_match(&text(
            "[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps"
        )));
        assert!(!focus.is_match(&text("[sig-api-machinery] Servers")));
        assert!(selection.label.is_none() && selection.skip.is_empty());
    }
}
