//! Lists (W1-W4), with selectors and pages.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use axum::response::Response;
use serde_json::Value;

use super::{
    answers::{list_body, table},
    continuation,
};
use crate::http::{
    Shared,
    request::{Call, invalid_option, selectors},
    respond::{self, Representation},
};
use crate::{
    admission,
    error::{Error, Result},
    store::{ListKey, StoredObject},
    webhooks::Converter,
};

/// How many objects a list with selectors reads at a time, at least.
const SELECTED_CHUNK: usize = 500;

/// Lists (W1-W4). A `limit` cuts the list into pages that all show the state of the first one and
/// carry its resourceVersion, as etcd-backed pagination does; the continue token says where the last
/// page stopped and at which resourceVersion.
pub async fn list(
    shared: &Shared,
    rt: &Arc<ResourceType>,
    namespace: Option<&str>,
    call: &Call,
) -> Result<Response> {
    let (labels, fields) = selectors(rt, call)?;
    let has = |key: &str| call.query.get(key).is_some_and(|v| !v.is_empty());
    if has("resourceVersionMatch") && !has("resourceVersion") {
        return Err(invalid_option(
            "ListOptions",
            "FieldValueForbidden",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
        ));
    }
    let limit = match call.query.get("limit").filter(|l| !l.is_empty()) {
        Some(text) => match text.parse::<i64>() {
            Ok(limit) => usize::try_from(limit).ok().filter(|l| *l > 0),
            Err(_) => {
                return Err(Error::BadRequest(format!(
                    "strconv.ParseInt: parsing {text:?}: invalid syntax"
                )));
            }
        },
        None => None,
    };
    // A list at resourceVersion 0 is served whole from the real server's watch cache, which does not
    // paginate: the limit is ignored there.
    let from_cache = call.query.get("resourceVersion").is_some_and(|rv| rv == "0");
    let wanted = limit.filter(|_| !from_cache).unwrap_or(usize::MAX);
    let (mut at, mut after) = match call.query.get("continue").filter(|t| !t.is_empty()) {
        Some(token) => {
            let (rv, last) = continuation::decode(token)?;
            (Some(rv), Some(last))
        }
        None => (None, None),
    };
    // The real server counts what remains only when no selector filters the list.
    let selected = has("labelSelector") || has("fieldSelector");
    let converter = Converter::of(&shared.store, rt);
    let mut page: Vec<Value> = Vec::new();
    let (resource_version, remaining) = loop {
        // Selectors may pass over many objects for a page: they are read a chunk at a time.
        let take = if selected {
            (wanted - page.len()).max(SELECTED_CHUNK)
        } else {
            wanted - page.len()
        };
        let chunk = shared.store.list_chunk(rt, namespace, at, after.as_ref(), take)?;
        at = Some(chunk.resource_version);
        let (keys, listed): (Vec<ListKey>, Vec<StoredObject>) = chunk.items.into_iter().unzip();
        let stored: Vec<Value> = listed.iter().map(StoredObject::decode).collect();
        let objects = admission::read(&shared.store, rt, converter.as_ref(), stored).await?;
        let mut unread = chunk.remaining;
        for (index, (key, object)) in keys.iter().zip(objects).enumerate() {
            if page.len() == wanted {
                unread += keys.len() - index;
                break;
            }
            after = Some(key.clone());
            if labels.matches(&object) && fields.matches(&object) {
                page.push(object);
            }
        }
        if page.len() == wanted || unread == 0 {
            break (chunk.resource_version, unread);
        }
    };
    let token = (remaining > 0)
        .then(|| {
            after
                .as_ref()
                .map(|last| continuation::encode(resource_version, last))
        })
        .flatten();
    let remaining = (!selected).then_some(remaining);
    let resource_version = resource_version.to_string();
    if respond::negotiate(&call.accept) == Representation::Table {
        let refs: Vec<&Value> = page.iter().collect();
        let table = table(rt, &refs, &resource_version, token.as_deref(), call)?;
        return Ok(respond::json(200, &table));
    }
    let list = list_body(
        rt,
        page,
        &resource_version,
        token.as_deref().map(|t| (t, remaining)),
    );
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(200, &respond::partial_metadata_list(&list)));
    }
    Ok(respond::json(200, &list))
}
