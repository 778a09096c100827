//! The objects that register the webhooks with the API server, generated here because the code knows
//! the paths, kinds and versions: the admission configurations and their Service (`operator webhooks`
//! prints them into `config/webhook/`), and the CRDs with VoteConfig's conversion stanza (`operator
//! crds`, into `config/crd/`). Dev mode and the tests create them pointing at their own listener.
//!
//! The settings, chosen one by one:
//! - failurePolicy: `Fail` for defaulting, because an object admitted without its defaults would keep
//!   colors that shift whenever another option changes; `Ignore` for PostgresWriter validation,
//!   because the controller makes the same check before it writes, so admission while the operator is
//!   down loses nothing but an early refusal. (Conversion has no policy: without the webhook, a
//!   VoteConfig cannot be read in the other version.)
//! - timeoutSeconds: 5 for defaulting (it computes, never waits); 10 for validation, room for one
//!   catalog query bounded by the database step timeout. Under the API server's 30 s request budget
//!   both leave room for the write itself.
//! - sideEffects `None`: neither writes anything, so dry-run requests are sent too.
//! - matchPolicy `Equivalent`: a VoteConfig written as v1alpha1 is converted and defaulted as v1.
//! - namespaceSelector: none (every namespace), and objectSelector: none. A label an author sets
//!   must not switch admission off for their object, and these kinds exist only for this operator.
//! - reinvocationPolicy `IfNeeded`: if a later mutating webhook removes a color, ours fills it again.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
            ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        core::v1::{Service, ServicePort, ServiceSpec},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        self as apiextensions, CustomResourceConversion, CustomResourceDefinition, WebhookConversion,
    },
    apimachinery::pkg::{apis::meta::v1::ObjectMeta, util::intstr::IntOrString},
};

use super::{CONVERSION_PATH, MUTATE_VOTE_CONFIG_PATH, VALIDATE_POSTGRES_WRITER_PATH};

/// The Service in front of the webhook port, before kustomize's prefix and namespace.
pub const SERVICE_NAME: &str = "webhook-service";
pub const SERVICE_NAMESPACE: &str = "system";
pub const VALIDATING_NAME: &str = "validating-webhook-configuration";
pub const MUTATING_NAME: &str = "mutating-webhook-configuration";
/// The container port the manager serves webhooks on (`--webhook-bind-address`'s default).
pub const WEBHOOK_PORT: i32 = 9443;

/// Where the API server reaches the webhooks.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// Through [`SERVICE_NAME`] in a cluster; the CA is injected by cert-manager (`config/certmanager`).
    InCluster,
    /// At `base` (`https://127.0.0.1:9443`), trusting the CA in `ca_pem`: dev mode and tests.
    Url { base: String, ca_pem: String },
}

impl Endpoint {
    fn admission(&self, path: &str) -> WebhookClientConfig {
        match self {
            Endpoint::InCluster => WebhookClientConfig {
                service: Some(ServiceReference {
                    name: SERVICE_NAME.into(),
                    namespace: SERVICE_NAMESPACE.into(),
                    path: Some(path.into()),
                    port: Some(443),
                }),
                ..Default::default()
            },
            Endpoint::Url { base, ca_pem } => WebhookClientConfig {
                url: Some(format!("{base}{path}")),
                ca_bundle: Some(ByteString(ca_pem.clone().into_bytes())),
                ..Default::default()
            },
        }
    }

    /// The same, in the type a CRD's conversion stanza takes.
    fn conversion(&self, path: &str) -> apiextensions::WebhookClientConfig {
        let admission = self.admission(path);
        apiextensions::WebhookClientConfig {
            ca_bundle: admission.ca_bundle,
            url: admission.url,
            service: admission.service.map(|s| apiextensions::ServiceReference {
                name: s.name,
                namespace: s.namespace,
                path: s.path,
                port: s.port,
            }),
        }
    }
}

/// Every CRD of [`crate::api::crds`], VoteConfig's converting between its versions through the
/// webhook at `endpoint`: [`Endpoint::InCluster`] is what `operator crds` and `operator install` use.
pub fn crds(endpoint: &Endpoint) -> Vec<CustomResourceDefinition> {
    let mut crds = crate::api::crds();
    let conversion = CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(endpoint.conversion(CONVERSION_PATH)),
            conversion_review_versions: vec!["v1".into()],
        }),
    };
    for crd in &mut crds {
        if crd.spec.group == crate::api::vote_config::GROUP {
            crd.spec.conversion = Some(conversion.clone());
        }
    }
    crds
}

fn rule(group: &str, resource: &str) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![group.into()]),
        api_versions: Some(vec!["v1".into()]),
        operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
        resources: Some(vec![resource.into()]),
        scope: Some("Namespaced".into()),
    }
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    }
}

pub fn mutating(endpoint: &Endpoint) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: named(MUTATING_NAME),
        webhooks: Some(vec![MutatingWebhook {
            name: "mvoteconfig-v1.voting.schoolofdevops.com".into(),
            admission_review_versions: vec!["v1".into()],
            client_config: endpoint.admission(MUTATE_VOTE_CONFIG_PATH),
            failure_policy: Some("Fail".into()),
            match_policy: Some("Equivalent".into()),
            reinvocation_policy: Some("IfNeeded".into()),
            rules: Some(vec![rule("voting.schoolofdevops.com", "voteconfigs")]),
            side_effects: "None".into(),
            timeout_seconds: Some(5),
            ..Default::default()
        }]),
    }
}

pub fn validating(endpoint: &Endpoint) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: named(VALIDATING_NAME),
        webhooks: Some(vec![ValidatingWebhook {
            name: "vpostgreswriter-v1.demo.yash.com".into(),
            admission_review_versions: vec!["v1".into()],
            client_config: endpoint.admission(VALIDATE_POSTGRES_WRITER_PATH),
            failure_policy: Some("Ignore".into()),
            match_policy: Some("Equivalent".into()),
            rules: Some(vec![rule("demo.yash.com", "postgreswriters")]),
            side_effects: "None".into(),
            timeout_seconds: Some(10),
            ..Default::default()
        }]),
    }
}

/// The Service the in-cluster configurations name, in front of every replica's webhook port.
pub fn service() -> Service {
    let selector = BTreeMap::from([("control-plane".to_owned(), "controller-manager".to_owned())]);
    Service {
        metadata: ObjectMeta {
            name: Some(SERVICE_NAME.into()),
            namespace: Some(SERVICE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some("webhook".into()),
                port: 443,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(WEBHOOK_PORT)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What `operator webhooks --out-dir config/webhook` writes: file name and YAML.
pub fn manifests() -> crate::Result<Vec<(String, String)>> {
    let header = "# Generated by `operator webhooks` (`make manifests`): do not edit. Each setting is \
                  explained in crates/operator/src/webhook/configurations.rs.\n";
    Ok(vec![
        ("service.yaml".into(), format!("{header}{}", to_yaml(&service())?)),
        (
            "manifests.yaml".into(),
            format!(
                "{header}{}---\n{}",
                to_yaml(&mutating(&Endpoint::InCluster))?,
                to_yaml(&validating(&Endpoint::InCluster))?
            ),
        ),
    ])
}

fn to_yaml<T: serde::Serialize>(value: &T) -> crate::Result<String> {
    serde_yaml::to_string(value).map_err(|e| crate::Error::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_vote_config_converts_through_the_webhook() {
        let in_cluster = crds(&Endpoint::InCluster);
        let vote_config = in_cluster
            .iter()
            .find(|c| c.spec.group == crate::api::vote_config::GROUP)
            .unwrap();
        let crd = serde_json::to_value(vote_config).unwrap();
        assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
        let service = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
        assert_eq!(
            (&service["name"], &service["path"], &service["port"]),
            (&"webhook-service".into(), &"/convert".into(), &443.into())
        );
        let others = in_cluster.iter().filter(|c| c.spec.conversion.is_some()).count();
        assert_eq!(others, 1, "the other kinds have one version each");

        let ca_pem = "-----BEGIN CERTIFICATE-----\n...".to_owned();
        let url = Endpoint::Url {
            base: "https://127.0.0.1:9443".into(),
            ca_pem: ca_pem.clone(),
        };
        let config = crds(&url)[1]
            .spec
            .conversion
            .clone()
            .unwrap()
            .webhook
            .unwrap()
            .client_config
            .unwrap();
        assert_eq!(config.url.as_deref(), Some("https://127.0.0.1:9443/convert"));
        assert_eq!(config.ca_bundle.unwrap().0, ca_pem.into_bytes());
        assert!(config.service.is_none());
    }
}
