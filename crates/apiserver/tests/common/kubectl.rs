//! kubectl against a control plane of either tier: a HOME of its own (no discovery cache shared with
//! another test), a kubeconfig, and a timeout on every request.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use testenv::ControlPlane;

/// The kubectl on PATH (1.33, as the server's minor picks it).
pub const DEFAULT: &str = "kubectl";

/// Every kubectl release on this machine, oldest first.
pub const RELEASES: [&str; 7] = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"];

/// The path of the kubectl of `release`.
pub fn release(release: &str) -> PathBuf {
    PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.{release}"))
}

pub struct Kubectl {
    binary: PathBuf,
    /// The same server for the test's own reads, as a kube-rs client.
    client: kube::Client,
    home: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// A file of `tests/fixtures`.
pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

impl Kubectl {
    pub fn new(plane: &ControlPlane) -> Kubectl {
        Kubectl::with_binary(plane, Path::new(DEFAULT))
    }

    pub fn with_binary(plane: &ControlPlane, binary: &Path) -> Kubectl {
        let home = tempfile::tempdir().expect("temp dir");
        let kubeconfig = home.path().join("kubeconfig");
        plane.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Kubectl {
            binary: binary.to_owned(),
            client: plane.client(),
            home,
            kubeconfig,
        }
    }

    /// Applies the fixture CRD and waits until kubectl can use its resource: established, and listed
    /// in discovery (which kube-apiserver updates a moment after it establishes a CRD).
    pub async fn install_crd(&self) {
        self.ok(&["apply", "-f", &fixture("crd.yaml")]).await;
        self.ok(&[
            "wait",
            "--for=condition=established",
            "crd/postgreswriters.example.com",
            "--timeout=20s",
        ])
        .await;
        super::discovered(&self.client, "example.com", "v1", "postgreswriters").await;
    }

    /// This kubectl with its kubeconfig and HOME, for a run the caller drives (a watch).
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.home.path());
        command
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        let mut command = self.command();
        command.args(args).arg("--request-timeout=20s");
        tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("join")
            .expect("kubectl runs")
    }

    /// Runs kubectl, asserts it succeeded and returns its standard output.
    pub async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{} {args:?} failed:\n{stdout}\n{}",
            self.binary.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Runs kubectl, asserts it failed and returns its standard error.
    pub async fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            !output.status.success(),
            "{} {args:?} unexpectedly succeeded",
            self.binary.display()
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Writes `text` to a file in this kubectl's HOME and returns its path, for `-f`.
    pub fn manifest(&self, name: &str, text: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, text).expect("manifest written");
        path.display().to_string()
    }
}
