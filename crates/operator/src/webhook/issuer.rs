//! The webhook certificate the operator issues for itself (`--webhook-cert-secret`), so that a cluster
//! needs nothing but the operator's own manifests: no cert-manager, no certificate made by hand.
//!
//! - **Issued once, shared by every replica.** A CA and a serving certificate for the webhook
//!   Service's DNS names live in one Secret of the operator's namespace. Each replica reads it at
//!   start; a replica that finds it empty, for other names, or due for renewal issues new ones and
//!   writes them with the resourceVersion it read, so when two replicas race one write wins and the
//!   other takes the winner's.
//! - **Renewed before it expires.** The serving certificate is renewed when less than a third of its
//!   validity is left, as cert-manager's default; the CA (ten years) likewise, and then the old CA
//!   stays in the bundle beside the new one until it expires, so that a replica still serving a
//!   certificate of the old CA is trusted meanwhile. Replicas re-read the Secret at every check and
//!   serve what it holds from their next TLS handshake on, with no restart.
//! - **The CA injected where the API server needs it:** the `caBundle` of every admission webhook and
//!   CRD conversion webhook that calls the Service, found by the Service they name (as cert-manager's
//!   CA injector finds them by annotation), so kustomize's name prefix needs no extra setting here.
//!
//! Hand-written rather than a crate: no maintained Rust crate does this (Go operators use
//! cert-manager or open-policy-agent's cert-controller); rcgen does the cryptography.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::tls::{CertificateSlot, certified_key};
use crate::{Error, Result};

/// The keys of the Secret: `tls.crt`/`tls.key` as a `kubernetes.io/tls` Secret names them, the CA
/// bundle the API server trusts, and the key of the newest CA, which signs renewals.
const CERT_KEY: &str = "tls.crt";
const KEY_KEY: &str = "tls.key";
const CA_BUNDLE_KEY: &str = "ca.crt";
const CA_KEY_KEY: &str = "ca.key";

/// The CA lives ten years; the serving certificate as long as `--webhook-cert-validity` says.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// A certificate is valid from a little before it is made: clocks of the API server's node may lag.
const BACKDATE: Duration = Duration::from_secs(60);

/// What the issuer is asked to keep.
#[derive(Clone, Debug)]
pub struct IssuerSettings {
    /// The operator's namespace, where the Secret and the Service are.
    pub namespace: String,
    pub secret: String,
    /// The Service in front of the webhook port: its DNS names go in the certificate.
    pub service: String,
    /// How long a serving certificate is valid.
    pub validity: Duration,
}

impl IssuerSettings {
    /// The names the API server dials the Service by.
    pub fn dns_names(&self) -> Vec<String> {
        let (service, namespace) = (&self.service, &self.namespace);
        vec![
            service.clone(),
            format!("{service}.{namespace}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ]
    }

    /// How often replicas look at the Secret and the CA's places: a tenth of the validity, between a
    /// second and ten minutes, so that a renewal is picked up long before the old certificate expires.
    pub fn check_interval(&self) -> Duration {
        (self.validity / 10).clamp(Duration::from_secs(1), Duration::from_secs(600))
    }
}

/// A CA and a serving certificate in PEM, as the Secret holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct Issued {
    /// Every CA still valid, newest first: what the `caBundle`s carry.
    pub ca_bundle: String,
    pub ca_key: String,
    pub cert: String,
    pub key: String,
}

/// What a certificate says about itself that renewal depends on.
#[derive(Debug)]
struct Validity {
    not_before: Timestamp,
    not_after: Timestamp,
}

impl Validity {
    fn of(pem: &str) -> Option<Self> {
        parsed(pem, |cert| {
            let validity = cert.validity();
            Some(Self {
                not_before: Timestamp::from_second(validity.not_before.timestamp()).ok()?,
                not_after: Timestamp::from_second(validity.not_after.timestamp()).ok()?,
            })
        })?
    }

    /// Less than a third of the lifetime left (or already expired).
    fn due(&self, now: Timestamp) -> bool {
        let lifetime = self.not_after.as_second() - self.not_before.as_second();
        self.not_after.as_second() - now.as_second() < lifetime / 3
    }
}

/// What to do with what the Secret holds.
#[derive(Debug, PartialEq)]
enum Renewal {
    /// It serves the right names and nothing is due.
    Keep,
    /// A new serving certificate from the same CA.
    Certificate,
    /// A new CA (the old one stays in the bundle while valid) and a certificate from it.
    Authority,
}

/// Pure: what `issued` needs at `now` to serve `names`. Anything unreadable starts over.
fn renewal(issued: Option<&Issued>, names: &[String], now: Timestamp) -> Renewal {
    let Some(issued) = issued else {
        return Renewal::Authority;
    };
    let newest_ca = pem_blocks(&issued.ca_bundle).into_iter().next();
    let (Some(ca), Some(cert)) = (
        newest_ca.as_deref().and_then(Validity::of),
        Validity::of(&issued.cert),
    ) else {
        return Renewal::Authority;
    };
    if KeyPair::from_pem(&issued.ca_key).is_err() || certified_key(&issued.cert, &issued.key).is_err() {
        return Renewal::Authority;
    }
    if ca.due(now) {
        return Renewal::Authority;
    }
    if cert.due(now) || served_names(&issued.cert).as_deref() != Some(names) {
        return Renewal::Certificate;
    }
    Renewal::Keep
}

/// The DNS names a certificate is for, in its order.
fn served_names(pem: &str) -> Option<Vec<String>> {
    use x509_parser::extensions::GeneralName;
    parsed(pem, |cert| {
        let names = cert.subject_alternative_name().ok()??;
        Some(
            names
                .value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(name) => Some((*name).to_owned()),
                    _ => None,
                })
                .collect(),
        )
    })?
}

/// `read` applied to the first certificate of `pem`, if it parses.
fn parsed<T>(pem: &str, read: impl FnOnce(&x509_parser::certificate::X509Certificate) -> T) -> Option<T> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let cert = block.parse_x509().ok()?;
    Some(read(&cert))
}

/// The PEM blocks of a bundle, each with its armour.
fn pem_blocks(bundle: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    bundle
        .split_inclusive(END)
        .map(str::trim)
        .filter(|block| block.ends_with(END))
        .map(|block| format!("{block}\n"))
        .collect()
}

/// Pure but for the key generation: `issued` renewed as `renewal` says, at `now`.
fn renew(
    issued: Option<&Issued>,
    renewal: Renewal,
    settings: &IssuerSettings,
    now: Timestamp,
) -> Result<Issued> {
    let failed = |what: &str, e: rcgen::Error| Error::Config(format!("issuing the webhook {what}: {e}"));
    let not_before = to_offset(now - BACKDATE)?;
    let (ca_pem, ca_key, older_cas) = match (renewal, issued) {
        (Renewal::Certificate, Some(issued)) => (
            pem_blocks(&issued.ca_bundle).remove(0),
            issued.ca_key.clone(),
            Vec::new(),
        ),
        (_, previous) => {
            let mut params = CertificateParams::default();
            params
                .distinguished_name
                .push(DnType::CommonName, "operator-webhook-ca");
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
            params.not_before = not_before;
            params.not_after = to_offset(now + CA_VALIDITY)?;
            let key = KeyPair::generate().map_err(|e| failed("CA key", e))?;
            let cert = params.self_signed(&key).map_err(|e| failed("CA", e))?;
            // CAs of the previous bundle that are still valid stay trusted until they expire.
            let older = previous
                .map(|p| pem_blocks(&p.ca_bundle))
                .unwrap_or_default()
                .into_iter()
                .filter(|pem| Validity::of(pem).is_some_and(|v| v.not_after > now))
                .collect();
            (cert.pem(), key.serialize_pem(), older)
        }
    };
    let ca_signing_key = KeyPair::from_pem(&ca_key).map_err(|e| failed("CA key", e))?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_signing_key).map_err(|e| failed("CA", e))?;

    let mut params = CertificateParams::new(settings.dns_names()).map_err(|e| failed("names", e))?;
    params
        .distinguished_name
        .push(DnType::CommonName, &settings.service);
    // Go's x509 (the API server's client) wants the authority key identifier on a leaf.
    params.use_authority_key_identifier_extension = true;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = to_offset(now + settings.validity)?;
    let key = KeyPair::generate().map_err(|e| failed("serving key", e))?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| failed("certificate", e))?;
    Ok(Issued {
        ca_bundle: std::iter::once(ca_pem).chain(older_cas).collect(),
        ca_key,
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

fn to_offset(at: Timestamp) -> Result<time::OffsetDateTime> {
    time::OffsetDateTime::from_unix_timestamp(at.as_second())
        .map_err(|e| Error::Config(format!("certificate time {at}: {e}")))
}

fn from_secret(secret: &Secret) -> Option<Issued> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Some(Issued {
        ca_bundle: text(CA_BUNDLE_KEY)?,
        ca_key: text(CA_KEY_KEY)?,
        cert: text(CERT_KEY)?,
        key: text(KEY_KEY)?,
    })
}

fn into_secret_data(issued: &Issued) -> std::collections::BTreeMap<String, ByteString> {
    [
        (CA_BUNDLE_KEY, &issued.ca_bundle),
        (CA_KEY_KEY, &issued.ca_key),
        (CERT_KEY, &issued.cert),
        (KEY_KEY, &issued.key),
    ]
    .into_iter()
    .map(|(key, pem)| (key.to_owned(), ByteString(pem.as_bytes().to_vec())))
    .collect()
}

/// Keeps the webhook certificate: issues or renews it in the Secret, serves it, injects its CA.
pub struct SelfIssued {
    client: kube::Client,
    settings: IssuerSettings,
    slot: Arc<CertificateSlot>,
    current: Issued,
}

impl SelfIssued {
    /// Reads (or issues) the certificate now: start-up fails if the Secret cannot be read or written,
    /// as with any other setting that cannot work.
    pub async fn start(client: kube::Client, settings: IssuerSettings) -> Result<Self> {
        let current = ensure(&client, &settings).await?;
        let slot = Arc::new(CertificateSlot::new(certified_key(&current.cert, &current.key)?));
        Ok(Self {
            client,
            settings,
            slot,
            current,
        })
    }

    /// What the webhook server's TLS serves from.
    pub fn slot(&self) -> Arc<CertificateSlot> {
        self.slot.clone()
    }

    /// Injects the CA, then checks again every [`IssuerSettings::check_interval`] until the process
    /// ends. A failed check is logged and tried again at the next one: the certificate being served
    /// stays valid for far longer than a check's interval.
    pub async fn keep(mut self) {
        let mut ticks = tokio::time::interval(self.settings.check_interval());
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(error) = self.check().await {
                tracing::warn!(%error, secret = %self.settings.secret, "webhook certificate check failed");
            }
        }
    }

    async fn check(&mut self) -> Result<()> {
        let latest = ensure(&self.client, &self.settings).await?;
        if latest != self.current {
            self.slot.replace(certified_key(&latest.cert, &latest.key)?);
            tracing::info!(secret = %self.settings.secret, "serving the renewed webhook certificate");
            self.current = latest;
        }
        inject(&self.client, &self.settings, &self.current.ca_bundle).await
    }
}

/// The Secret's certificate, renewed first if due. Of two replicas renewing at once, the one whose
/// write conflicts reads the other's.
async fn ensure(client: &kube::Client, settings: &IssuerSettings) -> Result<Issued> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &settings.namespace);
    loop {
        let secret = secrets.get(&settings.secret).await.map_err(|e| match e {
            kube::Error::Api(status) if status.code == 404 => Error::Config(format!(
                "the webhook certificate's Secret {}/{} does not exist (config/default declares it)",
                settings.namespace, settings.secret
            )),
            other => Error::Kube(other),
        })?;
        let issued = from_secret(&secret);
        let now = Timestamp::now();
        let renewal = renewal(issued.as_ref(), &settings.dns_names(), now);
        if renewal == Renewal::Keep {
            return issued.ok_or_else(|| Error::Config("unreachable: kept nothing".into()));
        }
        tracing::info!(?renewal, secret = %settings.secret, "issuing the webhook certificate");
        let renewed = renew(issued.as_ref(), renewal, settings, now)?;
        let mut updated = secret.clone();
        updated.data = Some(into_secret_data(&renewed));
        // The resourceVersion read above makes this a compare-and-swap.
        match secrets
            .replace(&settings.secret, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => return Ok(renewed),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(other) => return Err(Error::Kube(other)),
        }
    }
}

/// Whether `config` sends requests to the settings' Service.
fn calls_service(config: &WebhookClientConfig, settings: &IssuerSettings) -> bool {
    config
        .service
        .as_ref()
        .is_some_and(|s| s.name == settings.service && s.namespace == settings.namespace)
}

/// Pure: JSON Patch operations that set `bundle` as the `caBundle` of each client configuration
/// (found under `pointer(index)`) that calls the Service and does not carry it yet. Each replacement is
/// guarded by a test of the entry's name, so that an entry moved meanwhile fails the patch instead
/// of receiving another's CA.
fn ca_bundle_patch<'a>(
    configs: impl Iterator<Item = ((String, String), &'a WebhookClientConfig, String)>,
    settings: &IssuerSettings,
    bundle: &str,
) -> Vec<serde_json::Value> {
    let wanted = ByteString(bundle.as_bytes().to_vec());
    let mut operations = Vec::new();
    for (name_pointer, config, config_pointer) in configs {
        if calls_service(config, settings) && config.ca_bundle.as_ref() != Some(&wanted) {
            operations
                .push(serde_json::json!({"op": "test", "path": name_pointer.0, "value": name_pointer.1}));
            operations.push(serde_json::json!({
                "op": "add",
                "path": format!("{config_pointer}/caBundle"),
                "value": serde_json::to_value(&wanted).unwrap_or_default(),
            }));
        }
    }
    operations
}

/// Sets the CA bundle wherever the API server calls the Service: admission webhooks and CRD
/// conversion webhooks.
async fn inject(client: &kube::Client, settings: &IssuerSettings, bundle: &str) -> Result<()> {
    let params = ListParams::default();
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    for config in mutating.list(&params).await.map_err(Error::Kube)? {
        let webhooks = config.webhooks.iter().flatten();
        let entries = admission_entries(webhooks.map(|w| (w.name.as_str(), &w.client_config)));
        let operations = ca_bundle_patch(entries.into_iter(), settings, bundle);
        patch(&mutating, &config.name_any(), operations).await?;
    }
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    for config in validating.list(&params).await.map_err(Error::Kube)? {
        let webhooks = config.webhooks.iter().flatten();
        let entries = admission_entries(webhooks.map(|w| (w.name.as_str(), &w.client_config)));
        let operations = ca_bundle_patch(entries.into_iter(), settings, bundle);
        patch(&validating, &config.name_any(), operations).await?;
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds.list(&params).await.map_err(Error::Kube)? {
        let webhook = crd.spec.conversion.as_ref().and_then(|c| c.webhook.as_ref());
        let Some(config) = webhook
            .and_then(|w| w.client_config.as_ref())
            .map(crd_client_config)
        else {
            continue;
        };
        let entry = (
            ("/spec/conversion/strategy".to_owned(), "Webhook".to_owned()),
            &config,
            "/spec/conversion/webhook/clientConfig".to_owned(),
        );
        let operations = ca_bundle_patch(std::iter::once(entry), settings, bundle);
        patch(&crds, &crd.name_any(), operations).await?;
    }
    Ok(())
}

/// An admission configuration's webhooks as [`ca_bundle_patch`] takes them: each one's name, found at
/// `/webhooks/<i>/name`, its client configuration, and where that is.
fn admission_entries<'a>(
    webhooks: impl Iterator<Item = (&'a str, &'a WebhookClientConfig)>,
) -> Vec<((String, String), &'a WebhookClientConfig, String)> {
    webhooks
        .enumerate()
        .map(|(i, (name, config))| {
            (
                (format!("/webhooks/{i}/name"), name.to_owned()),
                config,
                format!("/webhooks/{i}/clientConfig"),
            )
        })
        .collect()
}

/// A CRD's conversion client configuration in the admission type's shape (the fields are the same).
fn crd_client_config(
    config: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig,
) -> WebhookClientConfig {
    WebhookClientConfig {
        ca_bundle: config.ca_bundle.clone(),
        service: config.service.as_ref().map(|s| {
            k8s_openapi::api::admissionregistration::v1::ServiceReference {
                name: s.name.clone(),
                namespace: s.namespace.clone(),
                path: s.path.clone(),
                port: s.port,
            }
        }),
        url: config.url.clone(),
    }
}

async fn patch<K>(api: &Api<K>, name: &str, operations: Vec<serde_json::Value>) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if operations.is_empty() {
        return Ok(());
    }
    let patch: json_patch_v4::Patch =
        serde_json::from_value(serde_json::Value::Array(operations)).map_err(Error::Serialization)?;
    api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(Error::Kube)?;
    tracing::info!(%name, kind = K::kind(&()).as_ref(), "webhook CA injected");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(validity: Duration) -> IssuerSettings {
        IssuerSettings {
            namespace: "operator-system".into(),
            secret: "operator-webhook-server-cert".into(),
            service: "operator-webhook-service".into(),
            validity,
        }
    }

    const DAY: Duration = Duration::from_secs(24 * 3600);

    #[test]
    fn nothing_issued_yet_means_a_new_authority() {
        let s = settings(90 * DAY);
        assert_eq!(
            renewal(None, &s.dns_names(), Timestamp::now()),
            Renewal::Authority
        );
    }

    #[test]
    fn a_fresh_certificate_is_kept_until_a_third_of_its_validity_is_left() {
        let s = settings(90 * DAY);
        let now = Timestamp::now();
        let issued = renew(None, Renewal::Authority, &s, now).unwrap();
        assert_eq!(renewal(Some(&issued), &s.dns_names(), now), Renewal::Keep);
        assert_eq!(
            renewal(Some(&issued), &s.dns_names(), now + 59 * DAY),
            Renewal::Keep
        );
        assert_eq!(
            renewal(Some(&issued), &s.dns_names(), now + 61 * DAY),
            Renewal::Certificate
        );
    }

    #[test]
    fn a_renewed_certificate_keeps_its_ca_and_serves_the_service_names() {
        let s = settings(90 * DAY);
        let now = Timestamp::now();
        let first = renew(None, Renewal::Authority, &s, now).unwrap();
        let second = renew(Some(&first), Renewal::Certificate, &s, now + 61 * DAY).unwrap();
        assert_eq!(second.ca_bundle, first.ca_bundle);
        assert_ne!(second.cert, first.cert);
        assert_eq!(served_names(&second.cert).unwrap(), s.dns_names());
        assert!(served_names(&second.cert).unwrap()[3].ends_with(".operator-system.svc.cluster.local"));
    }

    #[test]
    fn another_service_name_means_a_new_certificate() {
        let now = Timestamp::now();
        let issued = renew(None, Renewal::Authority, &settings(90 * DAY), now).unwrap();
        let mut moved = settings(90 * DAY);
        moved.service = "webhooks".into();
        assert_eq!(
            renewal(Some(&issued), &moved.dns_names(), now),
            Renewal::Certificate
        );
    }

    #[test]
    fn a_new_authority_keeps_the_old_one_trusted_while_it_is_valid() {
        let s = settings(90 * DAY);
        let now = Timestamp::now();
        let first = renew(None, Renewal::Authority, &s, now).unwrap();
        let second = renew(Some(&first), Renewal::Authority, &s, now + DAY).unwrap();
        let blocks = pem_blocks(&second.ca_bundle);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1], pem_blocks(&first.ca_bundle)[0]);
        assert_ne!(second.ca_key, first.ca_key);
    }

    #[test]
    fn garbage_in_the_secret_starts_over() {
        let s = settings(90 * DAY);
        let garbage = Issued {
            ca_bundle: "not a certificate".into(),
            ca_key: String::new(),
            cert: String::new(),
            key: String::new(),
        };
        assert_eq!(
            renewal(Some(&garbage), &s.dns_names(), Timestamp::now()),
            Renewal::Authority
        );
    }

    #[test]
    fn only_client_configurations_calling_the_service_without_the_bundle_are_patched() {
        let s = settings(90 * DAY);
        let service = |name: &str, namespace: &str| WebhookClientConfig {
            service: Some(k8s_openapi::api::admissionregistration::v1::ServiceReference {
                name: name.into(),
                namespace: namespace.into(),
                path: None,
                port: Some(443),
            }),
            ..Default::default()
        };
        let ours = service("operator-webhook-service", "operator-system");
        let other = service("operator-webhook-service", "elsewhere");
        let mut done = ours.clone();
        done.ca_bundle = Some(ByteString(b"CA".to_vec()));
        let entries = [
            (
                ("/webhooks/0/name".into(), "a".into()),
                &ours,
                "/webhooks/0/clientConfig".into(),
            ),
            (
                ("/webhooks/1/name".into(), "b".into()),
                &other,
                "/webhooks/1/clientConfig".into(),
            ),
            (
                ("/webhooks/2/name".into(), "c".into()),
                &done,
                "/webhooks/2/clientConfig".into(),
            ),
        ];
        let operations = ca_bundle_patch(entries.into_iter(), &s, "CA");
        assert_eq!(
            operations,
            vec![
                serde_json::json!({"op": "test", "path": "/webhooks/0/name", "value": "a"}),
                serde_json::json!({"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "Q0E="}),
            ]
        );
    }
}
