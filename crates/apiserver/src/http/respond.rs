//! Responses: JSON bodies, `Status` errors (C6), `Warning` headers, and what the Accept header asks
//! for (Table T1, aggregated discovery D6; JSON even when protobuf is listed, D9).

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
    AggregatedDiscovery,
}

pub fn negotiate(accept: &str) -> Representation {
    // Clients list their preferences in order; the first we can serve wins.
    for candidate in accept.split(',') {
        if candidate.contains("as=Table") {
            return Representation::Table;
        }
        if candidate.contains("as=APIGroupDiscoveryList") && candidate.contains("v=v2") {
            return Representation::AggregatedDiscovery;
        }
        let essence = candidate.split(';').next().unwrap_or("").trim();
        if matches!(essence, "application/json" | "*/*" | "application/yaml") {
            return Representation::Object;
        }
    }
    Representation::Object
}
