//! Watch streams (W5-W11): newline-delimited events over a chunked 200 response, or length-prefixed
//! protobuf frames when a client asks for protobuf first (D12). Each watch runs as its own task feeding
//! a bounded channel, so a slow client only slows itself; the store never waits.

use std::{sync::Arc, time::Duration};

use apimachinery::{
    resource::ResourceType,
    selector::{FieldSelector, LabelSelector},
    stored_form,
    table::{IncludeObject, Printer, in_version, render_table},
};
use axum::{body::Body, http::header, response::Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast::error::RecvError, mpsc};

use crate::http::{
    Shared,
    request::Call,
    request::{self, selectors},
    respond::{self, Encoding, Representation},
};
use crate::{
    error::{Error, Result},
    store::{EventType, Store, StoredEvent, StoredObject, storage_key},
    webhooks::Converter,
};

const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);
/// Without `timeoutSeconds`, a watch ends after about half an hour, as kube-apiserver's do.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Filter {
    resource: String,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn selects(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    fn selects_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

/// A watch's `resourceVersion`, as kube-apiserver's storage parses it: what `strconv.ParseUint` refuses
/// reaches the client as Go's error text in a 500 without a reason, since the storage layer gives it
/// no Status of its own.
fn parse_resource_version(text: &str) -> Result<u64> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let refused = match text.parse::<u64>() {
        Ok(version) if digits => return Ok(version),
        Err(e) if digits && *e.kind() == std::num::IntErrorKind::PosOverflow => "value out of range",
        // Rust accepts a leading `+`, Go does not.
        _ => "invalid syntax",
    };
    let quoted = apimachinery::schema::messages::go_quote(text);
    Err(Error::Unclassified(format!(
        "resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {refused}"
    )))
}

/// kube-apiserver's validation of a watch's list options: `sendInitialEvents` only with the
/// `WatchList` gate and `resourceVersionMatch=NotOlderThan`, which in turn only with
/// `sendInitialEvents` and without `continue`.
fn validate_watch_options<'a>(query: &impl Fn(&str) -> Option<&'a str>, watch_list: bool) -> Result<()> {
    const NOT_OLDER_THAN: &str = "NotOlderThan";
    let forbidden = |field: &str, detail: &str| {
        apimachinery::FieldCause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
    };
    let initial_events = query("sendInitialEvents").is_some();
    let matching = query("resourceVersionMatch").unwrap_or_default();
    let mut causes = Vec::new();
    if initial_events {
        if matching != NOT_OLDER_THAN {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !watch_list {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    }
    if !matching.is_empty() {
        if !initial_events {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != NOT_OLDER_THAN {
            causes.push(apimachinery::FieldCause::new(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                format!("Unsupported value: {matching:?}: supported values: \"{NOT_OLDER_THAN}\""),
            ));
        }
        if query("continue").is_some_and(|c| !c.is_empty()) {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid {
        kind_group: "ListOptions.meta.k8s.io".into(),
        subject: crate::error::Subject {
            group: "meta.k8s.io".into(),
            ..Default::default()
        },
        causes,
    })
}

pub fn serve(
    shared: &Arc<Shared>,
    rt: Arc<ResourceType>,
    namespace: Option<&str>,
    call: &Call,
) -> Result<Response> {
    let (labels, fields) = selectors(&rt, call)?;
    let filter = Filter {
        resource: storage_key(&rt),
        namespace: namespace.map(str::to_owned),
        labels,
        fields,
    };
    let query = |key: &str| call.query.get(key).map(String::as_str);
    let bookmarks = query("allowWatchBookmarks") == Some("true");
    validate_watch_options(&query, shared.watch_list)?;
    let initial_events = query("sendInitialEvents") == Some("true");
    let since = match query("resourceVersion") {
        None | Some("") | Some("0") => None,
        Some(_) if initial_events => None,
        Some(rv) => Some(parse_resource_version(rv)?),
    };
    let timeout = query("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let table = (respond::negotiate(&call.accept) == Representation::Table)
        .then(|| respond::table_version(&call.accept));
    let include = if table.is_some() {
        request::include_object(call)?
    } else {
        IncludeObject::default()
    };
    let metadata_only = respond::negotiate(&call.accept) == Representation::Metadata;
    let protobuf = rt.is_builtin() && matches!(respond::encoding(&call.accept), Encoding::Protobuf { .. });
    let (sender, receiver) = mpsc::channel::<Bytes>(256);
    let start = shared.store.watch(&rt, since);
    let store = shared.store.clone();
    tokio::spawn(async move {
        let mut stream = Stream {
            sender,
            converter: Converter::of(&store, &rt),
            store: store.clone(),
            rt,
            table,
            include,
            metadata_only,
            protobuf,
            headers_sent: false,
        };
        let start = match start {
            Ok(start) => start,
            Err(error) => {
                // A too-old resourceVersion is an in-stream ERROR, not an HTTP error (W6).
                let _ = stream.send_raw("ERROR", error.to_status()).await;
                return;
            }
        };
        let mut last_rv = since.unwrap_or(start.resource_version);
        for event in &start.replay {
            if !stream.send_event(&filter, event).await {
                return;
            }
        }
        // The end of the initial events is a bookmark, for a client that takes bookmarks.
        if initial_events && bookmarks {
            let marker = json!({"k8s.io/initial-events-end": "true"});
            if !stream.bookmark(start.resource_version, Some(marker)).await {
                return;
            }
        }
        last_rv = last_rv.max(start.resource_version);
        let mut live = start.live;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    if bookmarks {
                        stream.bookmark(last_rv, None).await;
                    }
                    return;
                }
                _ = ticker.tick(), if bookmarks => {
                    if !stream.bookmark(last_rv, None).await { return; }
                }
                received = live.recv() => match received {
                    Ok(event) => {
                        if event.resource_version <= last_rv { continue; }
                        last_rv = event.resource_version;
                        if !stream.send_event(&filter, &event).await { return; }
                    }
                    Err(RecvError::Lagged(_)) => {
                        // Fell behind the live channel: catch up from the history ring, or end with 410.
                        match store.events_after(last_rv) {
                            Ok(missed) => {
                                for event in missed {
                                    last_rv = event.resource_version;
                                    if !stream.send_event(&filter, &event).await { return; }
                                }
                            }
                            Err(error) => {
                                let _ = stream.send_raw("ERROR", error.to_status()).await;
                                return;
                            }
                        }
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = stream.sender.closed() => return,
            }
        }
    });
    let body = Body::from_stream(futures::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), receiver))
    }));
    let mut response = Response::new(body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(if protobuf {
            apimachinery::protobuf::WATCH_MEDIA_TYPE
        } else {
            "application/json"
        }),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}

struct Stream {
    sender: mpsc::Sender<Bytes>,
    /// The CRD's conversion webhook, when it has one: every event's object goes through it (X3).
    converter: Option<Converter>,
    store: Arc<Store>,
    rt: Arc<ResourceType>,
    /// The version of `meta.k8s.io` each event's Table is in, when the watcher asked for Tables.
    table: Option<&'static str>,
    /// What a Table's rows carry of their objects.
    include: IncludeObject,
    /// Objects reduced to their metadata (`PartialObjectMetadata`).
    metadata_only: bool,
    /// Events as protobuf frames rather than JSON lines.
    protobuf: bool,
    headers_sent: bool,
}

impl Stream {
    async fn send_raw(&mut self, event_type: &str, object: Value) -> bool {
        let encoded = self.encode(event_type, object);
        self.sender.send(encoded).await.is_ok()
    }

    async fn bookmark(&mut self, resource_version: u64, annotations: Option<Value>) -> bool {
        let mut metadata = json!({"resourceVersion": resource_version.to_string()});
        if let Some(annotations) = annotations {
            metadata["annotations"] = annotations;
        }
        let object = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": metadata});
        self.send_raw("BOOKMARK", object).await
    }

    /// Sends `event` if the filter selects it, turning selector enter/leave into ADDED/DELETED (W11).
    async fn send_event(&mut self, filter: &Filter, event: &StoredEvent) -> bool {
        if event.resource != filter.resource {
            return true;
        }
        if let Some(converter) = self.converter.clone() {
            let api_version = self.rt.api_version();
            let mut objects = vec![event.object.decode()];
            objects.extend(event.previous.as_ref().map(StoredObject::decode));
            let mut converted = match converter.convert(&self.store, objects, &api_version).await {
                Ok(converted) => converted.into_iter(),
                Err(error) => {
                    // The watch ends with the error, as kube-apiserver's does.
                    let _ = self.send_raw("ERROR", error.to_status()).await;
                    return false;
                }
            };
            let converted_event = StoredEvent {
                event_type: event.event_type,
                resource: event.resource.clone(),
                namespace: event.namespace.clone(),
                name: event.name.clone(),
                object: StoredObject::encode(&converted.next().unwrap_or(Value::Null)),
                previous: converted.next().as_ref().map(StoredObject::encode),
                resource_version: event.resource_version,
                encoded: Default::default(),
            };
            return self.send_presented(filter, &converted_event).await;
        }
        self.send_presented(filter, event).await
    }

    /// [`Stream::send_event`] for an event whose objects are at the watched version.
    async fn send_presented(&mut self, filter: &Filter, event: &StoredEvent) -> bool {
        if filter
            .namespace
            .as_deref()
            .is_some_and(|ns| ns != event.namespace)
        {
            return true;
        }
        // The object as presented, decoded once and only when something reads it.
        let mut presented: Option<Value> = None;
        let (now, before) = if filter.selects_everything() {
            (true, event.previous.as_ref().map(|_| true))
        } else {
            let object = stored_form::present(&self.rt, &event.object.decode());
            let now = filter.selects(&object);
            presented = Some(object);
            let before = event
                .previous
                .as_ref()
                .map(|p| filter.selects(&stored_form::present(&self.rt, &p.decode())));
            (now, before)
        };
        let event_type = match (event.event_type, now, before) {
            (EventType::Modified, true, Some(false)) => EventType::Added,
            (EventType::Modified, false, Some(true)) => EventType::Deleted,
            (_, false, _) => return true,
            (kind, true, _) => kind,
        };
        if self.table.is_none() && !self.protobuf && !self.metadata_only {
            let line = self.shared_line(event, event_type, presented);
            return self.sender.send(line).await.is_ok();
        }
        let object = presented.unwrap_or_else(|| stored_form::present(&self.rt, &event.object.decode()));
        if self.metadata_only {
            return self
                .send_raw(event_type.as_str(), respond::partial_metadata(&object))
                .await;
        }
        if self.protobuf {
            return self.send_raw(event_type.as_str(), object).await;
        }
        let rv = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let table = render_table(
            &Printer::for_type(&self.rt),
            &[&object],
            !self.headers_sent,
            self.include,
            &rv,
            None,
            jiff::Timestamp::now(),
        );
        self.headers_sent = true;
        let table = in_version(table, self.table.unwrap_or("v1"));
        self.send_raw(event_type.as_str(), table).await
    }

    /// The JSON line of `event` as `event_type`. Every watcher presenting the event with the same
    /// apiVersion and type sends the same bytes, so the first one encodes and the others reuse them.
    /// `presented` is the object as presented, when the caller already decoded it.
    fn shared_line(&self, event: &StoredEvent, event_type: EventType, presented: Option<Value>) -> Bytes {
        let api_version = self.rt.api_version();
        let cacheable = event_type == event.event_type;
        if cacheable
            && let Some((presented_as, line)) = event.encoded.get()
            && *presented_as == api_version
        {
            return line.clone();
        }
        let object = presented.unwrap_or_else(|| stored_form::present(&self.rt, &event.object.decode()));
        let line = encode_line(event_type.as_str(), object);
        if cacheable {
            // Another watcher may have won the race; either line is the same.
            let _ = event.encoded.set((api_version, line.clone()));
        }
        line
    }
}

impl Stream {
    /// One event in the stream's form: a JSON line, or a protobuf frame.
    fn encode(&self, event_type: &str, object: Value) -> Bytes {
        if !self.protobuf {
            return encode_line(event_type, object);
        }
        match apimachinery::protobuf::watch_frame(event_type, &object) {
            Ok(frame) => Bytes::from(frame),
            Err(error) => {
                // Stored objects of a built-in kind always have a protobuf form; should one not, the
                // client learns why instead of reading a JSON line it cannot parse.
                let status = Error::Internal(format!("the {event_type} event has no protobuf form: {error}"))
                    .to_status();
                apimachinery::protobuf::watch_frame("ERROR", &status)
                    .map(Bytes::from)
                    .unwrap_or_default()
            }
        }
    }
}

fn encode_line(event_type: &str, object: Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}
