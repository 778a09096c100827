//! The endpoints a request reaches once the filters let it through: discovery, OpenAPI, health and
//! metrics, and the resources with their subresources, grouped by the kind they belong to.

pub(super) mod discovery;
pub(super) mod health;
pub(super) mod metrics;
mod namespaces;
mod nodes;
pub mod openapi_cache;
mod pods;
mod proxies;
pub(super) mod resources;
pub(crate) mod reviews;
mod scale;
mod serviceaccounts;
mod services;
mod subresource;
