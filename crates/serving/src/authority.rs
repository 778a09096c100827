//! Certificate authorities and the serving certificates they sign, with rcgen: P-256 keys, and the
//! extensions Go's x509 (kube-apiserver, kubectl) and Python's ssl both want on a leaf, the authority
//! key identifier included. [`ThrowawayCa`] is the shortest way to a server clients can trust: a CA
//! made for the run and one certificate it signed.

use std::{path::Path, sync::Arc, time::SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio_rustls::rustls::{
    self,
    client::danger::ServerCertVerifier,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime, pem::PemObject},
};

use crate::{
    Error, Result,
    certificates::{CERT_FILE, KEY_FILE},
    provider,
};

fn failed(what: &str) -> impl FnOnce(rcgen::Error) -> Error + '_ {
    move |e| Error::Certificate(format!("{what}: {e}"))
}

/// When a certificate is valid. Without one, rcgen's default: from 1975 to 4096.
#[derive(Debug, Clone, Copy)]
pub struct Lifetime {
    /// The first moment the certificate is valid (written to the second).
    pub not_before: SystemTime,
    /// The last moment the certificate is valid (written to the second).
    pub not_after: SystemTime,
}

impl Lifetime {
    fn apply(lifetime: Option<Lifetime>, params: &mut CertificateParams) -> Result<()> {
        if let Some(Lifetime {
            not_before,
            not_after,
        }) = lifetime
        {
            params.not_before = offset(not_before)?;
            params.not_after = offset(not_after)?;
        }
        Ok(())
    }
}

fn offset(at: SystemTime) -> Result<time::OffsetDateTime> {
    let seconds = match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    };
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|e| Error::Certificate(format!("certificate time {at:?}: {e}")))
}

/// What a CA's certificate says about it. Also what signing needs to name it as the issuer, so that a
/// CA can be rebuilt from its name and key alone.
fn authority_params(common_name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    params
}

/// A CA that signs serving certificates.
pub struct Authority {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    /// A fresh CA named `common_name`, with a P-256 key.
    pub fn generate(common_name: &str, lifetime: Option<Lifetime>) -> Result<Authority> {
        let key = KeyPair::generate().map_err(failed("CA key"))?;
        let mut params = authority_params(common_name);
        Lifetime::apply(lifetime, &mut params)?;
        let cert = params.self_signed(&key).map_err(failed("CA certificate"))?;
        Ok(Authority {
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            issuer: Issuer::new(authority_params(common_name), key),
        })
    }

    /// The CA in `text` (its certificate and its key, PEM, as [`Authority::to_pem`] writes them),
    /// which this program made as `common_name`: rebuilt from that name and the key rather than parsed
    /// back from the certificate.
    pub fn from_pem(text: &str, common_name: &str) -> Result<Authority, String> {
        let cert_der =
            CertificateDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no CA certificate: {e}"))?;
        let key_der =
            PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no CA key: {e}"))?;
        let key = KeyPair::try_from(&key_der).map_err(|e| format!("unusable CA key: {e}"))?;
        Ok(Authority {
            cert_pem: pem_block("CERTIFICATE", &cert_der),
            cert_der,
            issuer: Issuer::new(authority_params(common_name), key),
        })
    }

    /// The CA whose certificate is `cert_pem` and key `key_pem`, whoever made it: its name and key
    /// identifier are read from the certificate, so what it signs chains to it.
    #[cfg(feature = "parse-authority")]
    pub fn parse(cert_pem: &str, key_pem: &str) -> Result<Authority> {
        let key = KeyPair::from_pem(key_pem).map_err(failed("CA key"))?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key).map_err(failed("CA certificate"))?;
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| Error::Certificate(format!("CA certificate: {e}")))?;
        Ok(Authority {
            cert_pem: pem_block("CERTIFICATE", &cert_der),
            cert_der,
            issuer,
        })
    }

    /// The CA's certificate and key, PEM, in one text.
    pub fn to_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.key_pem())
    }

    /// The CA's certificate, PEM: what clients trust (a kubeconfig's `certificate-authority-data`, a
    /// webhook configuration's `caBundle`).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's certificate, DER.
    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// The CA's private key, PEM (PKCS#8).
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A serving certificate for `names` (DNS names or IP addresses) with a fresh P-256 key, signed by
    /// this CA.
    pub fn sign_serving(
        &self,
        names: &[String],
        common_name: &str,
        lifetime: Option<Lifetime>,
    ) -> Result<Serving> {
        let mut params = CertificateParams::new(names.to_vec()).map_err(failed("serving names"))?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, common_name);
        // Python's ssl and Go's x509 both want the usual leaf extensions, AKI included.
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        Lifetime::apply(lifetime, &mut params)?;
        let key = KeyPair::generate().map_err(failed("serving key"))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(failed("serving certificate"))?;
        Ok(Serving {
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        })
    }

    /// Whether `serving` is what a client trusting this CA accepts for each of `names`, now.
    pub fn verify(&self, serving: &Serving, names: &[String]) -> Result<(), String> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.cert_der.clone())
            .map_err(|e| format!("the CA certificate is unusable: {e}"))?;
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| format!("the CA certificate is unusable: {e}"))?;
        for name in names {
            let server_name = ServerName::try_from(name.as_str()).map_err(|e| format!("{name}: {e}"))?;
            verifier
                .verify_server_cert(&serving.cert, &[], &server_name, &[], UnixTime::now())
                .map_err(|e| format!("not valid for {name}: {e}"))?;
        }
        Ok(())
    }
}

/// A serving certificate and its key.
pub struct Serving {
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl Serving {
    /// The certificate and key in `text`, PEM, as [`Serving::to_pem`] writes them.
    pub fn from_pem(text: &str) -> Result<Serving, String> {
        let cert =
            CertificateDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no certificate: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no key: {e}"))?;
        Ok(Serving { cert, key })
    }

    /// The certificate, then its key, PEM, in one text: how Go's TLS reads a certificate and key from
    /// one file.
    pub fn to_pem(&self) -> String {
        format!("{}{}", self.cert_pem(), self.key_pem())
    }

    /// The certificate alone, as one PEM `CERTIFICATE` block.
    pub fn cert_pem(&self) -> String {
        pem_block("CERTIFICATE", &self.cert)
    }

    /// The private key alone, as one PEM `PRIVATE KEY` block (PKCS#8). A secret: never log it.
    pub fn key_pem(&self) -> String {
        pem_block("PRIVATE KEY", self.key.secret_der())
    }

    /// What a server presents: this certificate, then `chain` (the CA, so that a client given only
    /// the serving certificate's issuer can still build the path), with the key. Fails when the key is
    /// not the certificate's.
    pub fn certified(&self, chain: &[CertificateDer<'static>]) -> Result<Arc<rustls::sign::CertifiedKey>> {
        let certificates = std::iter::once(self.cert.clone())
            .chain(chain.iter().cloned())
            .collect();
        crate::certificates::certified_key(certificates, self.key.clone_key())
    }
}

/// `der` as a PEM block labelled `label`, 64 base64 characters a line.
fn pem_block(label: &str, der: &[u8]) -> String {
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        // Base64 output is ASCII, so every chunk is valid UTF-8.
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

/// A CA made on the spot, and a serving certificate it signed for `names` (DNS names or IP
/// addresses), all in PEM: for dev mode and tests, whose clients are handed the CA.
pub struct ThrowawayCa {
    /// The CA certificate: what a webhook configuration's `caBundle` carries.
    pub ca_pem: String,
    /// The serving certificate the CA signed.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8). A secret: never log it.
    pub key_pem: String,
}

impl ThrowawayCa {
    /// A CA and a certificate for `names`, named after the first of them.
    pub fn generate(names: &[&str]) -> Result<Self> {
        let authority = Authority::generate("throwaway-ca", None)?;
        let common_name = names.first().copied().unwrap_or("throwaway");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let serving = authority.sign_serving(&names, common_name, None)?;
        Ok(Self {
            ca_pem: authority.cert_pem().to_owned(),
            cert_pem: serving.cert_pem(),
            key_pem: serving.key_pem(),
        })
    }

    /// Writes the certificate and key into `dir` as [`crate::certificates::CertificateFiles`] reads
    /// them, the key readable by this user alone.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Vec<String> {
        ["127.0.0.1", "::1", "localhost"].map(str::to_owned).to_vec()
    }

    #[test]
    fn a_serving_certificate_verifies_for_its_names_under_its_own_ca_only() {
        let ca = Authority::generate("test-ca", None).unwrap();
        let serving = ca.sign_serving(&loopback(), "test", None).unwrap();
        assert_eq!(ca.verify(&serving, &loopback()), Ok(()));
        assert!(ca.verify(&serving, &["example.com".to_owned()]).is_err());
        let other = Authority::generate("test-ca", None).unwrap();
        assert!(other.verify(&serving, &loopback()).is_err(), "another CA's");
    }

    #[test]
    fn a_ca_read_back_from_its_pem_signs_what_it_verifies() {
        let ca = Authority::generate("kept-ca", None).unwrap();
        let again = Authority::from_pem(&ca.to_pem(), "kept-ca").unwrap();
        assert_eq!(again.cert_pem(), ca.cert_pem());
        let serving = again.sign_serving(&loopback(), "kept", None).unwrap();
        assert_eq!(ca.verify(&serving, &loopback()), Ok(()));
        let read = Serving::from_pem(&serving.to_pem()).unwrap();
        assert_eq!(ca.verify(&read, &loopback()), Ok(()));
        assert!(read.certified(&[ca.cert_der().clone()]).is_ok());
    }

    #[test]
    fn an_expired_certificate_does_not_verify() {
        let day = std::time::Duration::from_secs(24 * 3600);
        let now = SystemTime::now();
        let ca = Authority::generate("test-ca", None).unwrap();
        let lifetime = Lifetime {
            not_before: now - 3 * day,
            not_after: now - day,
        };
        let serving = ca.sign_serving(&loopback(), "test", Some(lifetime)).unwrap();
        assert!(
            ca.verify(&serving, &loopback())
                .unwrap_err()
                .contains("not valid")
        );
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let ca = Authority::generate("test-ca", None).unwrap();
        let one = ca.sign_serving(&loopback(), "test", None).unwrap();
        let two = ca.sign_serving(&loopback(), "test", None).unwrap();
        let mixed = Serving::from_pem(&format!("{}{}", one.cert_pem(), two.key_pem())).unwrap();
        assert!(mixed.certified(&[]).is_err());
    }
}
