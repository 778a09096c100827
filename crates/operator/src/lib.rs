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
//! Dependencies point one way: the manager uses the controllers and the runtime, the controllers use
//! the runtime, and the runtime uses neither.

pub mod api;
pub mod controllers;
pub mod db;
pub mod error;
pub mod manager;
pub mod runtime;
pub mod webhook;

pub use error::{Error, Result};
