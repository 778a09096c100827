//! Installing CustomResourceDefinitions and waiting until they are Established, as envtest's
//! `CRDInstallOptions` does: a test that starts a controller right after finds its kinds served.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
    runtime::wait::{await_condition, conditions},
};

use crate::{Error, Result, manifests::Crd};

/// How long a CRD may take to report Established. The server establishes a CRD within the write that
/// creates it, so this only bounds a test on a machine stalled far beyond what any test tolerates.
pub(crate) const DEFAULT_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// The field manager the CRDs are applied as: a test's own later apply of them does not conflict.
const FIELD_MANAGER: &str = "kube-envtest";

/// Applies each CRD (server-side apply, so that a server restarted on a data dir that already holds
/// it takes the new version), then waits until every one is Established, within `timeout` each.
pub(crate) async fn install(client: &Client, crds: &[Crd], timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::with_capacity(crds.len());
    for Crd {
        definition: crd,
        file,
    } in crds
    {
        let name = crd
            .metadata
            .name
            .clone()
            .ok_or_else(|| Error::UnnamedCrd { file: file.clone() })?;
        // A CRD read back from a server carries both, which an apply refuses (managedFields) or takes
        // for a precondition (resourceVersion): the definition is what is installed, not that state.
        let mut body = crd.clone();
        body.metadata.managed_fields = None;
        body.metadata.resource_version = None;
        api.patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|source| Error::InstallCrd {
                name: name.clone(),
                file: file.clone(),
                source,
            })?;
        names.push(name);
    }
    for name in names {
        established(&api, &name, timeout).await?;
    }
    Ok(())
}

/// Returns once the CRD `name` has the condition `Established=True`.
async fn established(api: &Api<CustomResourceDefinition>, name: &str, timeout: Duration) -> Result<()> {
    let not_established = |reason: String| Error::NotEstablished {
        name: name.to_owned(),
        timeout,
        reason,
    };
    match tokio::time::timeout(
        timeout,
        await_condition(api.clone(), name, conditions::is_crd_established()),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(not_established(error.to_string())),
        Err(_) => Err(not_established("the deadline passed".into())),
    }
}
