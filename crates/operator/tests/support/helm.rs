//! Helm as the chart's tests run it: built from its Go module (`testenv/helm/build.sh`, skipped when
//! up to date), never a downloaded binary, with its caches and configuration in a directory of the
//! test's own; and the chart as `make helm-chart` writes it, from the installer it writes first.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

/// The release the tests install, and the namespace `make deploy` uses.
pub const RELEASE: &str = "operator";
pub const NAMESPACE: &str = "operator-system";

/// A Helm binary and a home of its own.
pub struct Helm {
    binary: PathBuf,
    home: tempfile::TempDir,
}

/// What a Helm command printed, and whether it succeeded.
pub struct Outcome {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Helm {
    /// Builds Helm if it is not built from the pinned module yet (minutes, the first time).
    pub fn build() -> Helm {
        let script = super::repository().join("testenv/helm/build.sh");
        let output = Command::new("bash")
            .arg(&script)
            .output()
            .expect("bash runs testenv/helm/build.sh");
        assert!(
            output.status.success(),
            "testenv/helm/build.sh (Helm from its Go module; it needs go): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        Helm {
            binary: Path::new(&dir).join("helm"),
            home: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// `helm args`, against the cluster in `kubeconfig` if one is given.
    pub fn run(&self, kubeconfig: Option<&Path>, args: &[&str]) -> Outcome {
        let home = self.home.path();
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .current_dir(super::repository())
            .env("HOME", home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env_remove("KUBECONFIG");
        if let Some(kubeconfig) = kubeconfig {
            command.env("KUBECONFIG", kubeconfig);
        }
        let output = command.output().expect("helm runs");
        Outcome {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `helm args`, failing the test with Helm's output if it fails; what it printed.
    pub fn ok(&self, kubeconfig: Option<&Path>, args: &[&str]) -> String {
        let outcome = self.run(kubeconfig, args);
        assert!(
            outcome.success,
            "helm {args:?}: {}{}",
            outcome.stdout, outcome.stderr
        );
        outcome.stdout
    }
}

/// `make helm-chart IMG=<image> DIST=<dist>`: the installer in `dist/install.yaml`, then the chart
/// generated from it in `dist/chart`, which this returns.
pub fn make_chart(dist: &Path, image: &str) -> PathBuf {
    std::fs::create_dir_all(dist).expect("the dist directory");
    // kustomize needs no cluster: the kubeconfig named here is never read.
    super::make(
        &dist.join("kubeconfig"),
        &[
            "helm-chart",
            &format!("IMG={image}"),
            &format!("DIST={}", dist.display()),
        ],
    );
    dist.join("chart")
}

/// The objects of a multi-document YAML stream, as JSON.
pub fn objects(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|document| {
            let value: serde_yaml::Value = serde::Deserialize::deserialize(document).expect("YAML");
            serde_json::to_value(value).expect("JSON")
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// `(kind, name)` of an object.
pub fn kind_name(object: &Value) -> (String, String) {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (text("/kind"), text("/metadata/name"))
}
