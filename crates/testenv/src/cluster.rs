//! The cluster tier's cluster: a real single node (kubelet with containerd, kube-proxy, cluster DNS)
//! beside the upstream control plane with every default controller, started once per test run by
//! `testenv/cluster/up.sh` (`make test` does it) and shared by the tier's tests, each in namespaces
//! of its own. A test here only connects to it: it neither starts nor stops it.

use std::path::{Path, PathBuf};

use crate::{
    access::AdminAccess,
    error::{Error, Result},
};

/// Where up.sh keeps the cluster's state unless CLUSTER_DIR says otherwise (testenv/cluster/env.sh).
const DEFAULT_DIR: &str = "/var/tmp/operator-cluster";

/// The running cluster, as its administrator sees it.
pub struct SharedCluster {
    dir: PathBuf,
    access: AdminAccess,
}

impl SharedCluster {
    /// The cluster up.sh started; an error saying how to start it when none runs.
    pub fn connect() -> Result<SharedCluster> {
        let dir = dir();
        if !dir.join("run/up").is_file() {
            return Err(Error::NoCluster { dir });
        }
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| Error::Io {
                what: format!("reading {}", path.display()),
                source,
            })
        };
        let ca_pem = read(&dir.join("pki/ca.crt"))?;
        let admin_token = read(&dir.join("pki/admin.token"))?.trim().to_owned();
        let kubeconfig = read(&dir.join("admin.kubeconfig"))?;
        let url = kubeconfig
            .lines()
            .find_map(|line| line.split("server: \"").nth(1)?.split('"').next())
            .ok_or_else(|| Error::Io {
                what: format!("reading the server of {}", dir.join("admin.kubeconfig").display()),
                source: std::io::Error::other("no server: line"),
            })?
            .to_owned();
        let ca_der = first_certificate_der(&ca_pem).ok_or_else(|| Error::Io {
            what: format!("reading {}", dir.join("pki/ca.crt").display()),
            source: std::io::Error::other("no certificate in it"),
        })?;
        Ok(SharedCluster {
            dir,
            access: AdminAccess {
                url,
                ca_pem,
                ca_der,
                token: admin_token,
            },
        })
    }

    pub fn access(&self) -> &AdminAccess {
        &self.access
    }

    /// The cluster's state directory (logs in `logs/`, the node's pod logs in `pod-logs/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The state directory of the cluster up.sh starts.
pub fn dir() -> PathBuf {
    std::env::var_os("CLUSTER_DIR").map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
}

/// The DER bytes of the first certificate in `pem`.
fn first_certificate_der(pem: &str) -> Option<Vec<u8>> {
    use rustls_pki_types::{CertificateDer, pem::PemObject};
    let der = CertificateDer::pem_slice_iter(pem.as_bytes()).next()?.ok()?;
    Some(der.to_vec())
}
