//! Webhooks under test, as envtest's `WebhookInstallOptions` installs them: the project's webhook
//! configurations (its `config/webhook` YAML, or Rust values) and the conversion webhooks of its CRDs
//! pointed at a server the test runs on a loopback port, under a CA made for the run.
//!
//! kube-envtest serves nothing: it picks the port, makes the certificate, rewrites every
//! `clientConfig` (a Service reference becomes `https://127.0.0.1:PORT<path>`, and every `caBundle`
//! the run's CA) and installs the configurations; the test serves its webhooks on
//! [`WebhookServing::addr`] with that certificate.

mod client_config;
mod manifests;
mod serving;

use std::{
    net::{IpAddr, Ipv4Addr},
    path::PathBuf,
};

use k8s_openapi::{
    api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};

pub use self::{client_config::DEFAULT_CONVERSION_PATH, serving::WebhookServing};
use self::{
    manifests::{Configurations, Read},
    serving::Reservation,
};
use crate::{
    Error, Result,
    crds::{self, DEFAULT_ESTABLISH_TIMEOUT},
    manifests::Crd,
};

/// The field manager the configurations are applied as: a test's own later apply does not conflict.
const FIELD_MANAGER: &str = "kube-envtest";

/// The webhooks a test serves itself, as envtest's `WebhookInstallOptions`: where their configurations
/// come from, and where the test's server is to listen. Give it to
/// [`crate::Builder::webhook_install_options`] (the embedded server), or [`install`] it on any API
/// server a [`kube::Client`] reaches.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use kube_envtest::{Environment, WebhookInstallOptions};
///
/// let env = Environment::builder()
///     .crd_paths(["config/crd"])
///     .webhook_install_options(WebhookInstallOptions::default().paths(["config/webhook"]))
///     .start()
///     .await?;
/// let serving = env.webhook_serving().expect("webhooks were asked for");
/// // Serve the webhooks on serving.addr() with serving.server_config()?, or point an operator's
/// // `--webhook-cert-dir` at serving.cert_dir().
/// # Ok(()) }
/// ```
///
/// [`install`]: WebhookInstallOptions::install
#[derive(Debug, Clone)]
pub struct WebhookInstallOptions {
    paths: Vec<PathBuf>,
    mutating: Vec<MutatingWebhookConfiguration>,
    validating: Vec<ValidatingWebhookConfiguration>,
    host: IpAddr,
    port: Option<u16>,
}

impl Default for WebhookInstallOptions {
    fn default() -> Self {
        WebhookInstallOptions {
            paths: Vec::new(),
            mutating: Vec::new(),
            validating: Vec::new(),
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: None,
        }
    }
}

impl WebhookInstallOptions {
    /// Installs every MutatingWebhookConfiguration and ValidatingWebhookConfiguration in the YAML (or
    /// JSON) manifests at `paths` (envtest's `Paths`), e.g. `config/webhook`. Each path is a file or a
    /// directory whose `.yaml`, `.yml` and `.json` files are read (not its subdirectories); a file may
    /// hold several documents, and documents of other kinds (the webhook Service, a
    /// `kustomization.yaml`) are passed over. A missing path, a document that is not YAML or not a
    /// valid configuration, and one the server refuses are errors that name the file.
    pub fn paths(mut self, paths: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        self.paths.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Installs each of `configurations` (envtest's `MutatingWebhooks`).
    pub fn mutating_webhooks(
        mut self,
        configurations: impl IntoIterator<Item = MutatingWebhookConfiguration>,
    ) -> Self {
        self.mutating.extend(configurations);
        self
    }

    /// Installs each of `configurations` (envtest's `ValidatingWebhooks`).
    pub fn validating_webhooks(
        mut self,
        configurations: impl IntoIterator<Item = ValidatingWebhookConfiguration>,
    ) -> Self {
        self.validating.extend(configurations);
        self
    }

    /// The address the test's webhook server listens on and the API server calls (envtest's
    /// `LocalServingHost`): `127.0.0.1` by default. The certificate names it and `localhost`.
    pub fn local_serving_host(mut self, host: IpAddr) -> Self {
        self.host = host;
        self
    }

    /// The port the test's webhook server listens on (envtest's `LocalServingPort`); by default a free
    /// one is picked at start.
    pub fn local_serving_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Installs the webhooks on the API server `client` reaches (envtest's `Install`), for a server
    /// an [`crate::Environment`] did not start (a real control plane, a cluster): reads the manifests,
    /// makes the certificate, picks the port, points every webhook at it and applies the
    /// configurations. Install the CRDs whose conversion goes through the webhooks with
    /// [`WebhookServing::install_crds`]. kube-apiserver calls a configuration a moment after it is
    /// created (it learns of it through a watch); the embedded server, at once.
    pub async fn install(self, client: &Client) -> Result<WebhookServing> {
        self.prepare()?.install(client).await
    }

    /// The configurations read and pointed at the serving address, the certificate made, the port
    /// picked: all of start that can fail before anything is installed.
    pub(crate) fn prepare(self) -> Result<Prepared> {
        let mut configurations = manifests::read(&self.paths)?;
        configurations
            .mutating
            .extend(self.mutating.into_iter().map(Read::from));
        configurations
            .validating
            .extend(self.validating.into_iter().map(Read::from));
        let (serving, reservation) = WebhookServing::prepare(self.host, self.port)?;
        let target = serving.target();
        for read in &mut configurations.mutating {
            target.mutating(&mut read.configuration);
        }
        for read in &mut configurations.validating {
            target.validating(&mut read.configuration);
        }
        Ok(Prepared {
            serving,
            reservation,
            configurations,
        })
    }
}

/// Webhooks ready to install: [`WebhookInstallOptions::prepare`]'s result.
pub(crate) struct Prepared {
    serving: WebhookServing,
    reservation: Reservation,
    configurations: Configurations,
}

impl Prepared {
    pub fn serving(&self) -> &WebhookServing {
        &self.serving
    }

    /// Applies every configuration, then frees the port for the test's server.
    pub async fn install(self, client: &Client) -> Result<WebhookServing> {
        for read in &self.configurations.mutating {
            apply(client, read).await?;
        }
        for read in &self.configurations.validating {
            apply(client, read).await?;
        }
        drop(self.reservation);
        Ok(self.serving)
    }
}

/// Points the conversion webhook of each of `crds` whose strategy is `Webhook` at `serving`.
pub(crate) fn convert_through(serving: &WebhookServing, crds: &mut [Crd]) {
    let target = serving.target();
    for crd in crds {
        target.conversion(&mut crd.definition);
    }
}

impl WebhookServing {
    /// Installs `crds` on the API server `client` reaches and waits until each is Established, each
    /// CRD whose conversion strategy is `Webhook` converting through this server, as envtest's
    /// `InstallCRDs` does with its `WebhookOptions`. An [`crate::Environment`] built with webhooks
    /// does this for its own CRDs.
    pub async fn install_crds(
        &self,
        client: &Client,
        crds: impl IntoIterator<Item = CustomResourceDefinition>,
    ) -> Result<()> {
        let mut crds: Vec<Crd> = crds.into_iter().map(Crd::from).collect();
        convert_through(self, &mut crds);
        crds::install(client, &crds, DEFAULT_ESTABLISH_TIMEOUT).await
    }
}

/// Creates the configuration, or brings one of the same name to it (server-side apply, forced).
async fn apply<K>(client: &Client, read: &Read<K>) -> Result<()>
where
    K: k8s_openapi::Resource
        + Resource<DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    let kind = <K as k8s_openapi::Resource>::KIND;
    let name = read
        .configuration
        .meta()
        .name
        .clone()
        .ok_or_else(|| Error::UnnamedWebhookConfiguration {
            kind,
            file: read.file.clone(),
        })?;
    // As for CRDs: state read back from a server is not part of what is installed.
    let mut body = read.configuration.clone();
    body.meta_mut().managed_fields = None;
    body.meta_mut().resource_version = None;
    let api: Api<K> = Api::all(client.clone());
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map_err(|source| Error::InstallWebhook {
        kind,
        name: body.name_any(),
        file: read.file.clone(),
        source: Box::new(source),
    })?;
    Ok(())
}
