//! Responses: JSON bodies, `Status` errors (C6), `Warning` headers, and what the Accept header asks
//! for (Table T1, aggregated discovery D6, the OpenAPI v2 document as protobuf D7, the built-in kinds
//! as protobuf D12).

use apimachinery::table::TABLE_VERSIONS;
use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use serde_json::Value;

use crate::error::Error;

pub const AGGREGATED_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub fn json(code: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(serde_json::to_vec(body).unwrap_or_default()));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub fn json_with_type(body: &Value, content_type: &'static str) -> Response {
    let mut response = json(200, body);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The protobuf OpenAPI v2 document's media type, as kube-apiserver names it in answers.
pub const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether `accept` asks for the OpenAPI v2 document as protobuf (client-go asks for nothing else).
pub fn wants_openapi_protobuf(accept: &str) -> bool {
    accept.split(',').any(|candidate| {
        let essence = candidate.split(';').next().unwrap_or("").trim();
        matches!(
            essence,
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" | OPENAPI_V2_PROTOBUF
        )
    })
}

pub fn bytes(body: Vec<u8>, content_type: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

pub fn error(error: &Error) -> Response {
    if matches!(error, Error::PageNotFound) {
        let mut response = Response::new(axum::body::Body::from("404 page not found\n"));
        *response.status_mut() = StatusCode::NOT_FOUND;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    }
    json(error.code(), &error.to_status())
}

/// `Warning: 299 - "<text>"` headers, as kubectl prints them.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = format!("299 - \"{}\"", warning.replace('"', "\\\""));
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// What representation the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    Object,
    Table,
    /// `PartialObjectMetadata(List)`: objects reduced to their metadata, as metadata-only watchers
    /// (kube-rs `metadata_watcher`, client-go's metadata informers) ask for them.
    Metadata,
    AggregatedDiscovery,
}

/// `object` as a `PartialObjectMetadata`: its metadata alone.
pub fn partial_metadata(object: &Value) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| Value::Object(Default::default())),
    })
}

/// `list` as a `PartialObjectMetadataList`; no items is Go's nil slice, `null`.
pub fn partial_metadata_list(list: &Value) -> Value {
    let items: Vec<Value> = list
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(partial_metadata).collect())
        .unwrap_or_default();
    serde_json::json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list.get("metadata").cloned().unwrap_or_else(|| Value::Object(Default::default())),
        "items": if items.is_empty() { Value::Null } else { Value::Array(items) },
    })
}

pub fn negotiate(accept: &str) -> Representation {
    // Clients list their preferences in order; the first we can serve wins. A representation named
    // by `as=` is served only in the version asked for: aggregated discovery `v2` (not the `v2beta1`
    // kube-apiserver 1.33 no longer serves, which older clients list first and then fall back from).
    for candidate in accept.split(',') {
        let essence = candidate.split(';').next().unwrap_or("").trim();
        let parameter = |name: &str| {
            candidate
                .split(';')
                .skip(1)
                .filter_map(|p| p.split_once('='))
                .find(|(key, _)| key.trim() == name)
                .map(|(_, value)| value.trim().to_owned())
        };
        match parameter("as").as_deref() {
            Some("Table")
                if parameter("g").as_deref() == Some("meta.k8s.io")
                    && parameter("v").is_some_and(|v| TABLE_VERSIONS.contains(&v.as_str())) =>
            {
                return Representation::Table;
            }
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                if parameter("g").as_deref() == Some("meta.k8s.io")
                    && parameter("v").as_deref() == Some("v1") =>
            {
                return Representation::Metadata;
            }
            Some("APIGroupDiscoveryList")
                if parameter("g").as_deref() == Some("apidiscovery.k8s.io")
                    && parameter("v").as_deref() == Some("v2") =>
            {
                return Representation::AggregatedDiscovery;
            }
            Some(_) => continue,
            None if matches!(essence, "application/json" | "*/*" | "application/yaml") => {
                return Representation::Object;
            }
            None => continue,
        }
    }
    Representation::Object
}

/// The version of `meta.k8s.io` the Table `accept` asks for names (`v1` or `v1beta1`).
pub fn table_version(accept: &str) -> &'static str {
    accept
        .split(',')
        .filter(|candidate| candidate.split(';').skip(1).any(|p| p.trim() == "as=Table"))
        .find_map(|candidate| {
            let version = candidate
                .split(';')
                .filter_map(|p| p.split_once('='))
                .find(|(key, _)| key.trim() == "v")
                .map(|(_, value)| value.trim())?;
            TABLE_VERSIONS.into_iter().find(|served| *served == version)
        })
        .unwrap_or("v1")
}

/// `accept` without the entries asking for a Table: what an endpoint with no Table answers from.
pub fn without_tables(accept: &str) -> String {
    accept
        .split(',')
        .filter(|candidate| !candidate.split(';').skip(1).any(|p| p.trim() == "as=Table"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The form of a discovery document (`/api`, `/apis` and what is below them) an Accept header asks
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryForm {
    Json,
    Protobuf,
    /// Aggregated discovery `v2`, which `/api` and `/apis` alone serve.
    Aggregated,
}

/// The first form of a discovery document `accept` lists that the endpoint serves (`aggregated`:
/// whether it serves aggregated discovery), or `None`: kube-apiserver then answers 406. No Accept
/// header takes JSON; YAML is answered as JSON, which every YAML reader reads.
pub fn negotiate_discovery(accept: &str, aggregated: bool) -> Option<DiscoveryForm> {
    if accept.trim().is_empty() {
        return Some(DiscoveryForm::Json);
    }
    accept.split(',').find_map(|candidate| {
        let mut parts = candidate.split(';');
        let essence = parts.next().unwrap_or_default().trim();
        let parameters: Vec<(&str, &str)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(key, value)| (key.trim(), value.trim()))
            .collect();
        let parameter = |name: &str| parameters.iter().find(|(key, _)| *key == name).map(|(_, v)| *v);
        match parameter("as") {
            // A representation named by `as=` is served only when it is aggregated discovery v2, as
            // JSON (the protobuf form of it is not served here).
            Some("APIGroupDiscoveryList")
                if aggregated
                    && essence == "application/json"
                    && parameter("g") == Some("apidiscovery.k8s.io")
                    && parameter("v") == Some("v2") =>
            {
                Some(DiscoveryForm::Aggregated)
            }
            Some(_) => None,
            None if apimachinery::protobuf::is_protobuf(essence) => Some(DiscoveryForm::Protobuf),
            None if matches!(
                essence,
                "application/json" | "application/yaml" | "application/*" | "*/*" | "*"
            ) =>
            {
                Some(DiscoveryForm::Json)
            }
            None => None,
        }
    })
}

/// The 406 of an endpoint that serves nothing an Accept header lists (after its route took the
/// request), as kube-apiserver's serializer negotiation words it.
pub fn negotiation_failed() -> Error {
    Error::NotAcceptable {
        message: format!(
            "only the following media types are accepted: {}",
            PRODUCED.join(", ")
        ),
        routed: false,
    }
}

/// The body form an Accept header puts first among those served, for objects, lists and Status
/// errors (D12). A representation named by `as=` (a Table) is not an object: [`negotiate`] serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    /// Protobuf first; whether JSON (or YAML, or anything) is acceptable after it.
    Protobuf {
        json_acceptable: bool,
    },
}

pub fn encoding(accept: &str) -> Encoding {
    if negotiate(accept) != Representation::Object {
        return Encoding::Json;
    }
    let entries: Vec<&str> = accept
        .split(',')
        .filter(|candidate| !candidate.split(';').skip(1).any(|p| p.trim().starts_with("as=")))
        .map(|candidate| candidate.split(';').next().unwrap_or("").trim())
        .collect();
    let textual = |essence: &&str| {
        matches!(
            *essence,
            "application/json" | "application/yaml" | "*/*" | "application/*"
        )
    };
    match entries
        .iter()
        .position(|e| apimachinery::protobuf::is_protobuf(e))
    {
        Some(first) if !entries[..first].iter().any(textual) => Encoding::Protobuf {
            json_acceptable: entries[first..].iter().any(textual),
        },
        _ => Encoding::Json,
    }
}

/// `response` (a JSON object, list or Status) in protobuf; as it was when its body is not JSON of a
/// kind protobuf carries (the caller checked the resource is a built-in one).
pub async fn into_protobuf(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Every JSON answer but a watch's is whole in memory already; watches answer protobuf themselves.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|value| apimachinery::protobuf::encode(&value).map_err(|e| e.to_string()));
    match encoded {
        Ok(protobuf) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(apimachinery::protobuf::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(protobuf))
        }
        Err(error) => {
            tracing::debug!(%error, "answered JSON: the body has no protobuf form");
            Response::from_parts(parts, Body::from(bytes))
        }
    }
}

/// The media types kube-apiserver answers a resource request in.
const PRODUCED: [&str; 3] = [
    "application/json",
    "application/yaml",
    apimachinery::protobuf::MEDIA_TYPE,
];
/// What a collection's GET, which also serves watches, answers in besides: the streaming forms of the
/// media types that have one (YAML has none).
const STREAMED: [&str; 2] = [
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// Who answers a resource request on a real cluster, which decides how its Accept header is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A built-in kind, served through kube-apiserver's router: it keeps a request whose Accept header
    /// lists `*/*` or one of the media types the route produces exactly, parameters aside.
    BuiltIn { collection_read: bool },
    /// A custom resource, served by the CRD handler: it matches media ranges (`application/*`) too, and
    /// answers JSON or YAML only (a protobuf-only request is refused in protobuf, before this check).
    Custom,
}

/// 406 for an Accept header that names nothing `endpoint` can answer in, worded as the real server
/// words it. No Accept header at all accepts anything.
pub fn check_acceptable(accept: &str, endpoint: Endpoint) -> Result<(), Error> {
    if accept.trim().is_empty() {
        return Ok(());
    }
    // Each entry's media type, parameters aside; the parsers on both paths trim spaces alone.
    let mut essences = accept
        .split(',')
        .map(|entry| entry.split(';').next().unwrap_or_default().trim_matches(' '));
    match endpoint {
        Endpoint::BuiltIn { collection_read } => {
            if essences.any(|essence| essence == "*/*" || PRODUCED.contains(&essence)) {
                return Ok(());
            }
            let mut available = PRODUCED.to_vec();
            if collection_read {
                available.extend(STREAMED);
            }
            Err(Error::NotAcceptable {
                message: format!(
                    "406: Not Acceptable\n\nAvailable representations: {}",
                    available.join(", ")
                ),
                routed: true,
            })
        }
        Endpoint::Custom => {
            if essences.any(|essence| {
                let range = match essence.split_once('/') {
                    Some((kind, sub)) => (kind.trim_matches(' '), sub.trim_matches(' ')),
                    // A bare `*` is read as `*/*`; any other bare word names nothing.
                    None => (essence, if essence == "*" { "*" } else { "" }),
                };
                matches!(range, ("*", "*") | ("application", "*" | "json" | "yaml"))
            }) {
                return Ok(());
            }
            Err(Error::NotAcceptable {
                message: format!(
                    "only the following media types are accepted: {}",
                    PRODUCED.join(", ")
                ),
                routed: false,
            })
        }
    }
}

/// 406 for a custom resource asked for in protobuf alone, as a protobuf Status as kube-apiserver
/// writes it.
pub fn protobuf_not_acceptable() -> Response {
    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        "reason": "NotAcceptable", "code": 406});
    match apimachinery::protobuf::encode(&status) {
        Ok(body) => {
            let mut response = bytes(body, apimachinery::protobuf::MEDIA_TYPE);
            *response.status_mut() = StatusCode::NOT_ACCEPTABLE;
            response
        }
        Err(_) => json(406, &status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d6_only_the_representation_versions_served_are_chosen() {
        let v2beta1_then_json =
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(v2beta1_then_json), Representation::Object);
        let v2_first = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(v2_first), Representation::AggregatedDiscovery);
        let tables = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(tables), Representation::Table);
        let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
        assert_eq!(negotiate(beta), Representation::Table);
        assert_eq!(table_version(beta), "v1beta1");
        assert_eq!(table_version(tables), "v1");
        assert_eq!(
            negotiate("application/json;as=Table;v=v2;g=meta.k8s.io"),
            Representation::Object
        );
        assert_eq!(without_tables(tables), "application/json");
        assert_eq!(without_tables(beta), "");
        assert_eq!(negotiate(""), Representation::Object);
    }

    #[test]
    fn what_clients_send_is_acceptable_and_a_type_nothing_produces_is_not() {
        let sent = [
            "",
            "*/*",
            "application/json",
            "application/json, */*",
            "application/vnd.kubernetes.protobuf, */*",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
            "application/yaml",
            "application/json;stream=watch",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ];
        let builtin = Endpoint::BuiltIn {
            collection_read: true,
        };
        for accept in sent {
            assert!(check_acceptable(accept, builtin).is_ok(), "{accept}");
            assert!(check_acceptable(accept, Endpoint::Custom).is_ok(), "{accept}");
        }
        for refused in ["text/html", "text/*", "application/xml, text/plain"] {
            assert!(check_acceptable(refused, builtin).is_err(), "{refused}");
            assert!(check_acceptable(refused, Endpoint::Custom).is_err(), "{refused}");
        }
        // The CRD handler matches media ranges; kube-apiserver's router, in front of the built-in
        // kinds, compares media types as they are written.
        assert!(check_acceptable("application/*", Endpoint::Custom).is_ok());
        assert!(check_acceptable("*", Endpoint::Custom).is_ok());
        assert!(check_acceptable("application/*", builtin).is_err());
    }

    #[test]
    fn not_acceptable_lists_what_the_endpoint_answers_in() {
        let status = |endpoint| {
            check_acceptable("text/html", endpoint)
                .map_err(|e| e.to_status())
                .unwrap_err()
        };
        let list = status(Endpoint::BuiltIn {
            collection_read: true,
        });
        assert_eq!(
            (&list["code"], &list["reason"], &list["details"]),
            (
                &serde_json::json!(406),
                &serde_json::json!("NotAcceptable"),
                &serde_json::json!({})
            )
        );
        assert_eq!(
            list["message"],
            "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf, application/json;stream=watch, \
             application/vnd.kubernetes.protobuf;stream=watch"
        );
        let one = status(Endpoint::BuiltIn {
            collection_read: false,
        });
        assert_eq!(
            one["message"],
            "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
        let custom = status(Endpoint::Custom);
        assert_eq!(
            custom["message"],
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
        assert!(custom.get("details").is_none(), "{custom}");
    }

    #[test]
    fn d3_discovery_answers_the_first_form_it_serves() {
        use DiscoveryForm::*;
        let aggregated_first =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate_discovery(aggregated_first, true), Some(Aggregated));
        assert_eq!(negotiate_discovery(aggregated_first, false), Some(Json));
        assert_eq!(
            negotiate_discovery(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                false
            ),
            None
        );
        let client_go = "application/vnd.kubernetes.protobuf, */*";
        assert_eq!(negotiate_discovery(client_go, false), Some(Protobuf));
        assert_eq!(negotiate_discovery("", false), Some(Json));
        assert_eq!(negotiate_discovery("text/plain", true), None);
        assert_eq!(
            negotiate_discovery("application/json;as=Table;v=v1;g=meta.k8s.io", true),
            None
        );
    }

    #[test]
    fn d12_protobuf_when_listed_before_json() {
        let client_go = "application/vnd.kubernetes.protobuf, */*";
        assert_eq!(
            encoding(client_go),
            Encoding::Protobuf {
                json_acceptable: true
            }
        );
        assert_eq!(
            encoding("application/vnd.kubernetes.protobuf"),
            Encoding::Protobuf {
                json_acceptable: false
            }
        );
        assert_eq!(
            encoding("application/json, application/vnd.kubernetes.protobuf"),
            Encoding::Json
        );
        assert_eq!(encoding(""), Encoding::Json);
        let table = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io, application/json";
        assert_eq!(encoding(table), Encoding::Json, "Tables stay JSON");
    }
}
