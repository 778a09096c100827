//! What a server presents at each TLS handshake, so that a renewed certificate is served without a
//! restart: [`CertificateSlot`] holds one in memory and is swapped by whoever renews it;
//! [`CertificateFiles`] reads `tls.crt` and `tls.key` from a directory (as controller-runtime reads
//! them, and as cert-manager's Secret mounts them) and reads them again when they change.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
    time::SystemTime,
};

use tokio_rustls::rustls::{
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};

use crate::{Error, Result, provider};

/// In a certificate directory: the certificate chain, PEM, the server's own first.
pub const CERT_FILE: &str = "tls.crt";
/// In a certificate directory: the certificate's private key, PEM.
pub const KEY_FILE: &str = "tls.key";

/// `chain` (the server's certificate first) and its key, ready to serve. Fails when the key is not
/// the certificate's.
pub fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>> {
    if chain.is_empty() {
        return Err(Error::Certificate("no certificate in the chain".into()));
    }
    let certified = CertifiedKey::from_der(chain, key, &provider())
        .map_err(|e| Error::Certificate(format!("the key does not go with the certificate: {e}")))?;
    Ok(Arc::new(certified))
}

/// A certificate chain and its key in PEM, ready to serve.
pub fn certified_key_from_pem(chain_pem: &str, key_pem: &str) -> Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Certificate(format!("certificate chain: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| Error::Certificate(format!("key: {e}")))?;
    certified_key(chain, key)
}

/// The certificate served now, swapped in place when a renewed one arrives: every later handshake
/// gets the new one, connections already open keep theirs.
#[derive(Debug)]
pub struct CertificateSlot(RwLock<Arc<CertifiedKey>>);

impl CertificateSlot {
    /// A slot that serves `key` until it is replaced.
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        Self(RwLock::new(key))
    }

    /// Serves `key` from the next handshake on.
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = key;
    }
}

impl ResolvesServerCert for CertificateSlot {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

/// The certificate in a directory, read again whenever either file's modification time changes.
#[derive(Debug)]
pub struct CertificateFiles {
    dir: PathBuf,
    loaded: Mutex<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

impl CertificateFiles {
    /// The certificate in `dir`, read now: a start-up with an unusable one fails at once.
    pub fn new(dir: &Path) -> Result<Self> {
        let stamp = stamp(dir);
        let key = load(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
            loaded: Mutex::new((stamp, key)),
        })
    }

    /// Whether `dir` holds both files.
    pub fn present_in(dir: &Path) -> bool {
        dir.join(CERT_FILE).is_file() && dir.join(KEY_FILE).is_file()
    }
}

/// The later of the two files' modification times.
fn stamp(dir: &Path) -> Option<SystemTime> {
    let modified = |file| std::fs::metadata(dir.join(file)).and_then(|m| m.modified()).ok();
    modified(CERT_FILE).max(modified(KEY_FILE))
}

fn load(dir: &Path) -> Result<Arc<CertifiedKey>> {
    let unreadable =
        |file: &str, why: String| Error::Certificate(format!("{}: {why}", dir.join(file).display()));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join(CERT_FILE))
        .map_err(|e| unreadable(CERT_FILE, e.to_string()))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| unreadable(CERT_FILE, e.to_string()))?;
    if chain.is_empty() {
        return Err(unreadable(CERT_FILE, "no certificate in it".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(dir.join(KEY_FILE)).map_err(|e| unreadable(KEY_FILE, e.to_string()))?;
    certified_key(chain, key).map_err(|e| unreadable(KEY_FILE, format!("does not go with {CERT_FILE}: {e}")))
}

impl CertificateFiles {
    /// The pair to present now: the files read again if either changed since they were last read.
    fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamp(&self.dir);
        if now != loaded.0 {
            // A renewal half written (the key before the certificate) fails to load: keep serving the
            // previous pair and try again at the next handshake.
            match load(&self.dir) {
                Ok(key) => *loaded = (now, key),
                Err(error) => tracing::warn!(%error, "keeping the previous certificate"),
            }
        }
        loaded.1.clone()
    }
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::ThrowawayCa;

    /// The certificate the next handshake presents.
    fn served(files: &CertificateFiles) -> Vec<u8> {
        files.current().cert[0].to_vec()
    }

    #[test]
    fn files_are_read_again_when_they_change_and_a_broken_renewal_keeps_the_old_pair() {
        let dir = tempfile::tempdir().unwrap();
        let first = ThrowawayCa::generate(&["127.0.0.1"]).unwrap();
        first.write_to(dir.path()).unwrap();
        assert!(CertificateFiles::present_in(dir.path()));
        let files = CertificateFiles::new(dir.path()).unwrap();
        let before = served(&files);

        // A key alone, as a renewal caught halfway would leave: the previous pair stays.
        let second = ThrowawayCa::generate(&["127.0.0.1"]).unwrap();
        std::fs::write(dir.path().join(KEY_FILE), &second.key_pem).unwrap();
        bump(dir.path(), 5);
        assert_eq!(served(&files), before);

        second.write_to(dir.path()).unwrap();
        bump(dir.path(), 10);
        assert_ne!(served(&files), before, "the renewed certificate is served");
    }

    #[test]
    fn a_directory_without_a_usable_pair_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!CertificateFiles::present_in(dir.path()));
        assert!(CertificateFiles::new(dir.path()).is_err());
    }

    /// Sets both files' modification times `seconds` ahead, well past any file system's granularity.
    fn bump(dir: &Path, seconds: u64) {
        let later = SystemTime::now() + std::time::Duration::from_secs(seconds);
        for file in [CERT_FILE, KEY_FILE] {
            let handle = std::fs::File::options().write(true).open(dir.join(file)).unwrap();
            handle.set_modified(later).unwrap();
        }
    }
}
