//! Kubernetes operators for three custom resources, and the manager that runs them. The map:
//! - [`api`]: the resource types (spec, status, CRD attributes), one file per kind.
//! - [`controllers`]: one file per controller, each reading observe, compare, act.
//! - [`runtime`]: what every controller runs on: the reconcile loop, back-off, metrics, readiness,
//!   Events, status writes.
//! - [`db`]: the PostgreSQL pool and the row store PostgresWriter writes through.
//! - [`webhook`]: the HTTPS server the API server calls for conversion, defaulting and validation,
//!   and the configurations that register it.
//! - [`manager`]: process concerns: CLI, leader election, probes, shutdown, dev mode; it starts the
//!   controllers.
//!
//! Dependencies point one way, down this list: the manager uses everything; the controllers and the
//! webhooks use the runtime, the database and the types but not each other; the runtime uses neither
//! (only the database's metrics); the types ([`api`]) use nothing of this crate, so that the CRDs say
//! what the kinds are while [`webhook::configurations`] says where their conversion is served.

pub mod api;
pub mod controllers;
pub mod db;
pub mod error;
pub mod manager;
pub mod runtime;
pub mod webhook;

pub use error::{Error, Result};
