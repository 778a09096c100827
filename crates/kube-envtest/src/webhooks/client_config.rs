//! Where the API server is to call each webhook: every `clientConfig` of a webhook configuration, and
//! the conversion webhook of a CRD, pointed at the test's server, as envtest's
//! `ModifyWebhookDefinitions` points them. Pure functions of a configuration and the serving address.

use k8s_openapi::{
    ByteString,
    api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        self as apiextensions, CustomResourceDefinition, WebhookConversion,
    },
};

/// The path a CRD's conversion webhook is called at when its manifest names none: controller-runtime's
/// conversion handler's, as envtest and kubebuilder's scaffolding use.
pub const DEFAULT_CONVERSION_PATH: &str = "/convert";

/// What a `clientConfig` becomes: the test's server at `base` (`https://127.0.0.1:PORT`), trusted
/// through `ca_pem`.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub base: String,
    pub ca_pem: String,
}

impl Target {
    /// A `service` reference becomes the URL of its path on the test's server (the Service's name,
    /// namespace and port mean nothing without a cluster network); a `url` is kept as written. Either
    /// way the `caBundle` becomes the test's CA.
    fn url_for(&self, service_path: Option<&str>) -> String {
        // kube-apiserver calls a Service without a path at `/`.
        let path = service_path.unwrap_or("/");
        format!("{}{path}", self.base)
    }

    fn ca_bundle(&self) -> ByteString {
        ByteString(self.ca_pem.as_bytes().to_vec())
    }

    pub fn admission(&self, config: &mut WebhookClientConfig) {
        if let Some(service) = config.service.take() {
            config.url = Some(self.url_for(service.path.as_deref()));
        }
        config.ca_bundle = Some(self.ca_bundle());
    }

    fn conversion_client(&self, config: &mut apiextensions::WebhookClientConfig) {
        if let Some(service) = config.service.take() {
            config.url = Some(self.url_for(service.path.as_deref()));
        }
        config.ca_bundle = Some(self.ca_bundle());
    }

    pub fn mutating(&self, configuration: &mut MutatingWebhookConfiguration) {
        for webhook in configuration.webhooks.iter_mut().flatten() {
            self.admission(&mut webhook.client_config);
        }
    }

    pub fn validating(&self, configuration: &mut ValidatingWebhookConfiguration) {
        for webhook in configuration.webhooks.iter_mut().flatten() {
            self.admission(&mut webhook.client_config);
        }
    }

    /// A CRD whose conversion strategy is `Webhook` converts through the test's server: its
    /// `clientConfig` as for admission, or, when the manifest gives none, [`DEFAULT_CONVERSION_PATH`]
    /// (and `conversionReviewVersions: [v1]` when it gives no webhook stanza at all). Other CRDs are
    /// left as they are.
    pub fn conversion(&self, crd: &mut CustomResourceDefinition) {
        let Some(conversion) = crd.spec.conversion.as_mut() else {
            return;
        };
        if conversion.strategy != "Webhook" {
            return;
        }
        let webhook = conversion.webhook.get_or_insert_with(|| WebhookConversion {
            client_config: None,
            conversion_review_versions: vec!["v1".into()],
        });
        let client = webhook
            .client_config
            .get_or_insert_with(|| apiextensions::WebhookClientConfig {
                url: Some(self.url_for(Some(DEFAULT_CONVERSION_PATH))),
                ..Default::default()
            });
        self.conversion_client(client);
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{
        api::admissionregistration::v1::{MutatingWebhook, ServiceReference, ValidatingWebhook},
        apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion,
    };

    use super::*;

    const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nCA\n";

    fn target() -> Target {
        Target {
            base: "https://127.0.0.1:4443".into(),
            ca_pem: CA_PEM.into(),
        }
    }

    fn service(path: Option<&str>) -> WebhookClientConfig {
        WebhookClientConfig {
            service: Some(ServiceReference {
                name: "webhook-service".into(),
                namespace: "system".into(),
                path: path.map(str::to_owned),
                port: Some(443),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_service_becomes_its_path_on_the_local_server_and_every_webhook_gets_the_ca() {
        let mut configuration = MutatingWebhookConfiguration {
            webhooks: Some(vec![
                MutatingWebhook {
                    client_config: service(Some("/mutate-v1-pod")),
                    ..Default::default()
                },
                MutatingWebhook {
                    client_config: service(None),
                    ..Default::default()
                },
                MutatingWebhook {
                    client_config: WebhookClientConfig {
                        url: Some("https://elsewhere.example.com/hook".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };

        target().mutating(&mut configuration);

        let urls: Vec<Option<String>> = configuration
            .webhooks
            .iter()
            .flatten()
            .map(|w| w.client_config.url.clone())
            .collect();
        assert_eq!(
            urls,
            [
                Some("https://127.0.0.1:4443/mutate-v1-pod".to_owned()),
                Some("https://127.0.0.1:4443/".to_owned()),
                Some("https://elsewhere.example.com/hook".to_owned()),
            ]
        );
        for webhook in configuration.webhooks.iter().flatten() {
            assert!(webhook.client_config.service.is_none());
            assert_eq!(
                webhook.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()),
                Some(CA_PEM.as_bytes())
            );
        }
    }

    #[test]
    fn validating_webhooks_are_pointed_the_same_way() {
        let mut configuration = ValidatingWebhookConfiguration {
            webhooks: Some(vec![ValidatingWebhook {
                client_config: service(Some("/validate")),
                ..Default::default()
            }]),
            ..Default::default()
        };
        target().validating(&mut configuration);
        let config = &configuration.webhooks.unwrap()[0].client_config;
        assert_eq!(config.url.as_deref(), Some("https://127.0.0.1:4443/validate"));
        assert!(config.service.is_none());
        assert_eq!(config.ca_bundle.as_ref().unwrap().0, CA_PEM.as_bytes());
    }

    fn crd_converting(conversion: Option<CustomResourceConversion>) -> CustomResourceDefinition {
        let mut crd = CustomResourceDefinition::default();
        crd.spec.conversion = conversion;
        crd
    }

    #[test]
    fn a_crd_converting_through_a_webhook_converts_through_the_local_server() {
        let mut crd = crd_converting(Some(CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(WebhookConversion {
                client_config: Some(apiextensions::WebhookClientConfig {
                    service: Some(apiextensions::ServiceReference {
                        name: "webhook-service".into(),
                        namespace: "system".into(),
                        path: Some("/convert-widgets".into()),
                        port: Some(443),
                    }),
                    ..Default::default()
                }),
                conversion_review_versions: vec!["v1".into()],
            }),
        }));
        target().conversion(&mut crd);
        let client = crd
            .spec
            .conversion
            .unwrap()
            .webhook
            .unwrap()
            .client_config
            .unwrap();
        assert_eq!(
            client.url.as_deref(),
            Some("https://127.0.0.1:4443/convert-widgets")
        );
        assert!(client.service.is_none());
        assert_eq!(client.ca_bundle.unwrap().0, CA_PEM.as_bytes());
    }

    #[test]
    fn a_webhook_strategy_without_a_client_config_is_called_at_convert() {
        let mut crd = crd_converting(Some(CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: None,
        }));
        target().conversion(&mut crd);
        let webhook = crd.spec.conversion.unwrap().webhook.unwrap();
        assert_eq!(webhook.conversion_review_versions, ["v1"]);
        assert_eq!(
            webhook.client_config.unwrap().url.as_deref(),
            Some("https://127.0.0.1:4443/convert")
        );
    }

    #[test]
    fn crds_without_a_conversion_webhook_are_left_alone() {
        for conversion in [
            None,
            Some(CustomResourceConversion {
                strategy: "None".into(),
                webhook: None,
            }),
        ] {
            let mut crd = crd_converting(conversion.clone());
            target().conversion(&mut crd);
            assert_eq!(crd.spec.conversion, conversion);
        }
    }
}
