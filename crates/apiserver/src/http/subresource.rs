//! A subresource served by an endpoint of its own, as the module that serves it declares it beside its
//! handler (`resources::subresources` finds them by kind and name).

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use axum::response::Response;

use super::{Shared, request::Call};
use crate::error::Result;

/// A request to a subresource of one object.
pub struct Request<'a> {
    pub shared: &'a Arc<Shared>,
    /// The type of the object the subresource belongs to.
    pub rt: &'a Arc<ResourceType>,
    pub namespace: &'a str,
    pub name: &'a str,
    pub subresource: &'a str,
    pub call: &'a Call,
}

/// A subresource of a built-in kind, with the endpoint that serves it.
pub struct Subresource {
    pub group: &'static str,
    pub plural: &'static str,
    /// Its names (one endpoint serves the kubelet's several streams).
    pub names: &'static [&'static str],
    pub serve: fn(&Request<'_>) -> Result<Response>,
}
