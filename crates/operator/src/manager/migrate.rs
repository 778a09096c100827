//! `operator migrate-storage`: after an upgrade that changed a CRD's storage version, rewrite every
//! object in place so that it is stored in the new version, then record that no object is stored in
//! an older one (`status.storedVersions`). Only then may a later release stop serving the old
//! version. Safe to run again, and while the operator runs: an object written by someone else in the
//! meantime is stored in the new version already.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{Error, Result};

/// Objects listed per request.
const PAGE: u32 = 500;

/// Migrates every CRD of ours whose `storedVersions` names a version other than its storage version.
/// Returns a line per CRD for the user.
pub async fn migrate_storage(client: &kube::Client) -> Result<Vec<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut report = Vec::new();
    for ours in crate::api::crds() {
        let name = ours.metadata.name.clone().unwrap_or_default();
        let Some(live) = crds.get_opt(&name).await? else {
            report.push(format!("{name}: not installed"));
            continue;
        };
        let Some(storage) = live
            .spec
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
        else {
            continue;
        };
        let stored = live
            .status
            .as_ref()
            .and_then(|s| s.stored_versions.clone())
            .unwrap_or_default();
        if stored.iter().all(|v| *v == storage) {
            report.push(format!("{name}: stored as {storage} only; nothing to do"));
            continue;
        }
        let rewritten = rewrite_all(client, &live, &storage).await?;
        crds.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"storedVersions": [storage]}})),
        )
        .await?;
        report.push(format!(
            "{name}: {rewritten} objects rewritten as {storage}; storedVersions was {}, is now {storage}",
            stored.join(",")
        ));
    }
    Ok(report)
}

/// Reads and writes back every object of `crd`'s kind unchanged: the API server stores what it
/// writes in the storage version.
async fn rewrite_all(client: &kube::Client, crd: &CustomResourceDefinition, storage: &str) -> Result<usize> {
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: storage.to_owned(),
        api_version: format!("{}/{storage}", crd.spec.group),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut rewritten = 0;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = all.list(&params).await?;
        for object in &page.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            let api: Api<DynamicObject> = match &object.metadata.namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            match api.replace(&name, &PostParams::default(), object).await {
                Ok(_) => rewritten += 1,
                // Changed or deleted since the list: whoever did it stored it in the new version.
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
                Err(error) => {
                    return Err(Error::Config(format!(
                        "rewriting {} {name}: {error}; nothing was recorded, run the migration again",
                        resource.kind
                    )));
                }
            }
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(rewritten),
        }
    }
}
