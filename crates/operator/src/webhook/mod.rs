//! The webhooks the API server calls, served over HTTPS by [`server`]: VoteConfig's conversion between
//! v1alpha1 and v1 ([`conversion`]), its defaulting ([`defaulting`]), and PostgresWriter's validation
//! against the database ([`validation`]). [`configurations`] generates the objects that register them,
//! [`tls`] reads (or, for dev mode and tests, makes) the certificate, and [`issuer`] issues, renews and
//! injects one of the operator's own in a cluster.

pub mod configurations;
pub mod conversion;
pub mod defaulting;
pub mod issuer;
pub mod server;
pub mod tls;
pub mod validation;

/// The paths, after kubebuilder's naming (`/mutate-<group with dashes>-<version>-<kind>`); also the
/// `webhook` label of the webhook metrics.
pub const CONVERSION_PATH: &str = "/convert";
pub const MUTATE_VOTE_CONFIG_PATH: &str = "/mutate-voting-schoolofdevops-com-v1-voteconfig";
pub const VALIDATE_POSTGRES_WRITER_PATH: &str = "/validate-demo-yash-com-v1-postgreswriter";
