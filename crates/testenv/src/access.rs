//! How a test reaches an upstream control plane as its administrator, and the files that access is
//! written to: what every backend module shares, apart from the crate's root that picks among them.

use std::path::Path;

use crate::error::{Error, Result};

/// How the administrator reaches an upstream kube-apiserver (the real control plane's or the
/// cluster's): its URL, the CA of its serving certificate, and a token of `admin` in `system:masters`.
#[derive(Clone, Debug)]
pub struct AdminAccess {
    pub url: String,
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub token: String,
}

/// A kube-rs configuration for the server at `url`, trusting the CA `ca_der`, sending `token`.
pub(crate) fn kube_config_for(url: &str, ca_der: Option<Vec<u8>>, token: Option<&str>) -> kube::Config {
    // A URL built from a bound loopback socket address always parses.
    let mut config = kube::Config::new(url.parse().expect("control plane URL parses"));
    config.auth_info.token = token.map(|t| t.to_owned().into());
    config.root_cert = ca_der.map(|der| vec![der]);
    config
}

/// Writes `text` to `path`, readable and writable by the owner only (kubeconfigs and keys).
pub(crate) fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let write = || {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        std::io::Write::write_all(&mut file, text.as_bytes())
    };
    write().map_err(|source| Error::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}
