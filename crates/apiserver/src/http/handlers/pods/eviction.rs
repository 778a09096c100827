//! `POST pods/{name}/eviction` (policy/v1 Eviction): the pod is deleted as a DELETE with the
//! Eviction's `deleteOptions` would delete it, unless a PodDisruptionBudget that selects it allows no
//! disruption now, which is answered 429 for the client to try again later (`kubectl drain` does).
//!
//! Admission sees the Eviction as a CREATE through `pods/eviction`. The budget's status is then
//! written through admission too, as kube-apiserver writes it with a client of its own; the pod's
//! condition and its deletion are not, as kube-apiserver's pod storage writes them straight to
//! storage.

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType, selector::LabelSelector};
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use crate::http::handlers::subresource::{Admitted, Request};
use crate::http::{
    Shared,
    request::Call,
    request::{delete_options_of, parse_body, write_options},
    respond,
};
use crate::{
    admission::{self, Change},
    error::{Error, Result, Subject},
    store::{DeleteOptions, WriteOptions},
};

/// The kind admission sees the subresource's object as.
const EVICTION: admission::Kind = admission::Kind {
    group: "policy",
    version: "v1",
    kind: "Eviction",
};

/// `pods/eviction`.
pub const ENDPOINT: Admitted = Admitted {
    group: "",
    plural: "pods",
    names: &["eviction"],
    serve: |r| Box::pin(evict(r)),
};

pub async fn evict(r: &Request<'_>) -> Result<Response> {
    let (shared, pods, namespace, name, call) = (r.shared, r.rt, r.namespace, r.name, r.call);
    if call.method != Method::POST {
        return Err(super::method_not_allowed());
    }
    let eviction = super::as_kind(parse_body(call, pods)?.0, "policy/v1", "Eviction", namespace);
    let named_as_the_pod = |eviction: &Value| match meta::name(eviction) == name {
        true => Ok(()),
        false => Err(Error::BadRequest(
            "name in URL does not match name in Eviction object".into(),
        )),
    };
    let (eviction, warnings) = r
        .target()
        .admit_create(
            name,
            EVICTION,
            eviction,
            &write_options(call, Vec::new())?,
            named_as_the_pod,
        )
        .await?;
    let options = delete_options_of(call, eviction.get("deleteOptions").unwrap_or(&json!({})))?;
    let pod = shared.store.get(pods, namespace, name)?;
    if !disruption_is_harmless(&pod) {
        match budget_verdict(shared, namespace, &pod, options.dry_run).await? {
            Verdict::Allowed => {}
            Verdict::Refused(response) => return Ok(response),
        }
    }
    delete_as_evicted(shared, pods, namespace, name, pod, call, &options)?;
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
    Ok(respond::with_warnings(respond::json(201, &status), &warnings))
}

/// A pod that has finished, has not started or is already going disrupts nothing more: no budget
/// is asked.
fn disruption_is_harmless(pod: &Value) -> bool {
    matches!(
        meta::str_at(pod, "/status/phase"),
        Some("Succeeded" | "Failed" | "Pending")
    ) || meta::is_deleting(pod)
}

enum Verdict {
    Allowed,
    Refused(Response),
}

/// What the PodDisruptionBudget selecting the pod says, one disruption taken from it when it allows
/// one. Without served budgets, or none selecting the pod, the eviction goes ahead.
async fn budget_verdict(
    shared: &Arc<Shared>,
    namespace: &str,
    pod: &Value,
    dry_run: bool,
) -> Result<Verdict> {
    let Some(budgets) = shared.store.resolve("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Verdict::Allowed);
    };
    let (all, _) = shared.store.list(&budgets, Some(namespace));
    let selecting: Vec<Value> = all.into_iter().filter(|pdb| selects(pdb, pod)).collect();
    let pdb = match selecting.as_slice() {
        [] => return Ok(Verdict::Allowed),
        [one] => one.clone(),
        _ => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                "code": 500});
            return Ok(Verdict::Refused(respond::json(500, &status)));
        }
    };
    let number = |field: &str| {
        pdb.pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let pdb_name = meta::name(&pdb).to_owned();
    if !is_ready(pod) {
        // An unready pod counts for nothing in the budget: it may go when the policy says so or the
        // application is healthy without it.
        let always = pdb.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"));
        let healthy = number("currentHealthy") >= number("desiredHealthy") && number("desiredHealthy") > 0;
        if always || healthy {
            return Ok(Verdict::Allowed);
        }
    }
    if number("observedGeneration") < meta::generation(&pdb) {
        return Ok(Verdict::Refused(too_many_requests(
            10,
            format!("The disruption budget {pdb_name} is still being processed by the server."),
        )));
    }
    let allowed = number("disruptionsAllowed");
    if allowed < 0 {
        return Err(Error::Forbidden(format!(
            "poddisruptionbudget.policy \"{pdb_name}\" is forbidden: pdb disruptions allowed is negative"
        )));
    }
    if allowed == 0 {
        return Ok(Verdict::Refused(too_many_requests(
            0,
            format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                number("desiredHealthy"),
                number("currentHealthy")
            ),
        )));
    }
    if !dry_run {
        // The disruption is taken from the budget until its controller sees the pod gone.
        let mut next = pdb.clone();
        next["status"]["disruptionsAllowed"] = json!(allowed - 1);
        let pod_name = meta::name(pod).to_owned();
        next["status"]["disruptedPods"][pod_name] = json!(meta::now_rfc3339());
        let status = admission::Target {
            store: &shared.store,
            rt: &budgets,
            namespace,
            subresource: Some("status"),
            status_only: true,
        };
        let change = Change::Update {
            name: &pdb_name,
            object: next,
        };
        status.write(change, &WriteOptions::default()).await?;
    }
    Ok(Verdict::Allowed)
}

/// Whether a budget's selector selects the pod; a budget without one selects nothing.
fn selects(pdb: &Value, pod: &Value) -> bool {
    match pdb.pointer("/spec/selector") {
        None | Some(Value::Null) => false,
        Some(selector) => LabelSelector::from_object(selector).is_ok_and(|s| s.matches(pod)),
    }
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// 429 TooManyRequests naming the budget that refused, as `kubectl drain` reads it.
fn too_many_requests(retry_after_seconds: u32, cause: String) -> Response {
    let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
    if retry_after_seconds > 0 {
        details["retryAfterSeconds"] = json!(retry_after_seconds);
    }
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests", "details": details, "code": 429});
    let response = respond::json(429, &status);
    if retry_after_seconds == 0 {
        return response;
    }
    let mut response = response;
    response
        .headers_mut()
        .insert(axum::http::header::RETRY_AFTER, retry_after_seconds.into());
    response
}

/// The pod is marked as a disruption target, then deleted with the eviction's options.
fn delete_as_evicted(
    shared: &Arc<Shared>,
    pods: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    mut pod: Value,
    call: &Call,
    options: &DeleteOptions,
) -> Result<()> {
    let conflict = |reason: String| Error::Conflict {
        subject: Subject {
            qualified_plural: "Pod".into(),
            plural: "Pod".into(),
            name: name.to_owned(),
            ..Subject::default()
        },
        reason,
    };
    if let Some(uid) = options
        .precondition_uid
        .as_deref()
        .filter(|uid| *uid != meta::uid(&pod))
    {
        return Err(conflict(format!(
            "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
            meta::uid(&pod)
        )));
    }
    if let Some(rv) = options
        .precondition_resource_version
        .as_deref()
        .filter(|rv| Some(*rv) != meta::resource_version(&pod))
    {
        return Err(conflict(format!(
            "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
            meta::resource_version(&pod).unwrap_or_default()
        )));
    }
    if !options.dry_run {
        let condition = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
            "lastTransitionTime": meta::now_rfc3339()});
        let mut conditions = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c["type"] != "DisruptionTarget");
        conditions.push(condition);
        pod["status"]["conditions"] = Value::Array(conditions);
        let mut write = write_options(call, Vec::new())?;
        write.dry_run = false;
        write.field_manager = None;
        let written =
            crate::strategy::writes::update(&shared.store, pods, namespace, name, pod, &write, true)?;
        let mut options = options.clone();
        if options.precondition_resource_version.is_some() {
            // The precondition named the pod before this write, which is the eviction's own.
            options.precondition_resource_version =
                meta::resource_version(&written.object).map(str::to_owned);
        }
        shared.store.delete(pods, namespace, name, &options)?;
        return Ok(());
    }
    shared.store.delete(pods, namespace, name, options)?;
    Ok(())
}
