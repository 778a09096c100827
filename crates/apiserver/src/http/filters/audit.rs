//! Request audit, opt-in ([`crate::Config::audit`]): for every authenticated request, what
//! kube-apiserver would ask its authorizer (verb, API group, resource, subresource, namespace, name),
//! with the user agent and the response code. It is what `crates/operator/tests/rbac.rs` holds
//! config/rbac against: a role must allow every request the operator made, and grant nothing unused.
//!
//! Verbs are Kubernetes' authorization verbs, derived as kube-apiserver's `RequestInfoFactory` does:
//! GET is `get` on a named object, `list` on a collection, `watch` on a collection with `watch=true`;
//! POST is `create`, PUT `update`, PATCH `patch`; DELETE is `delete` on a named object and
//! `deletecollection` on a collection. A list or watch narrowed by `fieldSelector=metadata.name=N` names
//! `N`, as `resourceNames` rules see it. A PUT or PATCH that creates its object (201) is authorized a
//! second time as `create`, so it is recorded twice, `update`/`patch` then `create`: a server-side
//! apply that creates a child needs both verbs.
//!
//! Discovery, OpenAPI, /version and the health checks are non-resource requests: recorded with their
//! path and the lower-case method as verb, as kube-apiserver authorizes them. Requests refused for a
//! missing or wrong token never reach authorization, and are not recorded.
//!
//! [`Audit::Traffic`] also keeps each exchange as a client sent and received it (method, path and
//! query, media types, request body, and the response body unless it is a watch's stream): what a
//! corpus of requests is recorded from, to be played again against another server.
//!
//! Off by default: the request path then pays one `Option` check.

use std::{
    collections::VecDeque,
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{
    body::Body,
    http::{Method, Request, StatusCode, Uri, header},
};
use serde::Serialize;

use crate::http::path::{self, Route};

/// Records kept in memory, the oldest dropped first; a log file, when configured, keeps every one.
const RETAINED_RECORDS: usize = 100_000;

/// Whether and where requests are recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Audit {
    /// Nothing is recorded (the default).
    #[default]
    Off,
    /// Kept in memory, read with [`crate::ApiServer::audit`].
    Memory,
    /// Kept in memory and appended to this file, one JSON object a line (the bin's `--audit-log`).
    MemoryAndFile(PathBuf),
    /// Kept in memory with each request's [`Exchange`]: for recording traffic, never in production
    /// (bodies hold Secrets' data).
    Traffic,
}

/// Kubernetes' authorization verbs for resource requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// GET or HEAD of one object.
    Get,
    /// GET or HEAD of a collection.
    List,
    /// GET with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH, server-side apply included.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// Every verb, in declaration order.
    pub const ALL: [Verb; 8] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::DeleteCollection,
    ];

    /// As RBAC rules spell it: `get`, ..., `deletecollection`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// The verb of a resource request: `named` when the path names an object, `watch` when the query
    /// asks for a watch. `None` for methods no resource is served with (OPTIONS, CONNECT, ...).
    pub fn of(method: &Method, named: bool, watch: bool) -> Option<Verb> {
        Some(match *method {
            Method::GET | Method::HEAD if named => Verb::Get,
            Method::GET | Method::HEAD if watch => Verb::Watch,
            Method::GET | Method::HEAD => Verb::List,
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE if named => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resource request as an authorizer sees it (a SubjectAccessReview's `resourceAttributes`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAttributes {
    /// What the request does.
    pub verb: Verb,
    /// `""` for the core group.
    pub group: String,
    /// The API version of the path (`v1`).
    pub version: String,
    /// The plural: `configmaps`.
    pub resource: String,
    /// `status`, `scale` ..., `None` for the object itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// `None` for cluster-wide requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `None` for a request to a collection (list, watch, create, deletecollection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ResourceAttributes {
    /// `configmaps`, or `webapps/status` for a subresource: how RBAC rules name it.
    pub fn rbac_resource(&self) -> String {
        match &self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.clone(),
        }
    }
}

/// A request for anything but a resource (a SubjectAccessReview's `nonResourceAttributes`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct NonResourceAttributes {
    /// The lower-case HTTP method: `get`.
    pub verb: String,
    /// The URL path, without the query: `/healthz`.
    pub path: String,
}

/// What a request asks to do, as authorization sees it: serialized as a SubjectAccessReview's spec
/// names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum Attributes {
    /// A request under `/api` or `/apis` to a resource.
    #[serde(rename = "resourceAttributes")]
    Resource(ResourceAttributes),
    /// Any other path: discovery, `/version`, `/healthz`, `/metrics` ...
    #[serde(rename = "nonResourceAttributes")]
    NonResource(NonResourceAttributes),
}

/// One authorization check of one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// What was asked.
    #[serde(flatten)]
    pub attributes: Attributes,
    /// The `User-Agent` header, as sent.
    pub user_agent: Option<String>,
    /// The response's status code (200 for a watch that started).
    pub code: u16,
    /// The request and response themselves, under [`Audit::Traffic`] only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Exchange>,
}

/// One request and its answer, as the client saw them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    /// The HTTP method: `GET`.
    pub method: String,
    /// The path and query, as sent.
    pub target: String,
    /// The request's `Content-Type` header.
    pub content_type: Option<String>,
    /// The request's `Accept` header.
    pub accept: Option<String>,
    /// The request body, when it had one (lossy UTF-8: the clients recorded send JSON or YAML).
    pub request_body: Option<String>,
    /// The response body; `None` for a watch, whose stream has no end to wait for.
    pub response_body: Option<String>,
}

impl AuditRecord {
    /// The resource attributes, or `None` for a non-resource request.
    pub fn resource(&self) -> Option<&ResourceAttributes> {
        match &self.attributes {
            Attributes::Resource(attributes) => Some(attributes),
            Attributes::NonResource(_) => None,
        }
    }
}

/// What a request is authorized as, from its method and URI alone (the body is not needed). `None`
/// when nothing would authorize it: a method no resource is served with.
pub fn attributes(method: &Method, uri: &Uri) -> Option<Attributes> {
    let Route::Resource(target) = path::route(uri.path()) else {
        return Some(Attributes::NonResource(NonResourceAttributes {
            verb: method.as_str().to_ascii_lowercase(),
            path: uri.path().to_owned(),
        }));
    };
    let query = uri
        .query()
        .map(crate::http::request::url_decode_pairs)
        .unwrap_or_default();
    let watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let verb = Verb::of(method, target.name.is_some(), watch)?;
    let name = match verb {
        Verb::List | Verb::Watch => query.get("fieldSelector").and_then(|s| exact_name(s)),
        _ => target.name.clone(),
    };
    // kube-apiserver takes a Namespace's name as the namespace of requests for it, so that a Role in
    // namespace N may grant access to Namespace N itself: its kind says so.
    let own_namespace =
        crate::kinds::named(&target.group, &target.plural).is_some_and(|kind| kind.is_its_own_namespace());
    let namespace = match &target.namespace {
        None if own_namespace => target.name.clone(),
        _ => target.namespace.clone(),
    };
    Some(Attributes::Resource(ResourceAttributes {
        verb,
        group: target.group,
        version: target.version,
        resource: target.plural,
        subresource: target.subresource,
        namespace,
        name,
    }))
}

/// The name a field selector pins `metadata.name` to, if it does.
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let term = term.trim();
        let value = term
            .strip_prefix("metadata.name==")
            .or_else(|| term.strip_prefix("metadata.name="))?;
        Some(value.trim().to_owned())
    })
}

/// Where records go while the server runs.
pub struct AuditLog {
    records: Mutex<VecDeque<AuditRecord>>,
    file: Option<(PathBuf, Mutex<std::io::LineWriter<std::fs::File>>)>,
    /// Whether the in-memory limit was hit (warned about once).
    overflowed: AtomicBool,
    /// [`Audit::Traffic`]: records carry their [`Exchange`].
    traffic: bool,
}

impl AuditLog {
    /// The log `audit` asks for, or `None` when it is off. Fails when the log file cannot be opened.
    pub fn open(audit: &Audit) -> std::io::Result<Option<AuditLog>> {
        let file = match audit {
            Audit::Off => return Ok(None),
            Audit::Memory | Audit::Traffic => None,
            Audit::MemoryAndFile(path) => Some((path.clone(), Mutex::new(open_append(path)?))),
        };
        Ok(Some(AuditLog {
            records: Mutex::default(),
            file,
            overflowed: AtomicBool::new(false),
            traffic: *audit == Audit::Traffic,
        }))
    }

    /// Whether exchanges are recorded with their bodies.
    pub fn records_traffic(&self) -> bool {
        self.traffic
    }

    /// Notes what `request` is authorized as; [`PendingRecord::finish`] records it with the response.
    pub fn begin(&self, request: &Request<Body>) -> Option<PendingRecord<'_>> {
        let attributes = attributes(request.method(), request.uri())?;
        let user_agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Some(PendingRecord {
            log: self,
            attributes,
            user_agent,
        })
    }

    /// The records kept in memory, oldest first.
    pub fn records(&self) -> Vec<AuditRecord> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.iter().cloned().collect()
    }

    fn record(&self, record: AuditRecord) {
        if let Some((path, file)) = &self.file {
            // A failing log file is reported, never turned into a failed request.
            let line = serde_json::to_string(&record).unwrap_or_default();
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(error) = writeln!(file, "{line}") {
                tracing::warn!(file = %path.display(), %error, "cannot write the audit log");
            }
        }
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.push_back(record);
        if records.len() > RETAINED_RECORDS {
            records.pop_front();
            if !self.overflowed.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    kept = RETAINED_RECORDS,
                    "audit: dropping the oldest records kept in memory"
                );
            }
        }
    }
}

/// `exchange` completed with `response`'s body, and the response to send, rebuilt from the bytes
/// read. A watch's stream is passed through unread.
pub async fn with_response_body(
    mut exchange: Exchange,
    response: axum::response::Response,
) -> (Exchange, axum::response::Response) {
    let query = exchange
        .target
        .split_once('?')
        .map(|(_, query)| crate::http::request::url_decode_pairs(query))
        .unwrap_or_default();
    if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) {
        return (exchange, response);
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => {
            exchange.response_body = Some(String::from_utf8_lossy(&bytes).into_owned());
            (
                exchange,
                axum::response::Response::from_parts(parts, Body::from(bytes)),
            )
        }
        // The body failed midway: the client sees the same failure, as an empty body.
        Err(_) => (
            exchange,
            axum::response::Response::from_parts(parts, Body::empty()),
        ),
    }
}

/// Appends to `path` (created owner-only: it names every object the clients touched).
fn open_append(path: &Path) -> std::io::Result<std::io::LineWriter<std::fs::File>> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot open audit log {}: {e}", path.display()))
    })?;
    Ok(std::io::LineWriter::new(file))
}

/// A request whose response is not known yet.
pub struct PendingRecord<'a> {
    log: &'a AuditLog,
    attributes: Attributes,
    user_agent: Option<String>,
}

impl PendingRecord<'_> {
    /// Records the request with the response's `status` (and, when traffic is recorded, the
    /// `exchange`).
    pub fn finish(self, status: StatusCode, exchange: Option<Exchange>) {
        let code = status.as_u16();
        // kube-apiserver authorizes an update or patch that creates its object as a create, too.
        let created = match &self.attributes {
            Attributes::Resource(attributes)
                if status == StatusCode::CREATED && matches!(attributes.verb, Verb::Update | Verb::Patch) =>
            {
                Some(Attributes::Resource(ResourceAttributes {
                    verb: Verb::Create,
                    ..attributes.clone()
                }))
            }
            _ => None,
        };
        self.log.record(AuditRecord {
            attributes: self.attributes,
            user_agent: self.user_agent.clone(),
            code,
            exchange: exchange.clone(),
        });
        if let Some(attributes) = created {
            self.log.record(AuditRecord {
                attributes,
                user_agent: self.user_agent,
                code,
                exchange,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(method: Method, uri: &str) -> ResourceAttributes {
        match attributes(&method, &uri.parse().unwrap()) {
            Some(Attributes::Resource(attributes)) => attributes,
            other => panic!("{method} {uri}: {other:?}"),
        }
    }

    fn verb(method: Method, uri: &str) -> &'static str {
        resource(method, uri).verb.as_str()
    }

    #[test]
    fn http_methods_map_to_kubernetes_authorization_verbs() {
        let one = "/api/v1/namespaces/default/configmaps/c1";
        let all = "/api/v1/namespaces/default/configmaps";
        assert_eq!(verb(Method::GET, one), "get");
        assert_eq!(verb(Method::HEAD, one), "get");
        assert_eq!(verb(Method::GET, all), "list");
        assert_eq!(verb(Method::GET, &format!("{all}?watch=true")), "watch");
        assert_eq!(
            verb(Method::GET, &format!("{all}?watch=1&resourceVersion=5")),
            "watch"
        );
        assert_eq!(verb(Method::GET, &format!("{all}?watch=false")), "list");
        assert_eq!(verb(Method::POST, all), "create");
        assert_eq!(verb(Method::PUT, one), "update");
        assert_eq!(verb(Method::PATCH, one), "patch");
        assert_eq!(verb(Method::DELETE, one), "delete");
        assert_eq!(verb(Method::DELETE, all), "deletecollection");
        assert_eq!(attributes(&Method::OPTIONS, &one.parse().unwrap()), None);
    }

    #[test]
    fn attributes_name_the_group_subresource_namespace_and_object() {
        let status = resource(
            Method::PATCH,
            "/apis/example.com/v1/namespaces/shop/webapps/front/status?fieldManager=web-app",
        );
        assert_eq!(
            status,
            ResourceAttributes {
                verb: Verb::Patch,
                group: "example.com".into(),
                version: "v1".into(),
                resource: "webapps".into(),
                subresource: Some("status".into()),
                namespace: Some("shop".into()),
                name: Some("front".into()),
            }
        );
        assert_eq!(status.rbac_resource(), "webapps/status");
        let cluster_wide = resource(Method::GET, "/apis/apps/v1/deployments?watch=true");
        assert_eq!((cluster_wide.namespace, cluster_wide.name), (None, None));
        let namespace = resource(Method::GET, "/api/v1/namespaces/kept");
        assert_eq!(
            (namespace.namespace.as_deref(), namespace.name.as_deref()),
            (Some("kept"), Some("kept"))
        );
    }

    #[test]
    fn a_list_or_watch_pinned_to_one_name_names_it() {
        let leases = "/apis/coordination.k8s.io/v1/namespaces/system/leases";
        let watch = resource(
            Method::GET,
            &format!("{leases}?watch=true&fieldSelector=metadata.name%3Dleader"),
        );
        assert_eq!((watch.verb, watch.name.as_deref()), (Verb::Watch, Some("leader")));
        let list = resource(
            Method::GET,
            &format!("{leases}?fieldSelector=spec.x%3D1,metadata.name%3D%3Dleader"),
        );
        assert_eq!(list.name.as_deref(), Some("leader"));
        let other = resource(
            Method::GET,
            &format!("{leases}?fieldSelector=metadata.name!%3Dleader"),
        );
        assert_eq!(other.name, None);
    }

    #[test]
    fn discovery_and_health_are_non_resource_requests() {
        for path in [
            "/version",
            "/api",
            "/apis",
            "/apis/apps/v1",
            "/openapi/v3",
            "/readyz",
        ] {
            assert_eq!(
                attributes(&Method::GET, &path.parse().unwrap()),
                Some(Attributes::NonResource(NonResourceAttributes {
                    verb: "get".into(),
                    path: path.into()
                })),
                "{path}"
            );
        }
    }

    #[test]
    fn an_update_or_patch_that_creates_is_also_recorded_as_create() {
        let log = AuditLog::open(&Audit::Memory).unwrap().unwrap();
        let request = |method: Method| {
            Request::builder()
                .method(method)
                .uri("/api/v1/namespaces/default/configmaps/c1")
                .header(header::USER_AGENT, "test/1")
                .body(Body::empty())
                .unwrap()
        };
        log.begin(&request(Method::PATCH))
            .unwrap()
            .finish(StatusCode::CREATED, None);
        log.begin(&request(Method::PATCH))
            .unwrap()
            .finish(StatusCode::OK, None);
        log.begin(&request(Method::PUT))
            .unwrap()
            .finish(StatusCode::CREATED, None);
        let verbs: Vec<&str> = log
            .records()
            .iter()
            .map(|r| r.resource().unwrap().verb.as_str())
            .collect();
        assert_eq!(verbs, ["patch", "create", "patch", "update", "create"]);
        assert!(
            log.records()
                .iter()
                .all(|r| r.user_agent.as_deref() == Some("test/1"))
        );
    }

    #[test]
    fn records_serialize_as_subject_access_review_attributes() {
        let record = AuditRecord {
            exchange: None,
            attributes: Attributes::Resource(resource(
                Method::DELETE,
                "/api/v1/namespaces/default/configmaps",
            )),
            user_agent: Some("kubectl/v1.33".into()),
            code: 200,
        };
        assert_eq!(
            serde_json::to_value(&record).unwrap(),
            serde_json::json!({
                "resourceAttributes": {"verb": "deletecollection", "group": "", "version": "v1",
                    "resource": "configmaps", "namespace": "default"},
                "userAgent": "kubectl/v1.33", "code": 200
            })
        );
    }
}
