//! Scenarios recorded from traffic rather than written: the requests real clients sent to an embedded
//! API server that kept them (`apiserver::Audit::Traffic`), turned into corpus steps that play the same
//! requests, in the same order, against both servers.
//!
//! What is recorded as it was sent: method, path, query, Content-Type, Accept and body. What has to
//! change for the requests to mean the same thing on another server, and why:
//! - the recorded namespace becomes the scenario's (`{ns}`), in paths and in body values;
//! - a uid a response handed out (an owner's, for an owner reference or a precondition) is captured
//!   from that response on each server and substituted where later requests carry it;
//! - a write's `metadata.resourceVersion` and a read's resourceVersion (other than `0`) or continue
//!   token are left out: they name the recording server's history, and the replay is sequential, so
//!   no other writer can race it;
//! - a read repeated with no write to its object in between is kept once (clients poll), and a read
//!   is repeated on replay until it answers with the recorded status, since the controllers behind
//!   each server (garbage collection, CRD naming) work in the background at their own pace; so is a
//!   write that succeeded when recorded, since the real server serves a new CRD's resources a moment
//!   after it accepted the CRD (a write refused meanwhile changed nothing);
//! - a list across namespaces would see the objects of the scenarios played beside this one: it is
//!   played in the scenario's namespace, and left out for a cluster-scoped kind;
//! - reads of CRDs are left out: they poll for the CRD controllers' work, which the real server does
//!   in the background at its own pace, so a read's answer would depend on when it ran (the custom
//!   resources area covers CRDs);
//! - watches are left out: they stream until closed, so a recording has no end to replay (the
//!   watches area covers them), and so are discovery and OpenAPI reads (their own area covers them).

use std::collections::{BTreeMap, HashMap, HashSet};

use apiserver::{AuditRecord, http::filters::audit::Exchange};
use serde_json::Value;

use crate::scenario::{Step, Until};

/// The steps replaying `records` (oldest first), recorded in namespace `namespace`.
pub fn steps(records: &[AuditRecord], namespace: &str) -> Vec<Step> {
    let kept = replayable(records, namespace);
    let exchanges: Vec<&Exchange> = kept.iter().map(|(_, exchange)| exchange).collect();
    // Which response first held each uid, and the capture naming it.
    let mut uid_sources: HashMap<String, (usize, String)> = HashMap::new();
    for (index, exchange) in exchanges.iter().enumerate() {
        let uid = exchange
            .response_body
            .as_deref()
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
            .and_then(|b| {
                b.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        if let Some(uid) = uid {
            let name = format!("uid{}", uid_sources.len() + 1);
            uid_sources.entry(uid).or_insert((index, name));
        }
    }
    let mut used_uids: HashSet<String> = HashSet::new();
    let mut steps: Vec<Step> = exchanges
        .iter()
        .map(|exchange| {
            let body = exchange.request_body.as_deref().map(|text| {
                let mut body = serde_json::from_str::<Value>(text).unwrap_or(Value::String(text.into()));
                rewrite_body(&mut body, namespace, &uid_sources, &mut used_uids);
                body
            });
            let mut headers = BTreeMap::new();
            if let Some(content_type) = &exchange.content_type {
                headers.insert("Content-Type".to_owned(), content_type.clone());
            }
            if let Some(accept) = &exchange.accept {
                headers.insert("Accept".to_owned(), accept.clone());
            }
            let (raw, body) = match body {
                Some(Value::String(text)) => (Some(text), None),
                Some(json) => (None, Some(to_yaml(&json))),
                None => (None, None),
            };
            Step {
                request: Some(format!(
                    "{} {}",
                    exchange.method,
                    rewrite_target(&exchange.target, namespace)
                )),
                body,
                raw,
                headers,
                ..Step::default()
            }
        })
        .collect();
    for (uid, (index, name)) in &uid_sources {
        if used_uids.contains(uid) {
            steps[*index]
                .capture
                .insert(name.clone(), "/metadata/uid".to_owned());
        }
    }
    for (step, (record, _)) in steps.iter_mut().zip(&kept) {
        let read = step.request.as_deref().is_some_and(|r| r.starts_with("GET "));
        if read || (200..300).contains(&record.code) {
            step.until = Some(Until {
                status: Some(record.code),
                pointer: None,
                value: None,
            });
        }
    }
    steps
}

/// The records that replay: resource requests with their exchange, each once (a write that created
/// its object is recorded a second time, as a create), not watches, and a read only when something may
/// have changed its answer since the same read.
fn replayable<'a>(records: &'a [AuditRecord], namespace: &str) -> Vec<(&'a AuditRecord, Exchange)> {
    let mut kept = Vec::new();
    let mut fresh_reads: HashSet<String> = HashSet::new();
    let mut previous: Option<&Exchange> = None;
    for record in records {
        let (Some(attributes), Some(exchange)) = (record.resource(), record.exchange.as_ref()) else {
            continue;
        };
        // The second record of a write that created its object carries the same exchange.
        if previous == Some(exchange) {
            continue;
        }
        previous = Some(exchange);
        if exchange.response_body.is_none() {
            continue; // a watch
        }
        let path = exchange.target.split('?').next().unwrap_or_default().to_owned();
        if exchange.method == "GET" && attributes.resource == "customresourcedefinitions" {
            continue;
        }
        if exchange.method == "GET" && attributes.name.is_none() && attributes.namespace.is_none() {
            // A list across namespaces sees the objects of scenarios played beside this one: it is
            // played in the scenario's namespace, or left out for a cluster-scoped kind.
            let Some(namespaced) = across_namespaces(exchange, namespace) else {
                continue;
            };
            if !fresh_reads.insert(namespaced.target.clone()) {
                continue;
            }
            kept.push((record, namespaced));
            continue;
        }
        if exchange.method == "GET" {
            if !fresh_reads.insert(exchange.target.clone()) {
                continue;
            }
        } else {
            // A write changes its object, the object's subresources and the collection it is in.
            let object = object_path(&path, attributes.subresource.is_some());
            let collection = collection_path(&object, attributes.name.is_some());
            fresh_reads.retain(|read| {
                let read = read.split('?').next().unwrap_or_default();
                !(read.starts_with(&object) || read == collection)
            });
        }
        kept.push((record, exchange.clone()));
    }
    kept
}

/// `exchange`, a list across namespaces, as the same list in `namespace`; `None` when its answer
/// shows no namespaced object, as for a cluster-scoped kind.
fn across_namespaces(exchange: &Exchange, namespace: &str) -> Option<Exchange> {
    let answer: Value = serde_json::from_str(exchange.response_body.as_deref()?).ok()?;
    let namespaced = answer
        .get("items")?
        .as_array()?
        .iter()
        .any(|item| item.pointer("/metadata/namespace").is_some());
    if !namespaced {
        return None;
    }
    let (path, query) = exchange.target.split_once('?').unwrap_or((&exchange.target, ""));
    let (collection, plural) = path.rsplit_once('/')?;
    let target = format!("{collection}/namespaces/{namespace}/{plural}");
    Some(Exchange {
        target: if query.is_empty() {
            target
        } else {
            format!("{target}?{query}")
        },
        ..exchange.clone()
    })
}

/// `/…/widgets/w` for `/…/widgets/w/status`.
fn object_path(path: &str, subresource: bool) -> String {
    match (subresource, path.rsplit_once('/')) {
        (true, Some((object, _))) => object.to_owned(),
        _ => path.to_owned(),
    }
}

/// `/…/widgets` for `/…/widgets/w`; a collection is its own.
fn collection_path(object: &str, named: bool) -> String {
    match (named, object.rsplit_once('/')) {
        (true, Some((collection, _))) => collection.to_owned(),
        _ => object.to_owned(),
    }
}

/// The target with the scenario's namespace, and without the recording server's resourceVersions and
/// continue tokens.
fn rewrite_target(target: &str, namespace: &str) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = path
        .split('/')
        .scan(false, |after_namespaces, segment| {
            let out = if *after_namespaces && segment == namespace {
                "{ns}"
            } else {
                segment
            };
            *after_namespaces = segment == "namespaces";
            Some(out.to_owned())
        })
        .collect::<Vec<_>>()
        .join("/");
    let path = if path == format!("/api/v1/namespaces/{namespace}") {
        "/api/v1/namespaces/{ns}".to_owned()
    } else {
        path
    };
    let pairs: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            match key {
                "resourceVersion" => *pair == "resourceVersion=0",
                "resourceVersionMatch" => query.contains("resourceVersion=0"),
                "continue" => false,
                _ => true,
            }
        })
        .collect();
    if pairs.is_empty() {
        path
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

/// `body` as the scenario sends it: the recorded namespace as `{ns}`, uids handed out by earlier
/// responses as their captures, and no resourceVersion to lock on.
fn rewrite_body(
    body: &mut Value,
    namespace: &str,
    uids: &HashMap<String, (usize, String)>,
    used: &mut HashSet<String>,
) {
    if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
    }
    fn walk(
        value: &mut Value,
        namespace: &str,
        uids: &HashMap<String, (usize, String)>,
        used: &mut HashSet<String>,
    ) {
        match value {
            Value::String(text) => {
                if text == namespace {
                    *text = "{ns}".to_owned();
                } else if let Some((_, name)) = uids.get(text.as_str()) {
                    used.insert(text.clone());
                    *text = format!("{{{name}}}");
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, namespace, uids, used)),
            Value::Object(fields) => fields.values_mut().for_each(|v| walk(v, namespace, uids, used)),
            _ => {}
        }
    }
    walk(body, namespace, uids, used);
}

fn to_yaml(json: &Value) -> serde_yaml::Value {
    serde_yaml::to_value(json).unwrap_or(serde_yaml::Value::Null)
}

/// What a request is, for telling whether a recording still holds every kind of request a client
/// sends: method, path with names and the namespace masked, and Content-Type.
pub fn shape(step: &Step) -> Option<String> {
    let request = step.request.as_deref()?;
    let (method, target) = request.split_once(' ')?;
    let path = target.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').collect();
    // /api/v1/<plural>[/<name>[/<sub>]], /apis/<g>/<v>/<plural>[/<name>[/<sub>]], with
    // namespaces/<ns>/ before the plural of a namespaced resource.
    let start = if segments.get(1) == Some(&"api") { 3 } else { 4 };
    let mut rest: Vec<&str> = segments.iter().skip(start).copied().collect();
    if rest.first() == Some(&"namespaces") && rest.len() > 2 {
        rest.drain(..2);
    }
    let masked: Vec<&str> = rest
        .iter()
        .enumerate()
        .map(|(i, s)| if i == 1 { "<name>" } else { s })
        .collect();
    Some(format!(
        "{method} {}/{} {}",
        segments[..start.min(segments.len())].join("/"),
        masked.join("/"),
        step.headers.get("Content-Type").map_or("-", String::as_str)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_take_the_scenario_namespace_and_lose_the_recording_servers_versions() {
        assert_eq!(
            rewrite_target(
                "/apis/example.com/v1/namespaces/default/webapps?limit=500&resourceVersion=0",
                "default"
            ),
            "/apis/example.com/v1/namespaces/{ns}/webapps?limit=500&resourceVersion=0"
        );
        assert_eq!(
            rewrite_target(
                "/api/v1/namespaces/default/configmaps/default?resourceVersion=42&continue=x",
                "default"
            ),
            "/api/v1/namespaces/{ns}/configmaps/default"
        );
        assert_eq!(
            rewrite_target("/api/v1/namespaces/default", "default"),
            "/api/v1/namespaces/{ns}"
        );
    }

    #[test]
    fn bodies_take_the_namespace_and_captured_uids_and_drop_the_lock() {
        let uids = HashMap::from([("u-1".to_owned(), (0, "uid1".to_owned()))]);
        let mut used = HashSet::new();
        let mut body = serde_json::json!({
            "metadata": {"name": "c", "namespace": "default", "resourceVersion": "9",
                "ownerReferences": [{"uid": "u-1", "name": "pets"}]},
            "data": {"x": "y"}
        });
        rewrite_body(&mut body, "default", &uids, &mut used);
        assert_eq!(
            body,
            serde_json::json!({
                "metadata": {"name": "c", "namespace": "{ns}",
                    "ownerReferences": [{"uid": "{uid1}", "name": "pets"}]},
                "data": {"x": "y"}
            })
        );
        assert!(used.contains("u-1"));
    }

    #[test]
    fn a_shape_masks_names_and_namespaces() {
        let step = Step {
            request: Some(
                "PATCH /apis/example.com/v1/namespaces/{ns}/webapps/shop/status?fieldManager=x".into(),
            ),
            headers: BTreeMap::from([("Content-Type".into(), "application/apply-patch+yaml".into())]),
            ..Step::default()
        };
        assert_eq!(
            shape(&step).as_deref(),
            Some("PATCH /apis/example.com/v1/webapps/<name>/status application/apply-patch+yaml")
        );
    }
}
