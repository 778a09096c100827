//! The upstream control plane: etcd, kube-apiserver and kube-controller-manager, each a child process
//! on free loopback ports, all files in one temporary directory.
//!
//! kube-apiserver runs as a cluster would run it for an operator: TLS with a CA of the harness's own,
//! bearer tokens from a token file (an administrator in `system:masters`), client certificates signed
//! by the same CA (the users of [`crate::ControlPlane::add_user`]), RBAC authorization and the
//! OwnerReferencesPermissionEnforcement admission plugin,
//! service-account tokens signed with a key made here (so TokenRequest works). The controller manager
//! runs the garbage collector, the namespace controller and ClusterRole aggregation, which owner
//! references, namespace deletion and the aggregated roles depend on; nothing else (no Deployment controller: without a kubelet it would only make
//! ReplicaSets whose pods never start, and it would overwrite the Deployment status a test writes).
//!
//! The binaries come from `target/control-plane/bin` (`make control-plane` builds them), or from the
//! directory in `CONTROL_PLANE_BIN_DIR`.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use rand::Rng;
use tempfile::TempDir;

use crate::{
    access::{AdminAccess, kube_config_for, write_private},
    error::{Error, Result},
    process::Process,
};

/// How long kube-apiserver may take from exec to a ready `default` namespace. It needs a few seconds
/// on an idle machine; the margin is for a 2-core machine running two suites at once.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// Start-up is tried again on fresh ports this many times: a port picked as free can be taken by
/// another test process before the program binds it.
const ATTEMPTS: usize = 3;

/// A running control plane. Dropping it kills its processes, then removes its directory.
pub struct RealControlPlane {
    // Field order is drop order: processes first (controller manager, API server, etcd), then files.
    processes: Vec<Process>,
    access: AdminAccess,
    dir: TempDir,
}

/// Which of kube-controller-manager's controllers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Controllers {
    /// The garbage collector, the namespace controller and ClusterRole aggregation: what owner
    /// references, namespace deletion and the aggregated roles (`admin`, `edit`, `view`) need, and
    /// nothing that would overwrite the workload status a test writes.
    #[default]
    CollectorAndNamespaces,
    /// Those and the Deployment and ReplicaSet controllers: Deployments get ReplicaSets and Pods (which
    /// never start without a node), and nothing else acts (no ServiceAccounts or `kube-root-ca.crt`
    /// ConfigMaps appear in new namespaces).
    Workloads,
    /// Every controller kube-controller-manager runs by default (`--controllers=*`): Deployments get
    /// ReplicaSets and ReplicaSets Pods (which never start without a node), ServiceAccounts and their
    /// tokens are made, and so on, as in a cluster.
    All,
}

impl RealControlPlane {
    pub async fn start() -> Result<RealControlPlane> {
        RealControlPlane::start_with(Controllers::default()).await
    }

    /// A control plane whose controller manager runs `controllers`.
    pub async fn start_with(controllers: Controllers) -> Result<RealControlPlane> {
        let bin_dir = bin_dir();
        let mut attempt = 1;
        loop {
            match RealControlPlane::start_once(&bin_dir, controllers).await {
                Err(Error::Exited { ref log, .. })
                    if attempt < ATTEMPTS && log.contains("address already in use") =>
                {
                    attempt += 1
                }
                result => return result,
            }
        }
    }

    async fn start_once(bin_dir: &Path, controllers: Controllers) -> Result<RealControlPlane> {
        let dir = tempfile::Builder::new()
            .prefix("control-plane-")
            .tempdir()
            .map_err(|source| io("creating the control plane's directory", source))?;
        let files = Files::write(dir.path())?;
        let [etcd_port, etcd_peer_port, api_port] = free_ports()?;
        let logs = dir.path().to_owned();
        let log = |program: &str| logs.join(format!("{program}.log"));

        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer_port}");
        let etcd = Process::spawn(
            "etcd",
            bin_dir,
            &[
                "--name=default".to_owned(),
                format!("--data-dir={}", dir.path().join("etcd").display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=default={peer_url}"),
                // Throwaway data: durability would only cost time, as envtest also decides.
                "--unsafe-no-fsync=true".to_owned(),
                "--log-level=warn".to_owned(),
            ],
            log("etcd"),
        )?;

        let url = format!("https://127.0.0.1:{api_port}");
        let sa_key = files.service_account_key.display().to_string();
        let sa_public_key = files.service_account_public_key.display().to_string();
        let serving = files.serving.display().to_string();
        let apiserver = Process::spawn(
            "kube-apiserver",
            bin_dir,
            &[
                format!("--etcd-servers={etcd_url}"),
                "--bind-address=127.0.0.1".to_owned(),
                "--advertise-address=127.0.0.1".to_owned(),
                format!("--secure-port={api_port}"),
                format!("--cert-dir={}", dir.path().join("certs").display()),
                // One PEM file holds the certificate and its key; Go's TLS reads each from it.
                format!("--tls-cert-file={serving}"),
                format!("--tls-private-key-file={serving}"),
                format!("--token-auth-file={}", files.tokens.display()),
                // Client certificates signed by the harness's CA authenticate as their subject (CN
                // the user, O the groups); the file's key block is passed over.
                format!("--client-ca-file={}", files.ca.display()),
                "--authorization-mode=RBAC".to_owned(),
                "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
                format!("--service-account-key-file={sa_public_key}"),
                format!("--service-account-signing-key-file={sa_key}"),
                "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
                "--allow-privileged=true".to_owned(),
                // No token controller runs to make the default ServiceAccounts this plugin insists on.
                "--disable-admission-plugins=ServiceAccount".to_owned(),
                // As hardened clusters run it: an owner reference that blocks the owner's deletion
                // needs the right to update the owner's finalizers, which config/rbac grants.
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".to_owned(),
            ],
            log("kube-apiserver"),
        )?;
        let mut plane = RealControlPlane {
            processes: vec![etcd, apiserver],
            access: AdminAccess {
                url,
                ca_pem: files.ca_pem,
                ca_der: files.ca_der,
                token: files.admin_token,
            },
            dir,
        };
        plane.wait_until_ready().await?;

        let kubeconfig = plane.dir.path().join("controller-manager.kubeconfig");
        write_private(&kubeconfig, &plane.kubeconfig_for_controller_manager())?;
        let mut flags = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".to_owned(),
            // Its own HTTPS endpoint would only add a port to collide on; nothing here reads it.
            "--secure-port=0".to_owned(),
        ];
        match controllers {
            Controllers::CollectorAndNamespaces => {
                flags.push("--controllers=garbage-collector-controller,namespace-controller,clusterrole-aggregation-controller".to_owned())
            }
            Controllers::Workloads => flags.push(
                "--controllers=garbage-collector-controller,namespace-controller,clusterrole-aggregation-controller,deployment-controller,replicaset-controller"
                    .to_owned(),
            ),
            Controllers::All => flags.extend([
                "--controllers=*".to_owned(),
                // The token controller signs ServiceAccount tokens with the key kube-apiserver
                // verifies, and puts this CA in every namespace's kube-root-ca.crt.
                format!("--service-account-private-key-file={sa_key}"),
                format!("--root-ca-file={}", plane.dir.path().join("ca.crt").display()),
                // The CSR signing controller signs approved CertificateSigningRequests with the
                // cluster's CA, and without one it does not start. The CA's file holds its
                // certificate and its key, and each reader takes the block it needs.
                format!("--cluster-signing-cert-file={}", files.ca.display()),
                format!("--cluster-signing-key-file={}", files.ca.display()),
            ]),
        }
        if controllers == Controllers::All {
            write_private(&plane.dir.path().join("ca.crt"), &plane.access.ca_pem)?;
        }
        let controller_manager = Process::spawn(
            "kube-controller-manager",
            bin_dir,
            &flags,
            log("kube-controller-manager"),
        )?;
        plane.processes.push(controller_manager);
        plane.check_running()?;
        // Dropped in reverse order of start: the controller manager before the server it talks to.
        plane.processes.reverse();
        Ok(plane)
    }

    pub fn access(&self) -> &AdminAccess {
        &self.access
    }

    /// The process ids of etcd, kube-apiserver and kube-controller-manager.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(Process::pid).collect()
    }

    /// The CA's certificate and key (one PEM file), which kube-apiserver trusts for client
    /// certificates.
    pub(crate) fn client_ca_file(&self) -> PathBuf {
        self.dir.path().join("certs").join(apiserver::http::tls::CA_FILE)
    }

    /// The directory holding the control plane's files and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Polls `/readyz`, then the `default` namespace (made by a post-start hook just after), until both
    /// answer; fails at once when a process exits, with the end of its log.
    async fn wait_until_ready(&mut self) -> Result<()> {
        let mut config = kube_config_for(
            &self.access.url,
            Some(self.access.ca_der.clone()),
            Some(&self.access.token),
        );
        config.read_timeout = Some(Duration::from_secs(5));
        // A configuration with a parsed URL and a valid DER root certificate always yields a client.
        let client = kube::Client::try_from(config).expect("client for kube-apiserver");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let started = Instant::now();
        let mut waiting_for = "/readyz";
        loop {
            self.check_running()?;
            let request = http::Request::get("/readyz").body(Vec::new());
            let ready = match request {
                Ok(request) => client.request_text(request).await.is_ok(),
                Err(_) => false,
            };
            if ready {
                waiting_for = "namespace default";
                if matches!(namespaces.get_opt("default").await, Ok(Some(_))) {
                    return Ok(());
                }
            }
            if started.elapsed() > READY_WITHIN {
                return Err(Error::NotReady {
                    seconds: READY_WITHIN.as_secs(),
                    waiting_for: waiting_for.to_owned(),
                    log: self.log_of("kube-apiserver"),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An error naming the first process that has exited, if any.
    fn check_running(&mut self) -> Result<()> {
        for process in &mut self.processes {
            if let Some(status) = process.exited() {
                return Err(Error::Exited {
                    program: process.program,
                    status,
                    log: process.log_tail(40),
                });
            }
        }
        Ok(())
    }

    fn log_of(&self, program: &str) -> String {
        self.processes
            .iter()
            .find(|p| p.program == program)
            .map(|p| p.log_tail(40))
            .unwrap_or_default()
    }

    fn kubeconfig_for_controller_manager(&self) -> String {
        apiserver::kubeconfig_yaml(
            &self.access.url,
            Some(&self.access.ca_pem),
            Some(&self.access.token),
        )
    }
}

impl Drop for RealControlPlane {
    fn drop(&mut self) {
        // A failing test gets the control plane's side of the story.
        if std::thread::panicking() {
            for process in &self.processes {
                eprintln!(
                    "--- the end of {}'s log ---\n{}",
                    process.program,
                    process.log_tail(30)
                );
            }
        }
    }
}

/// The files kube-apiserver reads at start-up.
struct Files {
    serving: PathBuf,
    /// The CA's certificate and key, one PEM file.
    ca: PathBuf,
    ca_pem: String,
    ca_der: Vec<u8>,
    service_account_key: PathBuf,
    service_account_public_key: PathBuf,
    tokens: PathBuf,
    admin_token: String,
}

impl Files {
    fn write(dir: &Path) -> Result<Files> {
        // The embedded server's CA and loopback serving certificate, kept in a directory: the same
        // identity kube-apiserver presents here.
        let certs = dir.join("certs");
        std::fs::create_dir_all(&certs).map_err(|e| io("creating the certificate directory", e))?;
        let identity = apiserver::http::tls::Identity::kept_in(&certs)
            .map_err(|e| io("making the serving certificate", e))?;
        let key = rcgen::KeyPair::generate().map_err(|e| {
            io(
                "making the service-account signing key",
                std::io::Error::other(e.to_string()),
            )
        })?;
        let service_account_key = dir.join("service-account.key");
        write_private(&service_account_key, &key.serialize_pem())?;
        // Verification reads public keys only from a PUBLIC KEY block, not from a PKCS#8 private key.
        let service_account_public_key = dir.join("service-account.pub");
        write_private(&service_account_public_key, &key.public_key_pem())?;
        let admin_token = random_token();
        let tokens = dir.join("tokens.csv");
        write_private(
            &tokens,
            &format!("{admin_token},admin,admin,\"system:masters\"\n"),
        )?;
        Ok(Files {
            serving: certs.join(apiserver::http::tls::SERVING_FILE),
            ca: certs.join(apiserver::http::tls::CA_FILE),
            ca_pem: identity.ca_pem().to_owned(),
            ca_der: identity.ca_der(),
            service_account_key,
            service_account_public_key,
            tokens,
            admin_token,
        })
    }
}

/// Where the control plane's binaries are.
fn bin_dir() -> PathBuf {
    match std::env::var_os("CONTROL_PLANE_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/control-plane/bin"),
    }
}

/// Loopback ports free at the time of asking, distinct from each other.
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| io("finding a free port", e))?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| io("finding a free port", e))?
            .port();
    }
    Ok(ports)
}

fn random_token() -> String {
    let mut rng = rand::rng();
    (0..32)
        .map(|_| format!("{:x}", rng.random_range(0..16u8)))
        .collect()
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_owned(),
        source,
    }
}
