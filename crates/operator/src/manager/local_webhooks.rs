//! `operator run` outside a cluster (`make run`): the webhooks served from this machine, so that the
//! tutorial's steps (`make install`, `make run`, then `kubectl apply` of a v1alpha1 VoteConfig) work
//! against an API server that runs here (the embedded one of `make apiserver`, or a kube-apiserver on
//! this machine).
//!
//! `make install` installs VoteConfig's CRD converting through the webhook Service of `config/webhook`,
//! which exists only where the operator is deployed. So when the CRD's conversion calls nothing that
//! exists, the run serves the webhooks on loopback under a CA made for it, and points the conversion
//! and the admission configurations at them, as `operator dev` does. On its way out it puts the
//! conversion back where it found it (for an earlier run's URL: where `make install` points it) and
//! removes the configurations, so that a cluster with no operator running is as `make install` left
//! it: v1 works, v1alpha1 waits for the next run. A run that is killed leaves its URL behind; the next
//! run replaces it, `make install` resets it, `make uninstall` removes it all.
//!
//! An API server elsewhere (a remote cluster, a VM) cannot call this machine's loopback: the run says
//! so at start, and what to do, rather than the API server's error at the first apply. One that runs
//! in a container with a loopback of its own (kind) is caught by a dry-run VoteConfig sent as
//! v1alpha1 once the webhooks are wired: if the API server cannot call them, the run says so.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Service,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, WebhookClientConfig},
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};

use serving::rustls;

use super::{
    cli::{LocalWebhooks, RunArgs},
    crds,
};
use crate::{
    Error, Result,
    api::vote_config::GROUP,
    webhook::{
        configurations::{self, Endpoint},
        server::WebhookServer,
        tls::{self, CertificateSlot, ThrowawayCa},
    },
};

/// The CRD whose conversion the run wires.
const VOTE_CONFIG_CRD: &str = "voteconfigs.voting.schoolofdevops.com";
/// The field manager of what the run applies: `operator install`'s, so that each replaces the
/// other's conversion rather than leaving a URL beside a Service.
const FIELD_MANAGER: &str = "operator";
/// How long putting the conversion back may take on the way out: a gone API server must not hold up
/// the exit.
const RESTORE_WITHIN: Duration = Duration::from_secs(10);

/// Whether `args` leave the webhooks to this module: no certificate configured (no Secret to issue it
/// into, none in the default directory) and local webhooks not turned off.
pub fn wanted(args: &RunArgs) -> bool {
    args.local_webhooks != LocalWebhooks::Never
        && args.webhook_cert_secret.is_empty()
        && args.webhook_cert_dir.as_os_str() == super::cli::DEFAULT_WEBHOOK_CERT_DIR
        && !crate::webhook::tls::present_in(&args.webhook_cert_dir)
}

/// The webhooks served from this machine, and what to put back when the run ends.
pub struct Wired {
    client: kube::Client,
    /// `https://127.0.0.1:9443`: what the CRD and the configurations call.
    base: String,
    /// What VoteConfig's conversion calls again once the run ends.
    restore: WebhookClientConfig,
}

/// Serves the webhooks on this machine with `serve` (the manager's webhook server, given where to
/// listen and the TLS to serve) and wires them up when [`plan`] says so; otherwise says why none are
/// served, and returns `None`.
pub async fn start(
    serve: impl AsyncFnOnce(SocketAddr, rustls::ServerConfig) -> Result<WebhookServer>,
    client: &kube::Client,
    addr: SocketAddr,
    args: &RunArgs,
) -> Result<Option<Wired>> {
    // The run talks to the cluster of its kubeconfig; in a pod (no kubeconfig) there is nothing local.
    let Ok(config) = kube::Config::from_kubeconfig(&Default::default()).await else {
        tracing::warn!(dir = %args.webhook_cert_dir.display(), "no webhook certificate: webhooks not served");
        return Ok(None);
    };
    let server = config.cluster_url.to_string();
    let host = config.cluster_url.host().unwrap_or_default();
    let port = config.cluster_url.port_u16().unwrap_or(443);
    if args.webhook_host.is_empty() && !on_this_machine(host, port).await {
        tracing::warn!(
            api_server = %server,
            "the API server is not on this machine, so it cannot call webhooks served here on loopback: \
             none are served. Reading or writing VoteConfigs as v1alpha1 (conversion) and the admission \
             webhooks work only where the operator is deployed (make deploy). To serve them from here, \
             give --webhook-host an address of this machine that the cluster reaches (and \
             --webhook-bind-address one of its interfaces)"
        );
        return Ok(None);
    }
    let restore = match plan(client, args.local_webhooks).await {
        Plan::Wire { restore } => restore,
        Plan::Leave(reason) => {
            tracing::warn!("webhooks not served: {reason}");
            return Ok(None);
        }
    };

    let (bind, host) = listener(addr, &args.webhook_host);
    let ca = ThrowawayCa::generate(&certificate_names(&host))?;
    let slot = CertificateSlot::new(serving::certificates::certified_key_from_pem(
        &ca.cert_pem,
        &ca.key_pem,
    )?);
    let server_tls = tls::server_config_with(Arc::new(slot))?;
    let listening = serve(bind, server_tls).await?;
    let base = format!("https://{}", host_port(&host, listening.bound.port()));
    let endpoint = Endpoint::Url {
        base: base.clone(),
        ca_pem: ca.ca_pem,
    };
    let crd = vote_config_crd(&endpoint)?;
    crds::install(client, vec![crd]).await?;
    register_admission(client, &endpoint, FIELD_MANAGER).await?;
    tracing::info!(
        webhooks = %base,
        api_server = %server,
        "serving the webhooks on this machine under a CA made for this run: VoteConfig's conversion and \
         the admission webhooks point here until the run ends"
    );
    let namespace = Some(args.watch_namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    tokio::spawn(check_called(client.clone(), namespace, base.clone()));
    Ok(Some(Wired {
        client: client.clone(),
        base,
        restore,
    }))
}

/// What the run does with the webhooks.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Serve them here; when the run ends, VoteConfig's conversion calls `restore` again.
    Wire { restore: WebhookClientConfig },
    /// Leave the cluster as it is, for this reason.
    Leave(String),
}

/// Where VoteConfig's CRD sends conversion requests now.
#[derive(Debug, PartialEq)]
enum Conversion {
    NotInstalled,
    /// No webhook: the CRD was installed without one (the versions then differ only in apiVersion).
    NoWebhook,
    Service(WebhookClientConfig),
    Url(WebhookClientConfig),
}

fn conversion_of(crd: Option<&CustomResourceDefinition>) -> Conversion {
    let Some(crd) = crd else {
        return Conversion::NotInstalled;
    };
    let client_config = crd
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.clone());
    match client_config {
        Some(config) if config.service.is_some() => Conversion::Service(config),
        Some(config) if config.url.is_some() => Conversion::Url(config),
        _ => Conversion::NoWebhook,
    }
}

async fn plan(client: &kube::Client, mode: LocalWebhooks) -> Plan {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = match crds.get_opt(VOTE_CONFIG_CRD).await {
        Ok(crd) => crd,
        Err(error) => return Plan::Leave(format!("VoteConfig's CRD cannot be read: {error}")),
    };
    let conversion = conversion_of(crd.as_ref());
    let service_exists = match &conversion {
        Conversion::Service(config) if mode == LocalWebhooks::Auto => {
            let service = config
                .service
                .as_ref()
                .map(|s| (s.namespace.clone(), s.name.clone()));
            let (namespace, name) = service.unwrap_or_default();
            let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
            match services.get_opt(&name).await {
                Ok(found) => Some(found.is_some()),
                Err(error) => {
                    return Plan::Leave(format!(
                        "whether the Service {namespace}/{name} that VoteConfig's conversion calls exists \
                         cannot be told ({error}); --local-webhooks=always serves them from here"
                    ));
                }
            }
        }
        _ => None,
    };
    decide(mode, conversion, service_exists)
}

/// The plan for the CRD's `conversion` under `mode`; `service_exists` says, in `auto` mode, whether
/// the Service a conversion calls exists.
fn decide(mode: LocalWebhooks, conversion: Conversion, service_exists: Option<bool>) -> Plan {
    let named = |config: &WebhookClientConfig| {
        let service = config.service.as_ref();
        format!(
            "{}/{}",
            service.map_or("", |s| s.namespace.as_str()),
            service.map_or("", |s| s.name.as_str())
        )
    };
    match (mode, conversion) {
        (LocalWebhooks::Never, _) => Plan::Leave("--local-webhooks=never".into()),
        (_, Conversion::NotInstalled) => Plan::Leave(
            "VoteConfig's CRD is not installed: run `make install` (operator install), then start again"
                .into(),
        ),
        (LocalWebhooks::Auto, Conversion::NoWebhook) => Plan::Leave(
            "VoteConfig's CRD converts without a webhook (it was not installed by `make install`)".into(),
        ),
        (LocalWebhooks::Auto, Conversion::Service(config)) if service_exists != Some(false) => {
            Plan::Leave(format!(
                "VoteConfig's conversion calls the Service {}, which exists: the operator deployed \
                 there serves the webhooks (--local-webhooks=always serves them from here instead)",
                named(&config)
            ))
        }
        (_, Conversion::Service(config)) => Plan::Wire { restore: config },
        // An earlier run's URL, or no webhook at all: afterwards, where `make install` points it.
        (_, Conversion::Url(_) | Conversion::NoWebhook) => Plan::Wire {
            restore: in_cluster_conversion(),
        },
    }
}

/// The conversion `make install` installs: through the webhook Service of `config/webhook`.
fn in_cluster_conversion() -> WebhookClientConfig {
    vote_config_crd(&Endpoint::InCluster)
        .ok()
        .and_then(|crd| crd.spec.conversion?.webhook?.client_config)
        .unwrap_or_default()
}

/// VoteConfig's CRD as `operator install` applies it, converting through `endpoint`.
fn vote_config_crd(endpoint: &Endpoint) -> Result<CustomResourceDefinition> {
    configurations::crds(endpoint)
        .into_iter()
        .find(|crd| crd.spec.group == GROUP)
        .ok_or_else(|| Error::Config("no VoteConfig CRD among the operator's CRDs".into()))
}

/// Whether the API server at `host` runs on this machine, so that it can call a listener on loopback:
/// every address the host name resolves to is loopback or one of this machine's. A name that does
/// not resolve here is taken to be elsewhere.
async fn on_this_machine(host: &str, port: u16) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => match tokio::net::lookup_host((host, port)).await {
            Ok(found) => found.map(|a| a.ip()).collect(),
            Err(_) => Vec::new(),
        },
    };
    !addresses.is_empty() && addresses.into_iter().all(is_this_machines)
}

/// Loopback, or the address of one of this machine's interfaces. Binding a socket to an address
/// succeeds only for those (EADDRNOTAVAIL otherwise), which tells it without listing the interfaces.
fn is_this_machines(ip: IpAddr) -> bool {
    ip.is_loopback() || ip.is_unspecified() || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// Where to listen, and the host the API server dials, from `--webhook-bind-address` (`addr`) and
/// `--webhook-host`. With no host: loopback, an every-interface address narrowed to it (a laptop on a
/// shared network should not publish the webhooks). With one: the bind address as given.
fn listener(addr: SocketAddr, webhook_host: &str) -> (SocketAddr, String) {
    if !webhook_host.is_empty() {
        return (addr, webhook_host.to_owned());
    }
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    (SocketAddr::new(ip, addr.port()), ip.to_string())
}

/// `host:port`, an IPv6 address in brackets as URLs write it.
fn host_port(host: &str, port: u16) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        _ => format!("{host}:{port}"),
    }
}

/// The names the serving certificate is for: the host the API server dials, and loopback's.
fn certificate_names(host: &str) -> Vec<&str> {
    let mut names = vec![host];
    for loopback in ["127.0.0.1", "::1", "localhost"] {
        if !names.contains(&loopback) {
            names.push(loopback);
        }
    }
    names
}

/// Applies the mutating and validating configurations pointing at `endpoint`, as `field_manager`.
pub(super) async fn register_admission(
    client: &kube::Client,
    endpoint: &Endpoint,
    field_manager: &str,
) -> Result<()> {
    let apply = PatchParams::apply(field_manager).force();
    let mutating = configurations::mutating(endpoint);
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(configurations::MUTATING_NAME, &apply, &Patch::Apply(&mutating))
        .await?;
    let validating = configurations::validating(endpoint);
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            configurations::VALIDATING_NAME,
            &apply,
            &Patch::Apply(&validating),
        )
        .await?;
    Ok(())
}

/// Sends a v1alpha1 VoteConfig as a dry run, which the API server converts to v1 through the
/// conversion webhook and passes through the mutating one, storing nothing; says whether it could
/// call them. The API server may wait for a webhook that does not answer up to its timeout: this runs
/// beside the controllers.
async fn check_called(client: kube::Client, namespace: String, base: String) {
    let gvk = GroupVersionKind::gvk(GROUP, "v1alpha1", "VoteConfig");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "voteconfigs");
    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &resource);
    let probe = serde_json::json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"generateName": "local-webhooks-check-"},
        "spec": {"options": [
            {"id": "a", "label": "Yes", "color": "#FF6B6B"},
            {"id": "b", "label": "No", "color": "#4ECDC4"}
        ]}
    });
    let Ok(probe) = serde_json::from_value::<DynamicObject>(probe) else {
        return;
    };
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match api.create(&dry_run, &probe).await {
        Ok(_) => tracing::info!(
            webhooks = %base,
            "the API server calls the webhooks here: VoteConfigs convert between v1alpha1 and v1"
        ),
        Err(error) if error.to_string().contains("webhook") => tracing::warn!(
            webhooks = %base,
            %error,
            "the API server cannot call the webhooks served here: it does not reach this machine at that \
             address (an API server in a container or elsewhere). Give --webhook-host an address of this \
             machine that it reaches, or deploy the operator (make deploy)"
        ),
        // Not about the webhooks (no such namespace, no right to create there): nothing learned.
        Err(error) => tracing::debug!(%error, "the webhook check could not be sent"),
    }
}

impl Wired {
    /// Puts VoteConfig's conversion back and removes the admission configurations, unless another run
    /// has pointed them elsewhere since.
    pub async fn restore(self) {
        match tokio::time::timeout(RESTORE_WITHIN, self.put_back()).await {
            Ok(Ok(())) => tracing::info!(
                "VoteConfig's conversion points where it did before this run, and the admission webhooks \
                 are unregistered: reading or writing VoteConfigs as v1alpha1 fails until the next run"
            ),
            Ok(Err(error)) => tracing::warn!(
                %error,
                "VoteConfig's conversion still points at this run's webhooks: the next run replaces it, \
                 `make install` resets it"
            ),
            Err(_) => tracing::warn!(
                "the API server did not answer within {} s: VoteConfig's conversion still points at this \
                 run's webhooks; the next run replaces it, `make install` resets it",
                RESTORE_WITHIN.as_secs()
            ),
        }
    }

    async fn put_back(&self) -> Result<()> {
        let ours = |url: Option<&String>| url.is_some_and(|u| u.starts_with(&self.base));
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let current = crds.get_opt(VOTE_CONFIG_CRD).await?;
        if let Conversion::Url(config) = conversion_of(current.as_ref())
            && ours(config.url.as_ref())
        {
            let mut crd = vote_config_crd(&Endpoint::InCluster)?;
            if let Some(webhook) = crd.spec.conversion.as_mut().and_then(|c| c.webhook.as_mut()) {
                webhook.client_config = Some(self.restore.clone());
            }
            crds::install(&self.client, vec![crd]).await?;
        }
        let mutating: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        if let Some(found) = mutating.get_opt(configurations::MUTATING_NAME).await?
            && found
                .webhooks
                .iter()
                .flatten()
                .any(|w| ours(w.client_config.url.as_ref()))
        {
            mutating
                .delete(configurations::MUTATING_NAME, &Default::default())
                .await?;
        }
        let validating: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        if let Some(found) = validating.get_opt(configurations::VALIDATING_NAME).await?
            && found
                .webhooks
                .iter()
                .flatten()
                .any(|w| ours(w.client_config.url.as_ref()))
        {
            validating
                .delete(configurations::VALIDATING_NAME, &Default::default())
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ServiceReference;

    use super::*;

    fn service(namespace: &str, name: &str) -> WebhookClientConfig {
        WebhookClientConfig {
            service: Some(ServiceReference {
                namespace: namespace.into(),
                name: name.into(),
                path: Some("/convert".into()),
                port: Some(443),
            }),
            ..Default::default()
        }
    }

    fn url(base: &str) -> WebhookClientConfig {
        WebhookClientConfig {
            url: Some(format!("{base}/convert")),
            ..Default::default()
        }
    }

    #[test]
    fn the_conversion_is_read_from_the_crd() {
        assert_eq!(conversion_of(None), Conversion::NotInstalled);
        let plain = crate::api::vote_config::crd();
        assert_eq!(conversion_of(Some(&plain)), Conversion::NoWebhook);
        let installed = vote_config_crd(&Endpoint::InCluster).unwrap();
        assert_eq!(
            conversion_of(Some(&installed)),
            Conversion::Service(service("system", "webhook-service"))
        );
        let local = vote_config_crd(&Endpoint::Url {
            base: "https://127.0.0.1:9443".into(),
            ca_pem: String::new(),
        })
        .unwrap();
        assert!(
            matches!(conversion_of(Some(&local)), Conversion::Url(c) if c.url.as_deref() == Some("https://127.0.0.1:9443/convert"))
        );
    }

    #[test]
    fn auto_wires_only_a_conversion_that_calls_nothing_and_puts_back_what_it_found() {
        let installed = service("system", "webhook-service");
        // After `make install`: the Service it names does not exist.
        assert_eq!(
            decide(
                LocalWebhooks::Auto,
                Conversion::Service(installed.clone()),
                Some(false)
            ),
            Plan::Wire {
                restore: installed.clone()
            }
        );
        // Deployed: its pods serve the webhooks.
        let deployed = service("operator-system", "operator-webhook-service");
        let Plan::Leave(reason) = decide(
            LocalWebhooks::Auto,
            Conversion::Service(deployed.clone()),
            Some(true),
        ) else {
            panic!("a deployed operator's conversion is left alone")
        };
        assert!(
            reason.contains("operator-system/operator-webhook-service"),
            "{reason}"
        );
        // An earlier run's URL: replaced, and afterwards where `make install` points it.
        assert_eq!(
            decide(
                LocalWebhooks::Auto,
                Conversion::Url(url("https://127.0.0.1:9443")),
                None
            ),
            Plan::Wire {
                restore: installed.clone()
            }
        );
        // Not ours to change, or nothing to change.
        assert!(matches!(
            decide(LocalWebhooks::Auto, Conversion::NoWebhook, None),
            Plan::Leave(_)
        ));
        let Plan::Leave(reason) = decide(LocalWebhooks::Always, Conversion::NotInstalled, None) else {
            panic!("no CRD, nothing to wire")
        };
        assert!(reason.contains("make install"), "{reason}");
        // Always: even a deployed operator's, put back afterwards.
        assert_eq!(
            decide(LocalWebhooks::Always, Conversion::Service(deployed.clone()), None),
            Plan::Wire { restore: deployed }
        );
        assert!(matches!(
            decide(LocalWebhooks::Never, Conversion::Service(installed), Some(false)),
            Plan::Leave(_)
        ));
    }

    #[test]
    fn without_a_host_the_listener_is_on_loopback() {
        let at = |addr: &str, host: &str| {
            let (bind, host) = listener(addr.parse().unwrap(), host);
            (bind.to_string(), host)
        };
        assert_eq!(
            at("0.0.0.0:9443", ""),
            ("127.0.0.1:9443".into(), "127.0.0.1".into())
        );
        assert_eq!(at("[::]:9443", ""), ("[::1]:9443".into(), "::1".into()));
        assert_eq!(at("127.0.0.1:0", ""), ("127.0.0.1:0".into(), "127.0.0.1".into()));
        assert_eq!(
            at("0.0.0.0:9443", "dev.example.internal"),
            ("0.0.0.0:9443".into(), "dev.example.internal".into())
        );
        assert_eq!(host_port("::1", 9443), "[::1]:9443");
        assert_eq!(host_port("192.0.2.7", 9443), "192.0.2.7:9443");
        assert_eq!(
            host_port("dev.example.internal", 9443),
            "dev.example.internal:9443"
        );
        assert_eq!(certificate_names("127.0.0.1"), ["127.0.0.1", "::1", "localhost"]);
        assert_eq!(
            certificate_names("192.0.2.7"),
            ["192.0.2.7", "127.0.0.1", "::1", "localhost"]
        );
    }

    #[tokio::test]
    async fn an_api_server_is_on_this_machine_only_at_its_addresses() {
        assert!(on_this_machine("127.0.0.1", 6443).await);
        assert!(on_this_machine("[::1]", 6443).await);
        assert!(on_this_machine("localhost", 6443).await);
        // TEST-NET-1 (RFC 5737): never an address of this machine.
        assert!(!on_this_machine("192.0.2.1", 6443).await);
        // `.invalid` never resolves (RFC 6761).
        assert!(!on_this_machine("api.cluster.invalid", 6443).await);
    }

    #[test]
    fn local_webhooks_stand_aside_for_a_configured_certificate() {
        use clap::Parser;
        let run = |flags: &[&str]| {
            let cli =
                super::super::cli::Cli::try_parse_from(["operator", "run"].iter().chain(flags)).unwrap();
            let super::super::cli::Command::Run(args) = cli.command else {
                panic!("run")
            };
            args
        };
        assert_eq!(run(&[]).local_webhooks, LocalWebhooks::Auto);
        assert!(!wanted(&run(&["--local-webhooks", "never"])));
        assert!(!wanted(&run(&["--webhook-cert-secret", "certs"])));
        assert!(!wanted(&run(&["--webhook-cert-dir", "/somewhere/else"])));
    }
}
