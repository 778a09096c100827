//! Calling out to webhooks, as kube-apiserver does: CRD conversion webhooks ([`conversion`]) and
//! admission webhooks (see [`crate::admission`]), over one HTTPS client ([`client`], the `serving`
//! crate's) that trusts only the CA bundle a configuration names, at the endpoint its `clientConfig`
//! names ([`endpoint`]).

pub use serving::client;
pub mod conversion;
pub mod endpoint;

pub use conversion::Converter;
