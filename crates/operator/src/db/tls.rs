//! TLS to PostgreSQL with libpq's `sslmode` semantics, over rustls (ring, as the rest of the
//! workspace) through tokio-postgres-rustls. The CA (a file, or the system's store) and the client
//! certificate (a mounted Secret or ConfigMap) are read again for each new connection, so that a
//! renewed certificate is used without a restart.

use std::{path::PathBuf, str::FromStr, sync::Arc};

use tokio_postgres::{Socket, tls::MakeTlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls::{
    self, AlertDescription, CertificateError, ClientConfig,
    client::WebPkiServerVerifier,
    pki_types::{PrivateKeyDer, pem::PemObject},
};

use super::{
    root_certificates::{RootCertificates, certificates},
    server_verifiers::{AnyServerCertificate, ChainOnly},
};
use crate::{Error, Result};

/// libpq's `sslmode`, less `allow` (plain text first, which no one should want).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    /// TLS when the server offers it, plain text otherwise.
    #[default]
    Prefer,
    /// TLS, the server's certificate unchecked (checked against `sslrootcert` when one is given).
    Require,
    /// TLS, the server's certificate signed by a CA of `sslrootcert`, whatever names it holds.
    VerifyCa,
    /// TLS, the server's certificate signed by a CA of `sslrootcert` and naming the host connected to.
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            "allow" => Err(Error::Config(
                "sslmode allow is not supported: use prefer (TLS when the server offers it)".into(),
            )),
            other => Err(Error::Config(format!(
                "sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
            ))),
        }
    }
}

impl SslMode {
    /// What tokio-postgres negotiates: the verifying modes are `require` there, the verifying done
    /// by the rustls configuration.
    pub fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

/// How the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verification {
    None,
    Chain,
    ChainAndName,
}

/// The TLS settings of every connection.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    pub mode: SslMode,
    /// The CAs the server's certificate must be signed by.
    pub root_cert: Option<RootCertificates>,
    /// PEM files of the client certificate (its chain) and its key, for `clientcert` in pg_hba.
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

impl TlsSettings {
    /// The settings a connection string and the flags gave, with libpq's default sslmode where they
    /// gave none: `prefer`, or `verify-full` with `sslrootcert=system` (PostgreSQL 16's rule).
    pub fn new(
        mode: Option<SslMode>,
        root_cert: Option<RootCertificates>,
        client_cert: Option<PathBuf>,
        client_key: Option<PathBuf>,
    ) -> Self {
        let default = match root_cert {
            Some(RootCertificates::System) => SslMode::VerifyFull,
            _ => SslMode::default(),
        };
        TlsSettings {
            mode: mode.unwrap_or(default),
            root_cert,
            client_cert,
            client_key,
        }
    }

    /// As libpq: a root certificate given makes `prefer` and `require` check the chain too.
    fn verification(&self) -> Verification {
        match (self.mode, &self.root_cert) {
            (SslMode::VerifyFull, _) => Verification::ChainAndName,
            (SslMode::VerifyCa, _) | (SslMode::Prefer | SslMode::Require, Some(_)) => Verification::Chain,
            _ => Verification::None,
        }
    }

    /// Settings that can never work are refused at start; files are also read once, so that an
    /// unreadable one stops start-up with its name rather than failing every connection.
    pub fn check(&self) -> Result<()> {
        if matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyFull) && self.root_cert.is_none() {
            return Err(Error::Config(format!(
                "sslmode {} needs the CA to verify the server with: set --db-sslrootcert (PSQL_SSLROOTCERT) \
                 or sslrootcert in DATABASE_URL, to a PEM file or to `system` for the system's CA store",
                self.mode_name()
            )));
        }
        // libpq's rule since PostgreSQL 16: anyone can have a certificate from a CA the system trusts
        // for a host name of their own, so a check without the name (verify-ca) or no check at all
        // would accept them.
        if self.root_cert == Some(RootCertificates::System) && self.mode != SslMode::VerifyFull {
            return Err(Error::Config(format!(
                "sslmode {} cannot be used with sslrootcert=system: any CA the system trusts signs \
                 certificates for other people's host names, so only verify-full (the default with \
                 sslrootcert=system) is accepted",
                self.mode_name()
            )));
        }
        if self.client_cert.is_some() != self.client_key.is_some() {
            return Err(Error::Config(
                "a client certificate needs both --db-sslcert and --db-sslkey (sslcert and sslkey)".into(),
            ));
        }
        self.client_config().map(|_| ())
    }

    fn mode_name(&self) -> &'static str {
        match self.mode {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The rustls configuration for a connection opened now, from the files as they are now.
    pub fn client_config(&self) -> Result<ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        let verification = if self.mode == SslMode::Disable {
            Verification::None
        } else {
            self.verification()
        };
        let builder = match (verification, &self.root_cert) {
            (Verification::None, _) | (_, None) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyServerCertificate(provider))),
            (Verification::ChainAndName, Some(roots)) => builder.with_root_certificates(roots.load()?),
            (Verification::Chain, Some(roots)) => {
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots.load()?), provider)
                    .build()
                    .map_err(|e| Error::Config(format!("{} is unusable: {e}", roots.describe())))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
            }
        };
        match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) if self.mode != SslMode::Disable => {
                let chain = certificates(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    Error::Config(format!("cannot read the client key {}: {e}", key.display()))
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Error::Config(format!("the client certificate and key do not match: {e}")))
            }
            _ => Ok(builder.with_no_client_auth()),
        }
    }
}

/// tokio-postgres' TLS connector, built for each connection from the files as they are then (a
/// renewed CA or client certificate is used by the next connection). A file that cannot be read
/// fails that connection with a message naming it.
#[derive(Clone)]
pub struct ReloadingTls(pub Arc<TlsSettings>);

impl MakeTlsConnect<Socket> for ReloadingTls {
    type Stream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;
    type Error = Error;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<Self::TlsConnect> {
        let mut connector = MakeRustlsConnect::new(self.0.client_config()?);
        match MakeTlsConnect::<Socket>::make_tls_connect(&mut connector, hostname) {
            Ok(connect) => Ok(connect),
            Err(never) => match never {},
        }
    }
}

/// The rustls error a failed connection carries, if TLS is what failed. tokio-rustls hands it over
/// inside an `io::Error`, whose `source()` skips it, so each link is also looked into.
pub fn rustls_failure<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = link {
        if let Some(failure) = current.downcast_ref::<rustls::Error>() {
            return Some(failure);
        }
        if let Some(failure) = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(failure);
        }
        link = current.source();
    }
    None
}

/// What a user should read when TLS failed under `settings`: which check refused the server, and
/// what to look at.
pub fn explain(settings: &TlsSettings, failure: &rustls::Error) -> String {
    match failure {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => match settings.root_cert {
            Some(RootCertificates::System) => "the server's certificate is not signed by a CA the system \
                trusts (sslrootcert=system: the bundle SSL_CERT_FILE names, or the system's; wrong CA?)"
                .into(),
            _ => "the server's certificate is not signed by a CA of sslrootcert (wrong CA?)".into(),
        },
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => {
            "host name mismatch (connect with a name the certificate holds, or use sslmode=verify-ca)".into()
        }
        rustls::Error::InvalidCertificate(_) => "the server's certificate is refused".into(),
        // The alerts a server sends when the certificate we showed did not pass its checks (OpenSSL's
        // for a signature that does not verify, under a CA of the same name with a new key, is
        // decrypt_error).
        rustls::Error::AlertReceived(
            AlertDescription::UnknownCA
            | AlertDescription::DecryptError
            | AlertDescription::BadCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateRequired,
        ) if settings.client_cert.is_some() => {
            "the server refused the client certificate (sslcert: is it signed by a CA the server trusts, \
             current and not revoked?)"
                .into()
        }
        _ => "the handshake failed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_libpq_sslmode_but_allow_parses_and_anything_else_is_refused_by_name() {
        let parsed: Vec<SslMode> = ["disable", "prefer", "require", "verify-ca", "verify-full"]
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
        assert_eq!(
            parsed,
            [
                SslMode::Disable,
                SslMode::Prefer,
                SslMode::Require,
                SslMode::VerifyCa,
                SslMode::VerifyFull
            ]
        );
        assert_eq!(SslMode::default(), SslMode::Prefer, "libpq's default");
        assert!(matches!("allow".parse::<SslMode>(), Err(Error::Config(m)) if m.contains("prefer")));
        assert!(
            matches!("verify_full".parse::<SslMode>(), Err(Error::Config(m)) if m.contains("verify-full"))
        );
    }

    #[test]
    fn verifying_modes_negotiate_tls_as_require() {
        use tokio_postgres::config::SslMode as Negotiated;
        assert_eq!(SslMode::Disable.negotiation(), Negotiated::Disable);
        assert_eq!(SslMode::Prefer.negotiation(), Negotiated::Prefer);
        for mode in [SslMode::Require, SslMode::VerifyCa, SslMode::VerifyFull] {
            assert_eq!(mode.negotiation(), Negotiated::Require);
        }
    }

    #[test]
    fn a_root_certificate_makes_prefer_and_require_check_the_chain_as_libpq_does() {
        let with = |mode, root: Option<&str>| TlsSettings {
            mode,
            root_cert: root.map(|path| RootCertificates::File(path.into())),
            ..Default::default()
        };
        assert_eq!(with(SslMode::Require, None).verification(), Verification::None);
        assert_eq!(with(SslMode::Prefer, None).verification(), Verification::None);
        assert_eq!(
            with(SslMode::Require, Some("ca.crt")).verification(),
            Verification::Chain
        );
        assert_eq!(
            with(SslMode::Prefer, Some("ca.crt")).verification(),
            Verification::Chain
        );
        assert_eq!(
            with(SslMode::VerifyCa, Some("ca.crt")).verification(),
            Verification::Chain
        );
        assert_eq!(
            with(SslMode::VerifyFull, Some("ca.crt")).verification(),
            Verification::ChainAndName
        );
    }

    #[test]
    fn settings_that_cannot_work_are_refused_at_start_with_what_to_set() {
        let no_ca = TlsSettings {
            mode: SslMode::VerifyFull,
            ..Default::default()
        };
        assert!(matches!(no_ca.check(), Err(Error::Config(m)) if m.contains("--db-sslrootcert")));
        let missing_ca = TlsSettings {
            mode: SslMode::VerifyCa,
            root_cert: Some(RootCertificates::File("/nonexistent/ca.crt".into())),
            ..Default::default()
        };
        assert!(matches!(missing_ca.check(), Err(Error::Config(m)) if m.contains("/nonexistent/ca.crt")));
        let cert_without_key = TlsSettings {
            client_cert: Some("/nonexistent/client.crt".into()),
            ..Default::default()
        };
        assert!(matches!(cert_without_key.check(), Err(Error::Config(m)) if m.contains("--db-sslkey")));
        assert!(TlsSettings::default().check().is_ok(), "prefer needs no file");
    }

    #[test]
    fn sslrootcert_system_makes_verify_full_the_default_and_refuses_every_weaker_mode() {
        let system = |mode| TlsSettings::new(mode, Some(RootCertificates::System), None, None);
        assert_eq!(system(None).mode, SslMode::VerifyFull, "libpq 16's default");
        assert_eq!(
            TlsSettings::new(None, Some(RootCertificates::File("ca.crt".into())), None, None).mode,
            SslMode::Prefer,
            "a file leaves the default as it was"
        );
        for weak in [
            SslMode::Disable,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
        ] {
            let refused = system(Some(weak)).check();
            assert!(
                matches!(&refused, Err(Error::Config(m)) if m.contains("sslrootcert=system") && m.contains("only verify-full")),
                "{weak:?}: {refused:?}"
            );
        }
    }

    #[test]
    fn an_unknown_issuer_is_explained_by_where_the_cas_came_from() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let with = |root| TlsSettings::new(None, Some(root), None, None);
        assert!(
            explain(&with(RootCertificates::File("ca.crt".into())), &unknown).contains("a CA of sslrootcert")
        );
        let system = explain(&with(RootCertificates::System), &unknown);
        assert!(
            system.contains("not signed by a CA the system trusts") && system.contains("SSL_CERT_FILE"),
            "{system}"
        );
    }

    #[test]
    fn a_refusal_of_our_certificate_is_named_as_such_only_when_we_showed_one() {
        let with_client = TlsSettings::new(None, None, Some("c.crt".into()), Some("c.key".into()));
        for alert in [AlertDescription::UnknownCA, AlertDescription::DecryptError] {
            let failure = rustls::Error::AlertReceived(alert);
            assert!(explain(&with_client, &failure).contains("refused the client certificate"));
            assert_eq!(explain(&TlsSettings::default(), &failure), "the handshake failed");
        }
    }
}
