//! The webhook server's certificate: `tls.crt` and `tls.key` in `--webhook-cert-dir`, as
//! controller-runtime reads them (and as cert-manager's Secret mounts them). The files are read again
//! when they change, so a renewed certificate is served without a restart. [`ThrowawayCa`] makes a
//! CA and a serving certificate for dev mode and tests, whose webhook configurations carry the CA.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use tokio_rustls::rustls::{
    self,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};

use crate::{Error, Result};

pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Whether `dir` holds a certificate and a key to serve.
pub fn present_in(dir: &Path) -> bool {
    dir.join(CERT_FILE).is_file() && dir.join(KEY_FILE).is_file()
}

/// A TLS configuration serving the certificate in `dir`; fails now if it cannot be read.
pub fn server_config(dir: &Path) -> Result<rustls::ServerConfig> {
    server_config_with(Arc::new(CertificateFiles::new(dir)?))
}

/// A TLS configuration serving whatever certificate `resolver` holds at each handshake.
pub fn server_config_with(resolver: Arc<dyn ResolvesServerCert>) -> Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS versions: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A certificate and key in PEM, ready to serve.
pub fn certified_key(cert_pem: &str, key_pem: &str) -> Result<Arc<CertifiedKey>> {
    let unreadable = |what: &str, why: String| Error::Config(format!("webhook certificate {what}: {why}"));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| unreadable("chain", e.to_string()))?;
    if chain.is_empty() {
        return Err(unreadable("chain", "no certificate in it".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| unreadable("key", e.to_string()))?;
    let certified = CertifiedKey::from_der(chain, key, &provider())
        .map_err(|e| unreadable("key", format!("does not go with the certificate: {e}")))?;
    Ok(Arc::new(certified))
}

/// The certificate served now, swapped in place when a renewed one arrives: every later handshake
/// gets the new one, connections already open keep theirs.
#[derive(Debug)]
pub struct CertificateSlot(std::sync::RwLock<Arc<CertifiedKey>>);

impl CertificateSlot {
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        Self(std::sync::RwLock::new(key))
    }

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
struct CertificateFiles {
    dir: PathBuf,
    loaded: Mutex<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

impl CertificateFiles {
    fn new(dir: &Path) -> Result<Self> {
        let stamp = stamp(dir);
        let key = load(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
            loaded: Mutex::new((stamp, key)),
        })
    }
}

/// The later of the two files' modification times.
fn stamp(dir: &Path) -> Option<SystemTime> {
    let modified = |file| std::fs::metadata(dir.join(file)).and_then(|m| m.modified()).ok();
    modified(CERT_FILE).max(modified(KEY_FILE))
}

fn load(dir: &Path) -> Result<Arc<CertifiedKey>> {
    let unreadable = |file: &str, why: String| {
        Error::Config(format!("webhook certificate {}: {why}", dir.join(file).display()))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join(CERT_FILE))
        .map_err(|e| unreadable(CERT_FILE, e.to_string()))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| unreadable(CERT_FILE, e.to_string()))?;
    if chain.is_empty() {
        return Err(unreadable(CERT_FILE, "no certificate in it".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(dir.join(KEY_FILE)).map_err(|e| unreadable(KEY_FILE, e.to_string()))?;
    let certified = CertifiedKey::from_der(chain, key, &provider())
        .map_err(|e| unreadable(KEY_FILE, format!("does not go with {CERT_FILE}: {e}")))?;
    Ok(Arc::new(certified))
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamp(&self.dir);
        if now != loaded.0 {
            // A renewal half written (the key before the certificate) fails to load: keep serving the
            // previous pair and try again at the next handshake.
            match load(&self.dir) {
                Ok(key) => *loaded = (now, key),
                Err(error) => tracing::warn!(%error, "keeping the previous webhook certificate"),
            }
        }
        Some(loaded.1.clone())
    }
}

/// A CA made on the spot, and a serving certificate it signed for `names` (DNS names or IP addresses).
pub struct ThrowawayCa {
    /// The CA certificate (PEM): what a webhook configuration's `caBundle` carries.
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl ThrowawayCa {
    pub fn generate(names: &[&str]) -> Result<Self> {
        let failed = |what: &str, e: rcgen::Error| Error::Config(format!("throwaway {what}: {e}"));
        let mut ca_params = CertificateParams::default();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "operator-webhook-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().map_err(|e| failed("CA key", e))?;
        let ca_cert = ca_params
            .clone()
            .self_signed(&ca_key)
            .map_err(|e| failed("CA", e))?;
        let issuer = Issuer::new(ca_params, ca_key);

        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).map_err(|e| failed("serving names", e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "operator-webhook");
        // Go's x509 (the API server's client) wants the authority key identifier on a leaf.
        params.use_authority_key_identifier_extension = true;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(|e| failed("serving key", e))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| failed("serving certificate", e))?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Writes `tls.crt` and `tls.key` into `dir` (the key readable by this user alone).
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        use std::{io::Write, os::unix::fs::OpenOptionsExt};
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(CERT_FILE), &self.cert_pem)?;
        let mut key = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(dir.join(KEY_FILE))?;
        key.write_all(self.key_pem.as_bytes())?;
        Ok(())
    }
}
