//! The controller: observe the mirror, its source and its copy; compare; apply the copy and the status.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{Controller, controller::Action, reflector::ObjectRef, watcher},
};
use serde_json::json;

use crate::{
    Error, Result,
    api::{ConfigMapMirror, Phase},
    desired::{desired_copy, key_count, owned_by, status},
};

/// The field manager of every write: server-side apply records what this controller owns.
pub const FIELD_MANAGER: &str = "configmap-mirror";

/// After a failed reconcile, the next try: short, since the tests wait for convergence.
const RETRY_AFTER: Duration = Duration::from_secs(2);

struct Context {
    client: Client,
}

/// Runs the controller over every namespace until the watches end (or the task is dropped).
pub async fn run(client: Client) {
    let mirrors: Api<ConfigMapMirror> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::all(client.clone());
    let controller = Controller::new(mirrors, watcher::Config::default());
    // The mirrors the controller has seen, to find those a changed source concerns.
    let known = controller.store();
    controller
        .owns(config_maps.clone(), watcher::Config::default())
        .watches(config_maps, watcher::Config::default(), move |source| {
            let namespace = source.namespace();
            let name = source.name_any();
            known
                .state()
                .into_iter()
                .filter(|mirror| mirror.namespace() == namespace && mirror.spec.source == name)
                .map(|mirror| ObjectRef::from_obj(&*mirror))
                .collect::<Vec<_>>()
        })
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| async move {
            match result {
                Ok((mirror, _)) => tracing::debug!(%mirror, "reconciled"),
                Err(error) => tracing::warn!(%error, "reconcile failed"),
            }
        })
        .await;
}

async fn reconcile(mirror: Arc<ConfigMapMirror>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = mirror.namespace().ok_or(Error::NotNamespaced)?;
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let name = mirror.name_any();

    let source = config_maps.get_opt(&mirror.spec.source).await?;
    let existing = config_maps.get_opt(&name).await?;
    let (phase, keys) = match (source, existing) {
        (_, Some(existing)) if !owned_by(&existing, &mirror) => (Phase::CopyNotOwned, 0),
        (None, existing) => (Phase::SourceMissing, existing.as_ref().map_or(0, key_count)),
        (Some(source), _) => {
            let copy = desired_copy(&mirror, &source);
            let params = PatchParams::apply(FIELD_MANAGER).force();
            config_maps.patch(&name, &params, &Patch::Apply(&copy)).await?;
            (Phase::Synced, key_count(&copy))
        }
    };

    let mirrors: Api<ConfigMapMirror> = Api::namespaced(ctx.client.clone(), &namespace);
    let body = json!({
        "apiVersion": "mirror.example.com/v1",
        "kind": "ConfigMapMirror",
        "status": status(&mirror, phase, keys),
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    mirrors.patch_status(&name, &params, &Patch::Apply(&body)).await?;
    // Changes to the mirror, its source or its copy trigger the next reconcile: no timer needed.
    Ok(Action::await_change())
}

fn error_policy(mirror: Arc<ConfigMapMirror>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(mirror = %mirror.name_any(), %error, "will retry");
    Action::requeue(RETRY_AFTER)
}
