//! Where the CAs that verify a PostgreSQL server come from: libpq's `sslrootcert`, a PEM file or the
//! word `system`, the operating system's store. Both are read again for each new connection, so that
//! a renewed bundle is used without a restart.

use std::path::{Path, PathBuf};

use tokio_rustls::rustls::{
    RootCertStore,
    pki_types::{CertificateDer, pem::PemObject},
};

use crate::{Error, Result};

/// libpq's value for the operating system's store.
const SYSTEM: &str = "system";

/// The CAs the server's certificate must be signed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCertificates {
    /// A PEM file of CAs (a mounted Secret or ConfigMap).
    File(PathBuf),
    /// `sslrootcert=system`: the CAs the operating system trusts, as rustls-native-certs finds them:
    /// the PEM bundle `SSL_CERT_FILE` names and the directories of `SSL_CERT_DIR` when either is set,
    /// the distribution's bundle otherwise.
    System,
}

impl From<PathBuf> for RootCertificates {
    /// As libpq: the word `system` is the store, never a file (a file of that name is `./system`).
    fn from(path: PathBuf) -> Self {
        if path.as_os_str() == SYSTEM {
            RootCertificates::System
        } else {
            RootCertificates::File(path)
        }
    }
}

impl RootCertificates {
    /// The CAs as they are now.
    pub fn load(&self) -> Result<RootCertStore> {
        match self {
            RootCertificates::File(path) => file_roots(path),
            RootCertificates::System => system_roots(),
        }
    }

    /// How a user names these CAs, for messages.
    pub fn describe(&self) -> String {
        match self {
            RootCertificates::File(path) => format!("the CA file {}", path.display()),
            RootCertificates::System => "the system's CA store (sslrootcert=system)".into(),
        }
    }
}

fn file_roots(path: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(path)? {
        roots.add(certificate).map_err(|e| {
            Error::Config(format!(
                "the CA file {} holds an unusable certificate: {e}",
                path.display()
            ))
        })?;
    }
    Ok(roots)
}

/// The operating system's CAs. A distribution's bundle may hold a certificate webpki cannot use: it is
/// skipped, as OpenSSL skips what it cannot load. A store with no usable CA at all (an image built
/// `FROM scratch` has none) would refuse every server, so it is an error that says what to set.
fn system_roots() -> Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (usable, _unusable) = roots.add_parsable_certificates(found.certs);
    if usable == 0 {
        let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join("; "))
        };
        return Err(Error::Config(format!(
            "sslrootcert=system, but the system's CA store holds no usable certificate{why}: \
             set SSL_CERT_FILE to a PEM bundle of the CAs to trust"
        )));
    }
    Ok(roots)
}

/// The PEM certificates of the file at `path` (a CA bundle, a client certificate's chain); an error
/// naming the file when it cannot be read or holds none.
pub(super) fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let unreadable = |e: &dyn std::fmt::Display| {
        Error::Config(format!("cannot read the certificates of {}: {e}", path.display()))
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(&e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&e))?;
    if certificates.is_empty() {
        return Err(unreadable(&"no PEM certificate in it"));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_system_is_the_store_and_anything_else_a_file() {
        assert_eq!(
            RootCertificates::from(PathBuf::from("system")),
            RootCertificates::System
        );
        for file in ["./system", "/etc/ssl/system", "ca.crt", "System"] {
            assert_eq!(
                RootCertificates::from(PathBuf::from(file)),
                RootCertificates::File(file.into())
            );
        }
    }

    #[test]
    fn a_file_without_a_certificate_is_refused_by_name() {
        let missing = RootCertificates::File("/nonexistent/ca.crt".into());
        assert!(matches!(missing.load(), Err(Error::Config(m)) if m.contains("/nonexistent/ca.crt")));
    }
}
