//! The webhook certificate the operator issues itself (`operator run --webhook-cert-secret`), as the
//! API server and an administrator see it: what the webhook port serves (a TLS handshake that trusts
//! the CA in the Secret and checks the Service's name, as kube-apiserver's does), what the Secret holds,
//! and the `caBundle` of what calls the Service.
//!
//! - Renewed in place: the certificate is kept until less than a third of its validity is left, and
//!   then, within one check (every tenth of the validity), the Secret holds a new one and the port
//!   serves it, with no restart.
//! - Shared: two replicas started on the same empty Secret serve the same certificate, and each
//!   certificate is written to the Secret once.
//! - The CA goes into the webhook configurations and CRDs whose client configuration names the
//!   Service, and nowhere else.
//!
//! On the fresh tiers only: the configurations and CRDs are cluster-wide objects.

mod support;

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;
use support::{Backend, OperatorProcess, Scene, eventually};
use tokio_rustls::rustls::{
    self, ClientConfig, RootCertStore,
    pki_types::{CertificateDer, ServerName, pem::PemObject},
};

/// The Secret and the Service, in the test's namespace (the operator's: `POD_NAMESPACE`).
const SECRET: &str = "webhook-server-cert";
const SERVICE: &str = "webhook-service";

/// The shortest validity `--webhook-cert-validity` accepts, in seconds: a renewal within the test.
const VALIDITY: u64 = 30;

/// What the product promises: renewal once less than a third of the validity is left, looked at every
/// tenth of it.
const RENEWED_WITH_LEFT: Duration = Duration::from_secs(VALIDITY / 3);
const CHECKED_EVERY: Duration = Duration::from_secs(VALIDITY / 10);

/// Room for the API round trips of a check and a handshake on a loaded machine.
const SLACK: Duration = Duration::from_secs(5);

/// How long a replica may take to start and serve: no promise of the product, only patience.
const STARTED_WITHIN: Duration = Duration::from_secs(60);

/// `operator run` serving the webhooks on a loopback port with the certificate it keeps in [`SECRET`]
/// for [`SERVICE`], valid `validity` seconds, as replica `identity`.
fn issuing_replica(scene: &Scene, identity: &str, validity: u64) -> OperatorProcess {
    let validity = validity.to_string();
    scene.operator(
        &[
            "run",
            "--controllers=vote-config",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--webhook-bind-address=127.0.0.1:0",
            "--webhook-cert-secret",
            SECRET,
            "--webhook-service",
            SERVICE,
            "--webhook-cert-validity",
            &validity,
        ],
        &[("HOSTNAME", identity)],
    )
}

/// The Secret as config/webhook declares it: empty, for the operator to fill.
async fn create_empty_secret(scene: &Scene) {
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": SECRET}, "type": "Opaque"})).unwrap();
    scene
        .api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("the empty Secret");
}

/// What the Secret holds: the serving certificate and the CA bundle, in PEM.
#[derive(Clone, Debug, PartialEq)]
struct Issued {
    cert: String,
    ca_bundle: String,
}

fn issued(secret: &Secret) -> Option<Issued> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Some(Issued {
        cert: text("tls.crt")?,
        ca_bundle: text("ca.crt")?,
    })
}

impl Issued {
    fn cert_der(&self) -> Vec<u8> {
        CertificateDer::from_pem_slice(self.cert.as_bytes())
            .expect("a certificate in tls.crt")
            .to_vec()
    }

    /// When the serving certificate starts and stops being valid.
    fn validity(&self) -> (Timestamp, Timestamp) {
        let (_, pem) = x509_parser::pem::parse_x509_pem(self.cert.as_bytes()).expect("PEM");
        let cert = pem.parse_x509().expect("X.509");
        let at = |t: x509_parser::time::ASN1Time| Timestamp::from_second(t.timestamp()).expect("a time");
        (at(cert.validity().not_before), at(cert.validity().not_after))
    }

    fn not_after(&self) -> Timestamp {
        self.validity().1
    }
}

/// The certificates, each as the span it is valid for: what a failure message shows.
fn spans(certs: &[Issued]) -> Vec<String> {
    certs
        .iter()
        .map(|issued| {
            let (from, to) = issued.validity();
            format!("{from}..{to}")
        })
        .collect()
}

/// Every certificate the Secret held, in order, each once, from the moment this starts watching.
struct SecretHistory {
    certs: Arc<Mutex<Vec<Issued>>>,
    task: tokio::task::AbortHandle,
}

impl SecretHistory {
    fn start(scene: &Scene) -> SecretHistory {
        let secrets: Api<Secret> = scene.api();
        let config = watcher::Config::default().fields(&format!("metadata.name={SECRET}"));
        let certs: Arc<Mutex<Vec<Issued>>> = Arc::default();
        let seen = certs.clone();
        let task = tokio::spawn(async move {
            let mut changes = watcher(secrets, config)
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(secret)) = changes.next().await {
                let Some(now) = issued(&secret) else { continue };
                let mut seen = seen.lock().unwrap();
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
            }
        })
        .abort_handle();
        SecretHistory { certs, task }
    }

    fn certs(&self) -> Vec<Issued> {
        self.certs.lock().unwrap().clone()
    }
}

impl Drop for SecretHistory {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The certificate the webhook port at `addr` serves, after a handshake that trusts only `ca_bundle`
/// and checks the name the API server dials the Service by, `<service>.<namespace>.svc`.
async fn served(addr: SocketAddr, ca_bundle: &str, namespace: &str) -> Result<Vec<u8>, String> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle.as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(format!("{SERVICE}.{namespace}.svc")).map_err(|e| e.to_string())?;
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    };
    let tls = tokio::time::timeout(Duration::from_secs(10), handshake)
        .await
        .map_err(|_| "the handshake timed out".to_owned())?
        .map_err(|e| e.to_string())?;
    let (_, connection) = tls.get_ref();
    let chain = connection.peer_certificates().ok_or("no certificate served")?;
    Ok(chain[0].to_vec())
}

/// Waits until every port in `ports` serves `issued`'s certificate under its CA.
async fn all_serve(ports: &[SocketAddr], issued: &Issued, namespace: &str, what: &str, within: Duration) {
    let wanted = issued.cert_der();
    eventually(what, within, || async {
        for port in ports {
            (served(*port, &issued.ca_bundle, namespace).await.ok()? == wanted).then_some(())?;
        }
        Some(())
    })
    .await;
}

async fn the_certificate_is_issued_once_for_both_replicas_and_renewed_in_place_before_it_expires(
    backend: Backend,
) {
    let scene = Scene::start(backend, "webhook-cert-renewal").await;
    create_empty_secret(&scene).await;
    let history = SecretHistory::start(&scene);
    let (mut first, mut second) = (
        issuing_replica(&scene, "first", VALIDITY),
        issuing_replica(&scene, "second", VALIDITY),
    );
    let ports = [
        first.bound_address("serving webhooks").await,
        second.bound_address("serving webhooks").await,
    ];

    // Issued once: both replicas serve what the Secret holds, and the Secret was written once.
    let secrets: Api<Secret> = scene.api();
    let initial = eventually("a certificate in the Secret", STARTED_WITHIN, || async {
        issued(&secrets.get(SECRET).await.ok()?)
    })
    .await;
    all_serve(
        &ports,
        &initial,
        &scene.namespace,
        "both replicas to serve the Secret's certificate",
        SLACK,
    )
    .await;

    // Kept while more than a third of its validity is left: the Secret holds it, the ports serve it.
    // The renewal's clock is the certificate's own (this machine's), read to the second.
    let due = initial.not_after() - SignedDuration::try_from(RENEWED_WITH_LEFT).unwrap();
    let kept_until = due - SignedDuration::from_secs(1);
    while Timestamp::now() < kept_until {
        let certs = history.certs();
        assert!(
            certs == [initial.clone()],
            "the certificate was replaced at {}, before a third of its validity was left (at {due}); \
             the Secret held {:?}; logs:\n{}\n---\n{}",
            Timestamp::now(),
            spans(&certs),
            first.log_so_far(),
            second.log_so_far()
        );
        for port in ports {
            assert_eq!(
                served(port, &initial.ca_bundle, &scene.namespace).await,
                Ok(initial.cert_der()),
                "{port} serves the certificate issued first"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Renewed within a check of being due, in the Secret and on both ports, with no restart.
    let left = due.duration_since(Timestamp::now()).max(SignedDuration::ZERO);
    let renewed_within = Duration::try_from(left).unwrap() + CHECKED_EVERY + SLACK;
    let renewed = eventually("a renewed certificate in the Secret", renewed_within, || async {
        issued(&secrets.get(SECRET).await.ok()?).filter(|now| now.cert != initial.cert)
    })
    .await;
    assert_eq!(
        renewed.ca_bundle, initial.ca_bundle,
        "a renewal keeps the CA the API server trusts"
    );
    assert!(renewed.not_after() > initial.not_after());
    all_serve(
        &ports,
        &renewed,
        &scene.namespace,
        "both replicas to serve the renewed certificate",
        CHECKED_EVERY + SLACK,
    )
    .await;
    let certs = history.certs();
    assert!(
        certs == [initial, renewed],
        "each certificate written to the Secret once: {:?}",
        spans(&certs)
    );
    for replica in [&mut first, &mut second] {
        assert!(
            replica.exit_within(Duration::ZERO).await.is_none(),
            "a replica exited:\n{}",
            replica.log_so_far()
        );
    }
}

/// A webhook client configuration calling `service` in `namespace`.
fn calling(service: &str, namespace: &str) -> serde_json::Value {
    json!({"service": {"name": service, "namespace": namespace, "path": "/x", "port": 443}})
}

/// An admission webhook named `name` calling `client_config` for a group nothing here writes, so that
/// the API server never calls it.
fn webhook(name: &str, client_config: serde_json::Value) -> serde_json::Value {
    json!({
        "name": name, "clientConfig": client_config,
        "rules": [{"apiGroups": ["nothing.example.com"], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["nothings"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"],
    })
}

/// A CRD of `plural` in `group` converting through `client_config`.
fn crd_converting_through(
    plural: &str,
    group: &str,
    client_config: serde_json::Value,
) -> CustomResourceDefinition {
    let kind = format!("{}{}", plural[..1].to_uppercase(), &plural[1..plural.len() - 1]);
    serde_json::from_value(json!({
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": &plural[..plural.len() - 1], "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1"]}},
        }
    }))
    .expect("a CRD")
}

fn ca_bundle(client_config: Option<&serde_json::Value>) -> Option<String> {
    let encoded = client_config?.get("caBundle")?.as_str()?;
    let bytes: k8s_openapi::ByteString = serde_json::from_value(json!(encoded)).ok()?;
    String::from_utf8(bytes.0).ok()
}

async fn the_ca_goes_into_what_calls_the_webhook_service_and_nowhere_else(backend: Backend) {
    let scene = Scene::start(backend, "webhook-ca-injection").await;
    let ns = scene.namespace.as_str();
    create_empty_secret(&scene).await;
    // Beside each place that calls the Service, one that calls another Service, or a Service of the
    // same name in another namespace.
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": format!("{ns}-mutating")},
        "webhooks": [webhook("ours.example.com", calling(SERVICE, ns)),
                     webhook("theirs.example.com", calling("another-service", ns))],
    }))
    .unwrap();
    let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": format!("{ns}-validating")},
        "webhooks": [webhook("elsewhere.example.com", calling(SERVICE, "elsewhere"))],
    }))
    .unwrap();
    let mutating_api: Api<MutatingWebhookConfiguration> = Api::all(scene.client.clone());
    let validating_api: Api<ValidatingWebhookConfiguration> = Api::all(scene.client.clone());
    mutating_api
        .create(&PostParams::default(), &mutating)
        .await
        .unwrap();
    validating_api
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();
    let group = "certificates.example.com";
    let crds: Api<CustomResourceDefinition> = Api::all(scene.client.clone());
    for crd in [
        crd_converting_through("widgets", group, calling(SERVICE, ns)),
        crd_converting_through("gadgets", group, calling("another-service", ns)),
    ] {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }

    let mut operator = issuing_replica(&scene, "only", VALIDITY);
    let port = operator.bound_address("serving webhooks").await;
    let secrets: Api<Secret> = scene.api();
    let issued = eventually("a certificate in the Secret", STARTED_WITHIN, || async {
        issued(&secrets.get(SECRET).await.ok()?)
    })
    .await;
    // The CA the API server is given is one that the served certificate verifies against.
    assert_eq!(served(port, &issued.ca_bundle, ns).await, Ok(issued.cert_der()));

    // One pass of the injection patches the admission configurations, then the CRDs: once the CRD
    // calling the Service has the CA, every place was looked at.
    let client_config = |config: &serde_json::Value, at: &str| config.pointer(at).cloned();
    let (mutating, widgets) = eventually("the CA in what calls the Service", STARTED_WITHIN, || async {
        let mutating = serde_json::to_value(mutating_api.get(&format!("{ns}-mutating")).await.ok()?).ok()?;
        let widgets = serde_json::to_value(crds.get(&format!("widgets.{group}")).await.ok()?).ok()?;
        let ours = ca_bundle(client_config(&mutating, "/webhooks/0/clientConfig").as_ref());
        let crd = ca_bundle(client_config(&widgets, "/spec/conversion/webhook/clientConfig").as_ref());
        (ours.as_ref() == Some(&issued.ca_bundle) && crd.as_ref() == Some(&issued.ca_bundle))
            .then_some((mutating, widgets))
    })
    .await;
    assert_eq!(
        mutating["webhooks"][0]["name"], "ours.example.com",
        "the CA went to the entry calling the Service"
    );
    assert_eq!(widgets["spec"]["conversion"]["strategy"], "Webhook");
    assert_eq!(
        ca_bundle(client_config(&mutating, "/webhooks/1/clientConfig").as_ref()),
        None,
        "the entry calling another Service has no CA of ours"
    );
    let validating =
        serde_json::to_value(validating_api.get(&format!("{ns}-validating")).await.unwrap()).unwrap();
    assert_eq!(
        ca_bundle(client_config(&validating, "/webhooks/0/clientConfig").as_ref()),
        None,
        "the entry calling a Service of the same name in another namespace has no CA of ours"
    );
    let gadgets = serde_json::to_value(crds.get(&format!("gadgets.{group}")).await.unwrap()).unwrap();
    assert_eq!(
        ca_bundle(client_config(&gadgets, "/spec/conversion/webhook/clientConfig").as_ref()),
        None,
        "the CRD converting through another Service has no CA of ours"
    );
    assert!(
        operator.exit_within(Duration::ZERO).await.is_none(),
        "{}",
        operator.log_so_far()
    );
}

testenv::each_control_plane!(
    the_certificate_is_issued_once_for_both_replicas_and_renewed_in_place_before_it_expires,
    the_ca_goes_into_what_calls_the_webhook_service_and_nowhere_else,
);
