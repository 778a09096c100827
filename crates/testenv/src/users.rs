//! Users other than the administrator, each with credentials a real cluster would accept:
//! - the embedded server: a bearer token of its own ([`apiserver::ApiServer::add_user`], as
//!   kube-apiserver's static token file);
//! - the real control plane: a client certificate (CN the user, O each group) signed by the CA that
//!   kube-apiserver trusts for client certificates (`--client-ca-file`), as envtest's users are;
//! - the cluster tier, whose CA key the harness does not hold: the administrator impersonating the
//!   user (`Impersonate-User`, `Impersonate-Group`).

use std::path::Path;

use base64::Engine;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose};

use crate::{Error, Result};

/// A client certificate and its key (both PEM) for `user` in `groups`, signed by the CA whose
/// certificate and key `ca_file` holds (one PEM file, as the embedded server's TLS keeps it).
pub(crate) fn client_certificate(ca_file: &Path, user: &str, groups: &[&str]) -> Result<(String, String)> {
    let failed = |what: &str, why: String| Error::Io {
        what: format!("signing a client certificate for {user}: {what}"),
        source: std::io::Error::other(why),
    };
    let ca = std::fs::read_to_string(ca_file).map_err(|source| Error::Io {
        what: format!("reading {}", ca_file.display()),
        source,
    })?;
    let key_pem = pem_block(&ca, "PRIVATE KEY").ok_or_else(|| failed("the CA key", "missing".into()))?;
    let ca_key = KeyPair::from_pem(&key_pem).map_err(|e| failed("the CA key", e.to_string()))?;
    // The CA was made by the apiserver crate under this name: rebuilt from it and its key, what it
    // signs chains to its certificate.
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = rcgen::DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, apiserver::http::tls::CA_NAME);
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, user);
    for group in groups {
        params.distinguished_name.push(DnType::OrganizationName, *group);
    }
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().map_err(|e| failed("a key", e.to_string()))?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| failed("the certificate", e.to_string()))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The first PEM block labelled `label` in `text`, with its armour.
fn pem_block(text: &str, label: &str) -> Option<String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let stop = text[start..].find(&end)? + start + end.len();
    Some(format!("{}\n", &text[start..stop]))
}

/// `config` sending the client certificate `cert_pem` with its key `key_pem`.
pub(crate) fn with_client_certificate(
    mut config: kube::Config,
    cert_pem: &str,
    key_pem: &str,
) -> kube::Config {
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    config.auth_info.token = None;
    config.auth_info.client_certificate_data = Some(encode(cert_pem));
    config.auth_info.client_key_data = Some(encode(key_pem).into());
    config
}
