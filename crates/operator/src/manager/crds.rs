//! `operator install` and `uninstall`: the CRDs applied to, or deleted from, a cluster.

use std::time::Duration;

use k8s_openapi::{
    api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};

use crate::{Error, Result, webhook::configurations};

/// How long a CRD may take to be established before `install` gives up.
const ESTABLISHED_WITHIN: Duration = Duration::from_secs(30);

/// Applies `crds` by server-side apply and waits until each is established. `operator install` gives
/// it [`crate::webhook::configurations::crds`] converting through the in-cluster Service; dev mode,
/// converting through its own listener.
pub async fn install(client: &kube::Client, crds: Vec<CustomResourceDefinition>) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply("operator").force(),
            &Patch::Apply(&crd),
        )
        .await?;
        let established = kube::runtime::wait::await_condition(
            api.clone(),
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        tokio::time::timeout(ESTABLISHED_WITHIN, established)
            .await
            .map_err(|_| {
                Error::Config(format!(
                    "CRD {name} was not established within {} s",
                    ESTABLISHED_WITHIN.as_secs()
                ))
            })?
            .map_err(|e| Error::Config(format!("waiting for CRD {name}: {e}")))?;
    }
    Ok(())
}

pub async fn uninstall(client: &kube::Client) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// The admission configurations a run registered and left behind (killed before it could remove
/// them), deleted by `operator uninstall`: those of the unprefixed names that call a URL. A deployed
/// operator's are prefixed (`operator-`) and call a Service.
pub async fn remove_left_behind(client: &kube::Client) -> Result<()> {
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    if let Some(found) = mutating.get_opt(configurations::MUTATING_NAME).await?
        && found
            .webhooks
            .iter()
            .flatten()
            .any(|w| w.client_config.url.is_some())
    {
        mutating
            .delete(configurations::MUTATING_NAME, &Default::default())
            .await?;
    }
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    if let Some(found) = validating.get_opt(configurations::VALIDATING_NAME).await?
        && found
            .webhooks
            .iter()
            .flatten()
            .any(|w| w.client_config.url.is_some())
    {
        validating
            .delete(configurations::VALIDATING_NAME, &Default::default())
            .await?;
    }
    Ok(())
}
